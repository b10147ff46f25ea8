"""The SQL check (kernel/database/sqlcheck.py): each rule, adversarial inputs, and the golden
file of problems for a fixed set of bad SQL files (golden/sql/)."""

from __future__ import annotations

import json
import sqlite3
from functools import cache
from pathlib import Path

import pytest

from kernel.database.sqlcheck import PROBLEM_CODES, SqlCheck, check_sql, output_columns
from kernel.schema_view import SchemaColumn, SchemaTable, StaticSchemaView
from tht.demo_database import DEMO_CTE, DEMO_SQL, make_demo_database

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "golden" / "sql" / "cases"
GOLDEN = ROOT / "golden" / "sql" / "check_problems.json"


@cache
def _demo_tables(tmp: str) -> tuple[SchemaTable, ...]:
    path = make_demo_database(Path(tmp) / "demo.db")
    connection = sqlite3.connect(path)
    try:
        names = [
            r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return tuple(
            SchemaTable(
                name=name,
                columns=tuple(
                    SchemaColumn(name=c[1], type=c[2], position=c[0] + 1, pk=bool(c[5]))
                    for c in connection.execute(f"PRAGMA table_info({name})")
                ),
            )
            for name in sorted(names)
        )
    finally:
        connection.close()


def demo_view(dialect: str = "sqlite", tmp: str | None = None) -> StaticSchemaView:
    """The demo database's schema as a frozen SchemaView (read with sqlite3 itself)."""
    import tempfile

    return StaticSchemaView(
        dialect=dialect,
        version="demo",
        schema_tables=_demo_tables(tmp or tempfile.mkdtemp(prefix="tht-demo-")),
    )


def _check(sql: str, dialect: str = "sqlite") -> SqlCheck:
    return check_sql(sql, demo_view(dialect))


def _codes(result: SqlCheck) -> list[str]:
    return [p.code for p in result.problems]


# --------------------------------------------------------------------------- golden


def _golden_body() -> dict[str, object]:
    body: dict[str, object] = {}
    for case in sorted(CASES.glob("*.sql")):
        dialect = "postgres" if case.name.startswith("pg-") else "sqlite"
        body[case.name] = _check(case.read_text(encoding="utf-8"), dialect).to_json()
    return body


def test_the_problems_of_the_bad_sql_files_match_their_golden_file(update_golden: bool) -> None:
    text = json.dumps(_golden_body(), indent=2, ensure_ascii=False) + "\n"
    if update_golden:
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.read_text(encoding="utf-8") == text
    assert all(not v["ok"] for v in json.loads(text).values())  # type: ignore[index]


# --------------------------------------------------------------------------- statements


def test_the_issue_example_reports_the_parse_error_the_extra_statement_and_the_write() -> None:
    result = _check("SELEC banana FROM WHERE ;;; DROP TABLE x")
    assert not result.ok
    assert _codes(result) == ["parse_error", "not_single_statement", "not_read_only"]
    parse, extra, drop = result.problems
    assert parse.position is not None and (parse.position.line, parse.position.col) == (1, 14)
    assert extra.position == drop.position
    assert drop.position is not None and (drop.position.line, drop.position.col) == (1, 29)
    assert "'FROM'" in parse.message
    assert "DROP" in result.problems[2].message


def test_a_parse_error_points_at_the_line_and_column_of_the_bad_token() -> None:
    result = _check("SELECT nome\nFROM ospedali\nWHERE regione = 'Lazio' AND\nORDER BY nome")
    assert _codes(result) == ["parse_error"]
    position = result.problems[0].position
    assert position is not None and position.line == 4


@pytest.mark.parametrize("sql", ["", "   \n", ";;;", "-- a comment only", "/* x */ ;"])
def test_no_statement_is_not_a_single_statement(sql: str) -> None:
    assert _codes(_check(sql)) == ["not_single_statement"]


def test_two_queries_are_not_a_single_statement_but_a_trailing_semicolon_is_fine() -> None:
    assert _codes(_check("SELECT 1; SELECT 2")) == ["not_single_statement"]
    assert _check("SELECT nome FROM ospedali;;\n").ok


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("DROP TABLE ricoveri", "sqlite"),
        ("DELETE FROM ricoveri", "sqlite"),
        ("UPDATE ospedali SET nome = 'x'", "sqlite"),
        ("INSERT INTO ospedali VALUES (1, 'a', 'b', 'c')", "sqlite"),
        ("INSERT OR REPLACE INTO ospedali VALUES (1, 'a', 'b', 'c')", "sqlite"),
        ("REPLACE INTO ospedali VALUES (1, 'a', 'b', 'c')", "sqlite"),
        ("CREATE TABLE x (a INT)", "sqlite"),
        ("CREATE TEMP TABLE x AS SELECT 1", "sqlite"),
        ("ALTER TABLE ospedali ADD COLUMN x INT", "sqlite"),
        ("PRAGMA writable_schema = 1", "sqlite"),
        ("ATTACH DATABASE 'x.db' AS x", "sqlite"),
        ("DETACH DATABASE x", "sqlite"),
        ("VACUUM INTO 'copy.db'", "sqlite"),
        ("VACUUM", "sqlite"),
        ("BEGIN", "sqlite"),
        ("EXPLAIN SELECT 1", "sqlite"),
        ("TRUNCATE ricoveri", "postgres"),
        ("COPY ospedali TO '/tmp/x'", "postgres"),
        ("SET search_path = x", "postgres"),
        (
            "MERGE INTO ospedali o USING ospedali s ON o.id = s.id WHEN MATCHED THEN DELETE",
            "postgres",
        ),
        ("WITH d AS (DELETE FROM ricoveri RETURNING id) SELECT * FROM d", "postgres"),
        ("WITH u AS (UPDATE ospedali SET nome = 'x' RETURNING id) SELECT 1", "postgres"),
        ("WITH i AS (INSERT INTO ospedali (id) VALUES (1) RETURNING id) SELECT 1", "postgres"),
        ("SELECT * INTO copia FROM ospedali", "postgres"),
        ("SELECT id FROM ospedali FOR UPDATE", "postgres"),
        ("SELECT id FROM ospedali FOR SHARE", "postgres"),
        ("CREATE VIEW v AS SELECT 1", "postgres"),
    ],
)
def test_anything_but_a_query_is_not_read_only(sql: str, dialect: str) -> None:
    result = _check(sql, dialect)
    assert "not_read_only" in _codes(result), result


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "VALUES (1, 2)",
        "(SELECT nome FROM ospedali)",
        "SELECT nome FROM ospedali UNION SELECT codice FROM procedure",
        "SELECT nome FROM ospedali EXCEPT SELECT citta FROM ospedali",
        "WITH a AS (SELECT id FROM ospedali) SELECT id FROM a",
    ],
)
def test_queries_are_read_only(sql: str) -> None:
    assert _check(sql).ok


# --------------------------------------------------------------------------- names


def test_an_unknown_table_says_which_and_suggests_the_closest() -> None:
    result = _check("SELECT * FROM ricovero")
    assert _codes(result) == ["unknown_table"]
    assert "'ricovero'" in result.problems[0].message
    assert "did you mean 'ricoveri'" in result.problems[0].message


def test_an_unknown_column_is_resolved_through_the_alias_and_suggests_its_columns() -> None:
    result = _check("SELECT r.data FROM ricoveri AS r")
    assert _codes(result) == ["unknown_column"]
    message = result.problems[0].message
    assert "'r.data'" in message and "data_ricovero" in message and "data_dimissione" in message


def test_one_unknown_table_is_reported_once_not_as_a_cascade_of_columns() -> None:
    result = _check("SELECT x.a, x.b, c FROM nowhere AS x WHERE x.d = 1 ORDER BY x.a")
    assert _codes(result) == ["unknown_table"]


def test_a_repeated_mistake_is_one_problem_at_its_first_position() -> None:
    result = _check("SELECT nomi FROM ospedali WHERE nomi = 'x' ORDER BY nomi")
    assert _codes(result) == ["unknown_column"]
    assert result.problems[0].position is not None
    assert result.problems[0].position.col == 8


def test_an_unqualified_column_in_two_tables_is_ambiguous() -> None:
    result = _check("SELECT id FROM ricoveri JOIN ospedali ON ospedali.id = ricoveri.ospedale_id")
    assert _codes(result) == ["ambiguous_column"]
    assert "'ricoveri' and 'ospedali'" in result.problems[0].message


def test_using_and_natural_join_columns_are_not_ambiguous() -> None:
    assert _check("SELECT id FROM ricoveri JOIN ospedali USING (id)").ok
    assert _check("SELECT id FROM ricoveri NATURAL JOIN ospedali").ok


def test_a_using_column_must_exist_on_both_sides() -> None:
    left = _check("SELECT * FROM ricoveri JOIN procedure USING (codice)")
    assert _codes(left) == ["unknown_column"]
    assert "before the join" in left.problems[0].message
    right = _check("SELECT * FROM procedure JOIN ricoveri USING (codice)")
    assert _codes(right) == ["unknown_column"]
    assert "'ricoveri.codice'" in right.problems[0].message
    assert _codes(_check("SELECT * FROM procedure JOIN ricoveri USING (zz)")) == [
        "unknown_column",
        "unknown_column",
    ]


def test_a_qualifier_that_is_no_table_of_the_from_is_an_unknown_table() -> None:
    result = _check("SELECT x.nome FROM ospedali AS o")
    assert _codes(result) == ["unknown_table"]
    assert "did you mean" not in result.problems[0].message or "'o'" in result.problems[0].message
    assert _codes(_check("SELECT ospedali.nome FROM ospedali AS o")) == ["unknown_table"]


def test_cte_and_derived_table_columns_are_their_output_columns() -> None:
    assert _check("WITH a AS (SELECT ospedale_id AS h FROM ricoveri) SELECT a.h FROM a").ok
    bad = _check("WITH a AS (SELECT ospedale_id AS h FROM ricoveri) SELECT a.ospedale_id FROM a")
    assert _codes(bad) == ["unknown_column"]
    assert _check("SELECT t.n FROM (SELECT COUNT(*) AS n FROM ricoveri) AS t").ok
    assert _codes(_check("SELECT t.x FROM (SELECT COUNT(*) AS n FROM ricoveri) AS t")) == [
        "unknown_column"
    ]


def test_stars_expand_to_the_columns_of_their_sources() -> None:
    assert _check("WITH a AS (SELECT * FROM ospedali) SELECT a.regione FROM a").ok
    assert _check("WITH a AS (SELECT o.* FROM ospedali o) SELECT a.citta FROM a").ok
    assert _codes(_check("WITH a AS (SELECT o.* FROM ospedali o) SELECT a.x FROM a")) == [
        "unknown_column"
    ]
    star = _check("SELECT * FROM ospedali")
    assert star.columns == ("ospedali.citta", "ospedali.id", "ospedali.nome", "ospedali.regione")
    assert _codes(_check("SELECT z.* FROM ospedali AS o")) == ["unknown_table"]


def test_cte_column_lists_and_alias_column_lists_rename() -> None:
    assert _check("WITH a(x, y) AS (SELECT id, nome FROM ospedali) SELECT a.y FROM a").ok
    assert _codes(_check("WITH a(x, y) AS (SELECT id, nome FROM ospedali) SELECT a.nome FROM a"))
    assert _check("SELECT v.b FROM (VALUES (1, 2)) AS v(a, b)").ok
    assert _codes(_check("SELECT v.c FROM (VALUES (1, 2)) AS v(a, b)")) == ["unknown_column"]


def test_a_recursive_cte_sees_its_own_columns() -> None:
    sql = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3) "
        "SELECT n FROM c"
    )
    assert _check(sql).ok


def test_correlated_subqueries_see_the_outer_from() -> None:
    sql = (
        "SELECT nome FROM ospedali AS o WHERE EXISTS (SELECT 1 FROM ricoveri AS r "
        "WHERE r.ospedale_id = o.id AND regione = 'Lazio')"
    )
    assert _check(sql).ok
    assert _codes(_check(sql.replace("regione =", "regioni ="))) == ["unknown_column"]


def test_a_derived_table_does_not_see_the_outer_from() -> None:
    sql = "SELECT o.nome FROM ospedali AS o, (SELECT o.id AS x) AS d"
    assert _codes(_check(sql, "postgres")) == ["unknown_table"]


def test_output_aliases_count_in_order_by_group_by_and_having() -> None:
    assert _check("SELECT COUNT(*) AS n FROM ricoveri ORDER BY n").ok
    assert _check("SELECT stato AS s, COUNT(*) FROM ricoveri GROUP BY s HAVING s <> 'x'").ok
    assert _codes(_check("SELECT nome AS n FROM ospedali ORDER BY nn")) == ["unknown_column"]


def test_an_output_alias_in_where_is_accepted_by_sqlite_only() -> None:
    sql = "SELECT nome AS n FROM ospedali WHERE n = 'x'"
    assert _check(sql, "sqlite").ok
    assert _codes(_check(sql, "postgres")) == ["unknown_column"]


def test_an_alias_never_excuses_the_column_it_names() -> None:
    assert _codes(_check("SELECT bogus AS bogus FROM ospedali")) == ["unknown_column"]


def test_the_order_by_of_a_union_names_its_output_columns() -> None:
    assert _check("SELECT nome FROM ospedali UNION SELECT codice FROM procedure ORDER BY nome").ok
    bad = _check("SELECT nome FROM ospedali UNION SELECT codice FROM procedure ORDER BY nomi")
    assert _codes(bad) == ["unknown_column"]


def test_table_functions_and_implicit_columns_are_not_flagged() -> None:
    assert _check("SELECT value FROM json_each('[1, 2]')").ok
    assert _check("SELECT g FROM generate_series(1, 3) AS g", "postgres").ok
    assert _check("SELECT rowid FROM ospedali", "sqlite").ok
    assert _codes(_check("SELECT rowid FROM ospedali", "postgres")) == ["unknown_column"]


def test_names_are_compared_case_insensitively_and_schema_qualifiers_are_ignored() -> None:
    assert _check('SELECT "Nome" FROM OSPEDALI').ok
    assert _check("SELECT nome FROM main.ospedali").ok


def test_the_same_alias_twice_in_one_from_is_reported() -> None:
    result = _check("SELECT o.nome FROM ospedali AS o JOIN procedure AS o ON 1 = 1")
    assert _codes(result) == ["ambiguous_column"]
    assert "used twice" in result.problems[0].message


def test_tables_and_columns_referenced_are_returned_in_the_views_spelling() -> None:
    result = _check(DEMO_SQL)
    assert result.ok, result.problems
    assert result.tables == ("ospedali", "procedure", "ricoveri")
    assert "procedure.flag_ablazione" in result.columns
    assert "ricoveri.data_ricovero" in result.columns
    assert result.dialect == "sqlite"
    assert _check(DEMO_SQL, "postgresql").dialect == "postgres"


def test_extra_tables_stand_for_approved_ctes() -> None:
    name, body = DEMO_CTE
    columns = output_columns(body, demo_view())
    assert columns == ("id", "ospedale_id")
    view = demo_view()
    sql = f"SELECT a.ospedale_id, COUNT(*) FROM {name} AS a GROUP BY a.ospedale_id"
    assert _codes(check_sql(sql, view)) == ["unknown_table"]
    assert check_sql(sql, view, extra_tables={name: columns}).ok
    bad = check_sql(f"SELECT a.x FROM {name} AS a", view, extra_tables={name: columns})
    assert _codes(bad) == ["unknown_column"]
    assert check_sql(f"SELECT a.x FROM {name} AS a", view, extra_tables={name: None}).ok


def test_output_columns_is_none_when_it_cannot_be_told() -> None:
    view = demo_view()
    assert output_columns("SELECT * FROM json_each('[1]')", view) is None
    assert output_columns("SELECT 1; SELECT 2", view) is None
    assert output_columns("DELETE FROM ospedali", view) is None
    assert output_columns("SELECT nome AS n, regione FROM ospedali", view) == ("n", "regione")


# --------------------------------------------------------------------------- adversarial


@pytest.mark.parametrize(
    "sql",
    [
        "(" * 5000 + "1" + ")" * 5000,
        "SELECT " + " + ".join(["1"] * 3000),
        "SELECT '\x00'",
        "SELECT \u202e FROM x",
        "\ufeffSELECT 1",
        "SELECT 1 /* unterminated",
        'SELECT "unterminated',
        "SELECT $$ x",
        "SELECT nome FROM ospedali WHERE nome = 'a''b'",
    ],
)
def test_hostile_text_never_raises(sql: str) -> None:
    result = _check(sql)
    assert isinstance(result, SqlCheck)
    assert all(p.code in PROBLEM_CODES for p in result.problems)
    assert result.ok == (not result.problems)


def test_the_json_form_has_the_contract_keys() -> None:
    body = _check("SELECT nomi FROM ospedali").to_json()
    assert list(body) == ["ok", "dialect", "tables", "columns", "problems"]
    assert list(body["problems"][0]) == ["code", "message", "position"]
    assert list(_check("").to_json()["problems"][0]) == ["code", "message"]


def test_the_problem_line_names_the_source_and_position() -> None:
    problem = _check("SELECT nomi FROM ospedali").problems[0]
    assert (
        problem.line("q.sql")
        == "q.sql:1:8: unknown_column: unknown column 'nomi' (did you mean 'nome'?)"
    )
    assert _check("DROP TABLE x").problems[0].line("q.sql").startswith("q.sql:1:1: not_read_only: ")
    assert _check("").problems[0].line("q.sql").startswith("q.sql: not_single_statement: ")
    assert (
        _check("").problems[0].line() == "not_single_statement: " + _check("").problems[0].message
    )
