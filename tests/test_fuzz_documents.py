"""Fuzzing the document entry points: damaged copies of small valid PDFs, EPUBs and a gzipped log go through
``open_document`` and are read to the end. The only acceptable outcomes are a clean read or memread's own
InputError (exit 3 with a hint); any other exception, or a read that runs past 20 s, fails.

Damage is byte flips aimed at the places parsers trust (xref tables, trailers, stream lengths, zip headers and
central directories, see ``memread.testing.fuzz.interesting_regions``), truncation, junk spliced over a region, and
numbers replaced by others. CI runs a bounded sample (:data:`EXAMPLES` per seed document, a few seconds);
``benchmarks/robustness/bench_fuzz.py`` runs the same strategies for longer.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memread.testing.fuzz import fuzz_seeds, mutations, read_or_refuse

EXAMPLES = 50  # per seed document: 5 seeds, 250 damaged documents per CI run

SEED_NAMES = ("labelled.pdf", "fonts.pdf", "encrypted.pdf", "book.epub", "server.log.gz")


@cache
def seeds() -> dict[str, bytes]:
    """The valid documents that get damaged, built once per session."""
    return fuzz_seeds(Path(tempfile.mkdtemp(prefix="memread-fuzz-seeds-")))


@pytest.mark.parametrize("seed_name", SEED_NAMES)
def test_the_undamaged_seed_is_read(seed_name: str, tmp_path: Path) -> None:
    path = tmp_path / seed_name
    path.write_bytes(seeds()[seed_name])
    assert read_or_refuse(path) == "read"


@pytest.mark.parametrize("seed_name", SEED_NAMES)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_document_is_read_or_refused_never_crashes_or_hangs(
    seed_name: str, data: st.DataObject, tmp_path: Path
) -> None:
    damaged = data.draw(mutations(seeds()[seed_name]), label="damaged bytes")
    path = tmp_path / seed_name  # the name keeps extension dispatch: a .pdf with broken magic still meets pypdf
    path.write_bytes(damaged)
    assert read_or_refuse(path) in ("read", "refused")


def _zip_version_from_the_future(book: bytes) -> bytes:
    central = book.find(b"PK\x01\x02")
    return book[: central + 6] + (156).to_bytes(2, "little") + book[central + 8:]


def _damaged_container(book: bytes) -> bytes:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(book)) as archive:
        info = archive.getinfo("META-INF/container.xml")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    return book[:start] + bytes(b ^ 0x5A for b in book[start: start + 8]) + book[start + 8:]


def _bad_deflate(packed: bytes) -> bytes:
    return packed[:20] + bytes([packed[20] ^ 1]) + packed[21:]


# What fuzzing found (each raised something other than InputError before it was fixed), kept as plain tests.
FINDINGS = [
    ("book.epub", _zip_version_from_the_future),  # NotImplementedError from zipfile (bench_fuzz.py)
    ("book.epub", _damaged_container),  # BadZipFile / zlib.error reading META-INF/container.xml (CI fuzz)
    ("server.log.gz", _bad_deflate),  # zlib.error from gzip: invalid distance too far back (CI fuzz)
]


@pytest.mark.parametrize(("seed_name", "damage"), FINDINGS, ids=[damage.__name__ for _, damage in FINDINGS])
def test_a_fuzzing_finding_stays_fixed(seed_name: str, damage: object, tmp_path: Path) -> None:
    path = tmp_path / seed_name
    path.write_bytes(damage(seeds()[seed_name]))  # type: ignore[operator]
    assert read_or_refuse(path) == "refused"
