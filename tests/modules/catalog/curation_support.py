"""The world the curation-memory tests drive (tests/modules/catalog/test_curation_*.py).

:class:`World`: a :class:`~tests.modules.catalog.fakes.FakeDatabase` with ``clienti`` and
``fatture``, the catalog on it, the human's and the agent's moves (curation, database changes,
syncs, the two-sync trick) and the model of what a human last decided, checked by
:meth:`World.check`. :func:`assert_verified`: the ledger verifies and folds alike whole and in two
parts; :func:`add_manual`: a human's Manual Relationship added through the planner.
"""

from __future__ import annotations

from kernel.errors import PolicyError
from modules.catalog import (
    Catalog,
    plan_add,
    plan_cleanup,
    plan_delete,
    plan_reconstruct,
    plan_restore,
    run_sync,
)
from modules.catalog.curation_memory import identity
from modules.catalog.descriptions import plan_consolidation, plan_description, plan_proposal
from modules.catalog.records import CatalogTable, LogicalRelationship
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, folded_alike

ANN = "human:ann"
TABLE_SPELLINGS = {"clienti": ("clienti", "CLIENTI", "Clienti"), "fatture": ("fatture", "FATTURE")}
COLUMN_SPELLINGS = {"clienti": ("nome", "NOME"), "fatture": ("cliente_id", "CLIENTE_ID")}
RELATIONSHIP = ("fatture.cliente_id", "clienti.id")  # its identity


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


def assert_verified(world: World) -> None:
    """The catalog's ledger verifies and folds without a problem, whole and in two parts."""
    assert world.catalog.verify().ok
    assert world.catalog.load_for_write().state.problems == ()
    folded_alike(world.catalog, len(world.catalog.caps.ledger.read().events) // 2)


def add_manual(world: World, source: str, rationale: str) -> LogicalRelationship:
    """A human's Manual Relationship ``source → clienti.id``, as the fold holds it."""
    state = world.catalog.load_for_write().state
    added = plan_add(state, source, "clienti.id", rationale=rationale, actor=ANN)
    world._append(added)
    assert added.subject is not None
    return world.catalog.load_for_write().state.logical[added.subject]
