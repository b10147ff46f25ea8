"""Inline SVG charts for the analytics report: pure functions from numbers to markup.

No library, no script, no network: each function returns one ``<svg>`` element with a ``<title>``
per mark (hover text), axis ticks at round numbers, and a legend where a chart has several series.
Every chart carries ``data-chart="<name>"`` so tests (and people) can find it in the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "PALETTE",
    "Box",
    "Series",
    "box_plots",
    "empty_chart",
    "grouped_bars",
    "horizontal_bars",
    "nice_ticks",
    "stacked_bars",
]

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#ad494a",
)
_WIDTH = 760
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


@dataclass(frozen=True)
class Series:
    name: str
    values: tuple[float, ...]
    color: str


@dataclass(frozen=True)
class Box:
    """A distribution summary for one box: whiskers at min/max, box p25–p75, marks at p50/p95."""

    n: int
    low: float
    p25: float
    p50: float
    p75: float
    p95: float
    high: float


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps up to at least ``top`` (1, 2, 2.5 or 5 times a power of ten)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < top:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _fmt(value: float, unit: str = "") -> str:
    if unit == "%":
        return f"{value * 100:.0f}%" if value * 100 == round(value * 100) else f"{value:.1%}"
    text = f"{value:,.0f}" if value == round(value) else f"{value:,.1f}"
    return f"{text}{(' ' + unit) if unit else ''}"


def _open(name: str, title: str, height: int) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" data-chart="{escape(name)}" role="img" '
        f'width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="#ffffff"/>',
    ]


def _legend(series: Sequence[tuple[str, str]], y: int) -> list[str]:
    out, x = [], 60
    for name, color in series:
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{y}" {_FONT}>{escape(name)}</text>')
        x += 24 + 7 * len(name)
        if x > _WIDTH - 120:
            x, y = 60, y + 16
    return out


def empty_chart(name: str, title: str, message: str) -> str:
    parts = _open(name, title, 80)
    parts.append(f'<text x="20" y="45" {_FONT} fill="#666666">{escape(message)}</text>')
    return "\n".join([*parts, "</svg>"])


def stacked_bars(
    name: str,
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    line: Series | None = None,
    unit: str = "",
) -> str:
    """Vertical bars per category, each stacked from the series' values; ``line`` is drawn over
    them as a polyline with one dot per category."""
    if not categories:
        return empty_chart(name, title, "no data in this range")
    legend_rows = 1 + sum(7 * len(s.name) + 24 for s in series) // (_WIDTH - 180)
    height = 260 + 16 * legend_rows
    left, top, bottom = 60, 20, 200
    totals = [sum(s.values[i] for s in series) for i in range(len(categories))]
    ticks = nice_ticks(max(totals) if totals else 0)
    scale = (bottom - top) / ticks[-1]
    slot = (_WIDTH - left - 20) / len(categories)
    bar = max(2.0, min(40.0, slot * 0.7))
    parts = _open(name, title, height)
    parts += _y_axis(ticks, left, top, bottom, scale, unit)
    for i, category in enumerate(categories):
        x = left + i * slot + (slot - bar) / 2
        y = float(bottom)
        for s in series:
            value = s.values[i]
            if value <= 0:
                continue
            h = value * scale
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{s.color}"><title>{escape(category)} · {escape(s.name)}: '
                f"{_fmt(value, unit)}</title></rect>"
            )
        if len(categories) <= 16 or i % math.ceil(len(categories) / 16) == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{bottom + 14}" text-anchor="middle" {_FONT}>'
                f"{escape(category[-5:] if len(category) == 10 else category)}</text>"
            )
    if line is not None:
        points = [
            (left + i * slot + slot / 2, bottom - value * scale)
            for i, value in enumerate(line.values)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{line.color}" stroke-width="2"/>'
        )
        for (x, y), category, value in zip(points, categories, line.values, strict=True):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{line.color}"><title>'
                f"{escape(category)} · {escape(line.name)}: {_fmt(value, unit)}</title></circle>"
            )
    legend = [(s.name, s.color) for s in series]
    parts += _legend([*legend, (line.name, line.color)] if line else legend, bottom + 40)
    return "\n".join([*parts, "</svg>"])


def grouped_bars(
    name: str, title: str, categories: Sequence[str], series: Sequence[Series], *, unit: str = ""
) -> str:
    """Vertical bars per category, one bar per series side by side."""
    if not categories:
        return empty_chart(name, title, "no data in this range")
    height, left, top, bottom = 270, 60, 20, 200
    top_value = max((v for s in series for v in s.values), default=0)
    ticks = nice_ticks(top_value if unit != "%" else max(top_value, 0.05))
    scale = (bottom - top) / ticks[-1]
    slot = (_WIDTH - left - 20) / len(categories)
    bar = max(2.0, min(36.0, slot * 0.8 / max(1, len(series))))
    parts = _open(name, title, height)
    parts += _y_axis(ticks, left, top, bottom, scale, unit)
    for i, category in enumerate(categories):
        x0 = left + i * slot + (slot - bar * len(series)) / 2
        for j, s in enumerate(series):
            value = s.values[i]
            h = max(0.0, value * scale)
            parts.append(
                f'<rect x="{x0 + j * bar:.1f}" y="{bottom - h:.1f}" width="{bar - 1:.1f}" '
                f'height="{h:.1f}" fill="{s.color}"><title>{escape(category)} · '
                f"{escape(s.name)}: {_fmt(value, unit)}</title></rect>"
            )
        parts.append(
            f'<text x="{left + i * slot + slot / 2:.1f}" y="{bottom + 14}" text-anchor="middle" '
            f"{_FONT}>{escape(category)}</text>"
        )
    parts += _legend([(s.name, s.color) for s in series], bottom + 44)
    return "\n".join([*parts, "</svg>"])


def horizontal_bars(
    name: str,
    title: str,
    items: Sequence[tuple[str, float]],
    *,
    color: str = PALETTE[3],
    unit: str = "",
) -> str:
    """One horizontal bar per labelled value, largest first as given."""
    if not items:
        return empty_chart(name, title, "none in this range")
    left, right, row = 200, _WIDTH - 60, 22
    height = 40 + row * len(items)
    ticks = nice_ticks(max(v for _, v in items))
    scale = (right - left) / ticks[-1]
    parts = _open(name, title, height)
    for i, (label, value) in enumerate(items):
        y = 20 + i * row
        parts.append(
            f'<text x="{left - 8}" y="{y + 13}" text-anchor="end" {_FONT}>{escape(label)}</text>'
        )
        parts.append(
            f'<rect x="{left}" y="{y}" width="{max(1.0, value * scale):.1f}" height="{row - 6}" '
            f'fill="{color}"><title>{escape(label)}: {_fmt(value, unit)}</title></rect>'
        )
        parts.append(
            f'<text x="{left + value * scale + 6:.1f}" y="{y + 13}" {_FONT}>'
            f"{_fmt(value, unit)}</text>"
        )
    return "\n".join([*parts, "</svg>"])


def box_plots(name: str, title: str, boxes: Sequence[tuple[str, Box]], *, unit: str = "ms") -> str:
    """Horizontal box plots on one shared scale: whiskers min–max, box p25–p75, p50 and p95."""
    if not boxes:
        return empty_chart(name, title, "no evaluator latencies in this range")
    left, right, row = 200, _WIDTH - 40, 34
    height = 60 + row * len(boxes)
    ticks = nice_ticks(max(b.high for _, b in boxes))
    scale = (right - left) / ticks[-1]
    axis_y = 30 + row * len(boxes)
    parts = _open(name, title, height)

    def x(value: float) -> float:
        return left + value * scale

    for tick in ticks:
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="15" x2="{x(tick):.1f}" y2="{axis_y}" stroke="#e5e5e5"/>'
        )
        parts.append(
            f'<text x="{x(tick):.1f}" y="{axis_y + 14}" text-anchor="middle" {_FONT}>'
            f"{_fmt(tick)}</text>"
        )
    for i, (label, b) in enumerate(boxes):
        mid = 30 + i * row
        color = PALETTE[i % len(PALETTE)]
        hover = (
            f"{label}: n={b.n}, min {_fmt(b.low, unit)}, p25 {_fmt(b.p25, unit)}, "
            f"p50 {_fmt(b.p50, unit)}, p75 {_fmt(b.p75, unit)}, p95 {_fmt(b.p95, unit)}, "
            f"max {_fmt(b.high, unit)}"
        )
        parts.append(
            f'<text x="{left - 8}" y="{mid + 4}" text-anchor="end" {_FONT}>'
            f"{escape(label)} (n={b.n})</text>"
        )
        parts.append(f"<g><title>{escape(hover)}</title>")
        parts.append(
            f'<line x1="{x(b.low):.1f}" y1="{mid}" x2="{x(b.high):.1f}" y2="{mid}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        parts.append(
            f'<rect x="{x(b.p25):.1f}" y="{mid - 10}" width="{max(1.0, x(b.p75) - x(b.p25)):.1f}" '
            f'height="20" fill="{color}" fill-opacity="0.35" stroke="{color}"/>'
        )
        parts.append(
            f'<line x1="{x(b.p50):.1f}" y1="{mid - 10}" x2="{x(b.p50):.1f}" y2="{mid + 10}" '
            f'stroke="{color}" stroke-width="3"/>'
        )
        parts.append(
            f'<path d="M{x(b.p95):.1f},{mid - 7} l5,7 l-5,7 l-5,-7 z" fill="{color}"/></g>'
        )
    parts.append(
        f'<text x="{_WIDTH - 40}" y="{height - 4}" text-anchor="end" {_FONT} fill="#666666">'
        f"box p25–p75 · bar p50 · diamond p95 · whiskers min–max ({escape(unit)})</text>"
    )
    return "\n".join([*parts, "</svg>"])


def _y_axis(
    ticks: Sequence[float], left: int, top: int, bottom: int, scale: float, unit: str
) -> list[str]:
    out = []
    for tick in ticks:
        y = bottom - tick * scale
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{_WIDTH - 20}" y2="{y:.1f}" stroke="#e5e5e5"/>'
        )
        out.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" {_FONT}>'
            f"{_fmt(tick, unit)}</text>"
        )
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#999999"/>')
    return out
