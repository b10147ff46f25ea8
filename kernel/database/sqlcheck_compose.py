"""The SQL that runs: a final query plus the approved F5 CTEs it names (docs/sql.md).

F6's ``sql_final.sql`` may use the names of CTEs approved at F5 (``cte_approved``: a name and
its ``cte/<n>.sql`` artifact, one query each) as if they were tables. The query that runs is
then the final SQL with the CTEs it needs — those it names but does not define itself, and
those these name in turn, in approval order — put in front of it as a ``WITH`` list.

The composition is textual (the SQL as written, never sqlglot's regeneration of it), so what
runs is exactly what the reviewer approved, framed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CteParts:
    """A ``cte/<n>.sql`` artifact: its query (``body``), the name and column names it defines
    when written as a definition (``name AS (query)``), and where the body starts in the
    artifact (line, column; 1-based) so problems point into the artifact."""

    body: str
    name: str | None = None
    columns: tuple[str, ...] = ()
    line: int = 1
    col: int = 1


def split_cte(text: str, dialect: str) -> CteParts:
    """Either form of a CTE artifact: a query, or a definition ``name [(cols)] AS
    [[NOT] MATERIALIZED] (query)`` (then the query between the parentheses is the body)."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except (SqlglotError, RecursionError):
        return CteParts(body=text)
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens = tokens[:-1]
    names = (TokenType.VAR, TokenType.IDENTIFIER)
    if len(tokens) < 4 or tokens[0].token_type not in names:
        return CteParts(body=text)
    i, columns = 1, []
    if tokens[i].token_type == TokenType.L_PAREN:  # a column list
        i += 1
        while i < len(tokens) and tokens[i].token_type in (*names, TokenType.COMMA):
            if tokens[i].token_type != TokenType.COMMA:
                columns.append(tokens[i].text)
            i += 1
        if i >= len(tokens) or tokens[i].token_type != TokenType.R_PAREN:
            return CteParts(body=text)
        i += 1
    if i >= len(tokens) or tokens[i].text.upper() != "AS":
        return CteParts(body=text)
    i += 1
    while i < len(tokens) and tokens[i].text.upper() in ("NOT", "MATERIALIZED"):
        i += 1
    if i >= len(tokens) - 1 or tokens[i].token_type != TokenType.L_PAREN:
        return CteParts(body=text)
    if tokens[-1].token_type != TokenType.R_PAREN or not _closes(tokens[i:], TokenType):
        return CteParts(body=text)
    open_, close = tokens[i], tokens[-1]
    return CteParts(
        body=text[open_.end + 1 : close.start],
        name=tokens[0].text,
        columns=tuple(columns),
        line=open_.line,
        col=open_.col + 1,
    )


def _closes(tokens: Sequence[Any], types: Any) -> bool:
    """Whether the first token's parenthesis is closed by the last token (not before)."""
    depth = 0
    for index, token in enumerate(tokens):
        if token.token_type == types.L_PAREN:
            depth += 1
        elif token.token_type == types.R_PAREN:
            depth -= 1
            if depth == 0 and index != len(tokens) - 1:
                return False
    return depth == 0


__all__ = ["CteParts", "compose_with_ctes", "referenced_tables", "split_cte"]


def referenced_tables(sql: str, dialect: str) -> tuple[set[str], set[str]] | None:
    """(table names the query reads, CTE names it defines), lower-case; ``None`` when ``sql``
    does not parse as one statement."""
    from sqlglot import exp

    statement = _one_statement(sql, dialect)
    if statement is None:
        return None
    defined = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
    tables = {
        t.name.lower()
        for t in statement.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and not t.args.get("db")
    }
    return tables, defined


def compose_with_ctes(sql: str, ctes: Sequence[tuple[str, str]], dialect: str) -> str:
    """``sql`` with the approved CTEs (``(name, artifact text)``, in approval order; either
    form of :func:`split_cte`) it needs in front.

    Unchanged when it needs none (or does not parse: the executor then reports the error)."""
    found = referenced_tables(sql, dialect)
    if found is None:
        return sql
    tables, defined = found
    bodies = {name.lower(): (name, split_cte(body, dialect).body) for name, body in ctes}
    needed: set[str] = set()
    pending = [t for t in tables if t in bodies and t not in defined]
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        inner = referenced_tables(bodies[name][1], dialect)
        if inner is not None:
            pending.extend(t for t in inner[0] if t in bodies and t not in inner[1])
    if not needed:
        return sql
    ordered = [bodies[n.lower()] for n, _ in ctes if n.lower() in needed]
    listed = ",\n".join(f"{name} AS (\n{_body(body)}\n)" for name, body in ordered)
    head = _with_token(sql, dialect)
    if head is None:
        return f"WITH {listed}\n{sql.strip()}"
    # the final query has its own WITH: the approved CTEs go first in the same list
    end = head + 1
    return f"{sql[:end]} {listed},\n{sql[end:].lstrip()}"


def _body(body: str) -> str:
    return body.strip().rstrip(";").rstrip()


def _with_token(sql: str, dialect: str) -> int | None:
    """The offset of the last character of the leading ``WITH`` (``WITH RECURSIVE``), if the
    query starts with one."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    if not tokens or tokens[0].token_type != TokenType.WITH:
        return None
    end = int(tokens[0].end)
    if len(tokens) > 1 and tokens[1].text.upper() == "RECURSIVE":
        end = int(tokens[1].end)
    return end


def _one_statement(sql: str, dialect: str) -> Any:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (SqlglotError, RecursionError):
        return None
    return statements[0] if len(statements) == 1 else None
