"""× whole read: a sample's wall time against the time it would take just to prefill its document once, which
every method that reads all of the document must at least spend.

That time is the document's tokens ÷ a prefill rate: prompt tokens ÷ the engine's own prompt time (time to first
token), measured over the calls of **the same method, in the same results folder, on the same machine** — over
its reading-loop step calls (chunk-sized prompts) when the method is a reading loop, else over all its calls
(BM25-RAG's one prompt of passages, full context's whole document, closed book's question alone). A method's
figure thus depends on its own records only: the same records give the same figure whatever other methods share
their folder or a ``--compare`` report, and a sample run on a slower CPU is measured against that CPU, so the
ratio compares methods across machines where seconds cannot. The machine is the record's ``machine`` (the CPU
llama.cpp ran on, :attr:`memread.cpu.Cpu.identity`); records made before it was recorded form one group per
method and folder.

It is an estimate from that rate, not a measurement per sample. For a document longer than the model's window
it is a floor no single call could reach (attention over a longer prompt only costs more per token); with a
prefix cache on it would be optimistic (cached tokens are counted, not prefilled). Backends that report no
prompt time leave it unmeasured.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

# A rate's group: (results folder, or None for the report's own; method; machine, or None when not recorded)
RateKey = tuple[str | None, str, str | None]
Rate = tuple[float | None, str]  # prompt tokens per second (None: not measured), and the calls it was measured on

DEFINITION = ("seconds per sample ÷ (document tokens ÷ the prefill rate the method measured in its own folder on "
              "its own machine): the time to prefill the whole document once is the floor every method that reads "
              "all of it pays; past the model's window it is an estimate no single call could reach")


def is_loop(record: dict[str, Any]) -> bool:
    """A reading-loop record counts the chunks it read; one-prompt baselines leave that None."""
    return record.get("chunks_read") is not None


def measure(records: Iterable[dict[str, Any]]) -> Rate:
    """Prompt tokens per second over the records' reading-loop step calls (else every call) that reported prefill
    time, and which of the two it was."""
    records = list(records)
    for chosen, basis in (([r for r in records if is_loop(r)], "reading-loop step calls"), (records, "all calls")):
        tokens = sum(int(r.get("prefill_tokens") or 0) for r in chosen)
        seconds = sum(float(r.get("prefill_seconds") or 0.0) for r in chosen)
        if tokens and seconds > 0:
            return tokens / seconds, basis
    return None, "not measured"


def prefill_rate(records: Iterable[dict[str, Any]]) -> float | None:
    """Prompt tokens per second over the loop's step calls (else every call) that reported prefill time."""
    return measure(records)[0]


def rate_key(record: dict[str, Any]) -> RateKey:
    return record.get("source"), str(record["method"]), record.get("machine")


def rates(records: Sequence[dict[str, Any]]) -> dict[RateKey, Rate]:
    """One prefill rate per results folder, method and machine, each measured on that group's own calls."""
    groups: dict[RateKey, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[rate_key(record)].append(record)
    return {key: measure(group) for key, group in groups.items()}


def ratio(records: Sequence[dict[str, Any]], measured: dict[RateKey, Rate]) -> float | None:
    """Σ seconds ÷ Σ whole reads over the records whose group has a rate (None when none has)."""
    floor = timed = 0.0
    for record in records:
        rate = measured[rate_key(record)][0]
        if rate:
            floor += int(record.get("doc_tokens") or 0) / rate
            timed += float(record.get("seconds") or 0.0)
    return timed / floor if floor else None
