"""A Manual Relationship comes back with its endpoint (modules/catalog/relationship_decisions.py,
sync_plan.py, relationship_fold.py): the two-sync trick removes it with an endpoint column or
table, the sync that observes the endpoint anew — in the same case or another — puts it back as
the human added it (origin, rationale, seq), under the spelling the database has now, and no
candidate is generated in its place; a human's cleanup of the endpoint removes it for good."""

from __future__ import annotations

import pytest

from kernel import catalog_events as cev
from modules.catalog import plan_add, plan_cleanup, plan_delete, plan_restore
from modules.catalog.endpoints import relationship_id
from tests.modules.catalog.curation_support import ANN, World, add_manual, assert_verified


def test_a_manual_relationship_comes_back_with_its_endpoint_and_a_cleanup_removes_it() -> None:
    """The two-sync trick on a Manual Relationship: the sync that no longer observes
    ``fatture.totale`` removes the relationship with it; the one that observes it anew puts it
    back as the human added it (origin, rationale, seq), and generates nothing in its place. A
    human's cleanup of the column removes it for good."""
    world = World()
    state = world.catalog.load_for_write().state
    added = plan_add(state, "fatture.totale", "clienti.id", rationale="by hand", actor=ANN)
    world._append(added)
    rid = added.subject
    assert rid is not None
    before = world.catalog.load_for_write().state.logical[rid]
    world.drop_column("fatture", "totale")
    world.sync(scoped=False)
    assert rid not in world.catalog.load_for_write().state.logical
    world.add_column("fatture", "totale")
    world.sync(scoped=False)
    back = world.catalog.load_for_write().state.logical[rid]
    assert (back.origin, back.state, back.rationale, back.seq) == (
        "manual",
        "active",
        "by hand",
        before.seq,
    )
    events = world.catalog.caps.ledger.read().events
    assert not any(isinstance(e, cev.RelationshipGenerated) and e.payload.id == rid for e in events)
    assert_verified(world)
    # a human's cleanup of the column: not put back when the column is observed again
    state = world.catalog.load_for_write().state
    world._append(plan_cleanup(state, reason="tidy", actor=ANN, columns=["fatture.totale"]))
    world.sync(scoped=False)
    state = world.catalog.load_for_write().state
    assert state.table("fatture").column("totale") is not None and rid not in state.logical
    assert_verified(world)


def test_a_manual_relationship_on_a_generated_pair_is_not_replaced_by_a_candidate() -> None:
    """A human deleted the generated ``fatture.cliente_id → clienti.id`` permanently and added
    it by hand: after the two syncs it is the manual one again, and the sync planner generated
    no candidate in its place (which the fold would have recorded over it)."""
    world = World()
    world.delete(permanent=True)
    state = world.catalog.load_for_write().state
    added = plan_add(state, "fatture.cliente_id", "clienti.id", rationale="mine", actor=ANN)
    world._append(added)
    rid = added.subject
    seen = len(world.catalog.caps.ledger.read().events)
    world.two_syncs("fatture.cliente_id", 0, False)
    back = world.catalog.load_for_write().state.logical[rid]
    assert (back.origin, back.rationale) == ("manual", "mine")
    later = world.catalog.caps.ledger.read().events[seen:]
    assert not any(isinstance(e, cev.RelationshipGenerated) for e in later)
    assert_verified(world)


# ----------------------------------------------------------------------------- case changes


@pytest.mark.parametrize(
    ("dropped", "back", "ends"),
    [
        ("fatture.totale", "TOTALE", ("fatture", ("TOTALE",), "clienti", ("id",))),
        ("clienti", "CLIENTI", ("fatture", ("totale",), "CLIENTI", ("id",))),
    ],
)
def test_a_manual_relationship_comes_back_with_its_endpoint_in_another_case(
    dropped: str, back: str, ends: tuple[str, tuple[str, ...], str, tuple[str, ...]]
) -> None:
    """The two-sync trick, and the endpoint (a column, or its table) comes back spelt in another
    case: the Manual Relationship is put back under the spelling the database has now (the id
    of that spelling) with the human's origin, rationale and seq, and nothing is written for
    it. The human's later decisions address that id; a cleanup of the endpoint removes it for
    good."""
    world = World()
    before = add_manual(world, "fatture.totale", "by hand")
    table, _, column = dropped.partition(".")
    if column:
        world.drop_column(table, column)
    else:
        world.drop_table(table)
    world.sync(scoped=False)
    assert before.id not in world.catalog.load_for_write().state.logical
    if column:
        world.add_column(table, back)
    else:
        world.add_table(back)
    seen = len(world.catalog.caps.ledger.read().events)
    world.sync(scoped=False)
    rid = relationship_id("logical", *ends)
    state = world.catalog.load_for_write().state
    found = state.logical.get(rid)
    assert found is not None, "the Manual Relationship did not come back"
    assert (found.from_table, found.from_columns, found.to_table, found.to_columns) == ends
    assert (found.origin, found.state, found.rationale, found.seq) == (
        "manual",
        "active",
        "by hand",
        before.seq,
    )
    assert before.id not in state.logical
    later = world.catalog.caps.ledger.read().events[seen:]
    assert not [e for e in later if getattr(e.payload, "id", None) == rid]
    assert not [e for e in later if e.actor.startswith("human:")]
    assert_verified(world)
    # the human's decisions about it address the id it has now
    world._append(plan_delete(state, rid, permanent=False, reason="no", actor=ANN))
    assert world.catalog.load_for_write().state.logical[rid].state == "deleted"
    state = world.catalog.load_for_write().state
    world._append(plan_restore(state, rid, reason="yes", actor=ANN))
    assert world.catalog.load_for_write().state.logical[rid].state == "active"
    assert_verified(world)
    # a cleanup of the endpoint removes it for good
    state = world.catalog.load_for_write().state
    which = {"columns": [f"fatture.{back}"]} if column else {"tables": [back]}
    world._append(plan_cleanup(state, reason="tidy", actor=ANN, **which))
    world.sync(scoped=False)
    state = world.catalog.load_for_write().state
    assert world.ref(dropped) is not None
    assert not [r for r in state.logical.values() if r.origin == "manual"]
    assert_verified(world)


@pytest.mark.parametrize("dropped", ["fatture.cliente_id", "clienti"])
def test_no_candidate_replaces_a_manual_relationship_back_in_another_case(dropped: str) -> None:
    """A human added ``fatture.cliente_id → clienti.id`` by hand (its generated one deleted
    permanently); the column or its table comes back upper-case. The sync planner puts the
    Manual Relationship back before generating, so it writes no candidate for the new spelling
    (which the fold would record in its place). Deleted permanently by its new id, it stays
    deleted through two more syncs, back in lower case."""
    world = World()
    world.delete(permanent=True)
    add_manual(world, "fatture.cliente_id", "mine")
    seen = len(world.catalog.caps.ledger.read().events)
    world.two_syncs(dropped, 1, False)
    later = world.catalog.caps.ledger.read().events[seen:]
    assert not [e for e in later if isinstance(e, cev.RelationshipGenerated)]
    state = world.catalog.load_for_write().state
    [found] = state.logical.values()
    spelled = (found.from_columns, found.to_table)
    upper = (("CLIENTE_ID",), "clienti") if "." in dropped else (("cliente_id",), "CLIENTI")
    assert (found.origin, found.rationale, spelled) == ("manual", "mine", upper)
    assert_verified(world)
    world._append(plan_delete(state, found.id, permanent=True, reason="no", actor=ANN))
    seen = len(world.catalog.caps.ledger.read().events)
    world.two_syncs(dropped, 0, False)
    assert not world.catalog.load_for_write().state.logical
    later = world.catalog.caps.ledger.read().events[seen:]
    assert not [e for e in later if isinstance(e, cev.RelationshipGenerated)]
    assert_verified(world)
