"""A human's Sensitive Data Flag decision outlives its column (modules/catalog/flag_decisions.py):
whatever sequence of syncs, scoped syncs, cleanups, dropped and re-added columns and tables, and
case changes an agent drives, a column present in the catalog carries the last decision a human
took about its identity (``table.column``, case-folded) — on stays on, an explicit off stays off —
and a column no human decided about is not sensitive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.errors import PolicyError
from modules.catalog import Catalog, plan_cleanup, run_sync
from modules.catalog.flag_decisions import FlagDecisions, identity
from modules.catalog.records import CatalogColumn, CatalogTable, FlagDecision
from modules.catalog.sensitive_flags import plan_flags
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, folded_alike

ANN = "human:ann"
COLUMNS = ("email", "nome")
SPELLINGS = {"email": ("email", "EMAIL", "Email"), "nome": ("nome", "NOME")}
TABLE_SPELLINGS = ("people", "PEOPLE", "People")


def _decision(table: str, column: str, sensitive: bool, seq: int = 1) -> FlagDecision:
    return FlagDecision(table=table, column=column, sensitive=sensitive, seq=seq, actor=ANN)


def _table(name: str, *columns: str, sensitive: bool = False) -> CatalogTable:
    return CatalogTable(
        name=name,
        columns=tuple(
            CatalogColumn(name=c, position=i, type="TEXT", sensitive=sensitive)
            for i, c in enumerate(columns, 1)
        ),
    )


# ----------------------------------------------------------------------------- the pure rules


def _remembered(
    before: FlagDecision, decision: FlagDecision, tables: dict[str, CatalogTable]
) -> FlagDecisions:
    decisions = FlagDecisions((before,))
    decisions.remember(decision, tables)
    return decisions


def test_a_decision_replaces_the_one_for_its_spelling_and_renamed_spellings() -> None:
    tables = {"people": _table("people", "EMAIL")}
    kept = _remembered(
        _decision("people", "email", True), _decision("people", "EMAIL", False, seq=2), tables
    )
    assert kept.freeze() == (_decision("people", "EMAIL", False, seq=2),)  # a rename in case
    assert kept.decided("people", "email") is False


def test_a_present_column_of_another_spelling_keeps_its_own_decision() -> None:
    tables = {"people": _table("people", "email", "EMAIL")}
    kept = _remembered(
        _decision("people", "email", True), _decision("people", "EMAIL", False, seq=2), tables
    )
    assert [d.column for d in kept.freeze()] == ["email", "EMAIL"]  # oldest first
    assert kept.decided("people", "email") is True
    assert kept.decided("people", "EMAIL") is False
    assert kept.decided("PEOPLE", "Email") is True  # no decision of its own: fail safe


def test_no_decision_is_none_and_other_identities_do_not_count() -> None:
    kept = FlagDecisions((_decision("people", "email", True),))
    assert kept.decided("people", "nome") is None
    assert kept.decided("orders", "email") is None
    assert identity("People", "EMail") == ("people", "email")


def test_restore_touches_only_the_added_columns() -> None:
    tables = {"people": _table("people", "email", "nome")}
    both = (_decision("people", "email", True), _decision("people", "nome", True, seq=2))
    kept = FlagDecisions(both)
    changed = kept.restore(tables, {("people", "email")})
    people = changed["people"]
    assert [(c.name, c.sensitive) for c in people.columns] == [("email", True), ("nome", False)]
    assert FlagDecisions().restore(tables, {("people", "email")}) == {}
    assert kept.freeze() == both  # read only


# ----------------------------------------------------------------------------- the property


class World:
    """The fake database, the catalog on it, and the model: the last human decision per
    column identity (no two present columns share an identity here)."""

    def __init__(self) -> None:
        self.db = FakeDatabase().add("orders", "id:INTEGER:pk", "total:REAL")
        self.db.add("people", "id:INTEGER:pk", "email:TEXT", "nome:TEXT")
        self.catalog: Catalog = catalog_on(db=self.db)
        self.last: dict[tuple[str, str], bool] = {}
        run_sync(self.catalog)

    def people_in_db(self) -> str | None:
        return next((t for t in self.db.tables if t.lower() == "people"), None)

    def people_in_catalog(self) -> CatalogTable | None:
        return self.catalog.load_for_write().state.table("people")

    def catalog_ref(self, column: str) -> str | None:
        """``people.<column>`` as the catalog spells it now (None: not in the catalog)."""
        table = self.people_in_catalog()
        if table is None:
            return None
        found = next((c for c in table.columns if c.name.lower() == column), None)
        return f"{table.name}.{found.name}" if found is not None else None

    def flag(self, column: str, on: bool) -> None:
        ref = self.catalog_ref(column)
        if ref is None:
            return
        loaded = self.catalog.load_for_write()
        try:
            plan = plan_flags(loaded.state, [ref], sensitive=on, reason="r", actor=ANN)
        except PolicyError:
            return  # already at that value: nothing recorded
        self.catalog.append(loaded, plan.drafts)
        self.last[("people", column)] = on

    def drop_column(self, column: str) -> None:
        table = self.people_in_db()
        if table is not None:
            for name in [c.name for c in self.db.tables[table] if c.name.lower() == column]:
                self.db.drop_column(table, name)

    def add_column(self, spelling: str) -> None:
        table = self.people_in_db()
        if table is not None and all(
            c.name.lower() != spelling.lower() for c in self.db.tables[table]
        ):
            self.db.add_column(table, f"{spelling}:TEXT")

    def drop_table(self) -> None:
        table = self.people_in_db()
        if table is not None:
            self.db.drop(table)

    def add_table(self, spelling: str) -> None:
        if self.people_in_db() is None:
            self.db.add(spelling, "id:INTEGER:pk", "email:TEXT", "nome:TEXT")

    def sync(self, scoped: bool) -> None:
        if not scoped:
            run_sync(self.catalog)
            return
        known = self.people_in_catalog()
        name = known.name if known is not None else self.people_in_db()
        if name is not None:
            run_sync(self.catalog, scope=[name])

    def cleanup(self, column: str) -> None:
        ref = self.catalog_ref(column)
        if ref is None:
            return
        loaded = self.catalog.load_for_write()
        self.catalog.append(
            loaded, [plan_cleanup(loaded.state, columns=[ref], reason="tidy", actor=ANN)]
        )

    def check(self) -> None:
        state = self.catalog.load_for_write().state
        for table in state.tables.values():
            for column in table.columns:
                expected = self.last.get(identity(table.name, column.name), False)
                assert column.sensitive is expected, (table.name, column.name, self.last)


_STEP = st.one_of(
    st.tuples(st.just("flag"), st.sampled_from(COLUMNS), st.booleans()),
    st.tuples(st.just("drop_column"), st.sampled_from(COLUMNS)),
    st.tuples(st.just("add_column"), st.sampled_from([s for v in SPELLINGS.values() for s in v])),
    st.tuples(st.just("drop_table")),
    st.tuples(st.just("add_table"), st.sampled_from(TABLE_SPELLINGS)),
    st.tuples(st.just("sync"), st.booleans()),
    st.tuples(st.just("cleanup"), st.sampled_from(COLUMNS)),
)


@settings(max_examples=60)
@given(steps=st.lists(_STEP, max_size=24), cut=st.integers(min_value=0, max_value=60))
def test_every_present_column_carries_the_last_human_decision_about_it(
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


@pytest.mark.parametrize("spelling", TABLE_SPELLINGS)
def test_a_table_dropped_and_added_back_in_another_case_keeps_every_decision(
    spelling: str,
) -> None:
    world = World()
    world.flag("email", True)
    world.flag("nome", True)
    world.flag("nome", False)
    world.drop_table()
    world.sync(scoped=False)
    world.add_table(spelling)
    world.sync(scoped=False)
    world.check()
    table = world.people_in_catalog()
    assert table is not None and table.name == spelling
    assert [(c.name, c.sensitive) for c in table.columns[1:]] == [
        ("email", True),
        ("nome", False),
    ]
