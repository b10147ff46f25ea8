"""Which result columns of a query carry a sensitive column's values (the Sensitive Data
Policy downstream, ARCHITECTURE §3.8; docs/catalog.md). Pure.

:func:`masked_positions` maps each result column of one query to the Catalog Columns its
expression reads, with sqlglot's qualification (``*`` expanded over the schema view) and column
lineage (through aliases, CTEs, derived tables, set operations and scalar subqueries). The rule,
conservative on purpose:

- a result column whose expression references a sensitive column — directly, through any
  chain of aliases, CTEs or subqueries, inside a function, a ``CASE``, an aggregate or a
  window — is masked (``COUNT(email)`` too: the check is on references, not on meaning);
- a result column whose expression names a column called like a sensitive column is masked
  even when lineage attributes it elsewhere (a name is enough to mask, never to unmask);
- a result column whose lineage cannot be resolved to Catalog Columns (a table function, an
  unknown source) is masked when the query reads any table that has a sensitive column;
- when the query cannot be analysed at all — it does not parse, qualification fails, the
  expanded projections do not line up with the columns the database returned (a stale
  catalog) — **every** result column is masked if the query names a table with a sensitive
  column (or, when it does not even parse, mentions one), none otherwise.

Columns a query only filters, joins, groups or orders on are not output, so they mask nothing.
A database view is a table of its own here: flag its columns too (the offline pre-pass
proposes them by name as it does for any table).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.schema_view import SchemaView

__all__ = ["masked_positions", "names_flagged_table", "sensitive_columns"]

logger = logging.getLogger(__name__)

#: ``(table, column)`` lower-cased
Pair = tuple[str, str]


def sensitive_columns(view: SchemaView) -> set[Pair]:
    """The flagged columns of ``view``, lower-cased."""
    return {
        (t.name.lower(), c.name.lower()) for t in view.tables() for c in t.columns if c.sensitive
    }


def masked_positions(
    sql: str,
    view: SchemaView,
    sensitive: Collection[Pair],
    result_columns: Sequence[str],
) -> tuple[int, ...]:
    """The 0-based positions of ``result_columns`` (what the database returned for ``sql``)
    to mask; ``sensitive``: ``(table, column)`` pairs, any case."""
    flagged = {(t.lower(), c.lower()) for t, c in sensitive}
    if not flagged or not result_columns:
        return ()
    every = tuple(range(len(result_columns)))
    try:
        return _analysed(sql, view, flagged, result_columns)
    except _Unresolvable as why:
        logger.debug("sensitive lineage: %s; masking by table", why)
        return every if why.touches else ()
    except Exception:  # sqlglot raises many kinds; the conservative answer covers them all
        logger.debug("sensitive lineage failed; masking by table", exc_info=True)
        return every if names_flagged_table(sql, flagged) else ()


class _Unresolvable(Exception):
    def __init__(self, why: str, touches: bool) -> None:
        super().__init__(why)
        self.touches = touches


def names_flagged_table(sql: str, flagged: Collection[Pair]) -> bool:
    """The text names a table that has a sensitive column (as a word, any case): what is
    left to go by when the SQL cannot be parsed."""
    lowered = sql.lower()
    tables = {t.lower() for t, _ in flagged}
    return any(re.search(rf"(?<![\w$]){re.escape(t)}(?![\w$])", lowered) for t in tables)


def _analysed(
    sql: str, view: SchemaView, flagged: set[Pair], result_columns: Sequence[str]
) -> tuple[int, ...]:
    from sqlglot import exp, parse
    from sqlglot.errors import ErrorLevel
    from sqlglot.lineage import to_node
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import build_scope
    from sqlglot.schema import MappingSchema

    dialect = view.dialect
    statements = [s for s in parse(sql, dialect=dialect, error_level=ErrorLevel.RAISE) if s]
    if len(statements) != 1:
        raise ValueError("not one statement")
    statement = statements[0]
    sensitive_tables = {t for t, _ in flagged}
    touches = any(t.name.lower() in sensitive_tables for t in statement.find_all(exp.Table))
    if not touches:
        return ()
    # types do not matter to lineage (and a declared type may not parse): every column TEXT
    mapping: dict[str, object] = {
        t.name: {c.name: "TEXT" for c in t.columns} for t in view.tables()
    }
    schema = MappingSchema(mapping, dialect=dialect)
    qualified = qualify(
        statement, schema=schema, dialect=dialect, validate_qualify_columns=False, identify=False
    )
    scope = build_scope(qualified)
    if scope is None:
        raise _Unresolvable("no scope", touches)
    select: Any = qualified
    while isinstance(select, exp.SetOperation):
        select = select.left
    projections = list(select.selects)
    if len(projections) != len(result_columns):
        raise _Unresolvable(
            f"{len(projections)} projections for {len(result_columns)} result columns", touches
        )
    names = {c for _, c in flagged}
    masked: list[int] = []
    for index, projection in enumerate(projections):
        _line_up(projection, result_columns[index], touches)
        if _named(projection, names) or _carries(
            to_node(index, scope, dialect, schema), flagged, view
        ):
            masked.append(index)
    return tuple(masked)


def _line_up(projection: Any, returned: str, touches: bool) -> None:
    """A plain column projection must come back under its own name (else the catalog is
    stale: the positions cannot be trusted)."""
    from sqlglot import exp

    inner = projection.this if isinstance(projection, exp.Alias) else projection
    plain = isinstance(inner, exp.Column) and projection.alias_or_name.lower() == inner.name.lower()
    if plain and returned.lower() != inner.name.lower():
        raise _Unresolvable(f"{inner.name} came back as {returned}", touches)


def _named(projection: Any, names: set[str]) -> bool:
    from sqlglot import exp

    return any(c.name.lower() in names for c in projection.find_all(exp.Column))


def _carries(node: Any, flagged: set[Pair], view: SchemaView) -> bool:
    """Whether the lineage of one result column reaches a sensitive column, or does not
    resolve to Catalog Columns (then, conservatively, yes: the query reads a flagged table)."""
    from sqlglot import exp

    for step in node.walk():
        if step.downstream:
            continue
        source = step.source
        if isinstance(source, exp.Table):
            if not isinstance(source.this, exp.Identifier):
                return True  # a table function: what it returns is not known
            table = view.table(source.name)
            column = step.name.rsplit(".", 1)[-1]
            if table is None or table.column(column) is None:
                return True
            if (table.name.lower(), column.lower()) in flagged:
                return True
        elif not isinstance(source, exp.Query):
            return True
    return False
