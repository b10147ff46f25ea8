"""``tht analytics summary``: what the store holds, with the evaluator block of spec 000 §22.9.

The general summary stays general: event counts by origin and name, sources by kind, the time
span, and four evaluator totals. Per-model detail belongs to ``routing-evaluator``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tht.analytics.events import INVOKED_STATUSES

__all__ = ["summary"]

_INVOKED = ", ".join(f"'{s}'" for s in sorted(INVOKED_STATUSES))


def summary(
    conn: sqlite3.Connection, *, date_from: str | None = None, date_to: str | None = None
) -> dict[str, Any]:
    """Totals over events with ``occurred_at`` in ``[date_from, date_to]`` (canonical text)."""
    where, params = _span(date_from, date_to)
    first, last, total = conn.execute(
        f"SELECT MIN(occurred_at), MAX(occurred_at), COUNT(*) FROM runtime_events WHERE {where}",
        params,
    ).fetchone()
    by_name: dict[str, dict[str, int]] = {}
    for origin, name, count in conn.execute(
        f"SELECT event_origin, event_name, COUNT(*) FROM runtime_events WHERE {where} "
        "GROUP BY event_origin, event_name ORDER BY event_origin, event_name",
        params,
    ):
        by_name.setdefault(origin, {})[name] = count
    sources = dict(
        conn.execute("SELECT kind, COUNT(*) FROM source_files GROUP BY kind ORDER BY kind")
    )
    decisions, invoked, completed = conn.execute(
        f"SELECT COUNT(*), SUM(evaluator_status IN ({_INVOKED})), "
        f"SUM(evaluator_status = 'completed') FROM routing_evaluations WHERE {where}",
        params,
    ).fetchone()
    invoked, completed = int(invoked or 0), int(completed or 0)
    return {
        "ok": True,
        "events": {"total": total, "first_at": first, "last_at": last, "by_origin": by_name},
        "sources": sources,
        "routing_evaluator": {
            "decisions": decisions,
            "invocations": invoked,
            "completed": completed,
            "fallbacks": invoked - completed,
        },
    }


def _span(date_from: str | None, date_to: str | None) -> tuple[str, list[str]]:
    parts, params = [], []
    if date_from is not None:
        parts.append("occurred_at >= ?")
        params.append(date_from)
    if date_to is not None:
        parts.append("occurred_at <= ?")
        params.append(date_to)
    return (" AND ".join(parts) or "1"), params
