"""AmbiQT cases as databases, for ``benchmarks/eval_ambiqt.py``: the schema text parsed, a SQLite
database materialised from it (sample values as rows, the declared primary keys), its
``SchemaView`` (``kernel.database.introspect`` plus the catalog's Generated Relationship rules)
and its value index. The method is described in ``eval_ambiqt``'s docstring.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Schema",
    "ValueIndex",
    "Views",
    "added_tables",
    "materialise",
    "parse_schema",
    "primary_keys",
]

Schema = list[tuple[str, list[tuple[str, list[Any]]]]]


def parse_schema(text: str) -> Schema:
    """``t : c (v1, v2), c2 (...) | t2 : ...`` → tables with columns and sample values."""
    tables: Schema = []
    for part in _split_top(text, "|"):
        name, _, rest = part.partition(" : ")
        columns: list[tuple[str, list[Any]]] = []
        for chunk in _split_top(rest, ","):
            chunk = chunk.strip()
            if not chunk:
                continue
            head, paren, body = chunk.partition("(")
            values = [_value(v) for v in _split_top(body[:-1], ",")] if paren else []
            columns.append((head.strip(), [v for v in values if v is not None]))
        tables.append((name.strip(), columns))
    return tables


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside double quotes and parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth, quoted = 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        if ch == sep and depth == 0 and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def _value(raw: str) -> Any:
    raw = raw.strip()
    if not raw:
        return None
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1]
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def _sql_type(values: Sequence[Any]) -> str:
    if not values:
        return ""
    if all(isinstance(v, int) for v in values):
        return "INTEGER"
    if all(isinstance(v, int | float) for v in values):
        return "REAL"
    return "TEXT"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def primary_keys(case: Mapping[str, Any]) -> dict[str, str]:
    if "tables_with_pkeys" in case:
        return {t: k for t, k in case["tables_with_pkeys"] if k}
    return dict(case.get("primary_key") or {})


def added_tables(case: Mapping[str, Any], schema: Schema) -> set[str]:
    """The table AmbiQT added: P's ``new_table_name``, J's ``<table>_<column>`` split-off."""
    names = {t for t, _ in schema}
    if case["type"] == "P":
        return {case["new_table_name"]} & names
    return {f"{t}_{c}" for t, c in case["split_map"].items()} & names


def materialise(schema: Schema, pks: Mapping[str, str], path: Path) -> str:
    """Create the SQLite database at ``path``; returns its DDL (the structure's identity)."""
    ddl = []
    con = sqlite3.connect(path)
    try:
        for table, columns in schema:
            if table.lower().startswith("sqlite_"):
                continue
            parts = [f"{_q(c)} {_sql_type(v)}".rstrip() for c, v in columns]
            key = pks.get(table)
            if key and any(c == key for c, _ in columns):
                parts.append(f"PRIMARY KEY ({_q(key)})")
            statement = f"CREATE TABLE {_q(table)} ({', '.join(parts)})"
            ddl.append(statement)
            con.execute(statement)
            rows = max((len(v) for _, v in columns), default=0)
            marks = ", ".join("?" for _ in columns)
            for i in range(rows):
                row = [v[i] if i < len(v) else None for _, v in columns]
                con.execute(f"INSERT OR IGNORE INTO {_q(table)} VALUES ({marks})", row)
        con.commit()
    finally:
        con.close()
    return "\n".join(ddl)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(kept.casefold().split())


class ValueIndex:
    """The database's text cells by folded value: an exact normalized ``ValueLookup``."""

    def __init__(self, path: Path) -> None:
        self.columns: dict[str, set[str]] = {}
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                cursor = con.execute(f"SELECT * FROM {_q(table)}")
                names = [d[0] for d in cursor.description]
                for row in cursor:
                    for name, cell in zip(names, row, strict=True):
                        if isinstance(cell, str) and cell.strip():
                            self.columns.setdefault(_fold(cell), set()).add(f"{table}.{name}")
        finally:
            con.close()

    def __call__(self, value: str) -> list[str]:
        return sorted(self.columns.get(_fold(value), ()))


@dataclass
class Views:
    """SchemaViews by structure (introspection is the slow part: one per distinct DDL)."""

    folder: Path
    cache: dict[str, Any] = field(default_factory=dict)
    introspections: int = 0

    def of(self, path: Path, ddl: str) -> Any:
        if ddl not in self.cache:
            self.cache[ddl] = _view(path)
            self.introspections += 1
        return self.cache[ddl]


def _view(path: Path) -> Any:
    from benchmarks.eval_schema_linking import _generated, view_from_introspection
    from kernel.database import binding_from_url, introspect
    from kernel.schema_view import StaticSchemaView

    observed = introspect(binding_from_url(path.parent, f"sqlite:///{path.resolve()}"))
    view = view_from_introspection(observed)
    generated = _generated(view.tables(), view.relationships())  # the catalog's rules
    return StaticSchemaView(
        dialect=view.dialect,
        version=view.version,
        schema_tables=tuple(view.tables()),
        schema_relationships=(*view.relationships(), *generated),
    )
