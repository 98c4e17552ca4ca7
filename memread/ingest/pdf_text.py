"""A PDF page's text as a reader should get it, whichever library extracted it: whitespace normalised,
ligatures spelled out, and a check for text layers that are mostly characters no reader can use."""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # \r is unified before this runs
# Characters no reader can use: private-use code points (what fonts without a real Unicode map extract as),
# the replacement character, PDFium's mark for a glyph without a Unicode value, and control characters.
UNREADABLE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010ffff\ufffd\ufffe\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DROPPED = re.compile("[\ue000-\uf8ff\U000f0000-\U0010ffff\ufffe\uffff]")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})
GARBLED_SHARE = 0.3  # a page whose visible characters are this much unreadable is skipped, not fed to a model
_SPACES = re.compile("[ \t\u00a0]+")
_BLANK_LINES = re.compile("\n{3,}")


def normalise_page(text: str) -> str:
    """Whitespace as a reader expects it: runs of spaces collapsed, lines trimmed, at most one blank line;
    ligature characters spelled out ("ﬁ" → "fi")."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_LIGATURES)
    text = _SPACES.sub(" ", _CONTROL.sub("", _DROPPED.sub("", text)))
    text = "\n".join(line.strip(" ") for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip("\n")


def garbled(text: str) -> bool:
    """Is a page's extracted text mostly unreadable (a font without a Unicode map: private-use code points,
    control characters)? Such a page is skipped with a warning: it would cost tokens and tell the model nothing.

    Text layers that map to the *wrong* letters (a shifted alphabet) read as words and are not detected.
    """
    visible = len(text) - sum(text.count(c) for c in " \t\r\n")
    return visible > 0 and len(UNREADABLE.findall(text)) > GARBLED_SHARE * visible
