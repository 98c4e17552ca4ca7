"""Hostile fixture documents for tests of memread's readers: hand-written PDFs (broken Unicode maps, TeX-like and
groff-like spacing, a content-stream bomb), decompression bombs, zips with damaged, missing or replaced members,
and XML entity expansion. Written byte by byte with the standard library, so they are exactly what they say."""

from __future__ import annotations

import bz2
import gzip
import zipfile
from collections.abc import Sequence
from pathlib import Path


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
    path.write_bytes(_pdf_file(objects))
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
