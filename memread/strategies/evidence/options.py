"""The evidence strategy's options (``-o name=value``), with the help the CLI shows for each."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EvidenceOptions:
    passages: int = field(default=8, metadata={
        "min": 1, "help": "passages a question reads, one a step, before the lines its answers came from are "
                          "checked (a round)"})
    round_share: float = field(default=0.25, metadata={
        "min": 0.0, "max": 1.0, "help": "the share of a document's passages a round reads at most (at least 4, never "
                                        "more than passages): a short document is not read passage by passage "
                                        "nearly whole; 1: a round is always `passages`"})
    rounds: int = field(default=2, metadata={
        "min": 1, "help": "rounds a question reads at most before it answers (each re-ranks with what was found)"})
    mode: str = field(default="auto", metadata={
        "choices": ("auto", "lookup", "collect", "all"),
        "help": "auto: how-many, list-every and first/last questions are collected from the whole document (--all), "
                "the rest read their best passages; lookup or collect: always that; all: read every chunk in "
                "order (slow; for what no word of the question finds)"})
    exit_gate: bool = field(default=True, metadata={
        "help": "off: read every chunk in document order (as mode=all), up to max_read"})
    max_read: float = field(default=1.0, metadata={
        "min": 0.0, "max": 1.0, "help": "the share of the chunks a question reads at most (at least one)"})
    early: int = field(default=0, metadata={
        "min": 0, "help": "a lookup's round ends at the first answer on a line sharing at least this many of the "
                          "question's words (0: every round reads all its passages; faster, may confirm a "
                          "wrong first answer)"})
