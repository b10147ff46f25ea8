"""A human's Description, Relationship Deletion and Manual Relationship outlive their objects
(modules/catalog/curation_memory.py, description_decisions.py, relationship_decisions.py):
whatever sequence of syncs, scoped syncs, cleanups, dropped and re-added columns and tables, and
case changes an agent drives, a table or column in the catalog carries the last Description a
human wrote for its identity, and the relationship ``fatture.cliente_id → clienti.id`` is never
active against a human's last deletion of it (nor deleted against a Restore) and, when a human
added it by hand, is that Manual Relationship whenever both its ends are in the catalog, under
their spelling of now; an agent's proposal is never remembered. Folding whole or in two parts
agrees."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kernel import catalog_events as cev
from kernel.errors import IntegrityError, PolicyError
from modules.catalog import (
    Catalog,
    plan_add,
    plan_cleanup,
    plan_delete,
    plan_reconstruct,
    plan_restore,
    run_sync,
)
from modules.catalog.curation_memory import CurationMemory, identity
from modules.catalog.descriptions import plan_consolidation, plan_description, plan_proposal
from modules.catalog.endpoints import relationship_id
from modules.catalog.records import CatalogTable, LogicalRelationship, RelationshipDecision
from modules.catalog.relationship_decisions import RelationshipDecisions
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, folded_alike

ANN = "human:ann"
TARGETS = ("clienti", "clienti.nome", "fatture.cliente_id")
TABLE_SPELLINGS = {"clienti": ("clienti", "CLIENTI", "Clienti"), "fatture": ("fatture", "FATTURE")}
COLUMN_SPELLINGS = {"clienti": ("nome", "NOME"), "fatture": ("cliente_id", "CLIENTE_ID")}
RELATIONSHIP = ("fatture.cliente_id", "clienti.id")  # its identity


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


class World:
    """The fake database, the catalog on it, and the model: the last human Description per
    identity, the last human decision about the relationship (no two present objects share an
    identity here)."""

    def __init__(self) -> None:
        self.db = FakeDatabase().add("clienti", "id:INTEGER:pk", "nome:TEXT")
        self.db.add("fatture", "id:INTEGER:pk", "cliente_id:INTEGER", "totale:REAL")
        self.catalog: Catalog = catalog_on(db=self.db)
        self.texts: dict[tuple[str, ...], str] = {}
        self.relationship: str | None = None  # deleted | permanent | active
        self.manual = False  # the last decision (active) is the human's Manual Relationship
        self.written = 0
        run_sync(self.catalog)

    # -- where things are

    def in_db(self, table: str) -> str | None:
        return next((t for t in self.db.tables if t.lower() == table), None)

    def in_catalog(self, table: str) -> CatalogTable | None:
        return self.catalog.load_for_write().state.table(table)

    def ref(self, target: str) -> str | None:
        """``target`` as the catalog spells it now (None: not in the catalog)."""
        table_name, _, column = target.partition(".")
        table = self.in_catalog(table_name)
        if table is None or not column:
            return table.name if table is not None else None
        found = next((c for c in table.columns if c.name.lower() == column), None)
        return f"{table.name}.{found.name}" if found is not None else None

    def rid(self) -> str | None:
        """The relationship's id as the catalog holds it now (any spelling)."""
        state = self.catalog.load_for_write().state
        for r in state.logical.values():
            ends = (f"{r.from_table}.{r.from_columns[0]}", f"{r.to_table}.{r.to_columns[0]}")
            if identity(ends) == RELATIONSHIP:
                return r.id
        return None

    def _append(self, *drafts: object) -> None:
        loaded = self.catalog.load_for_write()
        self.catalog.append(loaded, list(drafts))  # type: ignore[arg-type]

    # -- the human's and the agent's curation

    def describe(self, target: str) -> None:
        ref = self.ref(target)
        if ref is None:
            return
        self.written += 1
        text = f"text {self.written}"
        state = self.catalog.load_for_write().state
        self._append(plan_description(state, ref, text=text, reason="r", actor=ANN))
        self.texts[identity(tuple(target.split(".")))] = text

    def consolidate(self, target: str) -> None:
        ref = self.ref(target)
        if ref is None:
            return
        self.propose(target)
        state = self.catalog.load_for_write().state
        try:
            plan = plan_consolidation(state, [ref], all_generated=False, reason="r", actor=ANN)
        except PolicyError:
            return  # its text is the Description already
        self._append(plan.draft)
        self.texts[identity(tuple(target.split(".")))] = f"proposal {self.written}"

    def propose(self, target: str) -> None:
        ref = self.ref(target)
        if ref is not None:
            self.written += 1
            state = self.catalog.load_for_write().state
            self._append(plan_proposal(state, ref, text=f"proposal {self.written}", language="it"))

    def delete(self, permanent: bool) -> None:
        rid = self.rid()
        state = self.catalog.load_for_write().state
        if rid is None or (not permanent and state.logical[rid].state == "deleted"):
            return
        self._append(plan_delete(state, rid, permanent=permanent, reason="no", actor=ANN))
        self.relationship = "permanent" if permanent else "deleted"
        self.manual = False

    def restore(self) -> None:
        rid = self.rid()
        state = self.catalog.load_for_write().state
        if rid is not None and state.logical[rid].state == "deleted":
            self._append(plan_restore(state, rid, reason="yes", actor=ANN))
            self.relationship = "active"
            self.manual = state.logical[rid].origin == "manual"

    def add_manual(self) -> None:
        """The human adds the relationship by hand, after deleting it permanently when the
        catalog has it (generated, manual, or an exclusion)."""
        source, target = self.ref("fatture.cliente_id"), self.ref("clienti.id")
        if source is None or target is None:
            return
        self.delete(permanent=True)
        state = self.catalog.load_for_write().state
        self._append(plan_add(state, source, target, rationale="by hand", actor=ANN))
        self.relationship, self.manual = "active", True

    def reconstruct(self) -> None:
        state = self.catalog.load_for_write().state
        drafts = plan_reconstruct(state, reason="r", actor=ANN)
        self._append(*drafts)
        if self.rid() is not None and self.relationship == "permanent":
            self.relationship = "active"  # the human's reconstruction recreated it

    def cleanup(self, target: str) -> None:
        ref = self.ref(target)
        if ref is None:
            return
        state = self.catalog.load_for_write().state
        which = {"columns": [ref]} if "." in ref else {"tables": [ref]}
        self._append(plan_cleanup(state, reason="tidy", actor=ANN, **which))
        touched = target in ("clienti", "fatture.cliente_id")  # clienti.id, or the from column
        if touched and self.relationship == "deleted":
            self.relationship = "permanent"
        self.manual = self.manual and not touched  # not put back: generated as any candidate

    # -- the agent's database changes and syncs

    def drop_column(self, table: str, column: str) -> None:
        name = self.in_db(table)
        if name is not None:
            for found in [c.name for c in self.db.tables[name] if c.name.lower() == column]:
                self.db.drop_column(name, found)

    def add_column(self, table: str, spelling: str) -> None:
        name = self.in_db(table)
        if name is not None and all(
            c.name.lower() != spelling.lower() for c in self.db.tables[name]
        ):
            self.db.add_column(
                name, f"{spelling}:{'TEXT' if spelling.lower() == 'nome' else 'INTEGER'}"
            )

    def drop_table(self, table: str) -> None:
        name = self.in_db(table)
        if name is not None:
            self.db.drop(name)

    def add_table(self, spelling: str) -> None:
        if self.in_db(spelling.lower()) is not None:
            return
        if spelling.lower() == "clienti":
            self.db.add(spelling, "id:INTEGER:pk", "nome:TEXT")
        else:
            self.db.add(spelling, "id:INTEGER:pk", "cliente_id:INTEGER", "totale:REAL")

    def sync(self, scoped: bool) -> None:
        if not scoped:
            run_sync(self.catalog)
            return
        for table in ("clienti", "fatture"):
            known = self.in_catalog(table)
            name = known.name if known is not None else self.in_db(table)
            if name is not None:
                run_sync(self.catalog, scope=[name])

    def two_syncs(self, target: str, spelling: int, scoped: bool) -> None:
        """The agent's trick: the database without ``target``, a sync, ``target`` back (under
        one of its spellings), a sync."""
        table, _, column = target.partition(".")
        if column:
            self.drop_column(table, column)
        else:
            self.drop_table(table)
        self.sync(scoped)
        if column:
            spellings = COLUMN_SPELLINGS[table]
            self.add_column(table, spellings[spelling % len(spellings)])
        else:
            spellings = TABLE_SPELLINGS[table]
            self.add_table(spellings[spelling % len(spellings)])
        self.sync(scoped)

    # -- the invariants

    def check(self) -> None:
        state = self.catalog.load_for_write().state
        for table in state.tables.values():
            assert table.description == self.texts.get(identity((table.name,)), ""), table.name
            for column in table.columns:
                expected = self.texts.get(identity((table.name, column.name)), "")
                assert column.description == expected, (table.name, column.name, self.texts)
        rid = self.rid()
        ends = self.ref("fatture.cliente_id"), self.ref("clienti.id")
        if self.manual and self.relationship == "active" and None not in ends:
            # put back with its ends, whatever their case now, as the database spells them
            assert rid is not None, "the Manual Relationship was not put back"
            found = state.logical[rid]
            spelled = (
                f"{found.from_table}.{found.from_columns[0]}",
                f"{found.to_table}.{found.to_columns[0]}",
            )
            assert (found.origin, found.rationale, spelled) == ("manual", "by hand", ends), found
        if rid is None:
            return
        found = state.logical[rid]
        assert self.relationship != "permanent", "a permanent deletion came back"
        wanted = "deleted" if self.relationship == "deleted" else "active"
        assert found.state == wanted, (found, self.relationship)


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


# ----------------------------------------------------------------------------- older ledgers


def _verified(world: World) -> None:
    """The catalog's ledger verifies and folds without a problem, whole and in two parts."""
    assert world.catalog.verify().ok
    assert world.catalog.load_for_write().state.problems == ()
    folded_alike(world.catalog, len(world.catalog.caps.ledger.read().events) // 2)


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
    _verified(world)
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
    _verified(world)
    assert rid not in world.catalog.load_for_write().state.logical


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
    _verified(world)
    # a human's cleanup of the column: not put back when the column is observed again
    state = world.catalog.load_for_write().state
    world._append(plan_cleanup(state, reason="tidy", actor=ANN, columns=["fatture.totale"]))
    world.sync(scoped=False)
    state = world.catalog.load_for_write().state
    assert state.table("fatture").column("totale") is not None and rid not in state.logical
    _verified(world)


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
    _verified(world)


# ----------------------------------------------------------------------------- case changes


def _manual(world: World, source: str, rationale: str) -> LogicalRelationship:
    """A human's Manual Relationship ``source → clienti.id``, as the fold holds it."""
    state = world.catalog.load_for_write().state
    added = plan_add(state, source, "clienti.id", rationale=rationale, actor=ANN)
    world._append(added)
    assert added.subject is not None
    return world.catalog.load_for_write().state.logical[added.subject]


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
    before = _manual(world, "fatture.totale", "by hand")
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
    _verified(world)
    # the human's decisions about it address the id it has now
    world._append(plan_delete(state, rid, permanent=False, reason="no", actor=ANN))
    assert world.catalog.load_for_write().state.logical[rid].state == "deleted"
    state = world.catalog.load_for_write().state
    world._append(plan_restore(state, rid, reason="yes", actor=ANN))
    assert world.catalog.load_for_write().state.logical[rid].state == "active"
    _verified(world)
    # a cleanup of the endpoint removes it for good
    state = world.catalog.load_for_write().state
    which = {"columns": [f"fatture.{back}"]} if column else {"tables": [back]}
    world._append(plan_cleanup(state, reason="tidy", actor=ANN, **which))
    world.sync(scoped=False)
    state = world.catalog.load_for_write().state
    assert world.ref(dropped) is not None
    assert not [r for r in state.logical.values() if r.origin == "manual"]
    _verified(world)


@pytest.mark.parametrize("dropped", ["fatture.cliente_id", "clienti"])
def test_no_candidate_replaces_a_manual_relationship_back_in_another_case(dropped: str) -> None:
    """A human added ``fatture.cliente_id → clienti.id`` by hand (its generated one deleted
    permanently); the column or its table comes back upper-case. The sync planner puts the
    Manual Relationship back before generating, so it writes no candidate for the new spelling
    (which the fold would record in its place). Deleted permanently by its new id, it stays
    deleted through two more syncs, back in lower case."""
    world = World()
    world.delete(permanent=True)
    _manual(world, "fatture.cliente_id", "mine")
    seen = len(world.catalog.caps.ledger.read().events)
    world.two_syncs(dropped, 1, False)
    later = world.catalog.caps.ledger.read().events[seen:]
    assert not [e for e in later if isinstance(e, cev.RelationshipGenerated)]
    state = world.catalog.load_for_write().state
    [found] = state.logical.values()
    spelled = (found.from_columns, found.to_table)
    upper = (("CLIENTE_ID",), "clienti") if "." in dropped else (("cliente_id",), "CLIENTI")
    assert (found.origin, found.rationale, spelled) == ("manual", "mine", upper)
    _verified(world)
    world._append(plan_delete(state, found.id, permanent=True, reason="no", actor=ANN))
    seen = len(world.catalog.caps.ledger.read().events)
    world.two_syncs(dropped, 0, False)
    assert not world.catalog.load_for_write().state.logical
    later = world.catalog.caps.ledger.read().events[seen:]
    assert not [e for e in later if isinstance(e, cev.RelationshipGenerated)]
    _verified(world)


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
    _manual(world, "fatture.cliente_id", "mine")
    _manual(world, "fatture.totale", "by hand")
    monkeypatch.setattr(RelationshipDecisions, "manual", lambda self, *args: {})  # that tht
    world.two_syncs("fatture.cliente_id", spelling, False)
    world.drop_column("fatture", "totale")
    world.sync(scoped=False)
    world.add_column("fatture", ("totale", "TOTALE")[spelling])
    world.sync(scoped=False)
    generated = world.catalog.load_for_write().state.logical.values()
    assert [r.origin for r in generated] == ["generated"]  # in the manual one's place
    again = _manual(world, f"fatture.{('totale', 'TOTALE')[spelling]}", "again")
    monkeypatch.undo()
    world.catalog.caps.write_cache(b"")  # that tht's fold
    _verified(world)
    state = world.catalog.load_for_write().state
    found = {r.from_columns[0].lower(): r for r in state.logical.values()}
    assert (found["cliente_id"].origin, found["cliente_id"].rationale) == ("manual", "mine")
    assert (found["totale"].rationale, found["totale"].seq) == ("again", again.seq)
