"""``tht analytics sessions``: per stage, how sessions moved through the workflow.

For every stage seen in the imported ledgers: how many sessions reached it, their final outcomes,
runs, the time from each run's start to its outcome (avg, p50, p95, max), review requests with the
answered wait (p50, p95, max) and those still open, and the reopen rate (sessions in which the
stage was reopened at least once, over sessions that reached it). Stages come in workflow order.
Percentiles as :mod:`tht.analytics.stats`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any

from tht.analytics.stats import percentile_of

__all__ = ["stage_statistics"]


def stage_statistics(
    conn: sqlite3.Connection, *, date_from: str | None = None, date_to: str | None = None
) -> dict[str, Any]:
    """Stage rows whose activity lies in the range; reviews requested in the range."""
    run_where, run_params = _range(
        "COALESCE(started_at, ended_at, last_event_at)", date_from, date_to
    )
    review_where, review_params = _range("requested_at", date_from, date_to)
    runs: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    order: dict[str, tuple[int, float]] = {}
    for stage, index, avg_seq in conn.execute(
        "SELECT stage, MIN(stage_index), AVG(first_seq) FROM stage_runs "
        f"WHERE {run_where} GROUP BY stage",
        run_params,
    ):
        order[stage] = (index if index is not None else 1_000_000, avg_seq)
    for row in conn.execute(
        "SELECT stage, session_key, outcome, runs, duration_ms, reopen_count FROM stage_runs "
        f"WHERE {run_where}",
        run_params,
    ):
        runs[row[0]].append(row[1:])
    waits: dict[str, list[int]] = defaultdict(list)
    open_reviews: dict[str, int] = defaultdict(int)
    for stage, wait_ms in conn.execute(
        f"SELECT stage, wait_ms FROM stage_reviews WHERE {review_where}", review_params
    ):
        if wait_ms is None:
            open_reviews[stage] += 1
        else:
            waits[stage].append(wait_ms)
    sessions = {row[0] for rows in runs.values() for row in rows}
    stages = []
    for stage in sorted(order, key=lambda s: (order[s], s)):
        rows = runs[stage]
        outcomes = [r[1] for r in rows]
        durations = [r[3] for r in rows if r[3] is not None]
        reopened = sum(1 for r in rows if r[4] > 0)
        stages.append(
            {
                "stage": stage,
                "sessions": len(rows),
                "runs": sum(r[2] for r in rows),
                "completed": outcomes.count("completed"),
                "skipped": outcomes.count("skipped"),
                "failed": outcomes.count("failed"),
                "open": outcomes.count("open"),
                "duration_ms": _distribution(durations),
                "review_wait_ms": {
                    "answered": len(waits[stage]),
                    "open": open_reviews[stage],
                    **_distribution(waits[stage]),
                },
                "reopened_sessions": reopened,
                "reopen_rate": round(reopened / len(rows), 4) if rows else None,
            }
        )
    return {"ok": True, "sessions": len(sessions), "stages": stages}


def _distribution(values: list[int]) -> dict[str, float | int | None]:
    return {
        "avg": round(sum(values) / len(values), 2) if values else None,
        "p50": _round(percentile_of(50, values)),
        "p95": _round(percentile_of(95, values)),
        "max": max(values) if values else None,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _range(column: str, date_from: str | None, date_to: str | None) -> tuple[str, list[str]]:
    parts, params = [], []
    if date_from is not None:
        parts.append(f"{column} >= ?")
        params.append(date_from)
    if date_to is not None:
        parts.append(f"{column} <= ?")
        params.append(date_to)
    return (" AND ".join(parts) or "1"), params
