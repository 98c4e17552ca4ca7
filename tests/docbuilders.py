"""Builders of real fixture documents (PDFs, EPUBs, compressed logs, folder trees) for memread's tests.

Everything is generated on the fly with fpdf2, pypdf, ebooklib and the standard library, so no third-party
document is committed. Other test modules may import these helpers.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memread.document import Chunk, Document, Segment

SCANNED = None  # a page given as SCANNED in build_pdf holds only an image (no text layer)


def build_pdf(
    path: Path,
    pages: Sequence[str | None],
    *,
    labels: Iterable[tuple[int, str, int]] = (),
) -> Path:
    """A PDF with one page per entry of ``pages`` (text, or :data:`SCANNED` for an image-only page).

    ``labels`` are ``(first_page_index, style, start)`` runs, style as fpdf2 takes it: ``"r"`` (i, ii),
    ``"R"``, ``"D"`` (1, 2), ``"a"``, ``"A"``; e.g. ``[(0, "r", 1), (2, "D", 1)]`` labels a two-page preface
    "i", "ii" and then "1", "2", ….
    """
    from fpdf import FPDF

    starts = {index: (style, start) for index, style, start in labels}
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for index, text in enumerate(pages):
        if index in starts:
            style, start = starts[index]
            pdf.add_page(label_style=style, label_start=start)
        else:
            pdf.add_page()
        if text is SCANNED:
            pdf.image(_picture(), x=20, y=20, w=120)
        else:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def scanned_with_ocr_pdf(path: Path, text: str) -> Path:
    """One scanned page (an image) with ``text`` laid over it invisibly (render mode 3), as OCR software does."""
    from fpdf import FPDF
    from fpdf.enums import TextMode

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.image(_picture(), x=20, y=20, w=120)
    pdf.text_mode = TextMode.INVISIBLE
    pdf.set_xy(20, 30)
    pdf.multi_cell(120, 6, text)
    pdf.output(str(path))
    return path


def _picture() -> io.BytesIO:
    """A small PNG (what a scanner would produce, minus the words)."""
    from PIL import Image

    image = Image.new("RGB", (120, 80), (200, 200, 200))
    for x in range(10, 110):
        image.putpixel((x, 40), (0, 0, 0))
    data = io.BytesIO()
    image.save(data, format="PNG")
    data.seek(0)
    return data


def encrypt_pdf(source: Path, target: Path, *, user_password: str, owner_password: str = "owner") -> Path:
    """A copy of ``source`` encrypted with AES-256; an empty ``user_password`` means "opens without asking"."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(source))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    writer.write(str(target))
    return target


def truncated_copy(source: Path, target: Path, fraction: float) -> Path:
    """The first ``fraction`` of ``source``'s bytes, like an interrupted download."""
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * fraction)])
    return target


@dataclass(frozen=True)
class Chapter:
    title: str  # also the EPUB's TOC label and <title>
    body: str  # XHTML body content
    file_name: str = ""  # defaults to chN.xhtml


def build_epub(path: Path, chapters: Sequence[Chapter], *, spine: Sequence[int] | None = None) -> Path:
    """An EPUB 3 built with ebooklib; ``spine`` gives the reading order as indexes into ``chapters``."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("memread-test-book")
    book.set_title("A test book")
    book.set_language("en")
    items = []
    for index, chapter in enumerate(chapters):
        item = epub.EpubHtml(
            title=chapter.title, file_name=chapter.file_name or f"ch{index}.xhtml", lang="en"
        )
        item.content = chapter.body
        book.add_item(item)
        items.append(item)
    book.toc = [
        epub.Link(item.file_name, chapter.title, f"c{i}")
        for i, (item, chapter) in enumerate(zip(items, chapters, strict=True))
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    order = spine if spine is not None else range(len(items))
    book.spine = ["nav", *(items[i] for i in order)]
    epub.write_epub(str(path), book)
    return path


def without_member(source: Path, target: Path, member_suffix: str) -> Path:
    """A copy of the zip ``source`` lacking the member ending in ``member_suffix`` (a manifest item goes missing)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            if not info.filename.endswith(member_suffix):
                # A fresh ZipInfo: writestr() would rewrite the offsets of the old archive's entries.
                copy = zipfile.ZipInfo(info.filename, info.date_time)
                copy.compress_type = info.compress_type
                new.writestr(copy, old.read(info.filename))
    return target


def compress(path: Path, codec: str) -> Path:
    """``path`` compressed next to itself as ``.gz``, ``.bz2`` or ``.xz`` (codec is that suffix, no dot)."""
    openers: dict[str, Callable[..., Any]] = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}
    opener = openers[codec]
    target = path.with_name(path.name + "." + codec)
    with open(path, "rb") as plain, opener(target, "wb") as packed:
        while block := plain.read(1 << 20):
            packed.write(block)
    return target


def build_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Files under ``root`` from ``{"relative/path": text or bytes}``."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def log_lines(count: int, *, start: int = 1) -> Iterable[str]:
    """Realistic-looking log lines numbered from ``start`` (each ends with a newline)."""
    for number in range(start, start + count):
        level = "ERROR" if number % 97 == 0 else "INFO"
        yield f"2026-11-22T07:{number // 60 % 60:02d}:{number % 60:02d}Z {level} worker-{number % 7} request {number} done in {number % 300} ms\n"


def read_all(document: Document) -> tuple[str, list[Segment]]:
    """Iterate a document's segments once; return the concatenated text and the segments."""
    segments = list(document.segments())
    return "".join(segment.text for segment in segments), segments


# --- hostile documents (tests/test_hostile_inputs.py, tests/test_fuzz_documents.py) -----------------------------


def raw_pdf(path: Path, pages: Sequence[tuple[str, str]]) -> Path:
    """A hand-written PDF, one page per ``(text, font)``: font ``"plain"`` is Helvetica (a normal text layer),
    ``"private"`` maps every character to the private-use area (what a font without a real Unicode map
    extracts as: a garbage text layer), ``"shifted"`` maps letters one code point down (garbage that still
    reads as letters), ``"inflating"`` is plain text in a deflated content stream that inflates to 80 MiB.
    Text must be printable ASCII without parentheses or backslashes."""
    cmaps = {"private": b"<E020>", "shifted": b"<001F>"}
    objects: list[bytes] = [b"", b""]  # catalog and page tree, filled in last
    fonts = {"plain": len(objects) + 1}
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for name, start in cmaps.items():
        cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Broken def\n"
                b"1 begincodespacerange <00> <FF> endcodespacerange\n"
                b"1 beginbfrange <20> <7E> " + start + b" endbfrange\n"
                b"endcmap CMapName currentdict /CMap defineresource pop end end")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(cmap), cmap))
        objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode %d 0 R >>" % len(objects))
        fonts[name] = len(objects)
    resources = b"<< /Font << " + b" ".join(b"/%s %d 0 R" % (n.encode(), i) for n, i in fonts.items()) + b" >> >>"
    kids = []
    for text, font in pages:
        content = b"BT /%s 12 Tf 72 700 Td (%s) Tj ET" % (b"plain" if font == "inflating" else font.encode(),
                                                       text.encode("ascii"))
        if font == "inflating":  # a content stream bomb: 80 MiB of spaces behind the text, deflated to 80 KB
            import zlib

            packed = zlib.compress(content + b" " * (80 << 20), 9)
            objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(packed), packed))
        else:
            objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>"
                       % (resources, len(objects)))
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def typeset_pdf(path: Path, pages: Sequence[Sequence[str]], *, word_gap: int = 333) -> Path:
    """A PDF set the way TeX (xdvipdfmx) sets text: a subset CID font (Identity-H), each line one TJ array whose
    words are apart by ``word_gap`` thousandths of an em of kerning, never by a space character; a word split by
    a hyphen at a line's end stays split in the text layer. An extractor must see the gaps to find the words
    (pypdf loses them in Debian's policy manual, where the font's space glyph is wider than TeX's shrunk gaps;
    this small font does not reproduce that). ``word_gap=0`` sets the words touching: a text layer that truly
    has no spaces. ``pages`` are lists of lines (ASCII)."""
    letters = sorted({c for page in pages for line in page for c in line if c != " "})
    cid = {c: index + 4 for index, c in enumerate(letters)}
    cid[" "] = 3  # in the font, never shown: where pypdf takes the space's width from
    to_unicode = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /TeXLike def\n"
                  b"1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
                  + b"%d beginbfchar\n" % len(cid)
                  + b"".join(b"<%04X> <%04X>\n" % (code, ord(c)) for c, code in sorted(cid.items(), key=lambda i: i[1]))
                  + b"endbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in last
        b"<< /Type /Font /Subtype /Type0 /BaseFont /TeXLike-Identity-H /Encoding /Identity-H "
        b"/DescendantFonts [4 0 R] /ToUnicode 6 0 R >>",
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /TeXLike /CIDSystemInfo << /Registry (Adobe) "
        b"/Ordering (Identity) /Supplement 0 >> /FontDescriptor 5 0 R /DW 1000 /CIDToGIDMap /Identity "
        b"/W [3 [" + b" ".join(b"500" for _ in cid) + b"]] >>",
        b"<< /Type /FontDescriptor /FontName /TeXLike /Flags 32 /FontBBox [0 -200 1000 800] /ItalicAngle 0 "
        b"/Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(to_unicode), to_unicode),
    ]
    kids = []
    for page in pages:
        lines = []
        for number, line in enumerate(page):
            words = [b"<" + b"".join(b"%04X" % cid[c] for c in word) + b">" for word in line.split()]
            lines.append(b"BT /F1 10 Tf 72 %d Td [%s] TJ ET" % (720 - 14 * number,
                                                              (b"-%d" % word_gap if word_gap else b"").join(words)))
        content = b"\n".join(lines)
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
                       b">> /Contents %d 0 R >>" % len(objects))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    path.write_bytes(_pdf_file(objects))
    return path


def letterspaced_pdf(path: Path) -> Path:
    """One line set the way groff and Ghostscript set a man page: some word gaps are character spacing (Tc) inside
    a two-letter string, "A s" shown as ``2.7 Tc (As) Tj``. PDFium reads "Ashell" there; poppler "A shell"."""
    line = (b"BT /F1 10 Tf 72 700 Td 2.7 Tc (As) Tj 0 Tc 14.7 0 Td (hell function is called lik) Tj "
            b"2.7 Tc 162 0 Td (eas) Tj 0 Tc 23.4 0 Td (imple command.) Tj ET")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(line), line),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
        b"/Contents 4 0 R >>",
    ]
    path.write_bytes(_pdf_file(objects))
    return path


def spaceless_cff_pdf(path: Path, line: str, *, lines: int = 4) -> Path:
    """One page whose text layer has no spaces (``line`` shown ``lines`` times), in a Type 1 font embedded as CFF
    (FontFile3, here a stub): reading that font's encoding is what pypdf needs fontTools for."""
    content = b"BT /F1 10 Tf 72 700 Td " + b" ".join(b"(%s) Tj 0 -14 Td" % line.encode("ascii")
                                                    for _ in range(lines)) + b" ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [6 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /FontDescriptor 4 0 R >>",
        b"<< /Type /FontDescriptor /FontName /Helvetica /Flags 32 /FontBBox [0 -200 1000 800] /ItalicAngle 0 "
        b"/Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 /FontFile3 7 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
        b"/Contents 5 0 R >>",
        b"<< /Length 4 /Subtype /Type1C >>\nstream\nstub\nendstream",
    ]
    path.write_bytes(_pdf_file(objects))
    return path


def _pdf_file(objects: Sequence[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1; the first is the catalog), with its xref table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def gzip_bomb(path: Path, expanded_mib: int, *, filler: bytes = b"\n", prefix: bytes = b"") -> Path:
    """A gzip file that expands to ``expanded_mib`` MiB of ``filler`` (after ``prefix``), about 1,000x.

    Built in milliseconds: one compressed MiB repeated as concatenated gzip members (which gzip reads as one
    stream), so a GiB-sized bomb costs a MiB of disk."""
    member = gzip.compress(filler * (1 << 20), compresslevel=9)
    with open(path, "wb") as out:
        if prefix:
            out.write(gzip.compress(prefix))
        for _ in range(expanded_mib):
            out.write(member)
    return path


def bzip2_bomb(path: Path, expanded_mib: int) -> Path:
    """A bzip2 file of ``expanded_mib`` MiB of one repeated letter: ratios in the tens of thousands."""
    compressor = bz2.BZ2Compressor(9)
    block = b"A" * (1 << 20)
    with open(path, "wb") as out:
        for _ in range(expanded_mib):
            out.write(compressor.compress(block))
        out.write(compressor.flush())
    return path


def with_member(source: Path, target: Path, name: str, content: bytes) -> Path:
    """A copy of the zip ``source`` with one more (deflated) member: e.g. a 64 MiB run of zeros, an EPUB bomb."""
    target.write_bytes(source.read_bytes())
    with zipfile.ZipFile(target, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, content)
    return target


def damaged_member(source: Path, target: Path, member_suffix: str) -> Path:
    """A copy of the zip ``source`` whose member ending in ``member_suffix`` has its compressed bytes scrambled
    (the central directory still lists it: reading it fails with a CRC or deflate error)."""
    data = bytearray(source.read_bytes())
    with zipfile.ZipFile(source) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(member_suffix))
    name_length, extra_length = int.from_bytes(data[info.header_offset + 26: info.header_offset + 28], "little"), \
        int.from_bytes(data[info.header_offset + 28: info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_length + extra_length
    for offset in range(start, start + info.compress_size):
        data[offset] ^= 0x5A
    target.write_bytes(bytes(data))
    return target


def debian_file(package: str, member: str, cache: Path) -> Path | None:
    """``member`` (a file name, e.g. ``live-manual.en.epub``) from Debian's ``package``, fetched once with
    ``apt-get download`` and kept as ``cache/package/member``; None when apt-get or Debian's mirrors are
    unavailable. Only that file is kept (not the package), and only once it is complete."""
    import shutil
    import subprocess
    import tempfile

    kept = cache / package / member
    if kept.is_file():
        return kept
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return None
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=kept.parent) as tmp:
        try:
            subprocess.run(["apt-get", "download", package], cwd=tmp, check=True, capture_output=True, timeout=180)
            deb = next(Path(tmp).glob(f"{package}_*.deb"))
            subprocess.run(["dpkg-deb", "-x", str(deb), f"{tmp}/root"], check=True, capture_output=True,
                           timeout=120)
            found = next(Path(tmp, "root").rglob(member))
        except (subprocess.SubprocessError, OSError, StopIteration):
            return None
        shutil.copyfile(found, f"{kept}.partial")
        Path(f"{kept}.partial").rename(kept)  # complete or absent
    return kept


# --- fuzzing documents (tests/test_fuzz_documents.py, benchmarks/bench_fuzz.py) -----------------------------------


def interesting_regions(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of a PDF or zip where damage hurts most, for mutations to aim at: the whole file, and for a
    zip each member's local header and data and the central directory; for a PDF the xref table, trailer,
    stream and object headers, lengths and the encryption dictionary."""
    import re

    regions = [(0, len(data))]
    if data.startswith(b"PK\x03\x04"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                start = info.header_offset
                header = 30 + int.from_bytes(data[start + 26: start + 28], "little") + \
                    int.from_bytes(data[start + 28: start + 30], "little")
                regions += [(start, start + header), (start + header, start + header + info.compress_size)]
        central = data.find(b"PK\x01\x02")
        if central >= 0:
            regions.append((central, len(data)))
    if data.startswith(b"%PDF"):
        for keyword in (b"xref", b"trailer", b"startxref", b"stream", b" obj", b"/Length", b"/Pages", b"/Kids",
                        b"/Encrypt", b"/Filter", b"/ToUnicode", b"/PageLabels"):
            regions += [(m.start(), min(len(data), m.end() + 48)) for m in re.finditer(re.escape(keyword), data)]
    return [(start, end) for start, end in regions if end > start]


def mutations(seed: bytes) -> Any:
    """A hypothesis strategy of damaged copies of ``seed``: byte flips (aimed at :func:`interesting_regions`),
    truncation, a region replaced by junk, a number replaced by another (lengths, offsets, counts)."""
    import re

    from hypothesis import strategies as st

    regions = interesting_regions(seed)
    numbers = [(m.start(), m.end()) for m in re.finditer(rb"\d+", seed)] or [(0, 1)]

    def flipped(region: tuple[int, int]) -> Any:
        start, end = region
        flips = st.lists(st.tuples(st.integers(start, end - 1), st.integers(1, 255)), min_size=1, max_size=8)
        return flips.map(lambda pairs: _xor(seed, pairs))

    def spliced(args: tuple[tuple[int, int], bytes]) -> bytes:
        (start, end), junk = args
        return seed[:start] + junk + seed[end:]

    return st.one_of(
        st.sampled_from(regions).flatmap(flipped),
        st.integers(0, max(0, len(seed) - 1)).map(lambda cut: seed[:cut]),
        st.tuples(st.sampled_from(regions), st.binary(max_size=64)).map(spliced),
        st.tuples(st.sampled_from(numbers), st.integers(0, 2**40)).map(
            lambda args: seed[: args[0][0]] + str(args[1]).encode() + seed[args[0][1]:]),
    )


def _xor(data: bytes, flips: Iterable[tuple[int, int]]) -> bytes:
    damaged = bytearray(data)
    for position, mask in flips:
        damaged[position] ^= mask
    return bytes(damaged)


class Hang(Exception):
    """Raised by :func:`no_hang` when the code under test runs past its time limit."""


@contextmanager
def no_hang(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread if the block runs longer than ``seconds`` (SIGALRM; pure-Python
    parsers such as pypdf are interrupted wherever they loop). A no-op where SIGALRM does not exist."""
    import signal

    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_or_refuse(path: Path, *, password: str | None = None, seconds: float = 20.0) -> str:
    """Open ``path`` with memread and read every segment: ``"read"``, or ``"refused"`` for memread's
    InputError (the documented way to say no). Any other exception, or :class:`Hang`, propagates."""
    from memread.errors import InputError
    from memread.ingest import open_document

    with no_hang(seconds):
        try:
            document = open_document(str(path), password=password)
            for _segment in document.segments():
                pass
        except InputError:
            return "refused"
    return "read"


def fuzz_seeds(folder: Path) -> dict[str, bytes]:
    """Small valid documents for fuzzing, by file name: PDFs (page labels; a broken font map; empty-password
    AES encryption), an EPUB and a gzipped log."""
    labelled = build_pdf(folder / "labelled.pdf", ["Preface text.", "Chapter one: the harbour.", "More."],
                         labels=[(0, "r", 1), (1, "D", 1)])
    encrypted = encrypt_pdf(labelled, folder / "encrypted.pdf", user_password="")
    fonts = raw_pdf(folder / "fonts.pdf", [("A plain page", "plain"), ("A broken font map", "private")])
    book = build_epub(folder / "book.epub", [
        Chapter("One", "<h1>One</h1><p>The pier closed for <b>12</b> days.</p>"),
        Chapter("Two", "<h1>Two</h1><p>Boats: 312.</p><pre>a  b\n c</pre>"),
    ])
    log = folder / "server.log"
    log.write_text("".join(log_lines(400)))
    packed = compress(log, "gz")
    return {path.name: path.read_bytes() for path in (labelled, fonts, encrypted, book, packed)}


def replaced_member(source: Path, target: Path, member_suffix: str, content: bytes) -> Path:
    """A copy of the zip ``source`` whose member ending in ``member_suffix`` holds ``content`` instead."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.compress_type = info.compress_type
            data = content if info.filename.endswith(member_suffix) else old.read(info.filename)
            new.writestr(copy, data)
    return target


def billion_laughs(paragraph: str) -> bytes:
    """An XHTML page whose ``&lol9;`` entity would expand to a billion "lol"s if a parser resolved it."""
    entities = "".join(f'<!ENTITY lol{i} "{(f"&lol{i - 1};" if i > 1 else "&lol;") * 10}">\n' for i in range(1, 10))
    return (f'<?xml version="1.0"?>\n<!DOCTYPE html [\n<!ENTITY lol "lol">\n{entities}]>\n'
            f'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>{paragraph}</p></body></html>').encode()


# --- ranking (tests/test_chunkstore.py, tests/test_strategy_evidence.py) ------------------------------------------

COMMON_WORDS_QUESTION = "Which package field?"


def common_words_chunks() -> list[Chunk]:
    """Six chunks, as in a manual: every one says "package", half say "field" (both words FTS5's BM25 weighs at
    1e-6), and the first says "package" three times and "field" never; the three with "field" are long."""
    filler = " Gulls circled the pier while the ferry waited for the tide to turn again." * 2
    texts = ["A package, a package, a package.", "The field of a package." + filler,
             "A package field may be long." + filler, "A field of the package is fixed." + filler,
             "A package is built.", "A package is signed."]
    return [Chunk(i, text, len(text), (), ()) for i, text in enumerate(texts)]
