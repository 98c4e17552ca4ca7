"""Renderables of the live view, built from a :class:`ViewState` (shared by ``ask`` and ``replay``).

Every function here is pure: state in, Rich renderable out. The frame has a fixed height for a given
terminal (header, chunk, memory panes), so Rich's inline Live can repaint it without flicker.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from memread.cli.trim import cut
from memread.cli.viewstate import EXIT_GATE_HINT, LaneView, ViewState, duration, indexing_text
from memread.cli.viewtext import stats_line
from memread.events import step_summary

CHANGED = "bold green"  # bold survives NO_COLOR, so the change stays visible without colour
_SPLIT = re.compile(r"(\s+)")
MAX_PANES = 3  # more lanes than this: a compact table plus the pane of the lane that changed last


def memory_text(before: str, after: str, *, window: int | None = None) -> Text:
    """``after`` with the words that are new since ``before`` highlighted; cropped around the first
    change to about ``window`` characters."""
    old, new = _SPLIT.split(before), _SPLIT.split(after)
    spans: list[tuple[int, int]] = []
    offsets = [0]
    for piece in new:
        offsets.append(offsets[-1] + len(piece))
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert") and "".join(new[j1:j2]).strip():
            spans.append((offsets[j1], offsets[j2]))
    start = 0
    if window is not None and len(after) > window and spans:
        start = max(0, min(spans[0][0] - window // 4, len(after) - window))
        start = after.rfind(" ", 0, start) + 1 if start else 0
    text = Text("… " if start else "")
    shift = len(text) - start
    text.append(after[start:])
    for a, b in spans:
        if b > start:
            text.stylize(CHANGED, max(a, start) + shift, b + shift)
    return text


def _gates(view: LaneView) -> str:
    """What the lane's last step did, as its strategy describes it, and what the loop noticed."""
    step = view.last
    if step is None:
        return "waiting"
    parts = [step_summary(step)]
    if step.truncated:
        parts.append("cut at the limit")
    if step.parse_issues:
        parts.append(f"{len(step.parse_issues)} format issue{'s' if len(step.parse_issues) > 1 else ''}")
    if view.exited_at is not None:
        parts.append(f"stopped after {view.chunks_read} chunk{'s' if view.chunks_read != 1 else ''}")
    return " · ".join(parts)


def header(state: ViewState) -> Panel:
    grid = Table.grid(padding=(0, 2), expand=True)
    grid.add_column(ratio=1)
    grid.add_column(justify="right")
    model = Path(state.model).name if state.model else "?"
    document = state.document_name
    if len(document) > 40:  # keep the end of a long path: the file name says the most
        document = "…" + document[-39:]
    grid.add_row(Text.assemble((document, "bold"), f"  {cut(model, 32)} · {state.backend} · {state.strategy}",
                               no_wrap=True, overflow="ellipsis"),
                 Text(f"elapsed {duration(state.elapsed)}"))
    done = state.chunks_done
    reading = state.chunks_started
    counter = f"chunk {reading}/{state.total}" if state.total else f"chunk {reading}"
    again = state.reads_again()
    if again:  # steps that read a chunk again (the evidence strategy's second look): not counted as chunks
        counter += f" · {again} read again"
    rates = []
    prefill, decode = state.prefill_rate(), state.decode_rate()
    if prefill is not None and decode is not None:
        rates.append(f"prefill {prefill:.0f} tok/s · decode {decode:.1f} tok/s")
    elif state.tokens_per_second() is not None:
        rates.append(f"{state.tokens_per_second():.0f} tok/s")
    line = f"{counter} · {state.tokens_read:,} tokens read" + "".join(f" · {r}" for r in rates)
    right = state.eta_text() or ("done" if state.finished else "")
    if state.total:
        bar = Table.grid(padding=(0, 1), expand=True)
        bar.add_column(ratio=1)
        bar.add_column()
        bar.add_row(ProgressBar(total=state.total, completed=done), Text(f"{100 * done // state.total}%"))
        grid.add_row(bar, Text(""))
    grid.add_row(Text(line), Text(right))
    title = "memread" + (f" · resumed at chunk {state.resumed_from + 1}" if state.resumed_from is not None else "")
    return Panel(grid, title=title, title_align="left", box=box.ROUNDED)


def chunk_pane(state: ViewState, *, lines: int = 2, width: int = 100) -> Panel:
    chunk = state.chunk
    if chunk is None:
        waiting = indexing_text(state.indexed) if state.indexed is not None else "waiting for the first chunk"
        return Panel(Text(waiting, style="dim"), title="chunk", height=lines + 2)
    excerpt = cut(chunk.text, max(40, (width - 6) * lines))
    title = f"chunk {chunk.index + 1} · {chunk.describe()} · {chunk.tokens:,} tokens"
    if state.reason:
        title += f" · {state.reason}"
    return Panel(Text(excerpt, style="dim"), title=title, title_align="left", height=lines + 2)


def lane_pane(state: ViewState, view: LaneView, *, lines: int, width: int) -> Panel:
    mark = "" if state.exact_tokens else "~"
    title = f"memory · {mark}{state.count_tokens(view.memory)} tok"
    if len(state.lanes) > 1:
        title = f"lane {view.lane + 1} · {mark}{state.count_tokens(view.memory)} tok · " \
            f"{cut(view.question, max(12, width - 30))}"
    previous, memory = state.shown_memory(view)
    body = memory_text(previous, memory, window=max(80, (width - 4) * lines)) if memory else \
        Text("No previous memory", style="dim")
    style = "dim" if view.exited_at is not None else ""
    return Panel(body, title=title, title_align="left", subtitle=_gates(view),
                 subtitle_align="left", height=lines + 2, border_style=style)


def lanes_table(state: ViewState) -> Table:
    table = Table(box=box.SIMPLE, expand=True, show_edge=False, pad_edge=False)
    for name in ("lane", "question", "memory", "last step"):
        table.add_column(name, overflow="ellipsis", no_wrap=True)
    for view in state.lanes:
        marker = "▶ " if view.lane == state.focus else "  "
        table.add_row(f"{marker}{view.lane + 1}", view.question, f"{state.count_tokens(view.memory)} tok",
                      _gates(view))
    return table


def answer_panels(state: ViewState, *, citations: dict[int, str] | None = None) -> Group:
    """The boxed answers, their sources and the stats line (shown when the run ends)."""
    parts: list[RenderableType] = []
    for view in state.lanes:
        if view.answer is None:
            continue
        title = "answer" if len(state.lanes) == 1 else f"answer {view.lane + 1}: {cut(view.question, 60)}"
        # The full answer goes to stdout; the panel keeps to a few lines so a rambling reply cannot flood.
        body = Text(cut(view.answer.answer, 6 * 100) if len(view.answer.answer) > 600 else
                    (view.answer.answer or "(empty)"), style="bold")
        if not view.answer.boxed:
            body.append("\n(no \\boxed{} in the reply: showing the whole reply)", style="dim")
        parts.append(Panel(body, title=title, title_align="left", box=box.DOUBLE, border_style="green"))
        where = (citations or {}).get(view.lane)
        if where:
            parts.append(Text(f"  sources: {where}"))
    stopped = [v.chunks_read for v in state.lanes if v.exited_at is not None and not v.whole]
    if state.total and stopped and min(stopped) < state.total:
        parts.append(Text(f"  reading stopped early ({min(stopped)} of {state.total} chunks); {EXIT_GATE_HINT}",
                          style="dim"))
    parts.append(Text(stats_line(state), style="dim"))
    return Group(*parts)


def _wrapped_lines(text: str, width: int) -> int:
    width = max(width, 10)
    return sum(max(1, -(-len(line) // width)) for line in text.splitlines() or [""])


def frame(state: ViewState, *, height: int = 30, width: int = 100, final: bool = False,
          citations: dict[int, str] | None = None) -> Group:
    """The whole live view. ``height`` is the terminal height the frame must fit (memory panes take the rest)."""
    parts: list[RenderableType] = [header(state), chunk_pane(state, width=width)]
    used = 6 + (1 if state.total else 0) + 4 + (1 if state.warnings else 0)
    many = len(state.lanes) > MAX_PANES
    if many:
        used += len(state.lanes) + 2
    cap = max(3, min(12, height - used - 2))
    pane_width = width // min(max(len(state.lanes), 1), MAX_PANES) if not many else width
    # As tall as the longest memory needs, up to what the terminal allows: the frame grows with the memory
    # (rarely, so Live repaints stay calm) and short memories do not leave a screen of blank lines.
    lines = max(3, min(cap, max((_wrapped_lines(state.shown_memory(v)[1], pane_width - 4) for v in state.lanes),
                                default=3)))
    if many:
        parts.append(lanes_table(state))
        parts.append(lane_pane(state, state.lanes[state.focus], lines=lines, width=width))
    elif len(state.lanes) > 1:
        grid = Table.grid(expand=True, padding=(0, 1))
        for _ in state.lanes:
            grid.add_column(ratio=1)
        grid.add_row(*(lane_pane(state, view, lines=lines, width=pane_width) for view in state.lanes))
        parts.append(grid)
    elif state.lanes:
        parts.append(lane_pane(state, state.lanes[0], lines=lines, width=width))
    if state.warnings:
        parts.append(Text(f"warning: {cut(state.warnings[-1], width - 20)}"
                          + (f" (+{len(state.warnings) - 1} more)" if len(state.warnings) > 1 else ""),
                          style="yellow"))
    if final:
        parts.append(answer_panels(state, citations=citations))
    return Group(*parts)
