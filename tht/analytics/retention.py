"""``tht analytics prune --older-than DAYS``: delete events older than a cutoff, for good.

Deleting a ``runtime_events`` row cascades to its ``routing_evaluations`` projection; a session's
stage row (and its reviews) goes when its last event is older than the cutoff. The cutoff is kept
as a watermark (``analytics_meta``: ``retention.pruned_before``) and the importers skip events
older than it, so a log that is later rescanned from the start (rotation, truncation) does not
bring pruned events back. File offsets are kept: pruning never makes a scan read old bytes again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kernel.clock import format_ts
from kernel.errors import UsageError
from tht.analytics.store import RETENTION_KEY, AnalyticsStore

__all__ = ["prune"]


def prune(
    store: AnalyticsStore, *, older_than_days: int, now: datetime, dry_run: bool = False
) -> dict[str, Any]:
    """Delete every event that occurred before ``now - older_than_days``; one transaction.

    ``dry_run`` deletes nothing: the result says what would go (``would_delete``, with
    ``deleted`` all zero and ``dry_run: true``)."""
    if older_than_days < 0:
        raise UsageError(f"--older-than must be 0 or more days, not {older_than_days}")
    cutoff = format_ts(now - timedelta(days=older_than_days))
    if dry_run:
        return _preview(store, cutoff)
    conn = store.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        evaluations = conn.execute(
            "SELECT COUNT(*) FROM routing_evaluations WHERE occurred_at < ?", (cutoff,)
        ).fetchone()[0]
        events = conn.execute(
            "DELETE FROM runtime_events WHERE occurred_at < ?", (cutoff,)
        ).rowcount
        stage_runs = conn.execute(
            "DELETE FROM stage_runs WHERE last_event_at < ?", (cutoff,)
        ).rowcount
        previous = store.meta(RETENTION_KEY)
        if previous is None or previous < cutoff:
            conn.execute(
                "INSERT INTO analytics_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (RETENTION_KEY, cutoff),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return {
        "ok": True,
        "cutoff": cutoff,
        "dry_run": False,
        "deleted": {
            "runtime_events": events,
            "routing_evaluations": evaluations,
            "stage_runs": stage_runs,
        },
    }


def _preview(store: AnalyticsStore, cutoff: str) -> dict[str, Any]:
    conn = store.conn

    def count(sql: str) -> int:
        return int(conn.execute(sql, (cutoff,)).fetchone()[0])

    would = {
        "runtime_events": count("SELECT COUNT(*) FROM runtime_events WHERE occurred_at < ?"),
        "routing_evaluations": count(
            "SELECT COUNT(*) FROM routing_evaluations WHERE occurred_at < ?"
        ),
        "stage_runs": count("SELECT COUNT(*) FROM stage_runs WHERE last_event_at < ?"),
    }
    return {
        "ok": True,
        "cutoff": cutoff,
        "dry_run": True,
        "would_delete": would,
        "deleted": dict.fromkeys(would, 0),
    }
