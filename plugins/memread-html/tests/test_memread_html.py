"""memread-html reads a saved web page as a person would: the article's text under its headings, without the
menus, scripts, cookie banner and footer around it.

These tests register the plugin's loader directly; tests/test_plugins_firstparty.py installs the package with
pip and goes through its entry point and the ``memread`` command.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from memread.errors import InputError
from memread.ingest import open_document, registry


def load_from_source(package: str) -> ModuleType:
    """The plugin package from this folder (not an installed copy), without putting its folder on sys.path,
    where a build's leftover ``*.egg-info`` would make every test session see it as an installed plugin."""
    init = Path(__file__).resolve().parents[1] / package / "__init__.py"
    spec = importlib.util.spec_from_file_location(f"{package}_under_test", init)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


memread_html = load_from_source("memread_html")

SAVED_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Harbour news – Widow's Pier</title>
<style>.cookie-banner {position: fixed}</style><script>window.track = 1;</script></head>
<body>
<header class="site-header"><a href="/">Harbour Authority</a><nav><a href="/news">News</a> <a href="/about">About</a></nav></header>
<div id="cookie-banner" class="cookie-banner">We use cookies. <button>Accept</button></div>
<div class="layout">
  <aside class="sidebar"><h2>Popular</h2><ul><li>Ferry timetable</li></ul></aside>
  <article>
    <header><h1>Widow's Pier reopens</h1><p class="byline">By the harbour master</p></header>
    <p>The pier was closed for <b>41 days</b> after the February&nbsp;storm.</p>
    <h2>Repairs</h2>
    <p>Divers replaced twelve piles.<br>The deck was relaid in oak.</p>
    <h3>Costs</h3>
    <table><tr><th>Item</th><th>Cost</th></tr><tr><td>Piles</td><td>310,000</td></tr></table>
    <ul><li>Paid by the storm fund</li><li>Audited in March</li></ul>
    <div class="share-buttons">Share on social media</div>
    <h2>Opening hours</h2>
    <pre>Mon-Fri  06:00-22:00
Sat-Sun  08:00-20:00</pre>
    <p hidden>draft note: check the dates</p>
  </article>
</div>
<footer>© Harbour Authority · <a href="/privacy">Privacy</a></footer>
<script>console.log("bye")</script>
</body></html>
"""


@pytest.fixture(autouse=True)
def html_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's loader, in a copy of the registry."""
    monkeypatch.setenv("MEMREAD_PLUGINS", "")
    registry.loaders()  # the built-ins, in the real registry
    monkeypatch.setattr(registry, "_loaders", dict(registry._loaders))
    registry.register_loader(memread_html.LOADER, replace=True)  # this folder's, not an installed copy


def test_a_saved_web_page_is_read_as_its_article_under_its_headings(tmp_path: Path) -> None:
    page = tmp_path / "widows-pier.html"
    page.write_text(SAVED_PAGE, encoding="utf-8")
    document = open_document(str(page))
    segments = list(document.segments())
    text = "".join(segment.text for segment in segments)

    assert document.format == "html"
    assert text == (
        "Widow's Pier reopens\n\n"
        "By the harbour master\n\n"
        "The pier was closed for 41 days after the February storm.\n\n"
        "Repairs\n\n"
        "Divers replaced twelve piles.\nThe deck was relaid in oak.\n\n"
        "Costs\n\n"
        "Item | Cost\n\n"
        "Piles | 310,000\n\n"
        "- Paid by the storm fund\n\n"
        "- Audited in March\n\n"
        "Opening hours\n\n"
        "Mon-Fri  06:00-22:00\nSat-Sun  08:00-20:00"
    )
    assert [segment.provenance.chapter for segment in segments] == [
        "Widow's Pier reopens",
        "Widow's Pier reopens > Repairs",
        "Widow's Pier reopens > Repairs > Costs",
        "Widow's Pier reopens > Opening hours",
    ]
    assert document.stats.chapters == 4


def test_the_pages_outline_is_its_kept_headings_with_the_heading_path_each_starts(tmp_path: Path) -> None:
    page = tmp_path / "widows-pier.html"
    page.write_text(SAVED_PAGE, encoding="utf-8")
    document = open_document(str(page))
    text = "".join(segment.text for segment in document.segments())

    assert [(h.level, h.title, h.chapter, h.source) for h in document.outline] == [
        (0, "Widow's Pier reopens", "Widow's Pier reopens", str(page)),
        (1, "Repairs", "Widow's Pier reopens > Repairs", str(page)),
        (2, "Costs", "Widow's Pier reopens > Repairs > Costs", str(page)),
        (1, "Opening hours", "Widow's Pier reopens > Opening hours", str(page)),
    ], "the sidebar's <h2>Popular</h2> was dropped with the sidebar"
    assert all(h.title in text.split("\n") for h in document.outline)


def test_it_claims_html_from_the_built_in_reader_which_kept_the_boilerplate(tmp_path: Path) -> None:
    page = tmp_path / "widows-pier.htm"
    page.write_text(SAVED_PAGE, encoding="utf-8")
    assert registry.find_loader(page.name, page.read_bytes()[:8192]) is memread_html.LOADER

    builtin = next(loader for loader in registry.loaders() if loader.name == "html")
    from memread.ingest.source import file_source

    document = open_document(str(page))
    plugin_text = "".join(segment.text for segment in document.segments())
    builtin_text = "".join(s.text for s in builtin.open(file_source(page, page.name), document))
    for boilerplate in ("Accept", "Ferry timetable", "Privacy", "draft note"):
        assert boilerplate not in plugin_text
    assert "Ferry timetable" in builtin_text  # what the plugin is for


def test_text_before_the_first_heading_belongs_to_the_page_title(tmp_path: Path) -> None:
    page = tmp_path / "notice"  # no extension: recognised by its doctype
    page.write_bytes(
        b"<!doctype html><html><head><meta charset='windows-1252'><title>Notice</title></head>"
        b"<body><main><p>Caf\xe9 closed.</p><h2>Why</h2><p>Works.</p></main><nav>Home</nav></body></html>"
    )
    segments = list(open_document(str(page)).segments())
    assert [(s.text, s.provenance.chapter) for s in segments] == [
        ("Café closed.", "Notice"),
        ("\n\nWhy\n\nWorks.", "Why"),
    ]


def test_a_page_with_nothing_readable_is_empty_input(tmp_path: Path) -> None:
    page = tmp_path / "app.html"
    page.write_text("<html><head><script>boot()</script></head><body><nav>Menu</nav><div id=root></div></body></html>")
    with pytest.raises(InputError, match="is empty"):
        open_document(str(page))


def test_an_xhtml_manual_page_loses_its_navigation_and_table_of_contents_quietly(tmp_path: Path) -> None:
    page = tmp_path / "ch07.html"
    page.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter 7. '
        'Tips</title></head><body><div class="navheader"><table><tr><th>Chapter 7. Tips</th></tr><tr><td>'
        '<a href="ch06.html">Prev</a></td></tr></table></div><div class="chapter"><h2>Chapter 7. Tips</h2>'
        '<div class="toc"><p><b>Table of Contents</b></p><dl><dt>7.1. debdiff</dt></dl></div>'
        "<h3>7.1. debdiff</h3><p>Compare two source packages with debdiff.</p></div>"
        '<div class="navfooter"><a href="ch08.html">Next</a></div></body></html>'
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # BeautifulSoup's "XML parsed as HTML" warning is not the user's business
        segments = list(open_document(str(page)).segments())
    assert [(s.text, s.provenance.chapter) for s in segments] == [
        ("Chapter 7. Tips", "Chapter 7. Tips"),
        ("\n\n7.1. debdiff\n\nCompare two source packages with debdiff.", "Chapter 7. Tips > 7.1. debdiff"),
    ]
