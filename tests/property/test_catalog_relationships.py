"""The glossary's relationship rules under any sequence of operations (Hypothesis stateful).

The machine drives a real catalog (``modules.catalog`` on the in-memory store) over a fake
Workspace Database whose structure it changes at will: add or drop a table or a column, then
Synchronize All or a scoped sync; and the curation a human does: logical and permanent deletion,
restore, manual additions, reconstruction, cleanup of a table or a column. A small simple model
beside it says what must hold after every step:

- a logically deleted relationship stays deleted, never recreated, while both its columns
  exist (until a human restores or permanently deletes it);
- a permanently deleted generated relationship is not generated again by a sync while both
  its columns stay observed (only a reconstruction may recreate it);
- a reconstruction keeps every manual relationship and revives no logically deleted one;
- a relationship never outlives an endpoint: cleanup of an endpoint, or its disappearing at a
  resync, removes it and its exclusion;
- the Effective Relationship Map is a deterministic fold: a full fold equals the cached one and
  every incremental fold, and the ledger verifies with no fold problem.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kernel.errors import ThtError
from kernel.store.memory import MemoryStore
from modules.catalog import (
    Catalog,
    fold_catalog,
    fold_catalog_from,
    plan_add,
    plan_cleanup,
    plan_delete,
    plan_reconstruct,
    plan_restore,
    relationship_map,
    run_sync,
)
from modules.catalog.records import CatalogState, LogicalRelationship
from tests.modules.catalog.fakes import FakeDatabase, catalog_on

ANN = "human:ann"
TABLES = ("customers", "orders", "products", "suppliers", "countries")
#: columns whose names the generation rules recognise, plus plain ones
COLUMNS = (
    "customer_id:INTEGER",
    "order_id:INTEGER",
    "product_id:INTEGER",
    "supplier_id:INTEGER",
    "country_code:TEXT",
    "code:TEXT",
    "name:TEXT",
    "customer_id:TEXT",
)

Endpoints = tuple[tuple[str, str], tuple[str, str]]


def ends(r: LogicalRelationship) -> Endpoints:
    return ((r.from_table, r.from_columns[0]), (r.to_table, r.to_columns[0]))


def columns_of(state: CatalogState) -> set[tuple[str, str]]:
    return {(t.name, c.name) for t in state.tables.values() for c in t.columns}


class CatalogMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.store = MemoryStore()
        self.db = FakeDatabase()
        self.db.add("customers", "id:INTEGER:pk", "name:TEXT", "country_code:TEXT")
        self.db.add("orders", "id:INTEGER:pk", "customer_id:INTEGER")
        self.db.add("countries", "code:TEXT:pk")
        self.catalog: Catalog = catalog_on(self.store, db=self.db)
        self.excluded: dict[str, Endpoints] = {}  # logically deleted, per the model
        self.permanent: dict[str, Endpoints] = {}  # permanently deleted, not yet reconstructed
        self.manual: dict[str, Endpoints] = {}
        self.sync()

    # ------------------------------------------------------------------ helpers

    @property
    def state(self) -> CatalogState:
        return self.catalog.load().state

    def record(self, drafts: Any) -> bool:
        """Plan and record; False (and nothing written) when the planner refuses."""
        before = self.store.workspace_ledger("catalog").tail().last_seq
        loaded = self.catalog.load_for_write()
        try:
            planned = drafts(loaded.state)
        except ThtError as err:
            note(f"refused: {err.message}")
            assert self.store.workspace_ledger("catalog").tail().last_seq == before
            return False
        self.catalog.append(loaded, planned if isinstance(planned, list) else [planned])
        return True

    def forget_lost_endpoints(self) -> None:
        present = columns_of(self.state)
        for model in (self.excluded, self.permanent, self.manual):
            for rid, (a, b) in list(model.items()):
                if a not in present or b not in present:
                    del model[rid]

    # ------------------------------------------------------------------ the database

    @rule(table=st.sampled_from(TABLES))
    def add_table(self, table: str) -> None:
        if table not in self.db.tables:
            pk = "code:TEXT:pk" if table == "countries" else "id:INTEGER:pk"
            self.db.add(table, pk)

    @rule(table=st.sampled_from(TABLES))
    def drop_table(self, table: str) -> None:
        if table in self.db.tables and len(self.db.tables) > 1:
            self.db.drop(table)

    @rule(table=st.sampled_from(TABLES), column=st.sampled_from(COLUMNS))
    def add_column(self, table: str, column: str) -> None:
        name = column.split(":")[0]
        if table in self.db.tables and all(c.name != name for c in self.db.tables[table]):
            self.db.add_column(table, column)

    @rule(table=st.sampled_from(TABLES), data=st.data())
    def drop_column(self, table: str, data: st.DataObject) -> None:
        cols = [c.name for c in self.db.tables.get(table, []) if not c.pk]
        if cols:
            self.db.drop_column(table, data.draw(st.sampled_from(cols)))

    # ------------------------------------------------------------------ runs

    @rule()
    def sync(self) -> None:
        before = self.state
        run_sync(self.catalog)
        self.after_sync(before)

    @rule(tables=st.sets(st.sampled_from(TABLES), min_size=1, max_size=2))
    def sync_scope(self, tables: set[str]) -> None:
        before = self.state
        try:
            run_sync(self.catalog, scope=sorted(tables))
        except ThtError as err:  # a name neither the database nor the catalog has
            note(f"scoped run failed: {err.message}")
        self.after_sync(before)

    def after_sync(self, before: CatalogState) -> None:
        self.forget_lost_endpoints()
        after = self.state
        for rid, (a, b) in self.permanent.items():
            kept = {a, b} <= columns_of(before)
            assert not (kept and rid in after.logical), f"{rid} was generated again by a sync"

    # ------------------------------------------------------------------ curation

    @rule(data=st.data())
    def delete_logically(self, data: st.DataObject) -> None:
        active = sorted(r for r, x in self.state.logical.items() if x.state == "active")
        if not active:
            return
        rid = data.draw(st.sampled_from(active))
        relationship = self.state.logical[rid]
        if self.record(lambda s: plan_delete(s, rid, permanent=False, reason="no", actor=ANN)):
            self.excluded[rid] = ends(relationship)

    @rule(data=st.data())
    def delete_permanently(self, data: st.DataObject) -> None:
        ids = sorted(self.state.logical)
        if not ids:
            return
        rid = data.draw(st.sampled_from(ids))
        relationship = self.state.logical[rid]
        if self.record(lambda s: plan_delete(s, rid, permanent=True, reason="no", actor=ANN)):
            self.excluded.pop(rid, None)
            self.manual.pop(rid, None)
            if relationship.origin == "generated":
                self.permanent[rid] = ends(relationship)

    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        deleted = sorted(r for r, x in self.state.logical.items() if x.state == "deleted")
        if not deleted:
            return
        rid = data.draw(st.sampled_from(deleted))
        if self.record(lambda s: plan_restore(s, rid, reason="", actor=ANN)):
            del self.excluded[rid]

    @rule(data=st.data())
    def add_manual(self, data: st.DataObject) -> None:
        cols = sorted(columns_of(self.state))
        if len(cols) < 2:
            return
        a = data.draw(st.sampled_from(cols))
        b = data.draw(st.sampled_from(cols))
        drafts: list[Any] = []

        def plan(s: CatalogState) -> Any:
            drafts.append(plan_add(s, f"{a[0]}.{a[1]}", f"{b[0]}.{b[1]}", rationale="", actor=ANN))
            return drafts[0]

        if self.record(plan):
            self.manual[drafts[0].subject] = (a, b)
            self.permanent.pop(drafts[0].subject, None)

    @rule()
    def reconstruct(self) -> None:
        before = self.state
        self.record(lambda s: plan_reconstruct(s, reason="", actor=ANN))
        after = self.state
        for rid in self.manual:
            assert after.logical[rid].origin == "manual"
            assert after.logical[rid] == before.logical[rid]  # untouched
        for rid in self.excluded:
            assert after.logical[rid].state == "deleted"
        self.permanent.clear()  # a reconstruction may recreate them

    @rule(data=st.data())
    def cleanup_table(self, data: st.DataObject) -> None:
        tables = sorted(self.state.tables)
        if not tables:
            return
        table = data.draw(st.sampled_from(tables))
        if self.record(lambda s: plan_cleanup(s, tables=[table], reason="tidy", actor=ANN)):
            assert not any(table in (r.from_table, r.to_table) for r in self.state.logical.values())
            self.forget_lost_endpoints()

    @rule(data=st.data())
    def cleanup_column(self, data: st.DataObject) -> None:
        cols = sorted(columns_of(self.state))
        if not cols:
            return
        table, column = data.draw(st.sampled_from(cols))
        if self.record(
            lambda s: plan_cleanup(s, columns=[f"{table}.{column}"], reason="tidy", actor=ANN)
        ):
            gone = (table, column)
            assert not any(gone in ends(r) for r in self.state.logical.values())
            self.forget_lost_endpoints()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def exclusions_hold_while_both_columns_exist(self) -> None:
        state = self.state
        for rid in self.excluded:
            assert state.logical[rid].state == "deleted", f"{rid} came back"
        for rid in self.manual:
            assert state.logical[rid].origin == "manual"

    @invariant()
    def no_relationship_outlives_an_endpoint(self) -> None:
        state = self.state
        present = columns_of(state)
        for r in state.logical.values():
            assert set(ends(r)) <= present

    @invariant()
    def the_map_is_a_deterministic_incremental_fold(self) -> None:
        events = self.store.workspace_ledger("catalog").read().events
        load = self.catalog.load_snapshot
        whole = fold_catalog(events, load)
        cached = self.catalog.load().state
        assert whole == cached
        cut = len(events) // 2
        assert fold_catalog_from(fold_catalog(events[:cut], load), events[cut:], load) == whole
        assert relationship_map(whole, include_deleted=True) == relationship_map(
            cached, include_deleted=True
        )
        assert not whole.problems and whole.active_run is None

    @invariant()
    def the_ledger_verifies(self) -> None:
        report = self.catalog.verify()
        assert report.ok, report.problems


# One example is a catalog's whole history (up to 30 operations, each checked on the in-memory
# store): the ci profile's 200 examples take a few seconds.
CatalogMachine.TestCase.settings = settings(
    settings.default,
    stateful_step_count=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestCatalogRelationships = CatalogMachine.TestCase
