"""The plain lines made from a :class:`~memread.cli.viewstate.ViewState`: the progress line printed each step
when the live view is off, and the stats line at the end of a run."""

from __future__ import annotations

from memread.cli.trim import cut
from memread.cli.viewstate import ViewState, duration
from memread.events import step_summary

SUMMARY_CHARS = 80  # of one lane's step summary on a plain line


def progress_line(state: ViewState) -> str:
    """One plain line, e.g. ``[12/87] report.pdf p. 143 · rewritten · memory 812 tok · 18.2 tok/s · ETA 3m05s``:
    where the step read, what it did (its strategy's summary, for each lane that took part), then the figures."""
    total = "?" if state.total is None else str(state.total)
    parts = [f"[{state.chunks_started}/{total}]"]
    if state.chunk is not None:
        parts[0] += " " + state.chunk.describe() + (" (read again)" if state.reading_again else "")
    did = step_summaries(state)
    if did:
        parts.append(did)
    if state.lanes:
        mark = "" if state.exact_tokens else "~"
        sizes = ", ".join(f"{mark}{state.memory_tokens(lane.lane)}" for lane in state.lanes)
        parts.append(f"memory {sizes} tok")
    rate = state.tokens_per_second()
    if rate is not None:
        parts.append(f"{rate:.1f} tok/s")
    eta = state.eta_text()
    if eta is not None:
        parts.append(eta)
    return " · ".join(parts)


def step_summaries(state: ViewState) -> str:
    """What the last step did, as its strategy says (``answer 'unix' on a line sharing 2 …``, ``rewritten``),
    for each lane that took part in it, numbered when the run has several lanes."""
    said = [(lane.lane, cut(step_summary(lane.last), SUMMARY_CHARS)) for lane in state.lanes
            if lane.last is not None and lane.last.step == state.step and lane.lane in state.step_active]
    if len(state.lanes) < 2:
        return "; ".join(text for _, text in said if text)
    return "; ".join(f"{lane + 1}: {text}" for lane, text in said if text)


def stats_line(state: ViewState) -> str:
    """The one-line summary at the end of a run."""
    finished = state.finished
    # The view's own count when it saw the steps: RunFinished counts steps (a chunk read again counts again),
    # and of this session only when the run resumed.
    chunks = state.chunks_done if state.steps_done or finished is None else finished.chunks_read
    again = state.reads_again(state.steps_done)
    sessions = len(state.session_starts)
    # A resumed run's figures are the whole run's (RunFinished's are its last session's): the tokens of the
    # steps kept and the earlier sessions' time, so "40 chunks" does not stand beside the last 10's time.
    prompt = finished.prompt_tokens if finished and sessions < 2 else state.prompt_tokens
    completion = finished.completion_tokens if finished and sessions < 2 else state.completion_tokens
    earlier_wall, earlier_model = state.earlier_seconds() if sessions > 1 else (0.0, 0.0)
    wall = earlier_wall + (finished.wall_seconds if finished else state.elapsed)
    parts = [f"{chunks} chunk{'s' if chunks != 1 else ''}" + (f" ({again} read again)" if again else ""),
             f"{prompt:,} prompt + {completion:,} generated tokens", duration(wall)]
    if finished is not None and finished.model_seconds:
        parts[-1] += f" ({duration(earlier_model + finished.model_seconds)} in the model)"
    if sessions > 1:
        parts[-1] += f" in {sessions} sessions"
    if finished is not None and finished.status != "ok":
        parts.insert(0, finished.status)
    return " · ".join(parts)
