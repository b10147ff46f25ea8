"""Older ledgers still verify (modules/catalog/fold.py, relationship_fold.py,
description_decisions.py): lines a tht wrote before a human's curation outlived its objects —
a deletion or Description the human redid after two syncs undid it, a Permanent Deletion redone
after an older sync regenerated the relationship, a generated candidate or a human's addition in
the place of a Manual Relationship that did not come back — were legal then; the fold now makes
them no-ops, never problems (else every such catalog would stop verifying on upgrade)."""

from __future__ import annotations

import msgspec
import pytest

from kernel import catalog_events as cev
from kernel.errors import IntegrityError
from modules.catalog import plan_delete
from modules.catalog.descriptions import plan_description
from modules.catalog.relationship_decisions import RelationshipDecisions
from tests.modules.catalog.curation_support import ANN, World, add_manual, assert_verified


def test_a_ledger_where_a_human_redid_what_two_syncs_undid_still_verifies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before this tht, two syncs brought a deleted relationship back active and erased a
    Description, and the human deleted and described again. Those lines were legal then; the
    fold now restores the decisions by itself, so the human's second lines are no-ops, never
    problems (else every such catalog would stop verifying on upgrade)."""
    world = World()
    world.describe("clienti")
    rid = world.rid()
    assert rid is not None
    active = world.catalog.load_for_write().state
    redelete = plan_delete(active, rid, permanent=False, reason="again", actor=ANN)
    world.delete(permanent=False)
    text = world.texts[("clienti",)]
    world.two_syncs("fatture.cliente_id", 0, False)
    world.two_syncs("clienti", 0, False)
    state = world.catalog.load_for_write().state
    assert state.logical[rid].state == "deleted" and state.tables["clienti"].description == text
    # the human's lines of then, appended as the older tht wrote them
    again = plan_description(active, "clienti", text="placeholder", reason="r", actor=ANN)
    again = msgspec.structs.replace(
        again, payload=msgspec.structs.replace(again.payload, text=text, reason="again")
    )
    world._append(redelete, again)
    assert_verified(world)
    state = world.catalog.load_for_write().state
    assert (state.logical[rid].state, state.logical[rid].deleted_reason) == ("deleted", "again")
    assert state.tables["clienti"].description == text
    # a deletion of a relationship a human's own line deleted is still a problem
    world._append(redelete)
    with pytest.raises(IntegrityError, match="is already deleted"):
        world.catalog.load_for_write()


def test_a_permanent_deletion_redone_after_an_older_sync_brought_it_back_still_verifies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    rid = world.rid()
    assert rid is not None
    active = world.catalog.load_for_write().state
    redelete = plan_delete(active, rid, permanent=True, reason="again", actor=ANN)
    world.delete(permanent=True)
    # the older sync planner wrote the generated line again (this one leaves it out)
    monkeypatch.setattr("modules.catalog.sync_plan._state_of", lambda decisions, draft: None)
    world.two_syncs("fatture.cliente_id", 0, False)
    monkeypatch.undo()
    events = world.catalog.caps.ledger.read().events
    generated = [e for e in events if isinstance(e, cev.RelationshipGenerated)]
    assert len(generated) == 2  # its line of then
    assert rid not in world.catalog.load_for_write().state.logical  # moot now
    world._append(redelete)
    assert_verified(world)
    assert rid not in world.catalog.load_for_write().state.logical


@pytest.mark.parametrize("spelling", [0, 1])
def test_a_ledger_where_a_manual_relationship_did_not_come_back_still_verifies(
    spelling: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before this tht a Manual Relationship did not come back when its endpoint did (at all;
    then, not in another case): the sync planner generated the candidate of its join in its
    place, or the human added it again. Those lines were legal then; the fold puts it back by
    itself now, so the older generated line is moot and the human's new addition holds —
    never a problem."""
    world = World()
    world.delete(permanent=True)
    add_manual(world, "fatture.cliente_id", "mine")
    add_manual(world, "fatture.totale", "by hand")
    monkeypatch.setattr(RelationshipDecisions, "manual", lambda self, *args: {})  # that tht
    world.two_syncs("fatture.cliente_id", spelling, False)
    world.drop_column("fatture", "totale")
    world.sync(scoped=False)
    world.add_column("fatture", ("totale", "TOTALE")[spelling])
    world.sync(scoped=False)
    generated = world.catalog.load_for_write().state.logical.values()
    assert [r.origin for r in generated] == ["generated"]  # in the manual one's place
    again = add_manual(world, f"fatture.{('totale', 'TOTALE')[spelling]}", "again")
    monkeypatch.undo()
    world.catalog.caps.write_cache(b"")  # that tht's fold
    assert_verified(world)
    state = world.catalog.load_for_write().state
    found = {r.from_columns[0].lower(): r for r in state.logical.values()}
    assert (found["cliente_id"].origin, found["cliente_id"].rationale) == ("manual", "mine")
    assert (found["totale"].rationale, found["totale"].seq) == ("again", again.seq)
