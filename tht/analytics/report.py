"""``tht analytics report --html OUT``: one self-contained HTML file with inline SVG charts.

Nothing is loaded from anywhere: no script, no font, no stylesheet link; a Content-Security-Policy
meta tag forbids the page any network access, so it renders the same offline. Charts:

1. evaluator invocations and statuses per day (stacked bars);
2. evaluator latency per provider profile (box plots: min, p25, p50, p75, p95, max);
3. disagreement and changed-top rates per provider profile;
4. fallback reasons;
5. review wait per workflow stage (p50 and p95), from the imported session ledgers.

:func:`collect` reads the store; :func:`render_html` is pure; :func:`write_report` writes the file
atomically.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from kernel.atomic import atomic_write
from kernel.errors import UsageError
from tht.analytics.charts import (
    PALETTE,
    Box,
    Series,
    box_plots,
    grouped_bars,
    horizontal_bars,
    stacked_bars,
)
from tht.analytics.events import INVOKED_STATUSES
from tht.analytics.routing_query import RoutingEvaluatorQuery, routing_evaluator, where_clause
from tht.analytics.sessions_query import stage_statistics
from tht.analytics.stats import percentile

__all__ = ["ReportData", "collect", "render_html", "write_report"]

# Every §22.4 status, in the spec's order, with a fixed colour (successes green, skips grey/blue,
# failures warm).
STATUS_COLORS: dict[str, str] = {
    "not-ambiguous": "#c7c7c7",
    "disabled": "#dbdb8d",
    "not-sampled": "#9edae5",
    "skipped-light-mode": "#aec7e8",
    "skipped-sensitive": "#17becf",
    "circuit-open": "#f7b6d2",
    "cache-hit": "#98df8a",
    "completed": "#2ca02c",
    "low-confidence": "#bcbd22",
    "invalid-output": "#d62728",
    "model-unavailable": "#7f7f7f",
    "timeout": "#ff7f0e",
    "rate-limited": "#e377c2",
    "auth-error": "#8c564b",
    "http-error": "#ad494a",
    "network-error": "#9467bd",
    "config-invalid": "#c49c94",
    "unexpected-error": "#393b79",
}


@dataclass(frozen=True)
class ReportData:
    generated_at: str
    date_from: str | None
    date_to: str | None
    evaluator: dict[str, Any]  # the §22.8 result grouped by provider_profile
    statuses_by_day: dict[str, dict[str, int]]
    latency_by_profile: list[tuple[str, Box]]
    fallback_reasons: list[tuple[str, int]]
    sessions: dict[str, Any]  # tht.analytics.sessions_query.stage_statistics
    first_event: str | None = None  # the earliest imported event in the period (hooks, ledgers)
    last_event: str | None = None


def collect(
    conn: sqlite3.Connection, *, date_from: str | None, date_to: str | None, generated_at: str
) -> ReportData:
    query = RoutingEvaluatorQuery(
        date_from=date_from, date_to=date_to, group_by=("provider_profile",)
    )
    where, params = where_clause(query)
    span_where, span_params = where_clause(
        RoutingEvaluatorQuery(date_from=date_from, date_to=date_to)
    )
    by_day: dict[str, dict[str, int]] = defaultdict(dict)
    for day, status, count in conn.execute(
        f"SELECT substr(occurred_at, 1, 10) AS day, evaluator_status, COUNT(*) "
        f"FROM routing_evaluations WHERE {where} GROUP BY day, evaluator_status ORDER BY day",
        params,
    ):
        by_day[day][status] = count
    invoked = ", ".join(f"'{s}'" for s in sorted(INVOKED_STATUSES))
    latencies: dict[str, list[int]] = defaultdict(list)
    for profile, latency in conn.execute(
        f"SELECT COALESCE(provider_profile, '(none)'), latency_ms FROM routing_evaluations "
        f"WHERE {where} AND latency_ms IS NOT NULL AND evaluator_status IN ({invoked}) "
        "ORDER BY 1, 2",
        params,
    ):
        latencies[profile].append(latency)
    reasons = list(
        conn.execute(
            f"SELECT fallback_reason, COUNT(*) FROM routing_evaluations WHERE {where} "
            "AND fallback_reason IS NOT NULL GROUP BY fallback_reason ORDER BY 2 DESC, 1",
            params,
        )
    )
    first, last = conn.execute(
        f"SELECT MIN(occurred_at), MAX(occurred_at) FROM runtime_events WHERE {span_where}",
        span_params,
    ).fetchone()
    return ReportData(
        generated_at=generated_at,
        date_from=date_from,
        date_to=date_to,
        evaluator=routing_evaluator(conn, query),
        statuses_by_day=dict(by_day),
        latency_by_profile=[(p, _box(v)) for p, v in sorted(latencies.items())],
        fallback_reasons=[(str(r), int(n)) for r, n in reasons],
        sessions=stage_statistics(conn, date_from=date_from, date_to=date_to),
        first_event=first,
        last_event=last,
    )


def _span(data: ReportData) -> str:
    """The subtitle's period: the real first and last events, or why there are none."""
    if data.first_event is not None and data.last_event is not None:
        if data.first_event == data.last_event:
            return f"one event, at {data.first_event}"
        return f"events from {data.first_event} to {data.last_event}"
    if data.date_from is None and data.date_to is None:
        return "no events imported yet (run tht analytics scan)"
    bounds = " ".join(
        part
        for part in (
            f"from {data.date_from}" if data.date_from else "",
            f"to {data.date_to}" if data.date_to else "",
        )
        if part
    )
    return f"no events {bounds}"


def _box(ordered: list[int]) -> Box:
    def at(rank: int) -> float:
        return ordered[rank - 1]

    n = len(ordered)
    return Box(
        n=n,
        low=ordered[0],
        p25=percentile(25, n, at),
        p50=percentile(50, n, at),
        p75=percentile(75, n, at),
        p95=percentile(95, n, at),
        high=ordered[-1],
    )


def render_html(data: ReportData) -> str:
    """The whole page (pure)."""
    ev = data.evaluator
    span = _span(data)
    sections = [
        _section(
            "Evaluator invocations and statuses per day",
            "Every routing decision by its evaluator status; the line counts invocations "
            "(statuses that reached the provider).",
            _statuses_chart(data.statuses_by_day),
        ),
        _section(
            "Evaluator latency per provider profile",
            "Invoked evaluations that report a latency.",
            box_plots("latency-by-profile", "Latency per profile", data.latency_by_profile),
        ),
        _section(
            "Disagreement and changed-top rates per provider profile",
            "Disagreement: completed evaluations whose top differs from the deterministic top. "
            "Changed top: decisions whose final top changed (shadow or applied), over completed.",
            _rates_chart(ev["groups"]),
        ),
        _section(
            "Fallback reasons",
            "Decisions that fell back to the deterministic result, by reason code.",
            horizontal_bars("fallback-reasons", "Fallback reasons", data.fallback_reasons),
        ),
        _section(
            "Review wait per stage",
            "Time from a review request to the human answer, from the session ledgers.",
            _waits_chart(data.sessions["stages"]),
        ),
    ]
    return _PAGE.format(
        generated=escape(data.generated_at),
        span=escape(span),
        figures=_figures(ev, data.sessions),
        sections="\n".join(sections),
        table=_profile_table(ev["groups"]),
    )


def write_report(
    conn: sqlite3.Connection,
    path: Path,
    *,
    date_from: str | None,
    date_to: str | None,
    generated_at: str,
) -> int:
    """Write the report atomically; returns its size in bytes."""
    page = render_html(
        collect(conn, date_from=date_from, date_to=date_to, generated_at=generated_at)
    ).encode("utf-8")
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give the report's file name")
    atomic_write(path, page, durable=False)
    return len(page)


def _statuses_chart(by_day: dict[str, dict[str, int]]) -> str:
    days = sorted(by_day)
    present = [s for s in STATUS_COLORS if any(s in by_day[d] for d in days)]
    series = [
        Series(s, tuple(float(by_day[d].get(s, 0)) for d in days), STATUS_COLORS[s])
        for s in present
    ]
    invocations = Series(
        "invocations",
        tuple(float(sum(n for s, n in by_day[d].items() if s in INVOKED_STATUSES)) for d in days),
        "#000000",
    )
    return stacked_bars(
        "statuses-per-day", "Evaluator statuses per day", days, series, line=invocations
    )


def _rates_chart(groups: list[dict[str, Any]]) -> str:
    labels = [str(g["provider_profile"] or "(none)") for g in groups]
    disagreement = [g["rates"]["disagreement_rate"] or 0.0 for g in groups]
    changed = []
    for g in groups:
        t = g["totals"]
        completed = t["completed"]
        changed.append(
            (t["changed_top_shadow"] + t["changed_top_applied"]) / completed if completed else 0.0
        )
    return grouped_bars(
        "disagreement-by-profile",
        "Disagreement and changed-top rates",
        labels,
        [
            Series("disagreement rate", tuple(disagreement), PALETTE[4]),
            Series("changed-top rate", tuple(changed), PALETTE[1]),
        ],
        unit="%",
    )


def _waits_chart(stages: list[dict[str, Any]]) -> str:
    rows = [s for s in stages if s["review_wait_ms"]["answered"]]
    minutes = 60_000
    return grouped_bars(
        "review-wait-by-stage",
        "Review wait per stage (minutes)",
        [s["stage"] for s in rows],
        [
            Series("p50", tuple(s["review_wait_ms"]["p50"] / minutes for s in rows), PALETTE[0]),
            Series("p95", tuple(s["review_wait_ms"]["p95"] / minutes for s in rows), PALETTE[9]),
        ],
        unit="min",
    )


def _figures(ev: dict[str, Any], sessions: dict[str, Any]) -> str:
    t, r, lat = ev["totals"], ev["rates"], ev["latency_ms"]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{value:.1%}"

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f} ms"

    items = [
        ("routing decisions", f"{t['routing_decisions']:,}"),
        ("ambiguity rate", pct(r["ambiguity_rate"])),
        ("evaluator invocations", f"{t['evaluator_invoked']:,}"),
        ("completion rate", pct(r["completion_rate"])),
        ("fallback rate", pct(r["fallback_rate"])),
        ("disagreement rate", pct(r["disagreement_rate"])),
        ("latency p50 / p95", f"{ms(lat['p50'])} / {ms(lat['p95'])}"),
        ("sessions", f"{sessions['sessions']:,}"),
    ]
    return "\n".join(
        f'<div class="figure"><div class="value">{escape(v)}</div>'
        f'<div class="label">{escape(k)}</div></div>'
        for k, v in items
    )


def _profile_table(groups: list[dict[str, Any]]) -> str:
    rows = []
    for g in groups:
        t, r, lat = g["totals"], g["rates"], g["latency_ms"]
        cells = [
            str(g["provider_profile"] or "(none)"),
            f"{t['routing_decisions']:,}",
            f"{t['evaluator_invoked']:,}",
            "–" if r["completion_rate"] is None else f"{r['completion_rate']:.1%}",
            "–" if r["fallback_rate"] is None else f"{r['fallback_rate']:.1%}",
            "–" if lat["p50"] is None else f"{lat['p50']:,.0f}",
            "–" if lat["p95"] is None else f"{lat['p95']:,.0f}",
            f"{t['input_tokens']:,} / {t['output_tokens']:,}",
        ]
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(rows)


def _section(title: str, note: str, chart: str) -> str:
    return (
        f'<section><h2>{escape(title)}</h2><p class="note">{escape(note)}</p>'
        f'<figure aria-label="{escape(title)}">{chart}</figure></section>'
    )


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tht analytics report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px auto; max-width: 820px; color: #222; }}
h1 {{ font-size: 22px; margin-bottom: 4px; }}
h2 {{ font-size: 16px; margin: 28px 0 4px; }}
.meta, .note {{ color: #666; font-size: 13px; margin: 2px 0 8px; }}
.figures {{ display: grid; grid-template-columns: repeat(4, 1fr); gap: 8px; margin-top: 16px; }}
.figure {{ background: #f4f6f8; border-radius: 6px; padding: 10px; }}
.figure .value {{ font-size: 18px; font-weight: 600; }}
.figure .label {{ font-size: 12px; color: #555; }}
figure {{ margin: 0; }}
svg {{ max-width: 100%; height: auto; }}
table {{ border-collapse: collapse; font-size: 13px; width: 100%; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 6px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
</style>
</head>
<body>
<h1>tht analytics report</h1>
<p class="meta">Generated {generated} · {span}</p>
<div class="figures">
{figures}
</div>
{sections}
<section><h2>Per provider profile</h2>
<table>
<tr><th>profile</th><th>decisions</th><th>invoked</th><th>completion</th><th>fallback</th>
<th>p50 ms</th><th>p95 ms</th><th>tokens in / out</th></tr>
{table}
</table></section>
</body>
</html>
"""
