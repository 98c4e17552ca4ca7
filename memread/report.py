"""The ``--json`` result: one object with the answer, citations, per-lane results, stats and the trace path.

:class:`RunReport` is a sink: attach it to the loop, then call :meth:`RunReport.result`. It can also be fed
the events of a saved trace (``memread traces show --json``). Field names are stable; the shape is
:data:`RESULT_SCHEMA`, documented in docs/json-output.md. Add fields, never rename or remove one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memread.citations import cite
from memread.events import (
    Answered,
    Event,
    LaneExited,
    RunFinished,
    RunStarted,
    StepFinished,
    Warned,
    note_read,
)
from memread.version import __version__

RESULT_VERSION = 1


class RunReport:
    """Collects a run's events into the ``--json`` result object.

    ``history``: the events of a trace being resumed, as ``trace.events()`` gives them ((time, event)
    pairs, like the progress sinks take; bare events work too), so the result covers the whole run.
    """

    def __init__(self, history: Iterable[Event | tuple[float, Event]] = ()) -> None:
        self.started: RunStarted | None = None
        self.steps: dict[int, list[StepFinished]] = {}
        self.exited: dict[int, int] = {}
        self.answers: dict[int, Answered] = {}
        self.warnings: list[Warned] = []
        self.sessions: list[RunFinished] = []  # one per session that ended cleanly (kill -9 leaves none)
        # Each session's start time (None when the events came without times, as live ones do), whether it
        # ended cleanly, and when its steps finished ((lane, step) -> (session, time)): a session that kill -9
        # or a crash ended wrote no RunFinished, and its seconds are counted from its start to its last step kept.
        self._starts: list[float | None] = []
        self._ended: list[bool] = []
        self._when: dict[tuple[int, int], tuple[int, float | None]] = {}
        for item in history:
            if isinstance(item, tuple):
                self._take(item[1], item[0])
            else:
                self._take(item, None)

    @property
    def finished(self) -> RunFinished | None:
        return self.sessions[-1] if self.sessions else None

    def __call__(self, event: Event) -> None:
        self._take(event, None)

    def _take(self, event: Event, when: float | None) -> None:
        if isinstance(event, RunStarted):
            self._starts.append(when)
            self._ended.append(False)
            if self.started is None:
                self.started = event
            elif event.resumed_from_step is not None:
                # A resumed session redoes the step a crash cut short: forget what was recorded of it.
                start = event.resumed_from_step
                self.steps = {lane: [s for s in steps if s.step < start] for lane, steps in self.steps.items()}
                self.exited = {lane: step for lane, step in self.exited.items() if step < start}
                self.warnings = [w for w in self.warnings if w.step is None or w.step < start]
        elif isinstance(event, StepFinished):
            self.steps.setdefault(event.lane, []).append(event)
            self._when[event.lane, event.step] = (len(self._starts) - 1, when)
        elif isinstance(event, LaneExited):
            self.exited[event.lane] = event.step
        elif isinstance(event, Answered):
            self.answers[event.lane] = event
        elif isinstance(event, Warned):
            self.warnings.append(event)
        elif isinstance(event, RunFinished):
            self.sessions.append(event)
            if self._ended:
                self._ended[-1] = True

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> RunReport:
        report = cls()
        for event in events:
            report(event)
        return report

    @classmethod
    def from_trace(cls, trace: Any) -> RunReport:
        """The report of a saved run (all sessions of a resumed run)."""
        return cls(history=trace.events())

    def _seconds(self) -> tuple[float, float] | None:
        """(wall, model) seconds of the run, summed over its sessions: a clean end's own figures, the others'
        by :func:`kept_steps_seconds`. None when no session says anything (none ended, no step with a time)."""
        unended = []
        for lane_steps in self.steps.values():
            for step in lane_steps:
                session, when = self._when.get((step.lane, step.step), (-1, None))
                start = self._starts[session] if session >= 0 else None
                if start is not None and when is not None and not self._ended[session]:
                    unended.append((session, step.step, step.seconds, when - start))
        if not self.sessions and not unended:
            return None
        return sessions_seconds(self.sessions, unended)

    def _chunks_read(self) -> int:
        """Distinct chunks the run read: its steps less those that read a chunk an earlier step read (a strategy
        that chooses its order may read one again). Counted from the steps, so a report that did not see a
        resumed run's earlier session still counts the chunks read in document order before it."""
        steps = sorted((s for lane in self.steps.values() for s in lane), key=lambda s: s.step)
        first: dict[int, int] = {}
        again: set[int] = set()
        for step in steps:
            note_read(first, again, step.step, step.chunk.index)
        return max((s.step + 1 for s in steps), default=0) - len(again)

    def _lane(self, lane: int, question: str) -> dict[str, Any]:
        steps = self.steps.get(lane, [])
        answer = self.answers.get(lane)
        return {
            "lane": lane,
            "question": question,
            "answer": answer.answer if answer else None,
            "reply": answer.reply if answer else None,
            "boxed": answer.boxed if answer else False,
            "memory": steps[-1].memory if steps else None,
            "chunks_read": len({s.chunk.index for s in steps}),  # a chunk read again counts once
            "exited_at": self.exited.get(lane),
            "citations": [c.to_dict() for c in cite(steps)],
            "prompt_tokens": sum(s.prompt_tokens for s in steps) + (answer.prompt_tokens if answer else 0),
            "completion_tokens": sum(s.completion_tokens for s in steps)
            + (answer.completion_tokens if answer else 0),
            "truncated_steps": [s.step for s in steps if s.truncated],
            "warnings": list(answer.warnings) if answer else [],
        }

    def result(self, *, trace_path: str | None = None, error: str | None = None) -> dict[str, Any]:
        """The result object (see docs/json-output.md)."""
        started = self.started
        questions = list(started.questions) if started else sorted({*self.steps, *self.answers})
        lanes = [self._lane(i, str(q)) for i, q in enumerate(questions)]
        finished = self.finished
        first = lanes[0] if lanes else {}
        chunks_read = self._chunks_read()
        seconds = self._seconds()
        return {
            "version": RESULT_VERSION,
            "memread_version": __version__,
            "run_id": started.run_id if started else None,
            "status": finished.status if finished else "interrupted",
            "answer": first.get("answer"),
            "reply": first.get("reply"),
            "boxed": first.get("boxed", False),
            "citations": first.get("citations", []),
            "lanes": lanes,
            "document": started.document if started else None,
            "model": started.model if started else None,
            "backend": started.backend if started else None,
            "strategy": started.strategy if started else None,
            "settings": dict(started.settings) if started else {},
            "stats": {
                "chunks_read": chunks_read,
                "prompt_tokens": sum(lane["prompt_tokens"] for lane in lanes),
                "completion_tokens": sum(lane["completion_tokens"] for lane in lanes),
                "wall_seconds": round(seconds[0], 3) if seconds else None,
                "model_seconds": round(seconds[1], 3) if seconds else None,
            },
            "trace": trace_path,
            "warnings": [{"message": w.message, "lane": w.lane, "step": w.step} for w in self.warnings],
            "error": error if error is not None else (finished.error if finished else None),
        }


def sessions_seconds(ended: Iterable[RunFinished],
                     unended_steps: Iterable[tuple[int, int, float, float]]) -> tuple[float, float]:
    """(wall, model) seconds of a run's sessions: those that ended (done, Ctrl-C, an error) by their own
    RunFinished, the others by :func:`kept_steps_seconds` of their steps."""
    ended = list(ended)
    wall, model = kept_steps_seconds(unended_steps)
    return wall + sum(end.wall_seconds for end in ended), model + sum(end.model_seconds for end in ended)


def kept_steps_seconds(steps: Iterable[tuple[int, int, float, float]]) -> tuple[float, float]:
    """(wall, model) seconds of sessions that wrote no RunFinished (kill -9, a crash, still going), from their
    steps kept, each ``(session, step, model seconds, seconds since its session began)``: a session lasted
    until its last step kept (the step it cut short is redone by the next), and its model time is those steps'
    calls (the lanes of a step share one batch: its longest call)."""
    last: dict[int, float] = {}
    calls: dict[tuple[int, int], float] = {}
    for session, step, seconds, since in steps:
        last[session] = max(last.get(session, 0.0), since)
        calls[session, step] = max(calls.get((session, step), 0.0), seconds)
    return sum(last.values()), sum(calls.values())


_SPAN = {
    "type": "object",
    "required": ["source"],
    "properties": {
        "source": {"type": "string"},
        "page_first": {"type": "integer"}, "page_last": {"type": "integer"},
        "label_first": {"type": "string"}, "label_last": {"type": "string"},
        "chapters": {"type": "array", "items": {"type": "string"}},
        "line_first": {"type": "integer"}, "line_last": {"type": "integer"},
    },
    "additionalProperties": False,
}
_CITATION = {
    "type": "object",
    "required": ["lane", "step", "chunk", "where", "spans", "weight", "excerpt"],
    "properties": {
        "lane": {"type": "integer"}, "step": {"type": "integer"}, "chunk": {"type": "integer"},
        "where": {"type": "string"}, "spans": {"type": "array", "items": _SPAN},
        "weight": {"type": "integer"}, "excerpt": {"type": "string"},
    },
}
_NULLABLE_STR = {"type": ["string", "null"]}
_LANE = {
    "type": "object",
    "required": ["lane", "question", "answer", "reply", "boxed", "memory", "chunks_read", "exited_at",
                 "citations", "prompt_tokens", "completion_tokens", "truncated_steps", "warnings"],
    "properties": {
        "lane": {"type": "integer"}, "question": {"type": "string"}, "answer": _NULLABLE_STR,
        "reply": _NULLABLE_STR, "boxed": {"type": "boolean"}, "memory": _NULLABLE_STR,
        "chunks_read": {"type": "integer"}, "exited_at": {"type": ["integer", "null"]},
        "citations": {"type": "array", "items": _CITATION},
        "prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"},
        "truncated_steps": {"type": "array", "items": {"type": "integer"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
}
RESULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "memread result",
    "type": "object",
    "required": ["version", "memread_version", "run_id", "status", "answer", "reply", "boxed", "citations",
                 "lanes", "document", "model", "backend", "strategy", "settings", "stats", "trace",
                 "warnings", "error"],
    "properties": {
        "version": {"const": RESULT_VERSION},
        "memread_version": {"type": "string"},
        "run_id": _NULLABLE_STR,
        "status": {"enum": ["ok", "interrupted", "failed"]},
        "answer": _NULLABLE_STR, "reply": _NULLABLE_STR, "boxed": {"type": "boolean"},
        "citations": {"type": "array", "items": _CITATION},
        "lanes": {"type": "array", "items": _LANE},
        "document": _NULLABLE_STR, "model": _NULLABLE_STR, "backend": _NULLABLE_STR, "strategy": _NULLABLE_STR,
        "settings": {"type": "object"},
        "stats": {
            "type": "object",
            "required": ["chunks_read", "prompt_tokens", "completion_tokens", "wall_seconds", "model_seconds"],
            "properties": {
                "chunks_read": {"type": "integer"}, "prompt_tokens": {"type": "integer"},
                "completion_tokens": {"type": "integer"},
                "wall_seconds": {"type": ["number", "null"]}, "model_seconds": {"type": ["number", "null"]},
            },
        },
        "trace": _NULLABLE_STR,
        "warnings": {"type": "array", "items": {
            "type": "object", "required": ["message", "lane", "step"],
            "properties": {"message": {"type": "string"}, "lane": {"type": ["integer", "null"]},
                           "step": {"type": ["integer", "null"]}}}},
        "error": _NULLABLE_STR,
    },
}
