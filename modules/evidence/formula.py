"""Formula Evidence: a single composable PostgreSQL expression with declared inputs.

Glossary: "Una Evidence Unit che contiene una singola espressione PostgreSQL componibile e ne
dichiara gli input. Una query SQL completa non è una Formula Evidence." The expression is parsed
with sqlglot (PostgreSQL dialect) and must be exactly one expression — not a query, not a
statement, no sub-query, no alias, no ``*`` (but ``COUNT(*)``), no function sqlglot does not
know as a PostgreSQL one — and its column references must be exactly the declared inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FormulaCheck", "check_formula", "columns_of"]


@dataclass(frozen=True)
class FormulaCheck:
    """Outcome of :func:`check_formula`: problems (empty when valid) and the columns it reads."""

    problems: tuple[str, ...]
    columns: tuple[str, ...]
    canonical: str | None  # the expression as sqlglot renders it in PostgreSQL, when it parses

    @property
    def ok(self) -> bool:
        return not self.problems


def check_formula(expression: str, inputs: list[str] | tuple[str, ...]) -> FormulaCheck:
    """Validate ``expression`` against the declared ``inputs`` (pure; no database needed)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    text = expression.strip().rstrip(";").strip()
    if not text:
        return FormulaCheck(problems=("the expression is empty",), columns=(), canonical=None)
    try:
        parsed = [e for e in sqlglot.parse(text, read="postgres") if e is not None]
    except SqlglotError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return FormulaCheck(
            problems=(f"not a PostgreSQL expression: {first}",), columns=(), canonical=None
        )
    if len(parsed) != 1:
        return FormulaCheck(
            problems=(f"must be a single expression, found {len(parsed)} statements",),
            columns=(),
            canonical=None,
        )
    tree = parsed[0]
    problems: list[str] = []
    if isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command):
        problems.append("a full query or statement is not a formula; write only the expression")
    elif any(isinstance(node, exp.Query) for node in tree.walk()):
        problems.append("a sub-query is not composable; write only an expression over columns")
    if isinstance(tree, exp.Alias):
        problems.append("an alias (AS …) is not part of a formula; write only the expression")
    if any(
        isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count)
        for node in tree.walk()
    ):
        problems.append("'*' is not allowed in a formula (except COUNT(*))")
    unknown = sorted(
        {node.name for node in tree.walk() if isinstance(node, exp.Anonymous)}, key=str.lower
    )
    if unknown:
        problems.append("unknown function(s) for PostgreSQL: " + ", ".join(unknown))
    columns = columns_of(tree)
    declared = [i.strip() for i in inputs]
    missing = [c for c in columns if c not in declared]
    unused = [i for i in declared if i not in columns]
    if missing:
        problems.append("columns used but not declared in inputs: " + ", ".join(missing))
    if unused:
        problems.append("declared inputs not used by the expression: " + ", ".join(unused))
    if not columns:
        problems.append("the expression reads no column; a formula must declare its inputs")
    return FormulaCheck(
        problems=tuple(problems), columns=tuple(columns), canonical=tree.sql(dialect="postgres")
    )


def columns_of(tree: object) -> list[str]:
    """Column references of a parsed expression, in first-use order, as ``[table.]column``."""
    from sqlglot import exp

    assert isinstance(tree, exp.Expression)
    seen: list[str] = []
    for node in tree.walk():
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            parts = [p for p in (node.table, node.name) if p]
            name = ".".join(parts)
            if name not in seen:
                seen.append(name)
    return seen
