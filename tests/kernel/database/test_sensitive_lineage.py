"""Which result columns carry a sensitive column's values (kernel/database/sensitive_lineage.py):
lineage through aliases, CTEs, subqueries and set operations, and the conservative answers
where lineage cannot tell (a table function, a stale catalog, SQL that does not parse)."""

from __future__ import annotations

import pytest

from kernel.database.sensitive_lineage import (
    masked_positions,
    names_flagged_table,
    sensitive_columns,
)
from kernel.schema_view import SchemaColumn, SchemaTable, StaticSchemaView

VIEW = StaticSchemaView(
    dialect="sqlite",
    schema_tables=(
        SchemaTable(
            name="people",
            columns=(
                SchemaColumn(name="id"),
                SchemaColumn(name="name"),
                SchemaColumn(name="email", sensitive=True),
            ),
        ),
        SchemaTable(
            name="orders",
            columns=(
                SchemaColumn(name="id"),
                SchemaColumn(name="person_id"),
                SchemaColumn(name="total"),
            ),
        ),
    ),
)
FLAGGED = sensitive_columns(VIEW)


def masked(sql: str, *columns: str) -> tuple[int, ...]:
    return masked_positions(sql, VIEW, FLAGGED, list(columns))


def test_the_flagged_columns_of_a_view() -> None:
    assert sensitive_columns(VIEW) == {("people", "email")}


@pytest.mark.parametrize(
    ("sql", "columns", "expected"),
    [
        ("SELECT * FROM people", ("id", "name", "email"), (2,)),
        ("SELECT p.* FROM people AS p", ("id", "name", "email"), (2,)),
        ("SELECT EMAIL FROM PEOPLE", ("EMAIL",), (0,)),
        ("SELECT email AS contact, id FROM people", ("contact", "id"), (0,)),
        ("SELECT upper(email) || 'x' FROM people", ("x",), (0,)),
        ("SELECT max(length(email)) FROM people", ("m",), (0,)),
        ("SELECT count(email) FROM people", ("n",), (0,)),
        ("SELECT CASE WHEN email LIKE '%a' THEN 1 END FROM people", ("c",), (0,)),
        ("SELECT row_number() OVER (ORDER BY email) FROM people", ("r",), (0,)),
        (
            "WITH x AS (SELECT email AS e, id FROM people) SELECT e, id FROM x",
            ("e", "id"),
            (0,),
        ),
        (
            "WITH x AS (SELECT email AS e, id FROM people) SELECT * FROM x",
            ("e", "id"),
            (0,),
        ),
        (
            "SELECT t.* FROM (SELECT p.*, o.total FROM people p JOIN orders o "
            "ON o.person_id = p.id) AS t",
            ("id", "name", "email", "total"),
            (2,),
        ),
        (
            "SELECT (SELECT email FROM people p WHERE p.id = o.person_id) AS m, o.total "
            "FROM orders o",
            ("m", "total"),
            (0,),
        ),
        ("SELECT name FROM people UNION ALL SELECT email FROM people", ("name",), (0,)),
        # only filtered, joined, grouped or ordered on: nothing is output
        ("SELECT id FROM people WHERE email LIKE '%x'", ("id",), ()),
        ("SELECT id, name FROM people ORDER BY email", ("id", "name"), ()),
        (
            "SELECT p.name, count(*) FROM people p JOIN orders o ON o.person_id = p.id "
            "GROUP BY p.name",
            ("name", "count(*)"),
            (),
        ),
        ("SELECT * FROM orders", ("id", "person_id", "total"), ()),
    ],
)
def test_lineage_masks_exactly_the_columns_that_carry_the_value(
    sql: str, columns: tuple[str, ...], expected: tuple[int, ...]
) -> None:
    assert masked(sql, *columns) == expected


def test_a_table_function_over_a_flagged_table_masks_its_output() -> None:
    assert masked("SELECT j.value, p.id FROM people p, json_each(p.email) j", "value", "id") == (0,)


def test_a_stale_catalog_masks_every_column_of_a_flagged_query() -> None:
    # the database returns its columns in another order than the catalog knows
    assert masked("SELECT * FROM people", "id", "email", "name") == (0, 1, 2)
    # or more of them
    assert masked("SELECT * FROM people", "id", "name", "email", "phone") == (0, 1, 2, 3)


def test_sql_that_does_not_parse_masks_everything_when_it_names_a_flagged_table() -> None:
    assert masked("SELEC nonsense FROM people", "a", "b") == (0, 1)
    assert masked("SELEC nonsense FROM orders", "a") == ()


def test_a_name_is_enough_to_mask_never_to_unmask() -> None:
    # an orders column named like the flagged one is masked too (conservative)
    view = StaticSchemaView(
        dialect="sqlite",
        schema_tables=(
            *VIEW.schema_tables,
            SchemaTable(name="shops", columns=(SchemaColumn(name="email"),)),
        ),
    )
    sql = "SELECT s.email FROM shops s JOIN people p ON p.id = 1"
    assert masked_positions(sql, view, FLAGGED, ["email"]) == (0,)


def test_nothing_flagged_masks_nothing() -> None:
    assert masked_positions("SELECT * FROM people", VIEW, set(), ["id", "name", "email"]) == ()


def test_the_text_check_matches_whole_words_in_any_case() -> None:
    assert names_flagged_table("select x from PEOPLE", FLAGGED)
    assert not names_flagged_table("select x from people_archive", FLAGGED)
