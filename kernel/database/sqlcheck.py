"""The SQL check (ARCHITECTURE §3.8): is this one read-only query over the schema the session saw?

:func:`check_sql` is pure: the SQL text and a :class:`~kernel.schema_view.SchemaView` in, a
:class:`SqlCheck` out. It parses in the view's dialect with sqlglot (imported lazily) and reports
precise problems, each with a code (:data:`PROBLEM_CODES`), one line of message and, where the
parser knows it, the position (line, column; 1-based):

- ``parse_error``: the text is not SQL the dialect parses (with the position of the bad token);
- ``not_single_statement``: zero statements, or several (``SELECT 1; DROP TABLE x``);
- ``not_read_only``: the statement is not a query (``SELECT``, ``WITH … SELECT``,
  ``UNION``/``INTERSECT``/``EXCEPT``, ``VALUES``), or the query writes (a data-modifying CTE,
  ``SELECT … INTO``, ``FOR UPDATE``);
- ``unknown_table`` / ``unknown_column`` / ``ambiguous_column``: name resolution through aliases,
  CTEs and their output columns, subqueries, ``t.*``, ``USING``/``NATURAL`` joins and output
  aliases in ``ORDER BY``/``GROUP BY``/``HAVING`` (see :mod:`kernel.database.sqlcheck_names`),
  with a "did you mean" from the names in scope.

The check is the reviewer's early, precise feedback, not the security boundary: the executor's
connection is read-only (``kernel.database`` executor), whatever this check says.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from kernel.schema_view import SchemaView

__all__ = [
    "PROBLEM_CODES",
    "SqlCheck",
    "SqlPosition",
    "SqlProblem",
    "check_sql",
    "output_columns",
    "sqlglot_dialect",
]

ProblemCode = Literal[
    "parse_error",
    "not_single_statement",
    "not_read_only",
    "unknown_table",
    "unknown_column",
    "ambiguous_column",
]

#: every problem code, in the order of the checks
PROBLEM_CODES: tuple[str, ...] = (
    "parse_error",
    "not_single_statement",
    "not_read_only",
    "unknown_table",
    "unknown_column",
    "ambiguous_column",
)

#: extra tables a query may name beside the view's: name → its output columns, or ``None`` when
#: they are not known (then any column of it is accepted)
ExtraTables = Mapping[str, Sequence[str] | None]


class SqlPosition(msgspec.Struct, frozen=True, kw_only=True):
    line: int
    col: int


class SqlProblem(msgspec.Struct, frozen=True, kw_only=True):
    code: ProblemCode
    message: str
    position: SqlPosition | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.position is not None:
            body["position"] = {"line": self.position.line, "col": self.position.col}
        return body

    def line(self, source: str = "") -> str:
        """One line for people: ``[source:]line:col: code: message``."""
        where = f"{self.position.line}:{self.position.col}: " if self.position else ""
        prefix = f"{source}:" if source and where else (f"{source}: " if source else "")
        return f"{prefix}{where}{self.code}: {self.message}"


class SqlCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict: ``ok`` when there is no problem; ``tables`` and ``columns`` (``"t.c"``) are
    the view's tables and columns the SQL references (sorted, the view's spelling)."""

    ok: bool
    dialect: str
    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    problems: tuple[SqlProblem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "dialect": self.dialect,
            "tables": list(self.tables),
            "columns": list(self.columns),
            "problems": [p.to_json() for p in self.problems],
        }


_DIALECTS = {"postgresql": "postgres", "postgres": "postgres", "sqlite": "sqlite"}


def sqlglot_dialect(dialect: str) -> str:
    """sqlglot's name for a view's or binding's dialect (``postgresql`` → ``postgres``)."""
    return _DIALECTS.get(dialect.lower(), dialect.lower())


def check_sql(sql: str, view: SchemaView, *, extra_tables: ExtraTables | None = None) -> SqlCheck:
    """Check ``sql`` against ``view`` (pure; never raises for any text).

    ``extra_tables`` are names the SQL may use as tables beside the view's (a session's approved
    F5 CTEs): name → output columns (``None``: unknown, any column accepted)."""
    dialect = sqlglot_dialect(view.dialect)
    problems: list[SqlProblem] = []
    statements = _parse(sql, dialect, problems)
    if len(statements) != 1:
        count = len(statements)
        problems.append(
            SqlProblem(
                code="not_single_statement",
                message=(
                    "no SQL statement: give exactly one query"
                    if count == 0
                    else f"{count} statements: give exactly one query"
                ),
                position=statements[1][1] if count > 1 else None,
            )
        )
    tables: set[str] = set()
    columns: set[str] = set()
    for statement, start in statements:
        if statement is None:
            continue  # its parse error is reported
        writes = _read_only_problems(statement, start)
        problems.extend(writes)
        if writes:
            continue
        from kernel.database.sqlcheck_names import resolve_names

        resolved = resolve_names(statement, view, dialect, extra_tables or {})
        problems.extend(resolved.problems)
        tables.update(resolved.tables)
        columns.update(resolved.columns)
    unique = _dedupe(problems)
    return SqlCheck(
        ok=not unique,
        dialect=dialect,
        tables=tuple(sorted(tables)),
        columns=tuple(sorted(columns)),
        problems=unique,
    )


def output_columns(
    sql: str, view: SchemaView, *, extra_tables: ExtraTables | None = None
) -> tuple[str, ...] | None:
    """The output column names of one query (``*`` expanded over the view), or ``None`` when
    they cannot be told (not one parseable query, or a ``*`` over something unknown)."""
    dialect = sqlglot_dialect(view.dialect)
    statements = _parse(sql, dialect, [])
    if len(statements) != 1:
        return None
    statement = statements[0][0]
    if statement is None or _read_only_problems(statement, None):
        return None
    from kernel.database.sqlcheck_names import query_outputs

    return query_outputs(statement, view, dialect, extra_tables or {})


# --------------------------------------------------------------------------------------- parsing


def _quiet_sqlglot() -> None:
    # sqlglot logs a warning when it falls back to an opaque Command ("unsupported syntax"); the
    # check reports that statement as not read-only, so the warning is noise on stderr.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)


def _parse(
    sql: str, dialect: str, problems: list[SqlProblem]
) -> list[tuple[Any, SqlPosition | None]]:
    """The statements of ``sql`` with where each starts, one entry per non-empty
    ``;``-separated statement (``None`` for one that does not parse: its ``parse_error`` is in
    ``problems``).

    Statements are split on the tokenizer's semicolons and parsed one by one, so that
    ``SELEC banana FROM WHERE ;;; DROP TABLE x`` reports the parse error *and* the second,
    write statement."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import ErrorLevel, ParseError, SqlglotError, TokenError

    _quiet_sqlglot()
    grammar = Dialect.get_or_raise(dialect)
    try:
        tokens = grammar.tokenize(sql)
    except TokenError as err:
        problems.append(SqlProblem(code="parse_error", message=_token_message(str(err))))
        return [(None, None)]
    except RecursionError:
        problems.append(SqlProblem(code="parse_error", message="SQL nested too deeply"))
        return [(None, None)]
    chunks: list[list[Any]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            chunks.append([])
        else:
            chunks[-1].append(token)
    statements: list[tuple[Any, SqlPosition | None]] = []
    for chunk in chunks:
        if not chunk:
            continue
        first = chunk[0]
        start = SqlPosition(line=first.line, col=max(1, first.col - len(first.text) + 1))
        try:
            parsed = [
                e
                for e in grammar.parser(error_level=ErrorLevel.RAISE).parse(chunk, sql)
                if e is not None
            ]
        except ParseError as err:
            problems.append(_parse_problem(err))
            statements.append((None, start))
            continue
        except (SqlglotError, RecursionError) as err:
            message = "SQL nested too deeply" if isinstance(err, RecursionError) else str(err)
            problems.append(SqlProblem(code="parse_error", message=_one_line(message)))
            statements.append((None, start))
            continue
        statements.extend((e, start) for e in parsed)
    return statements


def _parse_problem(err: Any) -> SqlProblem:
    errors = getattr(err, "errors", None) or []
    first = errors[0] if errors else {}
    description = _clean(str(first.get("description") or err))
    highlight = str(first.get("highlight") or "")
    line, col = first.get("line"), first.get("col")
    message = f"{description} near {highlight!r}" if highlight else description
    position = None
    if isinstance(line, int) and isinstance(col, int) and line > 0:
        # sqlglot's col is where the highlighted token ends; point at where it starts
        start = col - len(highlight) + 1 if highlight and "\n" not in highlight else col
        position = SqlPosition(line=line, col=max(1, start))
    return SqlProblem(code="parse_error", message=_one_line(message), position=position)


def _clean(description: str) -> str:
    """sqlglot's token reprs (``<Token token_type: …, text: X, …>``) made readable."""
    import re

    def token(match: re.Match[str]) -> str:
        text = match.group(1)
        return "the end of the SQL" if text == "SENTINEL" else repr(text)

    description = re.sub(
        r"Required keyword: '\w+' missing for <class '[\w.]*?(\w+)'>",
        lambda m: f"incomplete {m.group(1).upper()}",
        description,
    )
    description = re.sub(r"<class '[\w.]*?(\w+)'>", lambda m: m.group(1).upper(), description)
    return re.sub(r"<Token token_type: [^,]+, text: ([^,]*), [^>]*>", token, description)


def _token_message(message: str) -> str:
    return _one_line(f"cannot read the SQL (an unterminated string or quote?): {message}")


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."


# ------------------------------------------------------------------------------------ read-only


def _read_only_problems(statement: Any, start: SqlPosition | None) -> list[SqlProblem]:
    """``not_read_only`` when ``statement`` is not a query, or a query that writes."""
    from sqlglot import exp

    root = statement.unnest() if isinstance(statement, exp.Subquery) else statement
    if not isinstance(root, (exp.Select, exp.SetOperation, exp.Values)):
        return [
            SqlProblem(
                code="not_read_only",
                position=start,
                message=(
                    f"{_kind(root)} is not a read-only query (allowed: SELECT, WITH … SELECT, "
                    "UNION/INTERSECT/EXCEPT, VALUES)"
                ),
            )
        ]
    writes = (
        exp.Insert,
        exp.Update,
        exp.Delete,
        exp.Merge,
        exp.Create,
        exp.Drop,
        exp.Alter,
        exp.Command,
        exp.TruncateTable,
        exp.Copy,
    )
    found: list[SqlProblem] = []
    for node in root.walk():
        if isinstance(node, writes):
            found.append(
                SqlProblem(
                    code="not_read_only",
                    message=f"a data-modifying {_kind(node)} inside the query",
                    position=start,
                )
            )
        elif isinstance(node, exp.Into):
            found.append(
                SqlProblem(
                    code="not_read_only", message="SELECT … INTO writes a table", position=start
                )
            )
        elif isinstance(node, exp.Lock):
            mode = "UPDATE" if node.args.get("update") else "SHARE"
            found.append(
                SqlProblem(
                    code="not_read_only",
                    message=f"SELECT … FOR {mode} locks rows",
                    position=start,
                )
            )
    return found


def _kind(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Command):
        return str(node.this).upper() or "COMMAND"
    name = type(node).__name__
    return {"TruncateTable": "TRUNCATE", "Transaction": "BEGIN"}.get(name, name.upper())


def _dedupe(problems: list[SqlProblem]) -> tuple[SqlProblem, ...]:
    """One problem per (code, message), at its first position; parse and statement problems
    first, then name problems in the order they appear in the text."""
    seen: dict[tuple[str, str], SqlProblem] = {}
    for problem in problems:
        key = (problem.code, problem.message)
        kept = seen.get(key)
        if kept is None or (
            problem.position is not None and (kept.position is None or _at(problem) < _at(kept))
        ):
            seen[key] = problem
    rank = {code: i for i, code in enumerate(PROBLEM_CODES)}
    return tuple(
        sorted(
            seen.values(),
            key=lambda p: (min(rank[p.code], 3), _at(p), rank[p.code], p.message),
        )
    )


def _at(problem: SqlProblem) -> tuple[int, int]:
    return (problem.position.line, problem.position.col) if problem.position else (1 << 30, 0)
