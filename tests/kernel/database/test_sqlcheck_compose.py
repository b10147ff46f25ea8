"""What runs at F7: the final SQL framed with the approved F5 CTEs it names, and the two forms
of a CTE artifact (kernel/database/sqlcheck_compose.py). Run on the demo database itself."""

from __future__ import annotations

import sqlite3

import pytest

from kernel.database.sqlcheck_compose import compose_with_ctes, split_cte
from tht.demo_database import DEMO_CTE, DEMO_SQL, make_demo_database

NAME, BODY = DEMO_CTE
USES_CTE = (
    "SELECT o.nome AS ospedale, o.regione, COUNT(*) AS ricoveri_ablazione\n"
    f"FROM {NAME} AS a\n"
    "JOIN ospedali AS o ON o.id = a.ospedale_id\n"
    "GROUP BY o.nome, o.regione\n"
    "ORDER BY ricoveri_ablazione DESC, o.nome;\n"
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    path = make_demo_database(tmp_path_factory.mktemp("demo") / "demo.db")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _rows(db: sqlite3.Connection, sql: str) -> list[tuple[object, ...]]:
    return db.execute(sql).fetchall()


def test_a_final_query_naming_an_approved_cte_runs_with_it_in_front(
    demo: sqlite3.Connection,
) -> None:
    composed = compose_with_ctes(USES_CTE, [(NAME, BODY)], "sqlite")
    assert composed.startswith(f"WITH {NAME} AS (\n")
    assert composed.endswith(USES_CTE.strip())  # the approved text itself, not a regeneration
    assert _rows(demo, composed) == _rows(demo, DEMO_SQL)


def test_a_definition_form_artifact_is_unwrapped(demo: sqlite3.Connection) -> None:
    artifact = f"{NAME} AS (\n{BODY})\n"
    composed = compose_with_ctes(USES_CTE, [(NAME, artifact)], "sqlite")
    assert f"{NAME} AS (\n{NAME} AS" not in composed
    assert _rows(demo, composed) == _rows(demo, DEMO_SQL)


def test_the_approved_ctes_go_first_in_the_finals_own_with_list(demo: sqlite3.Connection) -> None:
    final = (
        f"WITH per_ospedale AS (SELECT ospedale_id, COUNT(*) AS n FROM {NAME} GROUP BY 1)\n"
        "SELECT SUM(n) FROM per_ospedale"
    )
    composed = compose_with_ctes(final, [(NAME, BODY)], "sqlite")
    assert composed.startswith(f"WITH {NAME} AS (")
    assert _rows(demo, composed) == [(sum(r[2] for r in _rows(demo, DEMO_SQL)),)]  # type: ignore[misc]


def test_ctes_needed_by_needed_ctes_come_too_in_approval_order(demo: sqlite3.Connection) -> None:
    second = (
        "lombarde",
        f"SELECT a.* FROM {NAME} AS a JOIN ospedali o ON o.id = a.ospedale_id "
        "WHERE o.regione = 'Lombardia'",
    )
    unused = ("unused", "SELECT 1 AS x")
    composed = compose_with_ctes(
        "SELECT COUNT(*) FROM lombarde", [(NAME, BODY), unused, second], "sqlite"
    )
    assert composed.index(f"{NAME} AS (") < composed.index("lombarde AS (")
    assert "unused" not in composed
    expected = sum(r[2] for r in _rows(demo, DEMO_SQL) if r[1] == "Lombardia")  # type: ignore[misc]
    assert _rows(demo, composed) == [(expected,)]


@pytest.mark.parametrize(
    "final",
    [
        "SELECT COUNT(*) FROM ricoveri",  # needs none
        f"WITH {NAME} AS (SELECT 1 AS ospedale_id) SELECT * FROM {NAME}",  # defines its own
        "SELEC broken",  # does not parse: the executor reports it
    ],
)
def test_a_final_query_that_needs_no_approved_cte_is_unchanged(final: str) -> None:
    assert compose_with_ctes(final, [(NAME, BODY)], "sqlite") == final


def test_a_recursive_with_keeps_its_keyword_first(demo: sqlite3.Connection) -> None:
    final = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2)\n"
        f"SELECT COUNT(*) FROM {NAME}, n"
    )
    composed = compose_with_ctes(final, [(NAME, BODY)], "sqlite")
    assert composed.startswith(f"WITH RECURSIVE {NAME} AS (")
    total = sum(r[2] for r in _rows(demo, DEMO_SQL))  # type: ignore[misc]
    assert _rows(demo, composed) == [(2 * total,)]


def test_split_cte_reads_both_forms_and_where_the_query_starts() -> None:
    plain = split_cte("SELECT 1", "sqlite")
    assert (plain.name, plain.body, plain.line, plain.col) == (None, "SELECT 1", 1, 1)
    defined = split_cte("a2023 AS (SELECT 1)\n", "sqlite")
    assert (defined.name, defined.body, defined.col) == ("a2023", "SELECT 1", 11)
    listed = split_cte('"x y"(a, b) AS NOT MATERIALIZED (\n  SELECT 1, 2\n);', "postgres")
    assert (listed.name, listed.columns, listed.body.strip(), listed.line) == (
        "x y",
        ("a", "b"),
        "SELECT 1, 2",
        1,
    )
    for text in [
        "a AS (SELECT 1), b AS (SELECT 2)",
        "(SELECT 1)",
        "a AS (SELECT 1) x",
        "a AS SELECT 1",
        "'",
    ]:
        assert split_cte(text, "sqlite").name is None, text
