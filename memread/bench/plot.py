"""Accuracy against length as an SVG, one line per method on a log axis with each point's 95 % interval, like
MemAgent's Figure 1. Standard library only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

from memread.bench.cells import Cell, length_label, method_label, method_rank

COLOURS = {"overwrite": "#1f77b4", "gated": "#2ca02c", "callback": "#9467bd", "full": "#d62728",
           "bm25": "#ff7f0e", "closed-book": "#7f7f7f"}
_OTHER_COLOURS = ("#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939")


def svg_plot(task_cells: Sequence[Cell], *, title: str, width: int = 680, height: int = 420) -> str:
    """Accuracy (%) against length on a log x axis, one line per method; N/A points are left out."""
    left, right, top, bottom = 60, 190, 40, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    lengths = sorted({c.length for c in task_cells}) or [1]
    unit = task_cells[0].unit if task_cells else ""
    lo, hi = math.log(lengths[0]), math.log(lengths[-1])
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1

    def x(length: int) -> float:
        return left + (math.log(length) - lo) / (hi - lo) * plot_w

    def y(accuracy: float) -> float:
        return top + (1 - accuracy) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left + plot_w / 2:.1f}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    for tick in range(0, 101, 20):
        ty = y(tick / 100)
        parts.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end">{tick}</text>')
    for length in lengths:
        tx = x(length)
        parts.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + plot_h}" stroke="#eee"/>')
        parts.append(f'<text x="{tx:.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                     f'{escape(length_label(length, unit))}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 18}" text-anchor="middle">'
                 f'length ({escape(unit)}, log scale)</text>')
    parts.append(f'<text x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">accuracy (%)</text>')
    methods = sorted({c.method for c in task_cells}, key=method_rank)
    spare = iter(_OTHER_COLOURS * (1 + len(methods) // len(_OTHER_COLOURS)))
    for row, method in enumerate(methods):
        colour = COLOURS.get(method) or next(spare)
        label = escape(method_label(method))
        points = sorted((c.length, c.accuracy, c.n, c.interval("accuracy")) for c in task_cells
                        if c.method == method and c.accuracy is not None and c.n > 0)
        if len(points) > 1:
            path = " ".join(f"{x(p[0]):.1f},{y(p[1]):.1f}" for p in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for length, accuracy, n, interval in points:
            if interval:  # the 95 % interval as a whisker
                parts.append(f'<line x1="{x(length):.1f}" y1="{y(interval[0]):.1f}" x2="{x(length):.1f}" '
                             f'y2="{y(interval[1]):.1f}" stroke="{colour}" stroke-width="1" opacity="0.6"/>')
            parts.append(f'<circle cx="{x(length):.1f}" cy="{y(accuracy):.1f}" r="4" fill="{colour}">'
                         f'<title>{label} at {length}: {100 * accuracy:.1f}% (n={n})</title></circle>')
        ly = top + 10 + row * 20
        lx = left + plot_w + 16
        parts.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 22}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{lx + 28}" y="{ly + 4}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
