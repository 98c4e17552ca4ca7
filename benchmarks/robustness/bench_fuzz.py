"""A longer fuzzing run than CI's: damaged PDFs/EPUBs/gzip through ``open_document``, arbitrary replies through
every strategy's parser (the evidence strategy's whole step: what it keeps must be word for word from the
passage) and the boxed-answer extractor, arbitrary text through the chunker.

    python -m benchmarks.robustness.bench_fuzz                                   # 2,000 examples per target, ≤ 120 s each
    python -m benchmarks.robustness.bench_fuzz --examples 20000 --seconds 900    # overnight-ish
    python -m benchmarks.robustness.bench_fuzz --targets labelled.pdf book.epub --json
    python -m benchmarks.robustness.bench_fuzz --out benchmarks/results/fuzz          # also write fuzz.md and fuzz.json

The strategies are the test suite's (:mod:`memread.testing.fuzz`: ``mutations`` of ``fuzz_seeds``, the reply
and text generators and the invariants ``tests/test_fuzz_*.py`` check). Unlike the tests, a
failure does not stop the run: every exception other than memread's InputError (documents), every broken
invariant and every read past ``--hang-seconds`` is a *finding*, grouped by exception type and the innermost
frame that raised it; the first input of each group is saved under ``benchmarks/runs/fuzz/`` to reproduce it.
Prints examples run per target and the findings; exits 1 when there are any.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._helpers import ROOT
from benchmarks._helpers import RUNS as ALL_RUNS

RUNS = ALL_RUNS / "fuzz"
DOCUMENTS = ("labelled.pdf", "fonts.pdf", "encrypted.pdf", "book.epub", "server.log.gz")
OTHERS = ("parsers", "evidence", "boxed", "chunker")


@dataclass
class Target:
    name: str
    strategy: Any
    check: Callable[[Any], None]  # raises on a finding
    examples: int = 0
    seconds: float = 0.0
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    inner = frames[-1] if frames else None
    return f"{inner.filename.rsplit('/site-packages/', 1)[-1]}:{inner.lineno}" if inner else "?"


def document_target(name: str, seed: bytes, folder: Path, hang_seconds: float) -> Target:
    from memread.testing.fuzz import Hang, mutations, read_or_refuse

    path = folder / name

    def check(damaged: bytes) -> None:
        path.write_bytes(damaged)
        try:
            read_or_refuse(path, seconds=hang_seconds)
        except Hang as error:
            raise TimeoutError(f"hang: {error}") from None

    return Target(name, mutations(seed), check)


def parser_target() -> Target:
    from hypothesis import strategies as st

    from memread.loop import LoopSettings
    from memread.strategies import tags
    from memread.strategies.callback import parse_recall, parse_update
    from memread.strategies.gated import GatedStrategy, parse_gated
    from memread.strategies.overwrite import OverwriteStrategy
    from memread.testing.fuzz import CHUNK, completion, replies

    gated = GatedStrategy(LoopSettings(strategy="gated"))
    overwrite = OverwriteStrategy(LoopSettings())

    def check(args: tuple[str, bool]) -> None:
        reply, stopped = args
        parsed = parse_gated(reply, stopped_early=stopped)
        assert parsed.check in (None, True, False) and parsed.next in (None, "continue", "end")
        result = gated.read_reply(0, "q", {"memory": "m"}, CHUNK, completion(reply))
        assert result.memory, "gated emptied the memory"
        memory, _ = parse_update(reply)
        assert memory is None or memory == memory.strip()
        parse_recall(reply)
        assert overwrite.read_reply(0, "q", {"memory": "m"}, CHUNK, completion(reply)).memory
        for name in ("check", "update", "next", "recall", "think"):
            tags.find_all(tags.clean(reply), name, until=("update", "next"))
            tags.remove_blocks(reply, name)
        tags.split_thinking(reply)

    return Target("parsers", st.tuples(replies, st.booleans()), check)


def evidence_target() -> Target:
    from hypothesis import strategies as st

    from memread.testing.fuzz import evidence_step_holds, evidence_strategy, numbers_reply, picks_hold

    strategy, chunk = evidence_strategy()  # one index for the whole run; each example starts from no evidence

    def check(args: tuple[list[str], int, int]) -> None:
        replies, count, limit = args
        state = strategy.initial_state()
        for reply in replies:
            picks_hold(reply, count, limit)
            state = evidence_step_holds(strategy, chunk, state, reply)

    return Target("evidence", st.tuples(st.lists(numbers_reply, min_size=1, max_size=3), st.integers(0, 60),
                                        st.integers(1, 8)), check)


def boxed_target() -> Target:
    from hypothesis import strategies as st

    from memread.answer import extract_boxed, final_answer, last_boxed_only_string, strict_match
    from memread.testing.fuzz import balanced, replies

    def check(args: tuple[str, str, str]) -> None:
        noise, content, tail = args
        boxed = last_boxed_only_string(noise)
        assert boxed is None or boxed in noise
        final_answer(noise, style="therefore")
        strict_match(noise, ["x"])
        if "\\" not in tail:
            assert extract_boxed(f"{noise}</think>\\boxed{{{content}}}{tail}") == content.strip()

    return Target("boxed", st.tuples(replies, balanced, st.text(max_size=20)), check)


def chunker_target() -> Target:
    from hypothesis import strategies as st

    from memread.testing.fuzz import check_chunks, segment_lists
    from memread.tokens import TiktokenTokenizer

    tokenizer = TiktokenTokenizer()
    return Target("chunker", st.tuples(segment_lists, st.integers(16, 300)),
                  lambda args: check_chunks(tokenizer, args[0], args[1]))


def run(target: Target, examples: int, seconds: float, batch: int = 100) -> None:
    from hypothesis import HealthCheck, Phase, given, settings

    started = time.monotonic()
    deadline = started + seconds

    def body(value: Any) -> None:
        if time.monotonic() > deadline or target.examples >= examples:
            return
        target.examples += 1
        try:
            target.check(value)
        except Exception as error:  # noqa: BLE001 - every exception is a finding, recorded and the run goes on
            key = f"{type(error).__name__} at {_where(error)}"
            finding = target.findings.setdefault(key, {"count": 0, "message": str(error)[:200]})
            finding["count"] += 1
            if finding["count"] == 1:
                RUNS.mkdir(parents=True, exist_ok=True)
                saved = RUNS / f"{target.name}-{len(target.findings)}.input"
                data = value if isinstance(value, bytes) else repr(value).encode("utf-8", "backslashreplace")
                saved.write_bytes(data)
                finding["input"] = str(saved.relative_to(ROOT))

    configured = settings(max_examples=batch, deadline=None, database=None, phases=[Phase.generate],
                          suppress_health_check=list(HealthCheck))
    # hypothesis types what given() returns as a function without annotations; it takes no arguments here
    batch_run: Callable[[], None] = given(target.strategy)(configured(body))  # type: ignore[no-untyped-call]
    while target.examples < examples and time.monotonic() < deadline:
        before = target.examples
        batch_run()
        if target.examples == before:
            break  # the strategy is exhausted
    target.seconds = time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000, help="examples per target (default 2000)")
    parser.add_argument("--seconds", type=float, default=120.0, help="time limit per target (default 120)")
    parser.add_argument("--hang-seconds", type=float, default=20.0, help="a document read longer than this hangs")
    parser.add_argument("--targets", nargs="+", default=[*DOCUMENTS, *OTHERS], choices=[*DOCUMENTS, *OTHERS])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--out", help="also write OUT.md and OUT.json (figures, command, machine load)")
    options = parser.parse_args()
    load_before = os.getloadavg()

    from memread.testing.fuzz import fuzz_seeds

    results = []
    with tempfile.TemporaryDirectory(prefix="memread-fuzz-") as tmp:
        seeds = fuzz_seeds(Path(tmp))
        work = Path(tmp) / "work"
        work.mkdir()
        builders: dict[str, Callable[[], Target]] = {
            "parsers": parser_target, "evidence": evidence_target, "boxed": boxed_target, "chunker": chunker_target,
            **{name: functools.partial(document_target, name, seeds[name], work, options.hang_seconds)
               for name in DOCUMENTS},
        }
        for name in options.targets:
            target = builders[name]()
            run(target, options.examples, options.seconds)
            results.append(target)
            if not options.json:
                status = f"{len(target.findings)} finding(s)" if target.findings else "no findings"
                print(f"{target.name:16} {target.examples:7,} examples in {target.seconds:6.1f} s  {status}",
                      flush=True)
                for key, finding in target.findings.items():
                    print(f"    {key} (x{finding['count']}): {finding['message']}  [{finding.get('input')}]")
    total = sum(t.examples for t in results)
    findings = sum(len(t.findings) for t in results)
    report = {"examples": total, "findings": findings, "targets": [
        {"target": t.name, "examples": t.examples, "seconds": round(t.seconds, 1), "findings": t.findings}
        for t in results]}
    if options.out:
        write_result(options.out, report, options, load_before)
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"total            {total:7,} examples, {findings} finding(s)")
    return 1 if findings else 0


def write_result(out: str, report: dict[str, Any], options: argparse.Namespace,
                 load_before: tuple[float, ...]) -> None:
    from benchmarks._helpers import result_files

    rows = [[f"`{t['target']}`", f"{t['examples']:,}", t["seconds"], len(t["findings"]) or "none"]
            for t in report["targets"]]
    found = "".join(
        f"\n- `{t['target']}`: {key} (×{f['count']}): {f['message']}" for t in report["targets"]
        for key, f in t["findings"].items()
    )
    body = f"""
Damaged documents through `open_document` (mutations of generated seeds: a PDF with page labels, a PDF with a
font lacking a Unicode map, an encrypted PDF, an EPUB, a gzip log), arbitrary replies through every strategy's
parser, arbitrary text around `\\boxed{{}}`, and arbitrary text through the chunker: up to {options.examples:,}
examples or {options.seconds:g} s per target. A finding is any exception other than memread's own refusal of
a document (`InputError`), a broken invariant, or a read longer than {options.hang_seconds:g} s.

**{report['examples']:,} examples, {report['findings']} finding(s).**{found}

{result_files.table(["target", "examples", "seconds", "findings"], rows)}
"""
    result_files.write(out, title="Fuzzing the readers, parsers and chunker", body=body, data=report,
                       load_before=load_before, load_after=os.getloadavg(), ratios=False)


if __name__ == "__main__":
    sys.exit(main())
