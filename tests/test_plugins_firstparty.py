"""The first-party plugins as a user gets them: ``pip install ./plugins/memread-docx ./plugins/memread-html``,
then ``memread`` reads Word reports and web pages through their entry points, and a broken third-party plugin
beside them costs one warning line, nothing more.

The plugins are pip-installed (from copies of their folders, ``--no-deps``: their libraries come with
``memread[test]``) into a folder cached under .pytest_cache, keyed by their source, and put on the
``PYTHONPATH`` of the ``memread`` processes these tests run, so the environment running the suite is left as
it was. Without the package index (pip builds them with setuptools) these tests are skipped, except under CI
(``CI`` set), where they fail: CI must really run them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import docx
import pytest

# pip builds the plugins with setuptools from the package index (the first run; later ones reuse the install)
pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("memread-docx", "memread-html")
_NOT_SOURCE = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "tests", ".pytest_cache")


def _source_key() -> str:
    digest = hashlib.sha256(f"{sys.version_info[:2]}".encode())
    for name in FIRST_PARTY:
        folder = ROOT / "plugins" / name
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not {"build", "dist", "__pycache__", "tests"} & set(relative.parts) and not any(
                part.endswith(".egg-info") for part in relative.parts
            ):
                digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def plugin_site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding both first-party plugins, installed by pip from their folders."""
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider: install for this session
    folder = Path(cache.mkdir("memread-plugins")) if cache is not None else tmp_path_factory.mktemp("plugins")
    site = folder / _source_key()
    if (site / ".installed").exists():
        return site
    with tempfile.TemporaryDirectory() as scratch:
        sources = [shutil.copytree(ROOT / "plugins" / name, Path(scratch) / name, ignore=_NOT_SOURCE)
                   for name in FIRST_PARTY]
        building = Path(scratch) / "site"
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
             "--target", str(building), *map(str, sources)],
            capture_output=True, text=True, timeout=600,
        )
        if done.returncode != 0:
            reason = f"pip could not install the first-party plugins: {done.stderr.strip()[-800:]}"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        for old in folder.iterdir():  # installs of earlier versions of the plugins' source
            shutil.rmtree(old, ignore_errors=True)
        shutil.copytree(building, site)
    (site / ".installed").write_text("\n".join(FIRST_PARTY) + "\n")
    return site


def memread(*args: str, site: Path, extra_path: Path | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    """``memread args…`` in a fresh process that sees the installed plugins (and every other plugin allowed)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (extra_path, site) if p)}
    env.pop("MEMREAD_PLUGINS", None)
    done = subprocess.run([sys.executable, "-m", "memread", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def build_report(path: Path) -> Path:
    word = docx.Document()
    word.add_heading("Results", level=1)
    word.add_paragraph("The harbour closed the year with a surplus.")
    word.add_heading("Revenue", level=2)
    word.add_paragraph("Mooring fees rose by 12 percent, mostly from the new pontoons.")
    table = word.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Fuel sales", "flat"
    table.cell(1, 0).text, table.cell(1, 1).text = "Mooring fees", "up 12 percent"
    word.add_heading("Outlook", level=1)
    word.add_paragraph("The Widow's Pier reopens in May after 41 days of repairs.")
    word.save(str(path))
    return path


WEB_PAGE = """<!DOCTYPE html><html><head><title>Install guide</title><script>analytics()</script></head>
<body><nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
<main><h1>Guide</h1><p>Read this first.</p><h2>Install</h2><p>Run the installer as root.</p>
<h3>On Linux</h3><p>Use the tarball.</p></main>
<footer>Copyright ACME</footer></body></html>"""


def test_pip_installed_plugins_are_found_through_their_entry_points(plugin_site: Path) -> None:
    status, out, err = memread("plugins", "--json", site=plugin_site)
    assert status == 0, err
    rows = {row["distribution"]: row for row in json.loads(out)}
    assert {name: (rows[name]["kind"], rows[name]["name"], rows[name]["version"], rows[name]["status"])
            for name in FIRST_PARTY} == {
        "memread-docx": ("loader", "docx", "0.1.0", "loaded"),
        "memread-html": ("loader", "readable-html", "0.1.0", "loaded"),
    }
    assert rows["memread-html"]["extensions"][:2] == [".html", ".htm"]


def test_memread_inspect_reads_a_word_report_by_section_and_paragraph(plugin_site: Path, tmp_path: Path) -> None:
    build_report(tmp_path / "report.docx")
    status, out, err = memread("inspect", "report.docx", "--chunks", "--json", "--chunk-tokens", "24",
                               site=plugin_site, cwd=tmp_path)
    assert status == 0, err
    report = json.loads(out)
    assert (report["format"], report["lines"], report["chapters"]) == ("docx", 8, 3)
    assert [chunk["where"] for chunk in report["chunk_list"]] == [
        "report.docx § Results / Results > Revenue lines 1-3",
        "report.docx § Results > Revenue lines 4-5",  # the fees paragraph and the table's first row
        "report.docx § Results > Revenue line 6",
        "report.docx § Outlook lines 7-8",
    ]


def test_a_web_page_is_read_by_the_html_plugin_not_the_built_in_reader(plugin_site: Path, tmp_path: Path) -> None:
    page = tmp_path / "guide.html"
    page.write_text(WEB_PAGE)
    script = (
        "import json, sys\nfrom memread.ingest import open_document\n"
        "d = open_document(sys.argv[1])\n"
        "print(json.dumps([[s.text, s.provenance.chapter] for s in d.segments()]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(plugin_site)}
    env.pop("MEMREAD_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", script, str(page)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        ["Guide\n\nRead this first.", "Guide"],
        ["\n\nInstall\n\nRun the installer as root.", "Guide > Install"],
        ["\n\nOn Linux\n\nUse the tarball.", "Guide > Install > On Linux"],
    ]


def test_a_broken_third_party_plugin_is_one_warning_and_word_files_still_read(
    plugin_site: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken-site"
    info = broken / "memread_ocr-0.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memread-ocr\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text("[memread.loaders.v1]\nocr = memread_ocr:LOADER\n")
    (broken / "memread_ocr.py").write_text("import tesseract_that_is_not_installed\n")
    build_report(tmp_path / "report.docx")

    status, out, err = memread("inspect", "report.docx", site=plugin_site, extra_path=broken, cwd=tmp_path)
    assert status == 0, err
    assert "format      docx" in out
    assert err.splitlines() == [
        "warning: plugin memread-ocr 0.3 (loader 'ocr') failed to load and is skipped: ModuleNotFoundError: "
        "No module named 'tesseract_that_is_not_installed' (uninstall it, or list the plugins to load in "
        "MEMREAD_PLUGINS)"
    ]
    status, out, err = memread("plugins", site=plugin_site, extra_path=broken)
    assert status == 0 and err == ""
    assert "memread-ocr   0.3      loader ocr" in out
    assert "failed: ModuleNotFoundError: No module named 'tesseract_that_is_not_installed'" in out
    assert "memread-docx  0.1.0    loader docx (.docx .docm)" in out


@pytest.mark.model
@pytest.mark.slow
def test_memread_ask_answers_from_a_word_report_with_smollm2(
    plugin_site: Path, smollm2_path: Path, tmp_path: Path
) -> None:
    build_report(tmp_path / "report.docx")
    status, out, err = memread(
        "ask", "report.docx", "By how much did mooring fees rise?", "--model", str(smollm2_path), "--json",
        "--no-trace", "--threads", os.environ.get("MEMREAD_THREADS") or "1", "--progress", "none",
        "--memory-tokens", "128", "--final-tokens", "48",  # SmolLM2 rambles: keep its replies short
        site=plugin_site, cwd=tmp_path,
    )
    assert status == 0, err
    result = json.loads(out)
    assert (result["status"], result["document"], result["stats"]["chunks_read"]) == ("ok", "report.docx", 1)
    assert result["answer"]
    for citation in result["citations"]:  # the evidence is located by section and paragraph
        assert citation["where"].startswith("report.docx § Results"), citation
        assert citation["spans"][0]["line_first"] >= 1, citation
