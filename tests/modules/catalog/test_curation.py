"""The glossary's relationship operations and Catalog Metadata Cleanup, through the planners
and the ledger: what each one does, and everything each one refuses (nothing recorded)."""

from __future__ import annotations

import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from modules.catalog import (
    Catalog,
    plan_add,
    plan_cleanup,
    plan_delete,
    plan_reconstruct,
    plan_restore,
    relationship_map,
    run_sync,
)
from modules.catalog.endpoints import relationship_id
from tests.modules.catalog.fakes import catalog_on, shop

ANN = "human:ann"
CUSTOMER = relationship_id("logical", "orders", ("customer_id",), "customers", ("id",))
FK = relationship_id("physical", "order_items", ("order_id",), "orders", ("id",))


@pytest.fixture
def catalog() -> Catalog:
    catalog = catalog_on(db=shop())
    run_sync(catalog)
    return catalog


def record(catalog: Catalog, drafts: ev.EventDraft | list[ev.EventDraft]) -> None:
    loaded = catalog.load_for_write()
    catalog.append(loaded, drafts if isinstance(drafts, list) else [drafts])


def state_of(catalog: Catalog, rid: str) -> str | None:
    found = catalog.load().state.logical.get(rid)
    return None if found is None else found.state


def test_a_manual_relationship_joins_two_catalog_columns(catalog: Catalog) -> None:
    state = catalog.load().state
    draft = plan_add(state, "ORDERS.placed", "customers.name", rationale="why not", actor=ANN)
    assert isinstance(draft.payload, cev.RelationshipAddedPayload)
    assert (draft.payload.from_table, draft.payload.from_columns) == ("orders", ("placed",))
    record(catalog, draft)
    added = catalog.load().state.logical[draft.payload.id]
    assert (added.origin, added.state, added.rationale) == ("manual", "active", "why not")


@pytest.mark.parametrize(
    ("frm", "to", "error"),
    [
        ("orders.nope", "customers.id", NotFoundError),
        ("nope.id", "customers.id", NotFoundError),
        ("orders", "customers.id", UsageError),
        ("orders.id", "orders.id", UsageError),
        ("orders.(id,placed)", "customers.id", UsageError),
        ("orders.customer_id", "customers.id", PolicyError),  # exists (generated)
        ("customers.id", "orders.customer_id", PolicyError),  # the same join reversed
        ("order_items.order_id", "orders.id", PolicyError),  # declared by the database
    ],
)
def test_an_addition_that_does_not_hold_is_refused(
    catalog: Catalog, frm: str, to: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        plan_add(catalog.load().state, frm, to, rationale="", actor=ANN)


def test_logical_deletion_keeps_the_identity_and_restore_reactivates(catalog: Catalog) -> None:
    state = catalog.load().state
    record(catalog, plan_delete(state, CUSTOMER, permanent=False, reason="wrong", actor=ANN))
    assert state_of(catalog, CUSTOMER) == "deleted"
    entry = next(
        e
        for e in relationship_map(catalog.load().state, include_deleted=True)
        if e["id"] == CUSTOMER
    )
    assert entry["state"] == "deleted"
    assert CUSTOMER not in {e["id"] for e in relationship_map(catalog.load().state)}
    with pytest.raises(PolicyError, match="restore"):  # adding it again points at restore
        plan_add(
            catalog.load().state, "orders.customer_id", "customers.id", rationale="", actor=ANN
        )
    record(catalog, plan_restore(catalog.load().state, CUSTOMER, reason="", actor=ANN))
    assert state_of(catalog, CUSTOMER) == "active"


def test_reconstruction_never_revives_a_logically_deleted_one(catalog: Catalog) -> None:
    record(
        catalog,
        plan_delete(catalog.load().state, CUSTOMER, permanent=False, reason="no", actor=ANN),
    )
    drafts = plan_reconstruct(catalog.load().state, reason="", actor=ANN)
    assert len(drafts) == 1 and drafts[0].type == "relationships_reconstructed"
    record(catalog, drafts)
    assert state_of(catalog, CUSTOMER) == "deleted"


def test_permanent_deletion_removes_it_and_a_reconstruction_may_recreate_it(
    catalog: Catalog,
) -> None:
    record(
        catalog, plan_delete(catalog.load().state, CUSTOMER, permanent=True, reason="x", actor=ANN)
    )
    assert state_of(catalog, CUSTOMER) is None
    with pytest.raises(NotFoundError):
        plan_restore(catalog.load().state, CUSTOMER, reason="", actor=ANN)
    drafts = plan_reconstruct(catalog.load().state, reason="rebuild", actor=ANN)
    assert [d.subject for d in drafts[1:]] == [CUSTOMER]
    record(catalog, drafts)
    assert state_of(catalog, CUSTOMER) == "active"


def test_reconstruction_keeps_manual_relationships_and_adds_nothing_twice(
    catalog: Catalog,
) -> None:
    manual = plan_add(
        catalog.load().state, "orders.placed", "customers.name", rationale="", actor=ANN
    )
    record(catalog, manual)
    before = catalog.load().state.logical
    record(catalog, plan_reconstruct(catalog.load().state, reason="", actor=ANN))
    after = catalog.load().state.logical
    assert after == before


@pytest.mark.parametrize("permanent", [False, True])
def test_deletion_needs_a_reason_and_a_logical_relationship(
    catalog: Catalog, permanent: bool
) -> None:
    state = catalog.load().state
    with pytest.raises(UsageError):
        plan_delete(state, CUSTOMER, permanent=permanent, reason="  ", actor=ANN)
    with pytest.raises(PolicyError, match="cleanup"):
        plan_delete(state, FK, permanent=permanent, reason="x", actor=ANN)
    with pytest.raises(NotFoundError):
        plan_delete(state, "lr_000000000000", permanent=permanent, reason="x", actor=ANN)


def test_a_second_logical_deletion_and_restoring_an_active_one_are_refused(
    catalog: Catalog,
) -> None:
    with pytest.raises(PolicyError):
        plan_restore(catalog.load().state, CUSTOMER, reason="", actor=ANN)
    record(
        catalog, plan_delete(catalog.load().state, CUSTOMER, permanent=False, reason="x", actor=ANN)
    )
    with pytest.raises(PolicyError):
        plan_delete(catalog.load().state, CUSTOMER, permanent=False, reason="x", actor=ANN)
    # but a logically deleted one may still be deleted permanently
    plan_delete(catalog.load().state, CUSTOMER, permanent=True, reason="x", actor=ANN)


def test_cleanup_of_an_endpoint_removes_its_relationships_and_exclusions(
    catalog: Catalog,
) -> None:
    record(
        catalog, plan_delete(catalog.load().state, CUSTOMER, permanent=False, reason="x", actor=ANN)
    )
    manual = plan_add(
        catalog.load().state, "orders.placed", "customers.name", rationale="", actor=ANN
    )
    record(catalog, manual)
    record(
        catalog, plan_cleanup(catalog.load().state, columns=["customers.id"], reason="r", actor=ANN)
    )
    state = catalog.load().state
    assert CUSTOMER not in state.logical  # the exclusion is gone permanently
    assert manual.subject in state.logical  # customers.name is still there
    assert state.tables["customers"].column("id") is None
    record(catalog, plan_cleanup(catalog.load().state, tables=["customers"], reason="r", actor=ANN))
    state = catalog.load().state
    assert "customers" not in state.tables and manual.subject not in state.logical


def test_cleanup_of_a_catalog_relationship_and_what_it_refuses(catalog: Catalog) -> None:
    state = catalog.load().state
    with pytest.raises(PolicyError, match="delete"):
        plan_cleanup(state, relationships=[CUSTOMER], reason="r", actor=ANN)
    with pytest.raises(NotFoundError):
        plan_cleanup(state, relationships=["fk_000000000000"], reason="r", actor=ANN)
    with pytest.raises(NotFoundError):
        plan_cleanup(state, tables=["nope"], reason="r", actor=ANN)
    with pytest.raises(NotFoundError):
        plan_cleanup(state, columns=["orders.nope"], reason="r", actor=ANN)
    with pytest.raises(UsageError):
        plan_cleanup(state, columns=["orders"], reason="r", actor=ANN)
    with pytest.raises(UsageError):
        plan_cleanup(state, reason="r", actor=ANN)
    with pytest.raises(UsageError):
        plan_cleanup(state, tables=["orders"], reason="", actor=ANN)
    record(catalog, plan_cleanup(state, relationships=[FK], reason="r", actor=ANN))
    assert FK not in catalog.load().state.physical


def test_a_cleanup_is_undone_by_the_next_synchronization(catalog: Catalog) -> None:
    record(catalog, plan_cleanup(catalog.load().state, tables=["customers"], reason="r", actor=ANN))
    report = run_sync(catalog)  # the database is unchanged: the earlier snapshot is applied
    assert report.run.unchanged
    assert "customers" in report.state.tables
    assert state_of(catalog, CUSTOMER) == "active"  # newly observed again: generated again


def test_nothing_is_curated_before_the_first_sync() -> None:
    empty = catalog_on(db=shop()).load().state
    with pytest.raises(NotFoundError, match="sync"):
        plan_add(empty, "orders.id", "customers.id", rationale="", actor=ANN)
    with pytest.raises(NotFoundError, match="sync"):
        plan_reconstruct(empty, reason="", actor=ANN)
