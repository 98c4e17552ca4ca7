"""docqa: the real-documents benchmark's questions, scoring, document fetching and tables."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from memread.bench import docqa, docqa_report
from memread.bench.results import score_values
from memread.errors import BackendError, UsageError


def test_the_45_questions_are_9_per_document_with_every_kind_in_each() -> None:
    every = docqa.questions()
    assert len(every) == 45
    for key in docqa.DOCS:
        own = [q for q in every if q["doc"] == key]
        assert len(own) == 9
        assert {q["kind"] for q in own} == set(docqa.KINDS)
    assert all(q["golds"] == [docqa.ABSENT_GOLD] for q in every if q["kind"] == "absent")


def test_the_design_set_is_the_20_even_numbered_questions_and_the_rest_is_held_out() -> None:
    design, held_out = docqa.select("design"), docqa.select("held-out")
    assert len(design) == 20 and len(held_out) == 25
    assert not set(design) & set(held_out)
    assert all(docqa.questions()[i]["id"].endswith(("02", "04", "06", "08")) for i in design)
    assert docqa.select("even") == design and docqa.select("odd") == held_out
    assert docqa.select("gcc-testlog,absent") == tuple(sorted(
        set(docqa.select("gcc-testlog")) | set(docqa.select("absent"))))


def test_an_unknown_selection_is_a_usage_error_that_names_what_exists() -> None:
    with pytest.raises(UsageError, match="no such docqa question") as caught:
        docqa.select("octave")
    assert "octave-pdf" in (caught.value.hint or "")


@pytest.mark.parametrize(("answer", "golds", "right"), [
    ("5 days", ["5 days"], True),
    ("It stays there 5 days.", ["5 days"], True),
    ("15 days", ["5 days"], False),  # tokens, not characters
    ("OCTAVE_JAVA_DIR", ["OCTAVE_JAVA_DIR"], True),
    ("OCTAVE-JAVA-DIR", ["OCTAVE_JAVA_DIR"], True),  # lenient: punctuation, _ and - included, is dropped
    ("The document does not say.", [docqa.ABSENT_GOLD], True),
    ("Not mentioned in the document", [docqa.ABSENT_GOLD], True),
    ("CUDA 11", [docqa.ABSENT_GOLD], False),
    (None, ["x"], False),
])
def test_an_answer_is_right_when_a_golds_tokens_occur_in_a_row_or_it_says_absent(
        answer: str | None, golds: list[str], right: bool) -> None:
    assert docqa.docqa_match(answer, golds) is right


def test_a_docqa_record_scores_only_its_extracted_answer_with_the_whole_reply_apart() -> None:
    scores = score_values("docqa", ["1000"], status="ok", prediction="The history keeps 1000 lines", reply="…",
                          boxed=False, kept="... 1000 ...")
    assert scores["lenient"] == 0.0 and scores["whole_reply"] == 1.0 and scores["kept"] == 1.0
    absent = score_values("docqa", [docqa.ABSENT_GOLD], status="ok", prediction="not in the document",
                          reply="\\boxed{not in the document}", boxed=True, kept="whatever")
    assert absent["lenient"] == 1.0 and absent["kept"] is None and absent["strict"] is None


def _deb(members: dict[str, bytes]) -> bytes:
    """A minimal Debian package: an ar archive of debian-binary, control.tar.xz and data.tar.xz."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, body in (("debian-binary", b"2.0\n"), ("control.tar.xz", b""), ("data.tar.xz", data.getvalue())):
        out.write(f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(body):<10}`\n".encode("ascii"))
        out.write(body + (b"\n" if len(body) % 2 else b""))
    return out.getvalue()


def _serve(monkeypatch: pytest.MonkeyPatch, deb: bytes, seen: list[str]) -> None:
    def download(url: str, target: Path) -> None:
        seen.append(url)
        target.write_bytes(deb)

    monkeypatch.setattr(docqa, "_download", download)


def test_a_document_is_unpacked_from_its_package_checked_and_not_fetched_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = b"binutils (2.40-2) unstable; urgency=medium\n"
    deb = _deb({"usr/share/doc/pkg/changelog.Debian.gz": gzip.compress(text)})
    spec = docqa.DocSpec("tiny", "text", "pkg=1", "pool/main/p/pkg/pkg_1_all.deb", hashlib.sha256(deb).hexdigest(),
                         "usr/share/doc/pkg/changelog.Debian.gz", "tiny.txt", hashlib.sha256(text).hexdigest(), "")
    monkeypatch.setitem(docqa.DOCS, "tiny", spec)
    monkeypatch.setenv("MEMREAD_DOCQA_DIR", str(tmp_path))
    seen: list[str] = []
    _serve(monkeypatch, deb, seen)
    path = docqa.document_path("tiny")
    assert path.read_bytes() == text
    assert seen == ["https://deb.debian.org/debian/pool/main/p/pkg/pkg_1_all.deb"]
    assert docqa.document_path("tiny") == path and len(seen) == 1  # checked by its sha256, not fetched again


def test_a_package_other_than_the_pinned_one_is_refused_and_nothing_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deb = _deb({"usr/share/doc/pkg/log": b"other"})
    spec = docqa.DocSpec("tiny", "log", "pkg=1", "pool/p.deb", "0" * 64, "usr/share/doc/pkg/log", "tiny.log",
                         "1" * 64, "")
    monkeypatch.setitem(docqa.DOCS, "tiny", spec)
    monkeypatch.setenv("MEMREAD_DOCQA_DIR", str(tmp_path))
    _serve(monkeypatch, deb, [])
    with pytest.raises(BackendError, match="not the pinned one"):
        docqa.document_path("tiny")
    assert not (tmp_path / "tiny.log").exists()


def test_a_folder_is_unpacked_whole_and_hashed_as_sha256sum_lists_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"usr/share/doc/h/html/b.html": b"<p>b</p>", "usr/share/doc/h/html/a/c.html": b"<p>c</p>"}
    deb = _deb(files)
    listing = "".join(f"{hashlib.sha256(content).hexdigest()}  ./{name.split('html/', 1)[1]}\n"
                      for name, content in sorted(files.items(), key=lambda kv: kv[0].split("html/", 1)[1]))
    spec = docqa.DocSpec("folder", "dir", "h=1", "pool/h.deb", hashlib.sha256(deb).hexdigest(), "usr/share/doc/h/html",
                         "html", hashlib.sha256(listing.encode()).hexdigest(), "")
    monkeypatch.setitem(docqa.DOCS, "folder", spec)
    monkeypatch.setenv("MEMREAD_DOCQA_DIR", str(tmp_path))
    _serve(monkeypatch, deb, [])
    path = docqa.document_path("folder")
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*.html")) == ["a/c.html", "b.html"]


def _record(method: str, qid: str, score: float, **extra: Any) -> dict[str, Any]:
    question = next(q for q in docqa.questions() if q["id"] == qid)
    return {"task": "docqa", "method": method, "status": "ok", "score": score, "seconds": 10.0, "doc_tokens": 1000,
            "prompt_tokens": 100, "prefill_tokens": 100, "prefill_seconds": 1.0, "boxed": True, "machine": "m",
            "docqa": {"id": qid, "doc": question["doc"], "kind": question["kind"], "split": docqa.split_of(question)},
            **extra}


def test_the_tables_count_per_split_kind_and_document_and_pair_methods_on_shared_questions() -> None:
    records = [_record("bm25", "gcc-testlog-01", 1.0), _record("bm25", "gcc-testlog-02", 0.0),
               _record("closed-book", "gcc-testlog-01", 0.0), _record("closed-book", "gcc-testlog-02", 0.0),
               _record("closed-book", "octave-pdf-09", 1.0)]
    data = docqa_report.figures(records)
    bm25 = data["methods"]["BM25-RAG"]
    assert bm25["all"]["right"] == 1 and bm25["all"]["n"] == 2
    assert bm25["held-out"]["right"] == 1 and bm25["design"]["right"] == 0
    assert bm25["doc"]["gcc-testlog"]["n"] == 2 and bm25["doc"]["octave-pdf"]["n"] == 0
    # 10 s for 1,000 tokens at 100 tokens/s (the method's own rate) is one whole read
    assert bm25["seconds"]["whole_reads_median"] == pytest.approx(1.0)
    pair = next(p for p in data["pairs"] if p["questions"] == "all")
    assert pair["n"] == 2 and pair["a_better"] == 1 and pair["b_better"] == 0
    text = "\n".join(docqa_report.section(records))
    assert "| BM25-RAG | 50 [" in text and "(1/2)" in text
    json.dumps(data)  # summary.json holds it


@pytest.mark.network
@pytest.mark.slow
def test_the_changelog_comes_from_debian_with_its_pinned_sha256(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMREAD_DOCQA_DIR", str(tmp_path))
    try:
        path = docqa.document_path("binutils-changelog")
    except BackendError as error:
        pytest.skip(f"the Debian mirror is not reachable: {error.message}")
    assert docqa.document_sha256(path) == docqa.DOCS["binutils-changelog"].sha256
    assert path.read_text(encoding="utf-8").startswith("binutils (2.40-2)")
