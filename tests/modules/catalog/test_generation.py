"""Generated Relationships: the deterministic rules on names, primary keys and types."""

from __future__ import annotations

import pytest

from modules.catalog.endpoints import relationship_id
from modules.catalog.generation import (
    compatible_types,
    generate_candidates,
    name_words,
    table_forms,
    type_family,
)
from modules.catalog.records import CatalogColumn, CatalogRelationship, CatalogTable


def table(name: str, *specs: str) -> CatalogTable:
    cols = []
    for position, spec in enumerate(specs, 1):
        col, _, rest = spec.partition(":")
        kind, _, flag = rest.partition(":")
        cols.append(
            CatalogColumn(
                name=col,
                position=position,
                type=kind,
                pk=flag == "pk",
                pk_position=1 if flag == "pk" else 0,
            )
        )
    return CatalogTable(name=name, columns=tuple(cols))


def pairs(*tables: CatalogTable, physical: tuple[CatalogRelationship, ...] = ()) -> set[str]:
    found = generate_candidates({t.name: t for t in tables}, physical)
    return {f"{c.from_table}.{c.from_column}->{c.to_table}.{c.to_column}" for c in found}


CUSTOMERS = table("customers", "id:INTEGER:pk", "name:TEXT")


def test_a_foreign_key_named_after_the_singular_table_and_its_pk_is_generated() -> None:
    orders = table("orders", "id:INTEGER:pk", "customer_id:INTEGER")
    assert pairs(CUSTOMERS, orders) == {"orders.customer_id->customers.id"}


def test_a_column_that_repeats_a_pk_named_after_its_table_is_generated() -> None:
    products = table("products", "product_id:INTEGER:pk", "name:TEXT")
    lines = table("lines", "id:INTEGER:pk", "product_id:BIGINT")
    assert pairs(products, lines) == {"lines.product_id->products.product_id"}


def test_camel_case_names_and_a_non_id_pk_match() -> None:
    countries = table("Countries", "Code:TEXT:pk")
    people = table("People", "PersonID:INTEGER:pk", "CountryCode:VARCHAR(2)")
    visits = table("visits", "id:INTEGER:pk", "person_id:INTEGER")
    assert pairs(countries, people, visits) == {
        "People.CountryCode->Countries.Code",
        "visits.person_id->People.PersonID",
    }


def test_italian_plurals_and_a_pk_first_name_match() -> None:
    ospedali = table("ospedali", "id:INTEGER:pk", "nome:TEXT")
    procedure = table("procedure", "id:INTEGER:pk", "codice:TEXT")
    ricoveri = table(
        "ricoveri", "id:INTEGER:pk", "id_ospedale:INTEGER", "procedura_id:INTEGER", "data:DATE"
    )
    assert pairs(ospedali, procedure, ricoveri) == {
        "ricoveri.id_ospedale->ospedali.id",
        "ricoveri.procedura_id->procedure.id",
    }


def test_incompatible_types_are_never_joined() -> None:
    orders = table("orders", "id:INTEGER:pk", "customer_id:TEXT")
    assert pairs(CUSTOMERS, orders) == set()


def test_an_undeclared_type_is_compatible_with_any() -> None:
    orders = table("orders", "id:INTEGER:pk", "customer_id:")
    assert pairs(CUSTOMERS, orders) == {"orders.customer_id->customers.id"}


def test_no_target_without_a_single_column_primary_key() -> None:
    keyless = table("customers", "id:INTEGER", "name:TEXT")
    composite = CatalogTable(
        name="regions",
        columns=(
            CatalogColumn(name="id", position=1, type="INTEGER", pk=True, pk_position=1),
            CatalogColumn(name="year", position=2, type="INTEGER", pk=True, pk_position=2),
        ),
    )
    orders = table("orders", "id:INTEGER:pk", "customer_id:INTEGER", "region_id:INTEGER")
    assert pairs(keyless, composite, orders) == set()


def test_a_table_never_joins_itself_and_an_unrelated_name_never_matches() -> None:
    employees = table("employees", "id:INTEGER:pk", "employee_id:INTEGER", "manager_id:INTEGER")
    assert pairs(employees) == set()


def test_a_pair_a_declared_foreign_key_covers_is_skipped_either_way_round() -> None:
    orders = table("orders", "id:INTEGER:pk", "customer_id:INTEGER")
    forward = CatalogRelationship(
        id="fk_x",
        constraint="",
        from_table="orders",
        from_columns=("customer_id",),
        to_table="customers",
        to_columns=("id",),
    )
    backward = CatalogRelationship(
        id="fk_y",
        constraint="",
        from_table="customers",
        from_columns=("id",),
        to_table="orders",
        to_columns=("customer_id",),
    )
    assert pairs(CUSTOMERS, orders, physical=(forward,)) == set()
    assert pairs(CUSTOMERS, orders, physical=(backward,)) == set()


def test_generation_restricted_to_new_columns_keeps_pairs_touching_them_only() -> None:
    orders = table("orders", "id:INTEGER:pk", "customer_id:INTEGER")
    tables = {"customers": CUSTOMERS, "orders": orders}
    only_target = generate_candidates(tables, (), only_columns=frozenset({("customers", "id")}))
    only_other = generate_candidates(tables, (), only_columns=frozenset({("customers", "name")}))
    assert [c.from_column for c in only_target] == ["customer_id"]
    assert only_other == []


def test_candidates_are_sorted_and_their_ids_come_from_the_endpoints() -> None:
    orders = table("orders", "id:INTEGER:pk", "customer_id:INTEGER")
    found = generate_candidates({"orders": orders, "customers": CUSTOMERS}, ())
    again = generate_candidates({"customers": CUSTOMERS, "orders": orders}, ())
    assert found == again
    assert found[0].id == relationship_id(
        "logical", "orders", ("customer_id",), "customers", ("id",)
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [("CustomerID", "customer_id"), ("order_items", "order_items"), ("Order-Item", "order_item")],
)
def test_names_normalise_to_lowercase_words(name: str, words: str) -> None:
    assert name_words(name) == words


def test_table_forms_include_singulars_and_drop_conventional_prefixes() -> None:
    assert {"category", "categories"} <= table_forms("categories")
    assert "customer" in table_forms("dim_customers")
    assert "ospedale" in table_forms("ospedali")
    assert "person" in table_forms("people")


@pytest.mark.parametrize(
    ("a", "b", "ok"),
    [
        ("INTEGER", "BIGINT", True),
        ("INTEGER", "NUMERIC(10,2)", True),
        ("VARCHAR(20)", "TEXT", True),
        ("INTEGER", "TEXT", False),
        ("DATE", "INTEGER", False),
        ("INTERVAL", "INTEGER", False),
        ("", "TEXT", True),
    ],
)
def test_type_compatibility_is_by_family(a: str, b: str, ok: bool) -> None:
    assert compatible_types(a, b) is ok
    assert type_family("timestamp with time zone") == "temporal"
