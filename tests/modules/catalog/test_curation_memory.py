"""A human's Description, Relationship Deletion and Manual Relationship outlive their objects
(modules/catalog/curation_memory.py, description_decisions.py, relationship_decisions.py):
whatever sequence of syncs, scoped syncs, cleanups, dropped and re-added columns and tables, and
case changes an agent drives, a table or column in the catalog carries the last Description a
human wrote for its identity, and the relationship ``fatture.cliente_id → clienti.id`` is never
active against a human's last deletion of it (nor deleted against a Restore) and, when a human
added it by hand, is that Manual Relationship whenever both its ends are in the catalog, under
their spelling of now; an agent's proposal is never remembered. Folding whole or in two parts
agrees.

Older ledgers: test_curation_old_ledgers.py; Manual Relationships coming back with their
endpoints, in the same case or another: test_curation_manual_relationships.py; the world these
tests drive: curation_support.py."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from modules.catalog.curation_memory import CurationMemory, identity
from modules.catalog.records import LogicalRelationship, RelationshipDecision
from modules.catalog.relationship_decisions import RelationshipDecisions
from tests.modules.catalog.curation_support import (
    ANN,
    COLUMN_SPELLINGS,
    TABLE_SPELLINGS,
    World,
)
from tests.modules.catalog.fakes import folded_alike

TARGETS = ("clienti", "clienti.nome", "fatture.cliente_id")


def _relationship(
    rid: str, from_column: str = "cliente_id", to_table: str = "clienti"
) -> LogicalRelationship:
    return LogicalRelationship(
        id=rid,
        origin="generated",
        from_table="fatture",
        from_columns=(from_column,),
        to_table=to_table,
        to_columns=("id",),
        seq=9,
    )


# ----------------------------------------------------------------------------- the pure rules


def test_a_spelling_gets_its_own_decision_else_the_latest_of_its_identity() -> None:
    decisions = RelationshipDecisions()
    present = {"lr_a": _relationship("lr_a")}
    decisions.remember(
        _relationship("lr_a"), "deleted", reason="no", seq=3, actor=ANN, logical=present
    )
    decisions.remember(
        _relationship("lr_b", "CLIENTE_ID"), "active", reason="", seq=5, actor=ANN, logical=present
    )
    assert decisions.state_of("fatture", ["cliente_id"], "clienti", ["id"]) == "deleted"
    assert decisions.state_of("fatture", ["CLIENTE_ID"], "clienti", ["id"]) == "active"
    assert decisions.state_of("fatture", ["Cliente_Id"], "CLIENTI", ["ID"]) == "active"  # latest
    assert decisions.state_of("fatture", ["totale"], "clienti", ["id"]) is None
    assert [d.seq for d in decisions.freeze()] == [3, 5]  # both kept: lr_a is present
    decisions.remember(
        _relationship("lr_c", "Cliente_Id"), "deleted", reason="", seq=6, actor=ANN, logical={}
    )
    assert [d.seq for d in decisions.freeze()] == [6]  # renamed in case: the others replaced


def test_the_memory_is_empty_until_a_decision_and_its_order_is_total() -> None:
    def spelling(d: RelationshipDecision) -> tuple[str, ...]:
        return (d.from_table, *d.from_columns)

    memory: CurationMemory[RelationshipDecision] = CurationMemory((), spelling)
    assert not memory and memory.recall(("fatture", "x")) == []
    same_seq = [  # one entry, two decisions (a cleanup of both endpoints)
        RelationshipDecision(
            id=rid,
            from_table="fatture",
            from_columns=(column,),
            to_table="clienti",
            to_columns=("id",),
            state="permanent",
            seq=4,
            actor=ANN,
        )
        for rid, column in (("lr_b", "b"), ("lr_a", "a"))
    ]
    for decision in same_seq:
        memory.remember(decision, lambda _: True)
    assert [d.from_columns for d in memory.freeze()] == [("a",), ("b",)]
    assert identity(("Fatture", "CLIENTE_ID")) == ("fatture", "cliente_id")


def test_a_sync_leaves_a_permanent_deletion_out_and_a_reconstruction_recreates_it() -> None:
    decisions = RelationshipDecisions()
    record = _relationship("lr_a")
    decisions.remember(record, "permanent", reason="x", seq=3, actor=ANN, logical={})
    synced = decisions.generated(record, reconstruction=False, actor="module:catalog", logical={})
    assert synced is None
    again = decisions.generated(record, reconstruction=True, actor=ANN, logical={})
    assert again == record
    assert [(d.state, d.seq, d.actor) for d in decisions.freeze()] == [("active", 9, ANN)]


def test_a_logical_deletion_comes_back_as_its_exclusion_and_a_cleanup_makes_it_permanent() -> None:
    decisions = RelationshipDecisions()
    record = _relationship("lr_a")
    decisions.remember(record, "deleted", reason="wrong", seq=3, actor=ANN, logical={})
    again = decisions.generated(record, reconstruction=True, actor=ANN, logical={})
    assert again is not None
    assert (again.state, again.deleted_seq, again.deleted_reason) == ("deleted", 3, "wrong")
    decisions.cleaned({("clienti", "nome")}, reason="tidy", seq=7, actor=ANN)  # not an endpoint
    assert [(d.state, d.seq) for d in decisions.freeze()] == [("deleted", 3)]
    decisions.cleaned({("FATTURE", "Cliente_ID")}, reason="tidy", seq=8, actor=ANN)
    assert [(d.state, d.seq) for d in decisions.freeze()] == [("permanent", 8)]


# ----------------------------------------------------------------------------- the property


_TABLES = st.sampled_from(("clienti", "fatture"))
_COLUMNS = st.sampled_from((("clienti", "nome"), ("fatture", "cliente_id")))
_ADDED = _TABLES.flatmap(
    lambda t: st.tuples(st.just("add_column"), st.just(t), st.sampled_from(COLUMN_SPELLINGS[t]))
)
_STEP = st.one_of(
    st.tuples(st.just("describe"), st.sampled_from(TARGETS)),
    st.tuples(st.just("consolidate"), st.sampled_from(TARGETS)),
    st.tuples(st.just("propose"), st.sampled_from(TARGETS)),
    st.tuples(st.just("delete"), st.booleans()),
    st.tuples(st.just("restore")),
    st.tuples(st.just("add_manual")),
    st.tuples(st.just("reconstruct")),
    st.tuples(st.just("cleanup"), st.sampled_from(TARGETS)),
    _COLUMNS.map(lambda c: ("drop_column", *c)),
    _ADDED,
    st.tuples(st.just("drop_table"), _TABLES),
    st.tuples(
        st.just("add_table"), st.sampled_from([s for v in TABLE_SPELLINGS.values() for s in v])
    ),
    st.tuples(st.just("sync"), st.booleans()),
    st.tuples(
        st.just("two_syncs"),
        st.sampled_from((*TARGETS, "fatture")),
        st.integers(min_value=0, max_value=2),
        st.booleans(),
    ),
)


@settings(max_examples=80)
@example(steps=[("delete", False), ("two_syncs", "fatture.cliente_id", 1, False)], cut=4)
@example(steps=[("delete", True), ("two_syncs", "clienti", 2, True), ("reconstruct",)], cut=9)
@example(steps=[("delete", False), ("two_syncs", "fatture", 0, False), ("restore",)], cut=2)
@example(steps=[("delete", False), ("cleanup", "clienti"), ("sync", False)], cut=6)
@example(steps=[("describe", "clienti"), ("two_syncs", "clienti", 1, False)], cut=3)
@example(steps=[("consolidate", "clienti.nome"), ("two_syncs", "clienti.nome", 1, True)], cut=5)
@example(steps=[("add_manual",), ("two_syncs", "fatture.cliente_id", 1, True)], cut=7)
@example(steps=[("add_manual",), ("two_syncs", "clienti", 2, False)], cut=9)
@given(steps=st.lists(_STEP, max_size=24), cut=st.integers(min_value=0, max_value=80))
def test_every_object_carries_the_last_human_description_and_deletion_about_it(
    steps: list[tuple[object, ...]], cut: int
) -> None:
    world = World()
    for name, *args in steps:
        getattr(world, str(name))(*args)
        world.check()
    world.sync(scoped=False)  # whatever the database holds now
    world.check()
    whole = folded_alike(world.catalog, cut)
    assert not whole.problems
    assert world.catalog.verify().ok
