"""Schema / Table Synchronization: what a completed Catalog Sync Run does to the catalog."""

from __future__ import annotations

import msgspec

from kernel import catalog_events as cev
from modules.catalog import Catalog, plan_delete, relationship_map, run_sync
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, shop

ANN = "human:ann"


def _map(catalog: Catalog, deleted: bool = True) -> set[tuple[str, str, str, str]]:
    state = catalog.load().state
    return {
        (e["from"], e["to"], e["origin"], e["state"])
        for e in relationship_map(state, include_deleted=deleted)
    }


def test_a_first_sync_creates_every_table_and_generates_relationships() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    report = run_sync(catalog)
    assert sorted(report.state.tables) == sorted(db.tables)
    assert report.run.status == "completed"
    assert _map(catalog) == {
        ("order_items.order_id", "orders.id", "physical", "active"),
        ("orders.customer_id", "customers.id", "generated", "active"),
        ("order_items.product_id", "products.product_id", "generated", "active"),
        ("customers.country_code", "countries.code", "generated", "active"),
    }


def test_synchronize_all_creates_updates_and_deletes_absent_tables() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.drop("countries")
    db.add("suppliers", "id:INTEGER:pk", "name:TEXT")
    db.add_column("orders", "note:TEXT")
    report = run_sync(catalog)
    state = report.state
    assert "countries" not in state.tables and "suppliers" in state.tables
    orders = state.tables["orders"]
    assert [c.name for c in orders.columns] == ["id", "customer_id", "placed", "note"]
    completed = [e for e in catalog.caps.ledger.read().events if e.seq == report.run.ended_seq]
    assert isinstance(completed[0], cev.CatalogSyncCompleted)
    changes = completed[0].payload.changes
    assert (changes.added, changes.removed, changes.changed) == (
        ("suppliers",),
        ("countries",),
        ("orders",),
    )
    # the endpoint disappeared: its generated relationship went with it
    assert not any("countries" in f + t for f, t, _, _ in _map(catalog))


def test_a_scoped_sync_replaces_only_its_tables_and_removes_those_no_longer_observed() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.drop_column("customers", "name")
    db.add_column("products", "price:NUMERIC")
    db.drop("countries")
    run_sync(catalog, scope=["products", "countries"])
    state = catalog.load().state
    assert [c.name for c in state.tables["products"].columns] == ["product_id", "name", "price"]
    assert "countries" not in state.tables
    # customers was out of scope: still as first observed, though the database changed
    assert [c.name for c in state.tables["customers"].columns] == ["id", "name", "country_code"]


def test_a_scope_name_in_another_case_resolves_to_the_catalog_table() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.add_column("orders", "note:TEXT")
    report = run_sync(catalog, scope=["ORDERS"])
    assert report.run.scope == ("orders",)
    assert "note" in {c.name for c in report.state.tables["orders"].columns}


def test_curated_metadata_survives_a_resync_of_the_same_names() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    # stand-in for the next issue's description and flag events: edit the folded state
    loaded = catalog.load()
    orders = loaded.state.tables["orders"]
    cols = tuple(
        msgspec.structs.replace(c, description="who ordered", sensitive=True)
        if c.name == "customer_id"
        else c
        for c in orders.columns
    )
    from modules.catalog.synchronization import CatalogContent, apply_snapshot

    content = CatalogContent(
        tables={**loaded.state.tables, "orders": msgspec.structs.replace(orders, columns=cols)},
        physical=dict(loaded.state.physical),
        logical=dict(loaded.state.logical),
    )
    db.add_column("orders", "note:TEXT")
    apply_snapshot(content, db.introspect(None, None), scope=None, version="v2")
    kept = content.tables["orders"].column("customer_id")
    assert kept is not None and kept.description == "who ordered" and kept.sensitive
    assert content.tables["orders"].column("note") is not None
    note = content.tables["orders"].column("note")
    assert note is not None and note.sensitive is False  # the flag defaults to false for new ones


def test_an_unavailable_capability_keeps_what_the_catalog_knew() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.capabilities = {"relationships": "unavailable", "primary_keys": "unavailable"}
    db.fks.clear()
    db.add_column("orders", "note:TEXT")  # a structure change, so the run introspects
    report = run_sync(catalog)
    assert report.run.capabilities["relationships"] == "unavailable"
    # "unavailable" is not "observed, empty": the declared FK and the key flags are kept
    assert ("order_items.order_id", "orders.id", "physical", "active") in _map(catalog)
    assert report.state.tables["customers"].primary_key == ("id",)


def test_observed_empty_relationships_do_remove_the_foreign_keys() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.fks.clear()
    run_sync(catalog)
    assert not any(origin == "physical" for _, _, origin, _ in _map(catalog))


def test_tables_unavailable_touches_no_table() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.capabilities = {"tables": "unavailable"}
    db.drop("countries")
    report = run_sync(catalog)
    assert "countries" in report.state.tables


def test_an_exclusion_leaves_with_its_endpoint_and_comes_back_with_it() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    state = run_sync(catalog).state
    rid = next(r.id for r in state.logical.values() if r.from_columns == ("customer_id",))
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_delete(loaded.state, rid, permanent=False, reason="no", actor=ANN)]
    )
    assert catalog.load().state.logical[rid].state == "deleted"
    db.drop_column("orders", "customer_id")
    run_sync(catalog)
    assert rid not in catalog.load().state.logical  # the exclusion went with its endpoint
    db.add_column("orders", "customer_id:INTEGER")
    run_sync(catalog)
    again = catalog.load().state.logical[rid]
    # newly observed: generated again, as the exclusion the human made (relationship_decisions.py)
    assert (again.state, again.origin, again.deleted_reason) == ("deleted", "generated", "no")


def test_a_resync_never_regenerates_an_existing_or_excluded_relationship() -> None:
    db = shop()
    catalog = catalog_on(db=db)
    first = run_sync(catalog).state
    db.add("suppliers", "id:INTEGER:pk")
    db.add_column("products", "supplier_id:INTEGER")
    second = run_sync(catalog).state
    new = set(second.logical) - set(first.logical)
    assert [second.logical[r].from_columns for r in new] == [("supplier_id",)]
    generated = [
        e for e in catalog.caps.ledger.read().events if isinstance(e, cev.RelationshipGenerated)
    ]
    assert len(generated) == len({e.payload.id for e in generated})


def test_a_scoped_table_the_database_lost_is_removed_but_an_unknown_name_fails_the_run() -> None:
    import pytest

    from kernel.errors import NotFoundError

    db = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    db.drop("countries")
    report = run_sync(catalog, scope=["countries"])
    assert "countries" not in report.state.tables and report.run.status == "completed"
    with pytest.raises(NotFoundError):
        run_sync(catalog, scope=["no_such_table"])
    runs = list(catalog.load().state.runs.values())
    assert runs[-1].status == "failed" and runs[-1].failure == "error"


def test_an_empty_database_synchronized_all_leaves_an_empty_catalog() -> None:
    db = FakeDatabase()
    catalog = catalog_on(db=db)
    report = run_sync(catalog)
    assert report.state.tables == {} and report.state.synced
    assert catalog.schema_view() is not None
