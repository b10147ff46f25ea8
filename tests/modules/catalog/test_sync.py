"""A Catalog Sync Run as a durable execution: what it records, when it records nothing, one
active run at a time, interrupted runs, the unchanged resync, and the run log."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.errors import ConflictError, UnavailableError, UsageError
from kernel.store.memory import MemoryStore
from modules.catalog import Catalog, plan_add, plan_cleanup, run_sync
from modules.catalog.sync_lock import sync_lock
from modules.catalog.sync_plan import plan_sync_started
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, shop

ANN = "human:ann"


def types(catalog: Catalog) -> list[str]:
    return [ev.info_of(e).type for e in catalog.caps.ledger.read().events]


def test_no_binding_is_a_usage_error_and_nothing_is_written() -> None:
    catalog = catalog_on()
    with pytest.raises(UsageError, match=r"no database bound in workspace\.yaml"):
        run_sync(catalog)
    assert types(catalog) == []


def test_an_unreachable_database_writes_nothing_at_all() -> None:
    db = shop()
    db.reachable = False
    store = MemoryStore()
    catalog = catalog_on(store, db=db)
    with pytest.raises(UnavailableError):
        run_sync(catalog)
    assert types(catalog) == [] and store.read_workspace_cache("catalog") is None


def test_a_run_records_started_then_completed_with_its_generated_relationships() -> None:
    catalog = catalog_on(db=shop())
    report = run_sync(catalog)
    assert types(catalog) == [
        "catalog_sync_started",
        "catalog_sync_completed",
        "relationship_generated",
        "relationship_generated",
        "relationship_generated",
    ]
    events = catalog.caps.ledger.read().events
    assert events[0].batch_left == 0 and events[1].batch_left == 3  # completed + generated: one
    completed = events[1]
    assert isinstance(completed, cev.CatalogSyncCompleted)
    assert catalog.caps.get_object(completed.payload.snapshot)  # content-addressed, stored
    assert report.to_json()["relationships"] == 4


def test_a_failure_after_started_is_recorded_failed_and_raised() -> None:
    db = shop()
    db.fail = UnavailableError("workspace database sqlite:///fake.db: gone mid-run")
    catalog = catalog_on(db=db)
    with pytest.raises(UnavailableError):
        run_sync(catalog)
    state = catalog.load().state
    (run,) = state.runs.values()
    assert (run.status, run.failure) == ("failed", "unavailable")
    assert state.active_run is None and not state.synced


def test_a_crash_mid_run_is_recorded_interrupted_by_the_next_run() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    loaded = catalog.load_for_write()
    # what a SIGKILLed process leaves: started, nothing after
    catalog.append(
        loaded, [plan_sync_started("01CRASHED", scope=None, binding="x", dialect="sqlite")]
    )
    report = run_sync(catalog)
    assert report.interrupted == ("01CRASHED",)
    crashed = report.state.runs["01CRASHED"]
    assert (crashed.status, crashed.failure) == ("failed", "interrupted")
    assert report.run.status == "completed" and catalog.verify().ok


def test_a_second_run_while_one_holds_the_lock_is_a_conflict(tmp_path: Path) -> None:
    db = shop()
    lock = tmp_path / "catalog" / "sync.lock"
    catalog = catalog_on(db=db, sync_lock=lambda: sync_lock(lock))
    seen: list[str] = []

    def second_run() -> None:
        with pytest.raises(ConflictError, match="another Catalog Sync Run"):
            run_sync(catalog_on(db=shop(), sync_lock=lambda: sync_lock(lock)))
        seen.append("refused")

    db.on_introspect = second_run
    run_sync(catalog)
    assert seen == ["refused"]


def test_an_unchanged_resync_skips_introspection() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    first = run_sync(catalog)
    second = run_sync(catalog)
    assert db.introspections == 1
    assert second.run.unchanged and second.run.snapshot == first.run.snapshot
    assert second.state.tables == first.state.tables
    events = catalog.caps.ledger.read().events
    assert [ev.info_of(e).type for e in events[-2:]] == [
        "catalog_sync_started",
        "catalog_sync_completed",
    ] and events[-2].batch_left == 1  # one batch
    db.add_column("orders", "note:TEXT")
    third = run_sync(catalog)
    assert db.introspections == 2 and not third.run.unchanged


def test_a_scoped_resync_reuses_a_full_snapshot_at_the_same_version() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    report = run_sync(catalog, scope=["orders"])
    assert db.introspections == 1 and report.run.unchanged
    assert report.run.tables == 1


def test_an_unchanged_resync_after_a_cleanup_restores_from_the_snapshot() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    loaded = catalog.load_for_write()
    catalog.append(loaded, [plan_cleanup(loaded.state, tables=["orders"], reason="x", actor=ANN)])
    report = run_sync(catalog)
    assert db.introspections == 1 and "orders" in report.state.tables
    completed = catalog.caps.ledger.read().events
    assert any(
        isinstance(e, cev.CatalogSyncCompleted) and e.payload.changes.added == ("orders",)
        for e in completed
    )


def test_a_curation_during_introspection_is_kept_and_the_run_completes() -> None:
    db = shop()
    store = MemoryStore()
    catalog = catalog_on(store, db=db)
    run_sync(catalog)
    db.add_column("orders", "note:TEXT")

    def curate() -> None:  # another command, between started and completed
        other = catalog_on(store)
        loaded = other.load_for_write()
        other.append(
            loaded,
            [plan_add(loaded.state, "orders.placed", "customers.name", rationale="", actor=ANN)],
        )

    db.on_introspect = curate
    report = run_sync(catalog)
    assert report.run.status == "completed"
    assert any(r.origin == "manual" for r in report.state.logical.values())
    assert catalog.verify().ok


def test_every_run_writes_its_log() -> None:
    lines: list[tuple[str, str]] = []
    db = shop()
    db.fail = RuntimeError("boom at postgresql://ann:s3cret@db/x")
    catalog = catalog_on(db=db, run_log=lambda run, line: lines.append((run, line)))
    with pytest.raises(RuntimeError):
        run_sync(catalog)
    db.fail = None
    run_sync(catalog)
    failed = [line for _, line in lines if line.startswith("failed")]
    assert failed and "s3cret" not in failed[0] and "***@" in failed[0]
    assert any(line.startswith("completed") for _, line in lines)
    reason = next(iter(catalog.load().state.runs.values())).reason
    assert "s3cret" not in reason  # nor in the ledger


def test_an_empty_scope_is_a_usage_error() -> None:
    catalog = catalog_on(db=FakeDatabase())
    with pytest.raises(UsageError):
        run_sync(catalog, scope=[" "])
    assert types(catalog) == []
