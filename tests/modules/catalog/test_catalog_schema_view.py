"""``CatalogSchemaView``: the kernel's SchemaView over the folded catalog."""

from __future__ import annotations

from kernel.schema_view import SchemaView, StaticSchemaView, decode_snapshot, encode_snapshot
from modules.catalog import CatalogSchemaView, plan_delete, run_sync
from modules.catalog.endpoints import relationship_id
from tests.modules.catalog.fakes import catalog_on, shop

CUSTOMER = relationship_id("logical", "orders", ("customer_id",), "customers", ("id",))


def test_no_view_before_the_first_completed_sync() -> None:
    assert catalog_on(db=shop()).schema_view() is None


def test_the_view_shows_tables_columns_and_active_relationships_only() -> None:
    catalog = catalog_on(db=shop())
    run_sync(catalog)
    view = catalog.schema_view()
    assert isinstance(view, CatalogSchemaView)
    typed: SchemaView = view  # it satisfies the kernel's protocol
    assert typed.dialect == "sqlite"
    assert [t.name for t in view.tables()] == sorted(
        ["customers", "countries", "orders", "order_items", "products"]
    )
    orders = view.table("ORDERS")
    assert orders is not None and orders.column("customer_id") is not None
    id_col = orders.column("id")
    assert id_col is not None and id_col.pk and id_col.type == "INTEGER"
    assert CUSTOMER in {r.id for r in view.relationships()}
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_delete(loaded.state, CUSTOMER, permanent=False, reason="x", actor="human:a")]
    )
    after = catalog.schema_view()
    assert after is not None
    assert CUSTOMER not in {r.id for r in after.relationships()}
    assert after.version != view.version and after.version.startswith("catalog:")


def test_equal_catalogs_give_equal_versions_and_snapshot_bytes() -> None:
    one, two = catalog_on(db=shop()), catalog_on(db=shop())
    run_sync(one)
    run_sync(two)
    a, b = one.schema_view(), two.schema_view()
    assert a is not None and b is not None
    assert a.version == b.version
    assert encode_snapshot(a) == encode_snapshot(b)
    frozen = decode_snapshot(encode_snapshot(a))
    assert frozen == StaticSchemaView.of(a)
    assert {r.origin for r in frozen.relationships()} == {"physical", "generated"}


def test_a_postgresql_catalog_speaks_sqlglot_postgres() -> None:
    from modules.catalog.catalog_schema_view import sqlglot_dialect

    assert sqlglot_dialect("postgresql") == "postgres"
    assert sqlglot_dialect("sqlite") == "sqlite"
