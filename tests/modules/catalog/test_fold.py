"""The catalog fold: entries it refuses (recorded as problems, never applied), incremental
folding, and the fold cache keyed by ``(last_seq, head)``."""

from __future__ import annotations

import msgspec
import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.store.memory import MemoryStore
from modules.catalog import Catalog, fold_catalog, fold_catalog_from, plan_delete, run_sync
from modules.catalog.endpoints import relationship_id
from tests.modules.catalog.fakes import catalog_on, shop

ANN = "human:ann"
CUSTOMER = relationship_id("logical", "orders", ("customer_id",), "customers", ("id",))


@pytest.fixture
def synced() -> tuple[MemoryStore, Catalog]:
    store = MemoryStore()
    catalog = catalog_on(store, db=shop())
    run_sync(catalog)
    return store, catalog


def forge(catalog: Catalog, draft: ev.EventDraft) -> list[str]:
    """Append ``draft`` behind the planners' back; the codes of the problems it caused."""
    ledger = catalog.caps.ledger
    before = catalog.load().state
    ledger.append([draft], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())
    after = catalog.load().state
    return [p.code for p in after.problems[len(before.problems) :]]


def endpoints(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": CUSTOMER,
        "from_table": "orders",
        "from_columns": ("customer_id",),
        "to_table": "customers",
        "to_columns": ("id",),
    }
    return {**base, **changes}


def test_an_agent_cannot_record_curation(synced: tuple[MemoryStore, Catalog]) -> None:
    _, catalog = synced
    draft = ev.EventDraft(
        type="relationship_deleted",
        actor="agent",
        payload=cev.RelationshipDeletedPayload(id=CUSTOMER, mode="logical", reason="x"),
    )
    assert forge(catalog, draft) == ["actor"]
    assert catalog.load().state.logical[CUSTOMER].state == "active"  # not applied
    with pytest.raises(IntegrityError):
        catalog.load_for_write()  # no write is accepted on a catalog with a problem


def test_a_generated_relationship_outside_a_sync_or_reconstruction_is_refused(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    _, catalog = synced
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_delete(loaded.state, CUSTOMER, permanent=True, reason="x", actor=ANN)]
    )
    draft = ev.EventDraft(
        type="relationship_generated",
        actor="module:catalog",
        payload=cev.RelationshipGeneratedPayload(**endpoints(), rule="table_pk"),  # type: ignore[arg-type]
    )
    assert forge(catalog, draft) == ["batch"]
    assert CUSTOMER not in catalog.load().state.logical


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"id": "lr_000000000000"}, "id"),
        ({"from_columns": ("nope",)}, "endpoint"),
        ({"to_table": "nope"}, "endpoint"),
        ({}, "duplicate"),
    ],
)
def test_an_addition_must_name_catalog_columns_by_their_id(
    synced: tuple[MemoryStore, Catalog], changes: dict[str, object], code: str
) -> None:
    _, catalog = synced
    draft = ev.EventDraft(
        type="relationship_added",
        actor=ANN,
        payload=cev.RelationshipAddedPayload(**endpoints(**changes)),  # type: ignore[arg-type]
    )
    assert forge(catalog, draft) == [code]


def test_a_completion_of_a_run_that_is_not_active_is_refused(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    _, catalog = synced
    draft = ev.EventDraft(
        type="catalog_sync_failed",
        actor="module:catalog",
        payload=cev.CatalogSyncFailedPayload(run="nope", code="error", reason="x"),
    )
    assert forge(catalog, draft) == ["run"]


def test_a_session_event_in_the_catalog_ledger_is_a_problem(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    _, catalog = synced
    draft = ev.EventDraft(type="stage_started", actor="kernel", payload=ev.Empty())
    assert forge(catalog, draft) == ["not_catalog"]


def test_the_fold_is_incremental_at_every_cut(synced: tuple[MemoryStore, Catalog]) -> None:
    _, catalog = synced
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_delete(loaded.state, CUSTOMER, permanent=False, reason="x", actor=ANN)]
    )
    db = catalog.caps.database
    assert db is not None
    run_sync(catalog)
    events = catalog.caps.ledger.read().events
    whole = fold_catalog(events, catalog.load_snapshot)
    for cut in range(len(events) + 1):
        part = fold_catalog(events[:cut], catalog.load_snapshot)
        assert fold_catalog_from(part, events[cut:], catalog.load_snapshot) == whole


def test_the_cache_follows_the_ledger_and_a_changed_ledger_folds_afresh(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    store, catalog = synced
    cached = store.read_workspace_cache("catalog")
    assert cached is not None
    ledger = store.workspace_ledger("catalog")
    # the ledger rewritten behind the cache's back (same length, other content): not trusted
    ledger.lines[-1] = ledger.lines[-1].replace(b'"rule":"', b'"rule":"x')
    fresh = Catalog(catalog.caps).load().state
    assert any(r.rule.startswith("x") for r in fresh.logical.values())


def test_verify_reports_a_cache_that_disagrees_and_rebuilds_it(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    store, catalog = synced
    from modules.catalog.cache import CatalogCache, decode_cache, encode_cache

    cache = decode_cache(store.read_workspace_cache("catalog"))
    assert cache is not None
    forged = msgspec.structs.replace(cache.state, logical={})
    data = encode_cache(msgspec.structs.replace(cache, state=forged))
    assert data is not None
    store.write_workspace_cache("catalog", data)
    assert catalog.load().state.logical == {}  # reads use the cache (it matches the tail)
    report = catalog.verify()
    assert [p.code for p in report.problems] == ["fold_cache"]
    assert catalog.verify().ok and catalog.load().state.logical  # rebuilt
    assert isinstance(decode_cache(store.read_workspace_cache("catalog")), CatalogCache)


def test_a_missing_or_altered_snapshot_is_an_integrity_problem(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    store, catalog = synced
    run = catalog.load().state.runs
    sha = next(iter(run.values())).snapshot
    assert sha is not None
    store.damage_workspace_object("catalog", sha)
    fresh = Catalog(catalog.caps)
    report = fresh.verify()
    assert not report.ok and report.problems[0].code == "snapshot"
    store.write_workspace_cache("catalog", b"")  # no cache: a read must fold, and cannot
    with pytest.raises(IntegrityError):
        Catalog(catalog.caps).load()


def test_an_edited_ledger_line_fails_verification_and_refuses_writes(
    synced: tuple[MemoryStore, Catalog],
) -> None:
    store, catalog = synced
    ledger = store.workspace_ledger("catalog")
    ledger.lines[0] = ledger.lines[0].replace(b"fake.db", b"evil.db")
    report = catalog.verify()
    assert not report.ok and {p.code for p in report.problems} >= {"hash_chain"}
    with pytest.raises(IntegrityError):
        run_sync(catalog)
