"""``prune``: old events and their projections go, and a rescan does not bring them back."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kernel.errors import UsageError
from tht.analytics.hooklog import scan_hook_log
from tht.analytics.retention import prune
from tht.analytics.store import AnalyticsStore

from .conftest import NOW, counts


def test_prune_deletes_events_older_than_the_cutoff_with_their_projection(
    store: AnalyticsStore, hook_log: Path
) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    older = store.conn.execute(
        "SELECT COUNT(*) FROM runtime_events WHERE occurred_at < '2026-07-14T00:00:00.000Z'"
    ).fetchone()[0]
    total = counts(store)["runtime_events"]
    result = prune(store, older_than_days=4, now=datetime(2026, 7, 18, tzinfo=UTC))
    assert result["cutoff"] == "2026-07-14T00:00:00.000Z"
    assert result["deleted"] == {
        "runtime_events": older,
        "routing_evaluations": older,
        "stage_runs": 0,
    }
    assert 0 < older < total
    assert counts(store)["runtime_events"] == counts(store)["routing_evaluations"] == total - older
    assert (
        store.conn.execute("SELECT MIN(occurred_at) FROM routing_evaluations").fetchone()[0]
        >= "2026-07-14"
    )


def test_pruned_events_are_not_imported_again_when_the_log_is_rescanned(
    store: AnalyticsStore, hook_log: Path
) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    prune(store, older_than_days=4, now=datetime(2026, 7, 18, tzinfo=UTC))
    after_prune = counts(store)
    rotated = hook_log.with_name("old.jsonl")
    os.rename(hook_log, rotated)
    hook_log.write_bytes(rotated.read_bytes())  # same content, new inode: rescan from 0
    report = scan_hook_log(store, hook_log, now=NOW)
    assert report.action == "rotated"
    assert report.imported == 0
    assert report.older_than_retention > 0
    assert counts(store)["runtime_events"] == after_prune["runtime_events"]


def test_a_negative_age_is_a_usage_error(store: AnalyticsStore) -> None:
    with pytest.raises(UsageError):
        prune(store, older_than_days=-1, now=datetime(2026, 7, 18, tzinfo=UTC))
