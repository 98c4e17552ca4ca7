"""The documentation holds: its links resolve, it names every command and option, the CLI reference is what
``--help`` says, its figures are the ones in the result files they cite, and the version is the released one
(in the style of sqlite-utils' tests/test_docs.py). No model is loaded."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
REFERENCE = DOCS / "cli-reference.md"
# Pages a person writes (the generated reference is checked against the code instead).
WRITTEN = [ROOT / "README.md", *sorted(p for p in DOCS.glob("*.md") if p != REFERENCE)]
LINKED = [*WRITTEN, REFERENCE, ROOT / "CHANGELOG.md"]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
COMMENT = re.compile(r"<!--.*?-->", re.S)
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)\)")


def prose(text: str) -> str:
    """``text`` without fenced code, inline code and comments: what a reader reads as the page's own words."""
    return CODE_SPAN.sub("", COMMENT.sub("", FENCE.sub("", text)))


def links(path: Path) -> list[str]:
    return [target for _, target in LINK.findall(prose(path.read_text(encoding="utf-8")))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation out, spaces to hyphens."""
    text = LINK.sub(r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", path.read_text(encoding="utf-8")), re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:  # GitHub numbers repeated headings: name, name-1, name-2 …
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


# --- the CLI ------------------------------------------------------------------------------------------------


@cache
def cli() -> list[tuple[str, list[str]]]:
    """Every built-in command path and its long option names."""
    from memread.cli.reference import commands

    return [(path, [name for param in command.params for name in (*param.opts, *param.secondary_opts)
                    if name.startswith("--")])
            for path, command, _ in commands()]


def written_words() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in WRITTEN)


def test_every_command_is_described_in_a_page_a_person_wrote() -> None:
    text = written_words()
    missing = [path for path, _ in cli() if path not in text]
    assert not missing, f"commands no page of README.md or docs/ describes: {missing}"


def test_every_option_is_documented() -> None:
    text = written_words() + REFERENCE.read_text(encoding="utf-8")
    missing = [f"{path} {option}" for path, options in cli() for option in options
               if not re.search(re.escape(option) + r"(?![\w-])", text)]
    assert not missing, f"options the docs do not name: {missing}"


def test_the_cli_reference_is_what_help_says() -> None:
    from memread.cli.reference import render

    assert REFERENCE.read_text(encoding="utf-8") == render(), (
        "docs/cli-reference.md is stale: python -m memread.cli.reference > docs/cli-reference.md")


# --- figures ------------------------------------------------------------------------------------------------

# A figure: digits with thousands separators and decimals, not part of a word or an identifier ("Q4_0",
# "qwen2.5", "32K", "hqa400" are names, not figures).
FIGURE = re.compile(r"(?<![\w.,/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/]|\.\d)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*`\[])")


def units(text: str) -> list[str]:
    """The table rows, list items and sentences of a page, each a place where a figure and its source sit
    together."""
    found: list[str] = []
    for block in re.split(r"\n\s*\n", COMMENT.sub("", FENCE.sub("", text))):
        lines = block.strip().splitlines()
        if lines and all(line.lstrip().startswith("|") for line in lines):
            found += lines
            continue
        items = re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", block)
        for item in items:
            found += SENTENCE_END.split(" ".join(item.split()))
    return found


def result_files(page: Path, unit: str) -> list[Path]:
    """The result files a piece of a page links to (a results folder stands for its Markdown files)."""
    files: list[Path] = []
    for _, target in LINK.findall(unit):
        path = (page.parent / target.partition("#")[0]).resolve()
        if RESULTS not in path.parents:
            continue
        files += sorted(path.glob("*.md")) if path.is_dir() else [path]
    return [f for f in files if f.is_file()]


@cache
def numbers_in(path: Path) -> str:
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", path.read_text(encoding="utf-8"))


def holds(figure: str, files: list[Path]) -> bool:
    whole, _, decimals = figure.replace(",", "").partition(".")
    # 43.8 is 43.8 and not 43.85; 100 is written 100 or 100.0 in a file, and 43 is not 43.8.
    exact, whole_number = rf"(?<![\d.]){whole}\.{decimals}(?!\d)", rf"(?<![\d.]){whole}(?:\.0+)?(?!\.?\d)"
    pattern = exact if decimals else whole_number
    return any(re.search(pattern, numbers_in(f)) for f in files)


def figures(unit: str) -> list[str]:
    text = CODE_SPAN.sub("", LINK.sub(r"\1", unit))
    found = [m.group(1) + (m.group(2) or "") for m in FIGURE.finditer(text)]
    return [f for f in found if "." in f or int(f.replace(",", "")) >= 10]  # 0–9 are in every file


@pytest.mark.parametrize("page", WRITTEN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_next_to_a_result_file_is_in_it(page: Path) -> None:
    """A figure written in the same table row, list item or sentence as a link to a result file must be in that
    file (or one of them), so a figure cannot outlive a re-run or be rounded into another."""
    wrong = []
    for unit in units(page.read_text(encoding="utf-8")):
        files = result_files(page, unit)
        if not files:
            continue
        names = ", ".join(str(f.relative_to(RESULTS)) for f in files)
        wrong += [f"{figure} (not in {names}): {unit[:100]}…" for figure in figures(unit) if not holds(figure, files)]
    assert not wrong, f"{page.relative_to(ROOT)}:\n" + "\n".join(wrong)


def test_the_figure_check_catches_a_wrong_figure() -> None:
    unit = "overwrite scored 39.6 % and 41.3 % on 1,024 samples ([goal.md](../benchmarks/results/goal.md))."
    files = result_files(DOCS / "page.md", unit)
    assert [f.name for f in files] == ["goal.md"]
    assert [f for f in figures(unit) if not holds(f, files)] == ["41.3", "1,024"]


# --- the doorway and the release -------------------------------------------------------------------------------


def test_the_readme_is_a_doorway() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    hashes = [h for h in re.findall(r"\b[0-9a-f]{7,40}\b", prose(text)) if re.search(r"[a-f]", h)
              and re.search(r"\d", h)]
    assert not hashes, f"commit hashes in README.md: {hashes}"
    assert "pip install '.[test]' && python -m pytest" in text  # .ci/run runs it


def test_the_version_is_the_latest_release() -> None:
    from memread.version import __version__

    project = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    releases = re.findall(r"^## \[(\d[^\]]*)\]", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert project is not None and project.group(1) == __version__ == releases[0]
