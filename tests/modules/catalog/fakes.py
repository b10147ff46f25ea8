"""A fake Workspace Database and a catalog on the in-memory store, for the module's tests.

:class:`FakeDatabase` holds a structure the test changes at will (``add``, ``drop``,
``add_column``, ``drop_column``, ``add_fk``) and answers the three calls a Catalog Sync Run makes
(:class:`~modules.catalog.DatabaseAccess`), counting introspections so a test can tell whether a
run skipped it. Its structure version is a hash of the structure, as the real one is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from kernel.clock import FixedClock, SeededIds
from kernel.database import DatabaseUnavailable
from kernel.database.types import (
    Capability,
    Introspection,
    ObservedColumn,
    ObservedTable,
    PhysicalRelationship,
)
from kernel.errors import NotFoundError
from kernel.store.memory import MemoryStore
from modules.catalog import Catalog, CatalogCapabilities, DatabaseAccess
from modules.catalog.capabilities import Progress
from modules.catalog.records import CatalogState


def columns(*specs: str) -> list[ObservedColumn]:
    """``"id:INTEGER:pk"``, ``"name:TEXT"`` → observed columns (positions in order)."""
    found = []
    pk = 0
    for position, spec in enumerate(specs, 1):
        name, _, rest = spec.partition(":")
        kind, _, flag = rest.partition(":")
        is_pk = flag == "pk"
        pk += is_pk
        found.append(
            ObservedColumn(
                name=name, position=position, type=kind, pk=is_pk, pk_position=pk if is_pk else 0
            )
        )
    return found


@dataclass
class FakeDatabase:
    tables: dict[str, list[ObservedColumn]] = field(default_factory=dict)
    fks: list[PhysicalRelationship] = field(default_factory=list)
    capabilities: dict[str, Capability] = field(default_factory=dict)
    reachable: bool = True
    fail: BaseException | None = None  # raised by introspect (after started is recorded)
    introspections: int = 0
    display: str = "sqlite:///fake.db"
    on_introspect: Callable[[], None] | None = None

    def add(self, name: str, *specs: str) -> FakeDatabase:
        self.tables[name] = columns(*specs)
        return self

    def drop(self, name: str) -> None:
        del self.tables[name]
        self.fks = [f for f in self.fks if name not in (f.from_table, f.to_table)]

    def add_column(self, table: str, spec: str) -> None:
        self.tables[table] = columns(*[_spec(c) for c in self.tables[table]], spec)

    def drop_column(self, table: str, column: str) -> None:
        kept = [_spec(c) for c in self.tables[table] if c.name != column]
        self.tables[table] = columns(*kept)
        self.fks = [
            f
            for f in self.fks
            if not (f.from_table == table and column in f.from_columns)
            and not (f.to_table == table and column in f.to_columns)
        ]

    def add_fk(self, from_: str, to: str, constraint: str = "") -> None:
        ft, fc = from_.split(".")
        tt, tc = to.split(".")
        self.fks.append(
            PhysicalRelationship(
                constraint=constraint,
                from_table=ft,
                from_columns=(fc,),
                to_table=tt,
                to_columns=(tc,),
            )
        )

    # ------------------------------------------------------------------ DatabaseAccess

    def version(self) -> str:
        self._check()
        data = msgspec.json.encode(
            [sorted(self.tables.items()), sorted(self.fks, key=lambda f: msgspec.json.encode(f))]
        )
        return "fake:" + hashlib.sha256(data).hexdigest()[:16]

    def _check(self) -> None:
        if not self.reachable:
            raise DatabaseUnavailable(f"workspace database {self.display}: unreachable")

    def introspect(self, scope: Sequence[str] | None, progress: Progress | None) -> Introspection:
        self._check()
        self.introspections += 1
        if self.on_introspect is not None:
            self.on_introspect()
        if self.fail is not None:
            raise self.fail
        if scope is None:
            names = sorted(self.tables)
        else:
            unknown = [n for n in scope if n not in self.tables]
            if unknown:
                raise NotFoundError(f"no table named {unknown}", details={"unknown": unknown})
            names = sorted(set(scope))
        tables = tuple(ObservedTable(name=n, columns=tuple(self.tables[n])) for n in names)
        for done, name in enumerate(names, 1):
            if progress is not None:
                progress(done, len(names), name)
        caps: dict[str, Capability] = {
            "tables": "observed",
            "columns": "observed",
            "primary_keys": "observed",
            "relationships": "observed",
            "indexes": "observed",
            **self.capabilities,
        }
        return Introspection(
            dialect="sqlite",
            scope=None if scope is None else tuple(names),
            tables=tables,
            relationships=tuple(f for f in self.fks if f.from_table in names),
            capabilities=caps,
            version=self.version(),
        )

    def access(self) -> DatabaseAccess:
        return DatabaseAccess(
            display=self.display,
            dialect="sqlite",
            check_reachable=self._check,
            structure_version=self.version,
            introspect=self.introspect,
        )


def _spec(column: ObservedColumn) -> str:
    return f"{column.name}:{column.type}" + (":pk" if column.pk else "")


def shop() -> FakeDatabase:
    """customers ← orders ← order_items → products, countries by code; one declared FK."""
    db = FakeDatabase()
    db.add("customers", "id:INTEGER:pk", "name:TEXT", "country_code:TEXT")
    db.add("countries", "code:TEXT:pk", "name:TEXT")
    db.add("orders", "id:INTEGER:pk", "customer_id:INTEGER", "placed:DATE")
    db.add("order_items", "id:INTEGER:pk", "order_id:INTEGER", "product_id:INTEGER")
    db.add("products", "product_id:INTEGER:pk", "name:TEXT")
    db.add_fk("order_items.order_id", "orders.id", "fk_items_order")
    return db


def catalog_on(
    store: MemoryStore | None = None, db: FakeDatabase | None = None, **extra: object
) -> Catalog:
    """A catalog on the in-memory store, with a fixed clock and seeded ids."""
    store = store or MemoryStore()
    caps = CatalogCapabilities(
        ledger=store.workspace_ledger("catalog"),
        put_object=lambda data: store.put_workspace_object("catalog", data),
        get_object=lambda sha: store.get_workspace_object("catalog", sha),
        read_cache=lambda: store.read_workspace_cache("catalog"),
        write_cache=lambda data: store.write_workspace_cache("catalog", data),
        clock=FixedClock(),
        ids=SeededIds(1),
        database=db.access() if db is not None else None,
        **extra,  # type: ignore[arg-type]
    )
    return Catalog(caps)


def folded_alike(catalog: Catalog, cut: int) -> CatalogState:
    """The catalog's ledger folded whole, asserted equal to folding it in two parts at ``cut``
    (the fold is canonical and incremental)."""
    from modules.catalog import fold_catalog, fold_catalog_from

    events = catalog.caps.ledger.read().events
    load = catalog.load_snapshot
    whole = fold_catalog(events, load)
    split = min(cut, len(events))
    assert fold_catalog_from(fold_catalog(events[:split], load), events[split:], load) == whole
    return whole
