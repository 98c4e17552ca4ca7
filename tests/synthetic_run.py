"""A recorded-looking run built by hand: the event sequence a gated loop emits for a small paged report.

Used by the trace, citation, report, live-view and replay tests before (and besides) runs of the real loop.
"""

from __future__ import annotations

from memread.document import Chunk, Span
from memread.events import (
    Answered,
    Event,
    LaneExited,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    Warned,
)

QUESTIONS = ("How many days was the pier closed?", "Who repaired the lighthouse?")
PAGES = [
    "The harbour report for the year opens with the weather. Calm months until February.",
    "In February a storm closed the Widow's Pier for 12 days while divers checked the piles.",
    "Tourism numbers rose in the summer; the ferry added a second crossing.",
    "The lighthouse lamp was repaired by Ada Quist, the harbour engineer, in October.",
    "The year closed with a small surplus and a new crane on order.",
]
# Memory of each lane after each step (lane 1 exits after step 3).
MEMORIES = {
    0: [
        "No relevant information yet.",
        "The Widow's Pier was closed for 12 days after the February storm.",
        "The Widow's Pier was closed for 12 days after the February storm.",
        "The Widow's Pier was closed for 12 days after the February storm.",
        "The Widow's Pier was closed for 12 days after the February storm. The year closed with a surplus.",
    ],
    1: [
        "No relevant information yet.",
        "No relevant information yet.",
        "No relevant information yet.",
        "No relevant information yet.\nThe lighthouse lamp was repaired by Ada Quist in October.",
    ],
}


def chunks() -> list[Chunk]:
    return [Chunk(index=i, text=text + "\n\n", tokens=len(text.split()),
                  spans=(Span(source="report.pdf", page_first=i + 1, page_last=i + 1),))
            for i, text in enumerate(PAGES)]


def events(*, stop_after_step: int | None = None, finish: bool = True) -> list[Event]:
    """The whole run; ``stop_after_step`` cuts it as a crash would (StepStarted of the next step kept)."""
    out: list[Event] = [RunStarted(
        run_id="20261122-080000-abc123", document="report.pdf", backend="fake", model="fake-model",
        strategy="gated", questions=QUESTIONS,
        settings={"chunk_tokens": 40, "memory_tokens": 64, "temperature": 0.0, "seed": 7})]
    active = [0, 1]
    prompt_total = completion_total = 0
    for chunk in chunks():
        step = chunk.index
        out.append(StepStarted(step=step, chunk=chunk, lanes=tuple(active)))
        if stop_after_step is not None and step > stop_after_step:
            return out
        for lane in list(active):
            before = MEMORIES[lane][step - 1] if step else "No previous memory"
            after = MEMORIES[lane][step]
            update = after != before
            exit_ = lane == 1 and step == 3
            reply = (f"<check>{'yes' if update else 'no'}</check><update>{after}</update>"
                     f"<next>{'end' if exit_ else 'continue'}</next>")
            out.append(StepFinished(
                lane=lane, step=step, chunk=chunk, memory_before=before, recalled_before=None,
                prompt=f"<problem> {QUESTIONS[lane]}\n<memory>\n{before}\n</memory>\n<section>\n{chunk.text}",
                reply=reply, finish_reason="stop", memory=after, memory_changed=update, truncated=False,
                update=update, exit=exit_, prompt_tokens=100 + step, completion_tokens=20,
                seconds=0.5, state={"memory": after, "steps": step + 1}))
            prompt_total += 100 + step
            completion_total += 20
            if exit_:
                out.append(LaneExited(lane=lane, step=step, reason="exit-gate"))
                active.remove(lane)
        if step == 2:
            out.append(Warned(message="lane 0: reply had no <think>", lane=0, step=2))
    if not finish:
        return out
    answers = {0: "12", 1: "Ada Quist"}
    for lane, answer in answers.items():
        out.append(Answered(lane=lane, question=QUESTIONS[lane], answer=answer,
                            reply=f"The answer is \\boxed{{{answer}}}", boxed=True, prompt="final prompt",
                            prompt_tokens=80, completion_tokens=10, seconds=0.3))
    out.append(RunFinished(status="ok", chunks_read=5, prompt_tokens=prompt_total + 160,
                           completion_tokens=completion_total + 20, wall_seconds=9.5, model_seconds=8.6))
    return out
