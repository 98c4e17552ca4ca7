"""Plugins are packages with entry points: memread finds them, loads each kind only when it is needed, lets
``MEMREAD_PLUGINS`` choose, and survives a broken one with a single warning.

The plugins here are real distributions as importlib.metadata sees them (a ``*.dist-info`` folder with
``entry_points.txt`` next to their modules, on ``sys.path``), built per test; no pip needed. The first-party
plugins, installed with pip, are in test_plugins_firstparty.py.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run_memread

from memread import backends, plugins, strategies
from memread.errors import BackendError
from memread.ingest import open_document, registry
from memread.loop import LoopSettings
from memread.testing import isolated_registries

MODULE_PREFIX = "memread_testplugin_"

SHOUT_LOADER = """
from memread.document import Provenance, Segment
from memread.ingest import Loader

def _open(source, document):
    with source.open() as stream:
        text = stream.read().decode().upper()
    return iter([Segment(text, Provenance(source.label, line_start=1, line_end=1))])

LOADER = Loader("shout", "shout", (".shout",), lambda head: False, _open)
"""


def make_distribution(site: Path, name: str, entry_points: dict[str, dict[str, str]],
                      modules: dict[str, str], version: str = "0.1") -> None:
    """An installed distribution as pip leaves it: ``name-version.dist-info`` and its modules, in ``site``."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
                for group, entries in entry_points.items())
    )
    for module, source in modules.items():
        (site / f"{MODULE_PREFIX}{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for this test's plugins, with fresh registries and plugin state (restored after)."""
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("MEMREAD_PLUGINS", "")  # no installed plugin gets into the registries kept aside
    with isolated_registries():
        monkeypatch.delenv("MEMREAD_PLUGINS")  # this test's own plugins load
        yield folder
    importlib.invalidate_caches()
    for module in [name for name in sys.modules if name.startswith(MODULE_PREFIX)]:
        del sys.modules[module]


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    said: list[str] = []
    monkeypatch.setattr(plugins, "_warn", said.append)
    return said


def listed(*args: str) -> dict[str, dict[str, object]]:
    """``memread plugins --json``, by entry-point name, for the test's own plugins."""
    status, out, err = run_memread("plugins", "--json", *args)
    assert status == 0, err
    import json

    return {row["name"]: row for row in json.loads(out) if str(row["distribution"]).startswith("memread-test")}


def imported(module: str) -> bool:
    return MODULE_PREFIX + module in sys.modules


def test_a_loader_plugin_reads_its_format_and_is_listed(site: Path, tmp_path: Path) -> None:
    make_distribution(site, "memread-test-shout", {"memread.loaders.v1": {"shout": f"{MODULE_PREFIX}shout:LOADER"}},
                      {"shout": SHOUT_LOADER}, version="1.2.3")
    note = tmp_path / "note.shout"
    note.write_text("quiet words")

    document = open_document(str(note))
    assert document.format == "shout"
    assert "".join(segment.text for segment in document.segments()) == "QUIET WORDS"
    assert listed()["shout"] == {
        "distribution": "memread-test-shout", "version": "1.2.3", "kind": "loader", "name": "shout",
        "group": "memread.loaders.v1", "value": f"{MODULE_PREFIX}shout:LOADER", "status": "loaded",
        "error": None, "extensions": [".shout"],
    }
    status, out, _ = run_memread("plugins")
    assert status == 0
    row = next(line for line in out.splitlines() if line.startswith("memread-test-shout"))
    assert row.split() == ["memread-test-shout", "1.2.3", "loader", "shout", "(.shout)", "loaded"]


def test_plugins_are_found_where_importlib_metadata_finds_them(site: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # memread reads entry_points.txt itself (importlib.metadata costs --help and TAB completion ~20 ms); the
    # two must agree, including which copy wins when a distribution is on sys.path twice.
    from importlib.metadata import entry_points

    later = tmp_path / "later-site-packages"
    later.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(later)])
    make_distribution(site, "memread-test-shout", {"memread.loaders.v1": {"shout": f"{MODULE_PREFIX}shout:LOADER"},
                                                   "console_scripts": {"shout": "x:y"}}, {}, version="2.0")
    make_distribution(later, "memread_test_shout", {"memread.loaders.v1": {"old": "old:LOADER"}}, {}, version="1.0")
    make_distribution(later, "memread-test-tools", {"memread.commands.v1": {"tool": "tools:app [extra]"},
                                                    "memread.backends.v1": {"gw": "tools.gw:create"}}, {})
    expected = {
        (group, entry.name, entry.value, entry.dist.name, entry.dist.version)  # type: ignore[union-attr]
        for group in plugins.GROUPS.values() for entry in entry_points(group=group)
    }
    found = {(plugins.GROUPS[p.kind], p.name, p.value, p.distribution, p.version) for p in plugins.installed()}
    assert found == expected
    assert {row for row in found if row[3].startswith("memread")} >= {
        ("memread.loaders.v1", "shout", f"{MODULE_PREFIX}shout:LOADER", "memread-test-shout", "2.0"),
        ("memread.commands.v1", "tool", "tools:app [extra]", "memread-test-tools", "0.1"),
        ("memread.backends.v1", "gw", "tools.gw:create", "memread-test-tools", "0.1"),
    }


def test_a_plugin_that_fails_on_import_is_one_warning_and_everything_else_still_works(
    site: Path, tmp_path: Path
) -> None:
    make_distribution(site, "memread-test-broken",
                      {"memread.loaders.v1": {"broken": f"{MODULE_PREFIX}broken:LOADER"}},
                      {"broken": "raise RuntimeError('the plugin blew up on import')"})
    make_distribution(site, "memread-test-shout", {"memread.loaders.v1": {"shout": f"{MODULE_PREFIX}shout:LOADER"}},
                      {"shout": SHOUT_LOADER})
    notes = tmp_path / "notes.txt"
    notes.write_text("plain notes\n")
    (tmp_path / "note.shout").write_text("still here")

    status, out, err = run_memread("inspect", str(notes))
    assert status == 0, err
    assert "format      text" in out
    assert err.splitlines() == [
        "warning: plugin memread-test-broken 0.1 (loader 'broken') failed to load and is skipped: "
        "RuntimeError: the plugin blew up on import (uninstall it, or list the plugins to load in "
        "MEMREAD_PLUGINS)"
    ]
    status, out, err = run_memread("inspect", str(tmp_path / "note.shout"))
    assert status == 0 and "format      shout" in out
    assert err == ""  # warned once per process, not once per document
    rows = listed()
    assert rows["broken"]["status"] == "failed"
    assert rows["broken"]["error"] == "RuntimeError: the plugin blew up on import"
    assert rows["shout"]["status"] == "loaded"


def test_memread_plugins_chooses_by_distribution_or_entry_point_name(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warnings: list[str]
) -> None:
    make_distribution(site, "memread-test-broken",
                      {"memread.loaders.v1": {"broken": f"{MODULE_PREFIX}broken:LOADER"}},
                      {"broken": "raise RuntimeError('must not be imported')"})
    make_distribution(site, "memread-test-shout", {"memread.loaders.v1": {"shout": f"{MODULE_PREFIX}shout:LOADER"}},
                      {"shout": SHOUT_LOADER})
    monkeypatch.setenv("MEMREAD_PLUGINS", "Memread_Test.Shout")  # names are compared as pip normalises them
    assert "shout" in {loader.name for loader in registry.loaders()}
    assert not imported("broken") and warnings == []
    rows = listed()
    assert (rows["broken"]["status"], rows["shout"]["status"]) == ("disabled", "loaded")

    monkeypatch.setenv("MEMREAD_PLUGINS", "")
    assert {row["status"] for row in listed().values()} == {"disabled"}
    status, out, _ = run_memread("plugins")
    assert "memread-test-shout   0.1      loader shout   disabled by MEMREAD_PLUGINS" in out

    plugin = next(p for p in plugins.installed("loaders") if p.name == "broken")
    assert plugins.allowed(plugin, {"MEMREAD_PLUGINS": "broken, other"})  # entry-point names work too
    assert plugins.allowed(plugin, {})  # unset: every plugin


ECHO_BACKEND = """
from memread.backends.fake import FakeBackend

def create(model=None, **options):
    return FakeBackend(["\\\\boxed{echo}"], model=model or "echo")
"""

PLAIN_STRATEGY = """
from memread.strategies import OverwriteStrategy

class PlainStrategy(OverwriteStrategy):
    '''Overwrite, under another name: what a researcher's strategy plugin looks like.'''
"""


def test_each_kind_is_imported_only_when_it_is_used(site: Path) -> None:
    make_distribution(
        site, "memread-test-kinds",
        {"memread.loaders.v1": {"shout": f"{MODULE_PREFIX}shout:LOADER"},
         "memread.backends.v1": {"echo": f"{MODULE_PREFIX}echo:create"},
         "memread.strategies.v1": {"plain": f"{MODULE_PREFIX}plain:PlainStrategy"}},
        {"shout": SHOUT_LOADER, "echo": ECHO_BACKEND, "plain": PLAIN_STRATEGY},
    )
    registry.loaders()
    assert imported("shout") and not imported("echo") and not imported("plain")

    assert "echo" in backends.backend_names() and "plain" in strategies.strategy_names()
    assert not imported("echo") and not imported("plain")  # registered by name, imported when chosen

    backend = backends.create_backend("echo", model="m")
    assert backend.model == "m" and imported("echo")
    strategy = strategies.create_strategy(LoopSettings(strategy="plain"))
    assert type(strategy).__name__ == "PlainStrategy" and imported("plain")


def test_a_broken_backend_plugin_fails_only_the_run_that_chooses_it(site: Path, warnings: list[str]) -> None:
    make_distribution(site, "memread-test-gateway",
                      {"memread.backends.v1": {"gateway": f"{MODULE_PREFIX}gateway:create"}},
                      {"gateway": "raise ValueError('GATEWAY_URL is not set')"})
    assert "gateway" in backends.backend_names() and warnings == []
    with pytest.raises(BackendError) as caught:
        backends.create_backend("gateway")
    assert caught.value.message == (
        "the gateway backend (plugin memread-test-gateway) cannot be loaded: ValueError: GATEWAY_URL is not set"
    )
    assert caught.value.exit_status == 4
    rows = listed()
    assert (rows["gateway"]["status"], rows["gateway"]["error"]) == ("failed", "ValueError: GATEWAY_URL is not set")


def test_a_plugin_cannot_take_a_name_that_is_already_registered(site: Path, warnings: list[str]) -> None:
    impostor = SHOUT_LOADER.replace('Loader("shout", "shout", (".shout",)', 'Loader("pdf", "pdf", (".pdf",)')
    make_distribution(site, "memread-test-impostor", {"memread.loaders.v1": {"pdf": f"{MODULE_PREFIX}pdf:LOADER"},
                                                      "memread.strategies.v1": {"gated": f"{MODULE_PREFIX}pdf:X"}},
                      {"pdf": impostor})
    assert registry.find_loader("a.pdf", b"%PDF-1.7").format == "pdf"  # type: ignore[union-attr]
    assert next(loader for loader in registry.loaders() if loader.name == "pdf").open.__module__ == (
        "memread.ingest.registry"
    )
    assert strategies.strategy_names().count("gated") == 1
    assert len(warnings) == 2
    assert "(loader 'pdf') failed to load and is skipped: ValueError: a loader named 'pdf' is already registered" in (
        warnings[0]
    )
    assert "ValueError: a strategy named 'gated' is already registered" in warnings[1]


HELLO_COMMAND = """
import typer

app = typer.Typer(help="Say hello.")

@app.command()
def hello(name: str) -> None:
    '''Greet NAME.'''
    print(f"Hello {name}")
"""


def test_a_command_plugin_is_listed_from_metadata_and_imported_only_when_run(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_distribution(site, "memread-test-hello", {"memread.commands.v1": {"hello": f"{MODULE_PREFIX}hello:app"}},
                      {"hello": HELLO_COMMAND}, version="2.0")
    make_distribution(site, "memread-test-kaput", {"memread.commands.v1": {"kaput": f"{MODULE_PREFIX}kaput:app",
                                                                           "ask": f"{MODULE_PREFIX}kaput:app"}},
                      {"kaput": "raise ImportError('No module named kaputlib', name='kaputlib')"})

    status, _, _ = run_memread("--help")
    shown = capsys.readouterr().out
    assert status == 0
    assert "hello" in shown and "(from the plugin memread-test-hello 2.0)" in shown and "kaput" in shown
    assert not imported("hello") and not imported("kaput")

    status, out, err = run_memread("hello", "Ada")
    assert (status, capsys.readouterr().out, err) == (0, "Hello Ada\n", "")

    status, out, err = run_memread("kaput")
    assert status == 1
    assert err.splitlines() == [
        "error: the kaput command (plugin memread-test-kaput) cannot be loaded: ImportError: No module named kaputlib",
        "",
        "hint: reinstall or update memread-test-kaput; `memread plugins` lists what is installed",
    ]
    status, out, err = run_memread("paths")
    assert status == 0 and err == ""

    rows = listed()
    assert rows["hello"]["status"] == "loaded"
    assert rows["kaput"]["status"] == "failed"
    assert rows["ask"]["error"] == "a built-in command is called 'ask'"  # a plugin never shadows a built-in


def test_a_format_only_a_first_party_plugin_reads_names_that_plugin() -> None:
    assert registry.plugin_suggestion("reports/Q3 Board.DOCX") == "memread-docx"
    assert registry.plugin_suggestion("notes.txt") is None


def test_a_word_file_without_the_docx_plugin_names_the_plugin_to_install(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    word = docx.Document()
    word.add_paragraph("Mooring fees rose by 12%.")
    word.save(str(tmp_path / "report.docx"))
    status, out, err = run_memread("inspect", str(tmp_path / "report.docx"))  # plugins off (conftest)
    assert status == 3 and out == ""
    assert err.splitlines() == [
        f"error: {tmp_path / 'report.docx'}: memread reads this format with the memread-docx plugin, which is not installed",
        "",
        "hint: pip install ./plugins/memread-docx (from a memread checkout); `memread plugins` lists what is installed",
    ]


ECHO_EVERY_TIME = """
from memread.backends.fake import FakeBackend

def create(model=None, **options):
    return FakeBackend(lambda request: "\\\\boxed{echo}", model=model or "echo")
"""

TALLY_STRATEGY = """
from dataclasses import dataclass, field

from memread.strategies.base import StepPlan, StepResult, Strategy


@dataclass(frozen=True)
class TallyOptions:
    marker: str = field(default="tally", metadata={"help": "the word each step adds"})


class TallyStrategy(Strategy):
    '''A strategy written outside memread: one module, its options, its prompt, its words for a step.'''

    name = "tally"
    label = "a plugin"
    summary = "counts the chunks it has read"
    Options = TallyOptions

    def memory_prompt(self, question, memory, chunk):
        return f"Q: {question}\\nM: {memory}\\nC: {chunk}"

    def plan_step(self, lane, question, state, chunk):
        return StepPlan(self.memory_prompt(question, self.memory(state), chunk.text), 16)

    def read_reply(self, lane, question, state, chunk, completion):
        count = int(state.get("count", 0)) + 1
        memory = f"{self.options.marker} {count}"
        return StepResult(state={**state, "memory": memory, "count": count}, memory=memory, memory_changed=True,
                          truncated=False, decisions={"count": count}, summary=f"{self.options.marker}ed chunk {count}")
"""


def test_a_plugin_strategy_runs_through_memread_ask_with_its_options_view_line_and_trace(
        site: Path, tmp_path: Path) -> None:
    from memread.cli.render import _gates
    from memread.cli.viewstate import ViewState
    from memread.traces import read_trace

    make_distribution(site, "memread-test-tally",
                      {"memread.backends.v1": {"echo": f"{MODULE_PREFIX}echo:create"},
                       "memread.strategies.v1": {"tally": f"{MODULE_PREFIX}tally:TallyStrategy"}},
                      {"echo": ECHO_EVERY_TIME, "tally": TALLY_STRATEGY})
    notes = tmp_path / "notes.txt"
    notes.write_text("".join(f"Line {i} of the harbour notes.\n" for i in range(300)))
    trace = tmp_path / "run.jsonl"
    status, out, err = run_memread("ask", str(notes), "How many lines?", "--strategy", "tally", "-o", "marker=count",
                                   "--backend", "echo", "--chunk-tokens", "400", "--trace", str(trace),
                                   "--progress", "none")
    assert (status, out.strip()) == (0, "echo"), err
    read = read_trace(trace)
    steps = read.steps()
    assert len(steps) >= 2 and steps[-1].decisions == {"count": len(steps)}
    assert read.header["settings"]["options"] == {"marker": "count"}
    assert read.header["templates"]["memory"] == "Q: {prompt}\nM: {memory}\nC: {chunk}"
    state = ViewState()
    for _, event in read.events():
        state.apply(event, 0.0)
    assert _gates(state.lanes[0]).startswith(f"counted chunk {len(steps)}")  # the live view's line for the step
    status, shown, _ = run_memread("traces", "show", str(trace))
    assert status == 0 and "counted chunk 1" in shown

    status, _, err = run_memread("ask", str(notes), "Q?", "--strategy", "tally", "-o", "loud=yes", "--backend", "echo")
    assert status == 2 and "the tally strategy has no option 'loud'" in err and "hint: its options: marker" in err
    status, listed_text, _ = run_memread("strategies")
    assert "tally (a plugin)  [plugin memread-test-tally]: counts the chunks it has read" in listed_text
    assert "-o marker=tally" in listed_text


def test_an_unknown_strategy_names_the_registered_ones(site: Path) -> None:
    status, _, err = run_memread("ask", "-", "Q?", "--strategy", "nosuch", stdin=b"text")
    assert status == 2 and "unknown strategy 'nosuch'" in err and "overwrite, gated, callback" in err
