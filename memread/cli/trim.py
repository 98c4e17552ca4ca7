"""Text cut to a width for one line of a pane or a table: the start kept (a question, an answer), or the end (a
path or a place, whose file name and pages say the most)."""

from __future__ import annotations


def cut(text: str | None, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, ending in "…" when cut."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def cut_left(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, its end kept and "…" in front when cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else "…" + text[-(limit - 1):]
