"""A catalogue of hostile documents, each run through the real ``memread`` command in a subprocess that is
killed if it takes longer than :data:`TIMEOUT` seconds (so a hang fails the test instead of stalling CI).

Each row says what a user meets with that input: the documented exit status (docs/reference.md, "Exit statuses": 3 for
input problems), a one-line ``error:`` and a ``hint:``, never a traceback, and — where part of the input is
readable — that the readable part is read (its exact character count) with a warning naming what was left out.

Most rows run ``memread inspect --json`` (no model); the last tests take a few inputs through ``memread ask``
where its path differs: bad input is refused before any model loads, and a partly readable PDF reaches the
real SmolLM2 model without its garbage, with the warning in the trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import isolate

from memread.testing.documents import (
    SCANNED,
    Chapter,
    build_epub,
    build_pdf,
    build_tree,
    compress,
    debian_file,
    encrypt_pdf,
    log_lines,
    truncated_copy,
    without_member,
)
from memread.testing.hostile import (
    billion_laughs,
    bzip2_bomb,
    damaged_member,
    gzip_bomb,
    raw_pdf,
    replaced_member,
    with_member,
)

TIMEOUT = 60.0  # seconds; the slowest row (a 10 MB line) takes about 2 s
INPUT = 3  # ExitStatus.INPUT, spelled out: the number is the documented interface
CHUNK_TOKENS = 5000
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

READABLE = "The readable first page names the harbour master."  # 50 characters
HARBOUR = "The Widow's Pier was closed for 12 days after the February storm.\n"
CHAPTERS = [
    Chapter("The Harbour", "<h1>The Harbour</h1><p>312 boats were registered in 1910.</p>"),
    Chapter("The Storm", "<h1>The Storm</h1><p>The pier closed for 12 days.</p>"),
    Chapter("Epilogue", "<h1>Epilogue</h1><p>The harbour master retired in 1931.</p>"),
]


@dataclass
class Invocation:
    """How a row runs memread: the source argument, options, bytes for stdin, extra environment."""

    source: str
    options: tuple[str, ...] = ()
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Path], Invocation]  # writes the input under a fresh folder
    status: int  # the documented exit status
    says: str = ""  # in the error line (status 3), or in a warning (status 0; "" = no warning at all)
    hint: str = ""  # in the hint line (status 3)
    characters: int | None = None  # status 0: exactly this much text is read (the readable part)
    skip_reason: str | None = None
    slow: bool = False  # several seconds: left out of the fast tier


@dataclass(frozen=True)
class Result:
    status: int
    stdout: str
    stderr: str


def memread(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = TIMEOUT, base: dict[str, str] | None = None) -> Result:
    """``memread args…`` in a fresh interpreter, killed after ``timeout`` seconds (a hang fails the test), in
    ``base`` (default: this process's environment) with ``env`` on top."""
    try:
        done = subprocess.run([sys.executable, "-m", "memread", *args], input=stdin, capture_output=True,
                              timeout=timeout, env={**(os.environ if base is None else base), **(env or {})},
                              cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"memread {' '.join(args)} hung: no exit within {timeout:.0f} s")
    return Result(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))


def assert_one_line_error(stderr: str, says: str, hint: str) -> None:
    """stderr is warnings, then exactly ``error: …``, a blank line and ``hint: …`` (docs/reference.md, "Exit statuses")."""
    lines = stderr.rstrip("\n").split("\n")
    assert len(lines) >= 3 and lines[-3].startswith("error: ") and lines[-2] == "" and \
        lines[-1].startswith("hint: "), stderr
    assert all(line.startswith("warning: ") for line in lines[:-3]), stderr
    assert says in lines[-3], lines[-3]
    assert hint in lines[-1], lines[-1]


def inspect(invocation: Invocation, base: dict[str, str] | None = None) -> Result:
    return memread("inspect", invocation.source, "--json", "--chunk-tokens", str(CHUNK_TOKENS),
                   *invocation.options, stdin=invocation.stdin, env=invocation.env, base=base)


# --- builders, one per row --------------------------------------------------------------------------------------


def _file(name: str, data: bytes) -> Callable[[Path], Invocation]:
    def build(folder: Path) -> Invocation:
        (folder / name).write_bytes(data)
        return Invocation(str(folder / name))

    return build


def _pdf(folder: Path, name: str = "report.pdf") -> Path:
    return build_pdf(folder / name, [HARBOUR * 3, "The second page mentions the lighthouse."])


def truncated_pdf(folder: Path) -> Invocation:
    return Invocation(str(truncated_copy(_pdf(folder), folder / "cut.pdf", 0.5)))


def pdf_without_xref(folder: Path) -> Invocation:
    data = _pdf(folder).read_bytes()
    (folder / "noxref.pdf").write_bytes(data[: data.rindex(b"\nxref")])
    return Invocation(str(folder / "noxref.pdf"))


def pdf_with_wrong_startxref(folder: Path) -> Invocation:
    data = _pdf(folder).read_bytes()
    broken = data[: data.rindex(b"startxref")] + b"startxref\n999999\n%%EOF\n"
    (folder / "pointer.pdf").write_bytes(broken)
    return Invocation(str(folder / "pointer.pdf"))


def pdf_with_zeroed_xref(folder: Path) -> Invocation:
    import re

    data = _pdf(folder).read_bytes()
    start = data.rindex(b"\nxref")
    end = data.index(b"trailer", start)
    table = re.sub(rb"\d{10} 00000 n", b"0000000000 00000 n", data[start:end])
    (folder / "zeroed.pdf").write_bytes(data[:start] + table + data[end:])
    return Invocation(str(folder / "zeroed.pdf"))


def html_saved_as_pdf(folder: Path) -> Invocation:
    page = b"<!DOCTYPE html><html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1></body></html>\n"
    return _file("paper.pdf", page)(folder)


def encrypted(password: str, *options: str) -> Callable[[Path], Invocation]:
    def build(folder: Path) -> Invocation:
        locked = encrypt_pdf(_pdf(folder), folder / "locked.pdf", user_password=password)
        return Invocation(str(locked), options)

    return build


def image_only_pdf(folder: Path) -> Invocation:
    return Invocation(str(build_pdf(folder / "scan.pdf", [SCANNED, SCANNED])))


def half_scanned_pdf(folder: Path) -> Invocation:
    return Invocation(str(build_pdf(folder / "half.pdf", [READABLE, SCANNED])))


def garbage_text_layer(folder: Path) -> Invocation:
    pages = [(READABLE, "plain"), ("Secret words behind a broken font map", "private")]
    return Invocation(str(raw_pdf(folder / "garbled.pdf", pages)))


def garbage_everywhere(folder: Path) -> Invocation:
    pages = [("Every page of this one", "private"), ("is unreadable", "private")]
    return Invocation(str(raw_pdf(folder / "garbled.pdf", pages)))


def content_stream_bomb(folder: Path) -> Invocation:
    return Invocation(str(raw_pdf(folder / "inflating.pdf", [(READABLE, "plain"), ("Hidden by bulk", "inflating")])))


def shifted_text_layer(folder: Path) -> Invocation:
    return Invocation(str(raw_pdf(folder / "shifted.pdf", [("Caesar would read this", "shifted")])))


def ten_megabyte_line(folder: Path) -> Invocation:
    return _file("one-line.txt", b"word " * (2 << 20))(folder)


def megabyte_without_whitespace(folder: Path) -> Invocation:
    import base64

    return _file("blob.txt", base64.b64encode(os.urandom(750_000)))(folder)


def nul_padded_log(folder: Path) -> Invocation:
    return _file("crash.log", b"boot ok\n" + b"\x00" * 20_000 + b"after the crash: restarted\n")(folder)


def gzip_bomb_file(folder: Path) -> Invocation:
    # 1 GiB of newlines in 1 MiB of gzip, after one real line: a log that never ends.
    return Invocation(str(gzip_bomb(folder / "huge.log.gz", 1024, prefix=b"first line of the log\n")))


def bzip2_bomb_file(folder: Path) -> Invocation:
    return Invocation(str(bzip2_bomb(folder / "letters.txt.bz2", 40)))


def gzip_bomb_on_stdin(folder: Path) -> Invocation:
    bomb = gzip_bomb(folder / "piped.gz", 48, filler=b"\x00", prefix=b"first line of the log\n")
    return Invocation("-", stdin=bomb.read_bytes())


def truncated_gzip(folder: Path) -> Invocation:
    log = folder / "server.log"
    log.write_text("".join(log_lines(50_000)), encoding="utf-8")
    packed = compress(log, "gz")
    packed.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    return Invocation(str(packed))


def _epub(folder: Path) -> Path:
    return build_epub(folder / "book.epub", CHAPTERS)


def truncated_epub(folder: Path) -> Invocation:
    return Invocation(str(truncated_copy(_epub(folder), folder / "cut.epub", 0.6)))


def epub_missing_a_chapter(folder: Path) -> Invocation:
    return Invocation(str(without_member(_epub(folder), folder / "gap.epub", "ch1.xhtml")))


def epub_with_a_damaged_chapter(folder: Path) -> Invocation:
    return Invocation(str(damaged_member(_epub(folder), folder / "damaged.epub", "ch1.xhtml")))


def epub_entity_bomb(folder: Path) -> Invocation:
    page = billion_laughs("Before &lol9; after")
    return Invocation(str(replaced_member(_epub(folder), folder / "laughs.epub", "ch1.xhtml", page)))


def epub_bomb(folder: Path) -> Invocation:
    return Invocation(str(with_member(_epub(folder), folder / "bomb.epub", "EPUB/zeros.bin", bytes(48 << 20))))


def debian_epub(package: str, member: str) -> Callable[[Path], Invocation]:
    def build(folder: Path) -> Invocation:
        from conftest import PERSISTENT_MODELS_DIR

        book = debian_file(package, member, PERSISTENT_MODELS_DIR.parent / "test-documents" / "debian")
        if book is None:
            pytest.skip(f"Debian's {package} package cannot be fetched with apt-get here")
        return Invocation(str(book))

    return build


def hostile_folder(folder: Path) -> Invocation:
    """A folder with a symlink loop, a link to its parent, a dangling link, a named pipe nobody writes to,
    a link to /dev/zero, a binary file named .txt and an empty file; one real note."""
    root = build_tree(folder / "notes", {"pier.txt": HARBOUR, "empty.txt": "", "photo.txt": bytes(range(256)) * 8})
    (root / "loop").symlink_to("loop")
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "up").symlink_to("..")
    (root / "gone.txt").symlink_to("nowhere.txt")
    (root / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe.txt")
    return Invocation(str(root))


def folder_of_junk(folder: Path) -> Invocation:
    root = build_tree(folder / "junk", {"empty.txt": "", "a.bin": b"\x7fELF" + bytes(64)})
    os.mkfifo(root / "pipe.log")
    (root / "gone.md").symlink_to("nowhere.md")
    return Invocation(str(root))


def symlink_loop_path(folder: Path) -> Invocation:
    (folder / "loop.txt").symlink_to("loop.txt")
    return Invocation(str(folder / "loop.txt"))


def dangling_path(folder: Path) -> Invocation:
    (folder / "gone.txt").symlink_to("nowhere.txt")
    return Invocation(str(folder / "gone.txt"))


def unreadable_file(folder: Path) -> Invocation:
    locked = folder / "locked.txt"
    locked.write_text(HARBOUR)
    locked.chmod(0)
    return Invocation(str(locked))


def name_with_a_newline(folder: Path) -> Invocation:
    # An empty file named to forge a second error line and retitle the terminal.
    return _file("evil\nerror: forged\x1b]0;pwned\x07.txt", b"")(folder)


def _decoded(data: bytes) -> int:
    return len(data.decode("utf-8", "replace"))


INVALID_UTF8 = b"caf\xe9 ok\nbad \xff\xfe end\nfine \xc3\xa9t\xc3\xa9\n"
MIXED = "naïve UTF-8\n".encode() + "café in Latin-1\n".encode("latin-1") + "“curly” in cp1252\n".encode("cp1252")
UTF16_TEXT = "Harbour report, UTF-16\nline 2 — ünïcödé\n"

CASES = [
    # PDFs
    Case("truncated PDF", truncated_pdf, INPUT, "truncated or corrupt", "qpdf"),
    Case("PDF cut before its xref table", pdf_without_xref, INPUT, "truncated or corrupt", "qpdf"),
    Case("PDF whose startxref points nowhere", pdf_with_wrong_startxref, 0, "damaged",
         characters=len(HARBOUR * 3) + 2 + 40 - 1),
    # PDFium finds the objects without the table and reads every page: nothing was lost, nothing to warn about.
    Case("PDF whose xref offsets are all zero", pdf_with_zeroed_xref, 0,
         characters=len(HARBOUR * 3) + 2 + 40 - 1),
    Case("HTML error page saved as .pdf", html_saved_as_pdf, INPUT, "not a readable PDF", "re-download"),
    Case("encrypted PDF, no password", encrypted("s3cret"), INPUT, "is encrypted", "--password"),
    Case("encrypted PDF, wrong password", encrypted("s3cret", "--password", "guess"), INPUT, "wrong password",
         "--password"),
    Case("encrypted PDF, right password", encrypted("s3cret", "--password", "s3cret"), 0,
         characters=len(HARBOUR * 3) + 2 + 40 - 1),
    Case("encrypted PDF with an empty user password", encrypted(""), 0, characters=len(HARBOUR * 3) + 2 + 40 - 1),
    Case("image-only PDF", image_only_pdf, INPUT, "no page has extractable text", "ocrmypdf"),
    Case("PDF with one scanned page", half_scanned_pdf, 0, "no text layer (scanned?): 2",
         characters=len(READABLE)),
    Case("PDF whose text layer is garbage on one page", garbage_text_layer, 0, "unreadable text layer",
         characters=len(READABLE)),
    Case("PDF whose text layer is garbage everywhere", garbage_everywhere, INPUT, "no page has readable text",
         "ocrmypdf --force-ocr"),
    Case("PDF page whose content stream inflates to 80 MiB", content_stream_bomb, 0, "decompression-bomb limit",
         characters=len(READABLE)),
    Case("PDF whose text layer maps to the wrong letters (not detectable)", shifted_text_layer, 0,
         characters=len("Caesar would read this") - 3),  # its spaces map to control characters, dropped
    # text
    Case("zero-byte file", _file("empty.txt", b""), INPUT, "is empty", "produced output"),
    Case("whitespace only", _file("blank.md", b" \t \n" * 1000), INPUT, "is empty", "produced output"),
    Case("binary file with a .txt name", _file("data.txt", bytes(range(256)) * 40), INPUT,
         "looks like a binary file", "`file`"),
    Case("PNG image named .txt", _file("photo.txt", b"\x89PNG\r\n\x1a\n" + bytes(500)), INPUT, "PNG image"),
    Case("binary file without a telling name", _file("blob", b"\x01\x02\x00" * 300), INPUT,
         "looks like a binary file", "memread reads"),
    Case("invalid UTF-8", _file("notes.txt", INVALID_UTF8), 0, "not valid UTF-8",
         characters=_decoded(INVALID_UTF8)),
    Case("mixed encodings in one file", _file("mixed.txt", MIXED), 0, "not valid UTF-8",
         characters=_decoded(MIXED)),
    Case("UTF-16 LE with a BOM", _file("le.txt", "\ufeff".encode("utf-16-le") + UTF16_TEXT.encode("utf-16-le")), 0,
         characters=len(UTF16_TEXT)),
    Case("UTF-16 BE with a BOM", _file("be.txt", "\ufeff".encode("utf-16-be") + UTF16_TEXT.encode("utf-16-be")), 0,
         characters=len(UTF16_TEXT)),
    Case("UTF-16 LE without a BOM", _file("nobom.txt", UTF16_TEXT.encode("utf-16-le")), 0,
         characters=len(UTF16_TEXT)),
    Case("a 10 MB single line", ten_megabyte_line, 0, characters=10 << 20, slow=True),
    Case("a megabyte of base64 without whitespace", megabyte_without_whitespace, 0, characters=1_000_000),
    Case("100k empty lines", _file("blank.log", b"\n" * 100_000), INPUT, "is empty"),
    Case("100k empty lines, then one line of text", _file("late.log", b"\n" * 100_000 + HARBOUR.encode()), 0,
         characters=100_000 + len(HARBOUR)),
    Case("a crash log padded with NUL bytes", nul_padded_log, 0,
         characters=len("boot ok\nafter the crash: restarted\n")),
    # compressed
    Case("gzip bomb (1 GiB of newlines in 1 MiB)", gzip_bomb_file, INPUT, "decompression bomb",
         "MEMREAD_MAX_EXPANSION"),
    Case("bzip2 bomb (40 MiB in 70 bytes)", bzip2_bomb_file, INPUT, "decompression bomb", "MEMREAD_MAX_EXPANSION"),
    Case("gzip bomb piped to stdin", gzip_bomb_on_stdin, INPUT, "standard input: refused", "MEMREAD_MAX_EXPANSION",
         slow=True),
    Case("small 1,000x gzip (under the 32 MiB floor)", lambda folder: Invocation(
        str(gzip_bomb(folder / "small.log.gz", 1, prefix=b"first line\n"))), 0, characters=11 + (1 << 20)),
    Case("truncated gzip log", truncated_gzip, INPUT, "truncated or corrupt", "gzip -t"),
    # EPUBs
    Case("EPUB whose zip is truncated", truncated_epub, INPUT, "not a readable EPUB", "unzip -t"),
    Case("EPUB with a missing spine item", epub_missing_a_chapter, 0, "listed but missing",
         characters=len("The Harbour\n\n312 boats were registered in 1910.\n\n"
                        "Epilogue\n\nThe harbour master retired in 1931.")),
    Case("EPUB with a damaged chapter", epub_with_a_damaged_chapter, 0, "damaged chapter",
         characters=len("The Harbour\n\n312 boats were registered in 1910.\n\n"
                        "Epilogue\n\nThe harbour master retired in 1931.")),
    Case("EPUB chapter with a billion-laughs entity bomb", epub_entity_bomb, 0,
         characters=len("The Harbour\n\n312 boats were registered in 1910.\n\nBefore &lol9; after\n\n"
                        "Epilogue\n\nThe harbour master retired in 1931.")),
    Case("EPUB zip bomb (48 MiB of zeros)", epub_bomb, INPUT, "decompression bomb", "MEMREAD_MAX_EXPANSION"),
    # folders and paths
    Case("folder with symlink loops, a FIFO, /dev/zero and junk", hostile_folder, 0,
         "skipped 9 paths (1 binary, 1 empty, 2 not regular files, 1 symlinked folders, 4 unreadable)",
         characters=len("=== pier.txt ===\n" + HARBOUR)),
    Case("folder of nothing readable", folder_of_junk, INPUT, "no readable files", "hidden and .gitignored"),
    Case("path that is a symlink loop", symlink_loop_path, INPUT, "Too many levels of symbolic links", "path"),
    Case("path that is a dangling symlink", dangling_path, INPUT, "no such file or directory", "check the path"),
    Case("file nobody may read (chmod 000)", unreadable_file, INPUT, "permission denied", "ls -l",
         skip_reason="root reads files whatever their mode; the pipe, loop and dangling-link rows cover it"
         if IS_ROOT else None),
    Case("file name with a newline and a terminal escape", name_with_a_newline, INPUT,
         "evil\\nerror: forged\\x1b]0;pwned\\x07.txt is empty"),
]

NETWORK_CASES = [
    Case("Debian's live-manual EPUB (missing spine anchors)",
         debian_epub("live-manual-epub", "live-manual.en.epub"), 0, "malformed EPUB"),
    Case("Debian's debmake-doc EPUB (missing image)", debian_epub("debmake-doc", "debmake-doc.en.epub"), 0,
         "malformed EPUB"),
]


def check(case: Case, result: Result) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.status == case.status, f"{case.id}: exit {result.status}\n{result.stderr}"
    if case.status:
        assert_one_line_error(result.stderr, case.says, case.hint)
        assert result.stdout == ""
        return
    report = json.loads(result.stdout)
    if case.says:
        assert any(case.says in warning for warning in report["warnings"]), report["warnings"]
        assert f"warning: {report['warnings'][0]}" in result.stderr
    else:
        assert report["warnings"] == [], report["warnings"]
    if case.characters is not None:
        assert report["characters"] == case.characters
    assert report["chunks"] >= 1 and report["largest_chunk"] <= CHUNK_TOKENS


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Result]]]:
    """Every selected row's build and run, started at once on a few threads (each run is its own process),
    so the catalogue costs about its slowest rows rather than their sum."""
    home = {"MEMREAD_HOME": str(tmp_path_factory.mktemp("memread-home"))}
    # A test's environment, copied once: the threads outlive the test that starts them, and each test's own
    # fixture sets and unsets os.environ meanwhile (copying it as a key went away raised KeyError: MEMREAD_HOME).
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, Path(home["MEMREAD_HOME"]))
        environment = dict(os.environ)
    selected = {item.callspec.params["case"].id for item in request.session.items
                if getattr(item, "originalname", "") == "test_a_hostile_input_gets_its_documented_outcome"}

    def run(case: Case, folder: Path) -> Result:
        invocation = case.build(folder)
        invocation.env = {**home, **invocation.env}
        return inspect(invocation, environment)

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        yield {case.id: pool.submit(run, case, tmp_path_factory.mktemp("hostile"))
               for case in CASES if case.id in selected and not case.skip_reason}


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=[pytest.mark.slow] if case.slow else [])
                                  for case in CASES])
def test_a_hostile_input_gets_its_documented_outcome(case: Case, outcomes: dict[str, Future[Result]]) -> None:
    if case.skip_reason:
        pytest.skip(case.skip_reason)
    check(case, outcomes[case.id].result())


@pytest.mark.network
@pytest.mark.parametrize("case", NETWORK_CASES, ids=[case.id for case in NETWORK_CASES])
def test_a_real_malformed_book_is_read_with_a_warning(case: Case, tmp_path: Path) -> None:
    result = inspect(case.build(tmp_path))
    check(case, result)
    report = json.loads(result.stdout)
    assert report["chapters"] > 5 and report["characters"] > 100_000  # the whole book, not its first chapter


def test_a_raised_expansion_limit_lets_a_genuine_repetitive_log_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log of one line repeated 400,000 times is 343x smaller gzipped; past the 32 MiB floor that is refused
    by default and read once the user raises the limit."""
    line = b"2026-11-22T07:00:00Z INFO worker-1 heartbeat ok\n"
    log = tmp_path / "heartbeat.log"
    log.write_bytes(line * 800_000)  # 38 MiB
    packed = compress(log, "gz")
    log.unlink()

    refused = memread("inspect", str(packed), "--json")
    assert refused.status == INPUT and "decompression bomb" in refused.stderr

    from memread.ingest import open_document

    for limit in ("1000", "0"):  # raised, or off
        monkeypatch.setenv("MEMREAD_MAX_EXPANSION", limit)
        document = open_document(str(packed))  # opened: checked past the floor, not refused
        first = next(iter(document.segments()))
        assert first.text.startswith(line.decode())

    typo = memread("inspect", str(packed), env={"MEMREAD_MAX_EXPANSION": "lots"})
    assert typo.status == 2  # a usage error, not a verdict on the file
    assert_one_line_error(typo.stderr, "MEMREAD_MAX_EXPANSION='lots' is not a number", "0 for no limit")


# --- the same inputs through `memread ask` ------------------------------------------------------------------

ASK_REFUSED = [case for case in CASES if case.id in (
    "zero-byte file", "encrypted PDF, no password", "gzip bomb (1 GiB of newlines in 1 MiB)",
    "EPUB whose zip is truncated", "binary file with a .txt name")]


@pytest.mark.parametrize("case", ASK_REFUSED, ids=[case.id for case in ASK_REFUSED])
def test_ask_refuses_bad_input_before_loading_any_model(case: Case, tmp_path: Path) -> None:
    """The model path does not exist: the input error (3) must come first, not the model error (4)."""
    invocation = case.build(tmp_path)
    result = memread("ask", invocation.source, "What happened?", "--model", str(tmp_path / "no-such.gguf"),
                     *invocation.options, stdin=invocation.stdin, env=invocation.env)
    assert "Traceback" not in result.stderr
    assert result.status == INPUT, result.stderr
    assert_one_line_error(result.stderr, case.says, case.hint)


@pytest.mark.model
def test_ask_reads_the_readable_page_of_a_garbled_pdf_and_warns(tmp_path: Path, smollm2_path: Path) -> None:
    pdf = raw_pdf(tmp_path / "garbled.pdf", [(READABLE, "plain"), ("Secret words behind a broken map", "private")])
    trace = tmp_path / "run.jsonl"
    result = memread("ask", str(pdf), "Who is named on the first page?", "--model", str(smollm2_path),
                     "--chunk-tokens", "200", "--memory-tokens", "32", "--final-tokens", "16",
                     "--temperature", "0", "--threads", "1", "--trace", str(trace), "--json", timeout=180)
    assert "Traceback" not in result.stderr
    assert result.status == 0, result.stderr
    assert "warning:" in result.stderr and "unreadable text layer" in result.stderr
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    prompts = [r["prompt"] for r in records if r["type"] == "step_finished"]
    assert prompts and READABLE in prompts[0]
    assert not any("\ue000" <= char <= "\uf8ff" for prompt in prompts for char in prompt)
    assert any(r["type"] == "warned" and "unreadable text layer" in r["message"] for r in records)


@pytest.mark.model
def test_ask_stops_at_damage_found_mid_stream_and_keeps_the_run(tmp_path: Path, smollm2_path: Path) -> None:
    """A gzipped log piped in, cut off: the chunks before the cut are read by the model and recorded, then
    memread stops with exit 3 and says how to resume."""
    import gzip

    packed = gzip.compress("".join(log_lines(12)).encode())
    trace = tmp_path / "run.jsonl"
    result = memread("ask", "-", "Which worker logged an error?", "--model", str(smollm2_path), "-s", "overwrite",
                     "--chunk-tokens", "100", "--memory-tokens", "24", "--final-tokens", "16", "--temperature", "0",
                     "--threads", "1", "--trace", str(trace), "--quiet", stdin=packed[: int(len(packed) * 0.8)],
                     timeout=180)
    assert "Traceback" not in result.stderr
    assert result.status == INPUT, result.stderr
    assert_one_line_error(result.stderr, "standard input: the gzip data is truncated or corrupt", "gzip -t")
    assert "memread resume" in result.stderr.rstrip().split("\n")[-1]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert records[0]["type"] == "header"
    assert any(r["type"] == "step_finished" for r in records), "the chunks before the cut were read"
