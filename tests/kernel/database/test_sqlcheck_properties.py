"""Properties of the SQL check (Hypothesis).

- A SELECT generated over a generated schema, naming only what exists (tables under aliases,
  joins, qualified and unambiguous unqualified columns, a CTE, a subquery, ORDER BY), is ok.
- Replacing exactly one of its names with a fresh one gives exactly that one problem:
  ``unknown_table`` for a table, ``unknown_column`` for a column, naming the fresh name.
- No text makes the check raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from kernel.database.sqlcheck import PROBLEM_CODES, check_sql
from kernel.schema_view import SchemaColumn, SchemaTable, StaticSchemaView

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=7)


@st.composite
def schemas(draw: st.DrawFn) -> StaticSchemaView:
    names = draw(st.lists(_WORD, min_size=1, max_size=4, unique=True))
    pool = draw(st.lists(_WORD, min_size=2, max_size=8, unique=True))
    tables = []
    for name in names:
        columns = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5, unique=True))
        tables.append(
            SchemaTable(
                name=f"t_{name}", columns=tuple(SchemaColumn(name=f"c_{c}") for c in columns)
            )
        )
    dialect = draw(st.sampled_from(["sqlite", "postgres"]))
    return StaticSchemaView(dialect=dialect, schema_tables=tuple(tables))


@dataclass
class Slot:
    """One name in the generated SQL: a table or a column (with the alias it is read through)."""

    kind: str  # "table" | "column"
    name: str


class Query:
    """SQL text built from pieces, where some pieces are named slots that can be replaced."""

    def __init__(self) -> None:
        self.pieces: list[str | Slot] = []

    def text(self, *parts: str | Slot) -> None:
        self.pieces.extend(parts)

    def slots(self) -> list[int]:
        return [i for i, p in enumerate(self.pieces) if isinstance(p, Slot)]

    def render(self, replace: int | None = None, fresh: str = "") -> str:
        out = []
        for i, piece in enumerate(self.pieces):
            if isinstance(piece, Slot):
                out.append(fresh if i == replace else piece.name)
            else:
                out.append(piece)
        return "".join(out)


@st.composite
def queries(draw: st.DrawFn, view: StaticSchemaView) -> Query:
    tables = list(view.tables())
    chosen = draw(
        st.lists(st.sampled_from(tables), min_size=1, max_size=3, unique_by=lambda t: t.name)
    )
    counts: dict[str, int] = {}
    for table in chosen:
        for column in table.columns:
            counts[column.name] = counts.get(column.name, 0) + 1
    query = Query()
    wrap = draw(st.sampled_from(["plain", "cte", "subquery"]))
    if wrap == "cte":
        query.text("WITH q AS (")
    elif wrap == "subquery":
        query.text("SELECT q.o0 FROM (")
    # the select list: qualified columns, or unqualified ones that only one table has
    items = draw(
        st.lists(
            st.tuples(st.integers(0, len(chosen) - 1), st.integers(0, 4)), min_size=1, max_size=4
        )
    )
    query.text("SELECT ")
    for n, (t, c) in enumerate(items):
        table = chosen[t]
        column = table.columns[c % len(table.columns)]
        if n:
            query.text(", ")
        if counts[column.name] == 1 and draw(st.booleans()):
            query.text(Slot("column", column.name))
        else:
            query.text(f"a{t}.", Slot("column", column.name))
        query.text(f" AS o{n}")
    query.text(" FROM ", Slot("table", chosen[0].name), " AS a0")
    for t in range(1, len(chosen)):
        left = chosen[draw(st.integers(0, t - 1))]
        left_index = chosen.index(left)
        left_column = left.columns[draw(st.integers(0, len(left.columns) - 1))]
        right_column = chosen[t].columns[draw(st.integers(0, len(chosen[t].columns) - 1))]
        query.text(" JOIN ", Slot("table", chosen[t].name), f" AS a{t} ON a{t}.")
        query.text(Slot("column", right_column.name), f" = a{left_index}.")
        query.text(Slot("column", left_column.name))
    if draw(st.booleans()):
        t = draw(st.integers(0, len(chosen) - 1))
        column = chosen[t].columns[0]
        query.text(f" WHERE a{t}.", Slot("column", column.name), " IS NOT NULL")
    if wrap == "plain" and draw(st.booleans()):
        query.text(" ORDER BY o0")
    if wrap == "cte":
        query.text(") SELECT q.o0 FROM q")
    elif wrap == "subquery":
        query.text(") AS q")
    return query


@st.composite
def cases(draw: st.DrawFn) -> tuple[StaticSchemaView, Query]:
    view = draw(schemas())
    return view, draw(queries(view))


@given(cases())
def test_a_query_naming_only_what_exists_is_ok(case: tuple[StaticSchemaView, Query]) -> None:
    view, query = case
    sql = query.render()
    result = check_sql(sql, view)
    assert result.ok, (sql, result.problems)
    assert set(result.tables) <= {t.name for t in view.tables()}


@given(cases(), st.data())
def test_one_fresh_name_gives_exactly_that_unknown_name_problem(
    case: tuple[StaticSchemaView, Query], data: st.DataObject
) -> None:
    view, query = case
    index = data.draw(st.sampled_from(query.slots()))
    slot = query.pieces[index]
    assert isinstance(slot, Slot)
    fresh = "zz_" + data.draw(_WORD)  # never a generated name (those start t_ or c_)
    sql = query.render(index, fresh)
    result = check_sql(sql, view)
    expected = "unknown_table" if slot.kind == "table" else "unknown_column"
    assert [p.code for p in result.problems] == [expected], (sql, result.problems)
    assert fresh in result.problems[0].message


_SQLISH = st.lists(
    st.sampled_from(
        [
            "SELECT",
            "FROM",
            "WHERE",
            "JOIN",
            "ON",
            "WITH",
            "AS",
            "(",
            ")",
            ",",
            ";",
            "*",
            "t",
            "t.a",
            "a",
            "1",
            "'x'",
            "UNION",
            "DELETE",
            "INSERT",
            "INTO",
            "VALUES",
            "ORDER BY",
            "GROUP BY",
            "USING",
            "NATURAL",
            "LATERAL",
            "RECURSIVE",
            '"q"',
        ]
    ),
    max_size=25,
).map(" ".join)


@given(st.one_of(st.text(max_size=200), _SQLISH))
def test_no_text_makes_the_check_raise(sql: str) -> None:
    view = StaticSchemaView(
        dialect="sqlite",
        schema_tables=(SchemaTable(name="t", columns=(SchemaColumn(name="a"),)),),
    )
    result = check_sql(sql, view)
    assert result.ok == (not result.problems)
    assert all(p.code in PROBLEM_CODES for p in result.problems)
