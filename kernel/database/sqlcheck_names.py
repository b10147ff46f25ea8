"""Name resolution for the SQL check: every table and column of a query, against a SchemaView.

Walks sqlglot's scopes (one per SELECT, CTE, derived table, subquery and set-operation branch)
and resolves, in each:

- table references: a CTE of the query (its output columns), a derived table (its output
  columns), an extra table (a session's approved F5 CTE), else a table of the view — or
  ``unknown_table`` with a "did you mean";
- qualified columns ``t.c`` through the FROM's aliases (and, in a correlated subquery or a
  LATERAL, those of the enclosing queries);
- unqualified columns over the sources of the FROM: none has it → ``unknown_column`` (with a
  "did you mean" over the columns in scope), two have it → ``ambiguous_column`` unless it is a
  ``USING``/``NATURAL`` join column; an output alias counts in ``ORDER BY``, ``GROUP BY`` and
  ``HAVING`` (and, in SQLite, anywhere: SQLite falls back to output aliases);
- ``*`` and ``t.*`` (expanded for the output columns of CTEs and derived tables).

A source whose columns cannot be known (an unknown table, a table function, ``VALUES`` without
column names, a ``*`` over one of those) accepts any column, so one mistake is reported once,
never as a cascade. Comparison is case-insensitive, as for unquoted SQL identifiers.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernel.database.sqlcheck import SqlPosition, SqlProblem
from kernel.schema_view import SchemaView

__all__ = ["Resolved", "query_outputs", "resolve_names"]

#: columns every table has without declaring them, by dialect
_IMPLICIT = {
    "sqlite": frozenset({"rowid", "oid", "_rowid_"}),
    "postgres": frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"}),
}

#: lower-case name → the name as the source spells it; ``None``: unknown (anything goes)
Columns = dict[str, str] | None


@dataclass(frozen=True)
class Resolved:
    problems: list[SqlProblem]
    tables: set[str]
    columns: set[str]


@dataclass
class _Source:
    alias: str
    #: the view's table name, when the source is one of its tables
    table: str | None
    columns: Columns


@dataclass
class _Level:
    """One scope's FROM: its sources by lower-case alias, the USING/NATURAL join columns, and
    its output aliases."""

    sources: dict[str, _Source] = field(default_factory=dict)
    merged: set[str] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)


def resolve_names(
    statement: Any, view: SchemaView, dialect: str, extra: Mapping[str, Sequence[str] | None]
) -> Resolved:
    resolver = _Resolver(view, dialect, extra)
    resolver.run(statement)
    return Resolved(resolver.problems, resolver.tables, resolver.columns)


def query_outputs(
    statement: Any, view: SchemaView, dialect: str, extra: Mapping[str, Sequence[str] | None]
) -> tuple[str, ...] | None:
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.scope import build_scope

    resolver = _Resolver(view, dialect, extra)
    try:
        root = build_scope(statement)
    except SqlglotError:
        return None
    if root is None:
        return None
    outputs = resolver.outputs(root)
    return None if outputs is None else tuple(outputs.values())


class _Resolver:
    def __init__(
        self, view: SchemaView, dialect: str, extra: Mapping[str, Sequence[str] | None]
    ) -> None:
        self.view = view
        self.dialect = dialect
        self.extra: dict[str, Columns] = {
            name.lower(): (None if cols is None else {c.lower(): c for c in cols})
            for name, cols in extra.items()
        }
        self.implicit = _IMPLICIT.get(dialect, frozenset())
        self.problems: list[SqlProblem] = []
        self.tables: set[str] = set()
        self.columns: set[str] = set()
        self._levels: dict[int, _Level] = {}
        self._outputs: dict[int, Columns] = {}

    # ------------------------------------------------------------------ driving

    def run(self, statement: Any) -> None:
        from sqlglot.errors import SqlglotError
        from sqlglot.optimizer.scope import traverse_scope

        try:
            scopes = list(traverse_scope(statement))
        except SqlglotError as err:  # e.g. a CTE name used twice
            self._problem("unknown_table", f"cannot resolve the query's names: {err}")
            return
        for scope in scopes:
            self._check_scope(scope)

    def _check_scope(self, scope: Any) -> None:
        from sqlglot import exp

        level = self.level(scope)
        expression = scope.expression
        if isinstance(expression, exp.Select):
            self._check_using(expression, level)
        for node in scope.walk():
            if type(node) is exp.Column:
                if isinstance(node.this, exp.Star):
                    self._table_star(node, scope)
                else:
                    self._column(node, scope)
            elif isinstance(node, exp.Star) and node.parent is expression:
                for source in level.sources.values():
                    self._record_all(source)

    # ------------------------------------------------------------------ sources

    def level(self, scope: Any) -> _Level:
        key = id(scope)
        if key not in self._levels:
            self._levels[key] = self._build_level(scope)
        return self._levels[key]

    def _build_level(self, scope: Any) -> _Level:
        from sqlglot import exp
        from sqlglot.optimizer.scope import Scope

        level = _Level()
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            # its ORDER BY names the output columns (those of the first branch)
            level.sources[""] = _Source("", None, self.outputs(scope))
            return level
        for name, node in scope.references:
            source = scope.sources.get(name)
            alias = name.lower()
            if alias in level.sources:
                self._problem(
                    "ambiguous_column",
                    f"table name or alias {name!r} is used twice in one FROM: give each its "
                    "own alias",
                    node,
                )
                continue
            if isinstance(source, Scope):
                columns = self.outputs(source)
                level.sources[alias] = _Source(name, None, _renamed(node, columns))
            elif isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
                level.sources[alias] = self._table_source(name, node, scope)
            else:  # a table function, UNNEST, VALUES …: its columns only if aliased
                level.sources[alias] = _Source(name, None, _renamed(node, None))
        if isinstance(expression, exp.Select):
            level.merged = self._merged(expression, level)
            level.aliases = {
                p.alias.lower() for p in expression.expressions if isinstance(p, exp.Alias)
            }
        return level

    def _table_source(self, alias: str, node: Any, scope: Any) -> _Source:
        name = node.name
        if name.lower() in self.extra:
            return _Source(alias, None, _renamed(node, self.extra[name.lower()]))
        table = self.view.table(name)
        if table is None:
            known = [t.name for t in self.view.tables()] + list(self.extra)
            known += [n for n in scope.cte_sources if n]
            self._problem("unknown_table", f"unknown table {name!r}{_hint(name, known)}", node)
            return _Source(alias, None, None)
        self.tables.add(table.name)
        if _alias_columns(node):  # ``t AS x(a, b)``: the columns go by other names
            return _Source(alias, None, _renamed(node, None))
        return _Source(alias, table.name, {c.name.lower(): c.name for c in table.columns})

    def _merged(self, select: Any, level: _Level) -> set[str]:
        merged: set[str] = set()
        for join in select.args.get("joins") or []:
            using = join.args.get("using") or []
            merged.update(u.name.lower() for u in using)
            if join.method and join.method.upper() == "NATURAL":
                right = level.sources.get(join.this.alias_or_name.lower())
                if right is not None and right.columns is not None:
                    others = [s for s in level.sources.values() if s is not right]
                    merged.update(
                        c
                        for c in right.columns
                        if any(o.columns and c in o.columns for o in others)
                    )
        return merged

    def outputs(self, scope: Any) -> Columns:
        """The output columns of a CTE, derived-table or set-operation scope."""
        key = id(scope)
        if key not in self._outputs:
            self._outputs[key] = None  # a cycle (recursive CTE) resolves to "unknown"
            self._outputs[key] = self._compute_outputs(scope)
        return self._outputs[key]

    def _compute_outputs(self, scope: Any) -> Columns:
        from sqlglot import exp

        expression = scope.expression
        top = expression  # a recursive CTE's self-reference resolves to its first branch
        while isinstance(top.parent, exp.SetOperation):
            top = top.parent
        if isinstance(top.parent, exp.CTE):
            named = _alias_columns(top.parent)
            if named:
                return {c.lower(): c for c in named}
        if isinstance(expression, exp.SetOperation):
            branches = scope.set_operation_scopes
            return self.outputs(branches[0]) if branches else None
        if not isinstance(expression, exp.Select):
            return None
        level = self.level(scope)
        out: dict[str, str] = {}
        for projection in expression.expressions:
            if isinstance(projection, exp.Star):
                expanded = [s.columns for s in level.sources.values()]
            elif type(projection) is exp.Column and isinstance(projection.this, exp.Star):
                source = level.sources.get(projection.table.lower())
                expanded = [source.columns if source is not None else None]
            else:
                name = projection.alias_or_name
                if name:
                    out.setdefault(name.lower(), name)
                continue
            for columns in expanded:
                if columns is None:
                    return None
                for low, name in columns.items():
                    out.setdefault(low, name)
        return out

    # ------------------------------------------------------------------ columns

    def _column(self, column: Any, scope: Any) -> None:
        name = column.name
        low = name.lower()
        qualifier = column.table
        if qualifier:
            found = self._find_alias(qualifier.lower(), scope)
            if found is None:
                aliases = [s.alias for s in self.level(scope).sources.values()]
                self._problem(
                    "unknown_table",
                    f"unknown table {qualifier!r} in {qualifier}.{name}: not a table or alias "
                    f"of the FROM{_hint(qualifier, aliases)}",
                    column,
                )
                return
            self._check_in(found, name, column, qualified=True)
            return
        level = self.level(scope)
        in_alias_context = _alias_context(column, scope, self.dialect)
        if in_alias_context and low in level.aliases:
            return
        current: Any = scope
        while current is not None:
            here = self.level(current)
            matches = [s for s in here.sources.values() if _has(s, low, self.implicit)]
            if len(matches) > 1 and low not in here.merged:
                tables = " and ".join(repr(s.alias) for s in matches)
                self._problem(
                    "ambiguous_column",
                    f"column {name!r} is ambiguous: it is in {tables}; qualify it",
                    column,
                )
                return
            if matches:
                self._check_in(matches[0], name, column, qualified=False)
                return
            if any(s.columns is None for s in here.sources.values()):
                return
            current = _outer(current)
        candidates = [n for s in level.sources.values() for n in (s.columns or {}).values()]
        if in_alias_context:
            candidates += list(level.aliases)
        self._problem("unknown_column", f"unknown column {name!r}{_hint(name, candidates)}", column)

    def _check_in(self, source: _Source, name: str, node: Any, *, qualified: bool) -> None:
        low = name.lower()
        if source.columns is None or low in self.implicit:
            return
        canonical = source.columns.get(low)
        if canonical is None:
            shown = f"{source.alias}.{name}" if qualified else name
            self._problem(
                "unknown_column",
                f"unknown column {shown!r}{_hint(name, source.columns.values())}",
                node,
            )
            return
        if source.table is not None:
            self.columns.add(f"{source.table}.{canonical}")

    def _find_alias(self, alias: str, scope: Any) -> _Source | None:
        current: Any = scope
        while current is not None:
            source = self.level(current).sources.get(alias)
            if source is not None:
                return source
            current = _outer(current)
        return None

    def _table_star(self, column: Any, scope: Any) -> None:
        qualifier = column.table
        source = self._find_alias(qualifier.lower(), scope)
        if source is None:
            aliases = [s.alias for s in self.level(scope).sources.values()]
            self._problem(
                "unknown_table",
                f"unknown table {qualifier!r} in {qualifier}.*: not a table or alias of the "
                f"FROM{_hint(qualifier, aliases)}",
                column,
            )
            return
        self._record_all(source)

    def _record_all(self, source: _Source) -> None:
        if source.table is not None and source.columns is not None:
            self.columns.update(f"{source.table}.{c}" for c in source.columns.values())

    def _check_using(self, select: Any, level: _Level) -> None:
        """Each ``USING (c)`` column must be in the joined table and in one before it."""
        from_ = select.args.get("from_") or select.args.get("from")
        seen: list[_Source] = []
        if from_ is not None:
            first = level.sources.get(from_.this.alias_or_name.lower())
            if first is not None:
                seen.append(first)
        for join in select.args.get("joins") or []:
            right = level.sources.get(join.this.alias_or_name.lower())
            for ident in join.args.get("using") or []:
                low = ident.name.lower()
                if right is not None:
                    self._check_in(right, ident.name, ident, qualified=True)
                if seen and all(s.columns is not None for s in seen):
                    owners = [s for s in seen if _has(s, low, self.implicit)]
                    if not owners:
                        candidates = [n for s in seen for n in (s.columns or {}).values()]
                        self._problem(
                            "unknown_column",
                            f"unknown column {ident.name!r} in USING: not in the tables "
                            f"before the join{_hint(ident.name, candidates)}",
                            ident,
                        )
                    for owner in owners:
                        self._check_in(owner, ident.name, ident, qualified=True)
            if right is not None:
                seen.append(right)

    # ------------------------------------------------------------------ problems

    def _problem(self, code: Any, message: str, node: Any = None) -> None:
        self.problems.append(SqlProblem(code=code, message=message, position=_position(node)))


def _has(source: _Source, low: str, implicit: frozenset[str]) -> bool:
    if source.columns is None:
        return False
    return low in source.columns or (source.table is not None and low in implicit)


def _alias_columns(node: Any) -> list[str]:
    alias = node.args.get("alias") if node is not None else None
    columns = alias.args.get("columns") if alias is not None else None
    return [c.name for c in columns or []]


def _renamed(node: Any, columns: Columns) -> Columns:
    """A ``t AS x(a, b)`` alias renames the source's columns."""
    named = _alias_columns(node)
    if not named:
        return columns
    return {c.lower(): c for c in named}


def _alias_context(column: Any, scope: Any, dialect: str) -> bool:
    """Is the column in the scope's own ORDER BY, GROUP BY or HAVING, where output aliases
    are visible (in SQLite also its WHERE: SQLite falls back to an output alias there)?"""
    from sqlglot import exp

    ancestor = column.find_ancestor(exp.Order, exp.Group, exp.Having, exp.Where, exp.Select)
    if ancestor is None or ancestor.parent is not scope.expression:
        return False
    if isinstance(ancestor, exp.Where):
        return dialect == "sqlite"
    return not isinstance(ancestor, exp.Select)


def _outer(scope: Any) -> Any:
    """The enclosing scope whose FROM a name may come from (correlated subqueries, LATERAL)."""
    from sqlglot.optimizer.scope import ScopeType

    current = scope
    while current.parent is not None and current.scope_type == ScopeType.SET_OPERATION:
        current = current.parent
    if current.scope_type in (ScopeType.SUBQUERY, ScopeType.UDTF) or current.can_be_correlated:
        return current.parent
    return None


def _hint(name: str, candidates: Iterable[str]) -> str:
    by_low: dict[str, str] = {}
    for candidate in candidates:
        by_low.setdefault(candidate.lower(), candidate)
    low = name.lower()
    close = difflib.get_close_matches(low, list(by_low), n=3, cutoff=0.6)
    if len(close) < 3 and len(low) >= 3:  # ``data`` → ``data_ricovero``
        close += sorted(c for c in by_low if low in c and c not in close)[: 3 - len(close)]
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(by_low[c]) for c in close) + "?)"


def _position(node: Any) -> SqlPosition | None:
    if node is None:
        return None
    from sqlglot import exp

    target = node.this if isinstance(node, (exp.Column, exp.Table)) else node
    qualifier = node.args.get("table") if isinstance(node, exp.Column) else None
    if isinstance(qualifier, exp.Identifier) and qualifier.meta.get("line") is not None:
        target = qualifier  # ``r.data`` is pointed at from its ``r``
    meta = getattr(target, "meta", None) or {}
    line, col = meta.get("line"), meta.get("col")
    if not isinstance(line, int) or not isinstance(col, int):
        return None
    start, end = meta.get("start"), meta.get("end")
    width = end - start if isinstance(start, int) and isinstance(end, int) else 0
    return SqlPosition(line=line, col=max(1, col - width))
