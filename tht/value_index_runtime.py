"""Composition root of the value index (issue 14 item 6): built at catalog sync from the Workspace
Database (read-only), kept as a projection in ``.tht/value_index/value_index.json``, and handed to
F1 as Disambiguation's ``ValueLookup``.

The index is never an authority (ARCHITECTURE §3.9 rule 4):
- it records the **fingerprint** of what it indexed (every text column, its type, its Sensitive
  Data Flag, its table's synced structure version, from the verified catalog ledger); a mismatch
  (a sync, a flag set since) makes it stale, and a stale index is not used;
- every match is **confirmed against the database** (``SELECT 1 … WHERE col = value``, read-only)
  before it becomes an option of a review, so a crafted index file can at most cost a query;
- setting a Sensitive Data Flag rebuilds it at once (or removes it when the database cannot be
  reached): a flagged column's values do not stay on disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from kernel.database import DatabaseBinding
    from modules.catalog.records import CatalogState
    from modules.catalog.value_index import ValueFinder, ValueIndex
    from tht.composition import App

__all__ = [
    "column_values",
    "fingerprint",
    "index_path",
    "load_value_index",
    "rebuild_value_index",
    "value_lookup",
]

logger = logging.getLogger(__name__)
QUERY_TIMEOUT_MS = 5_000


def index_path(app: App) -> Path:
    return app.workspace.state_dir / "value_index" / "value_index.json"


def fingerprint(state: CatalogState) -> str:
    """What the index depends on: the text columns, their types and flags, the tables'
    synced structure versions."""
    from modules.catalog.value_index import indexable_columns

    indexed, sensitive = indexable_columns(state)
    parts = {
        "indexed": indexed,
        "sensitive": sensitive,
        "types": sorted(
            f"{t.name}.{c.name}:{c.type}" for t in state.tables.values() for c in t.columns
        ),
        "versions": sorted(f"{t.name}:{t.synced_version}" for t in state.tables.values()),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _verified_state(app: App) -> CatalogState:
    from tht.catalog_runtime import open_catalog

    return open_catalog(app).load_for_write().state


def rebuild_value_index(app: App, state: CatalogState | None = None) -> dict[str, Any]:
    """Read every indexable column's distinct values (read-only) and write the index;
    ``{"path", "columns", "values", "truncated", "skipped_sensitive"}``."""
    from kernel.atomic import atomic_write
    from kernel.database import read_only_session
    from kernel.errors import UsageError
    from modules.catalog.value_index import (
        VALUE_CAP,
        build_value_index,
        distinct_sql,
        indexable_columns,
    )
    from tht.catalog_runtime import binding, schema_view
    from tht.schema_runtime import NOT_BOUND

    bound = binding(app)
    if bound is None:
        raise UsageError(NOT_BOUND)
    state = state or _verified_state(app)
    if schema_view(app) is None:
        from kernel.errors import UnavailableError
        from tht.schema_runtime import NOT_SYNCED

        raise UnavailableError(NOT_SYNCED, details={"reason": "not_synced"})
    indexed, _ = indexable_columns(state)
    distinct: dict[str, Sequence[Any]] = {}
    with read_only_session(bound, timeout_ms=QUERY_TIMEOUT_MS) as database:  # one connection
        for column in indexed:
            result = database.run(distinct_sql(column, VALUE_CAP), limit=VALUE_CAP + 1)
            distinct[column] = [row[0] for row in result.rows]
    index = build_value_index(state, fingerprint(state), distinct)
    path = index_path(app)
    atomic_write(path, msgspec.json.encode(index), mode=0o600, dir_mode=0o700)
    return {
        "path": str(path),
        "columns": len(index.columns),
        "values": sum(len(c.values) for c in index.columns),
        "truncated": [c.column for c in index.columns if c.truncated],
        "skipped_sensitive": list(index.skipped_sensitive),
    }


def refresh_after_flags(app: App, inv: Any) -> None:
    """After a Sensitive Data Flag changed: rebuild the index from the new flags, or — when
    the database cannot be read now — remove it (F1 then runs without value grounding)."""
    from kernel.errors import ThtError

    if not index_path(app).exists():
        return
    try:
        rebuild_value_index(app)
    except ThtError as err:
        drop_value_index(app)
        inv.note(f"note: the value index was removed ({err.message}); `tht catalog values "
                 "rebuild` makes it again")  # fmt: skip


def drop_value_index(app: App) -> None:
    import contextlib

    with contextlib.suppress(FileNotFoundError):
        index_path(app).unlink()


def load_value_index(app: App, state: CatalogState | None = None) -> ValueIndex | None:
    """The index when it is there, readable and fresh for ``state``; else None."""
    from modules.catalog.value_index import INDEX_VERSION, ValueIndex

    try:
        data = index_path(app).read_bytes()
        index = msgspec.json.decode(data, type=ValueIndex)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    state = state or _verified_state(app)
    if index.version != INDEX_VERSION or index.fingerprint != fingerprint(state):
        return None
    return index


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _confirmed(bound: DatabaseBinding, column: str, value: str) -> bool:
    """Whether ``column`` really holds ``value`` (read-only; any failure: not confirmed): the
    value the index matched, as the index says the column holds it."""
    from kernel.database import run_read_only
    from kernel.errors import ThtError

    table, _, name = column.rpartition(".")
    if "\x00" in value:
        return False
    literal = "'" + value.replace("'", "''") + "'"
    sql = f"SELECT 1 FROM {_ident(table)} WHERE {_ident(name)} = {literal} LIMIT 1"
    try:
        return bool(run_read_only(bound, sql, limit=1, timeout_ms=QUERY_TIMEOUT_MS).rows)
    except ThtError:
        return False


def column_values(app: App, columns: Iterable[str], limit: int) -> dict[str, tuple[str, ...]]:
    """What the value index holds for ``columns`` (``table.column``, any case), for F1 to offer:
    only columns the verified catalog indexes (text, no Sensitive Data Flag), and only values
    the database confirms — the index is a cache an agent could forge, so it names candidates,
    never options. A column holding more than ``limit`` values returns ``limit + 1`` of them,
    unconfirmed (they are only counted, never shown). Nothing without a fresh index or a
    database."""
    from modules.catalog.value_index import indexable_columns
    from tht.catalog_runtime import binding

    wanted = {c.casefold() for c in columns}
    if not wanted:
        return {}
    state = _verified_state(app)
    index = load_value_index(app, state)
    bound = binding(app) if index is not None else None
    if index is None or bound is None:
        return {}
    allowed = {c.casefold() for c in indexable_columns(state)[0]}
    found: dict[str, tuple[str, ...]] = {}
    for held in index.columns:
        key = held.column.casefold()
        if key not in wanted or key not in allowed:
            continue
        if len(held.values) > limit or held.truncated:
            found[held.column] = tuple(held.values[: limit + 1])
            continue
        found[held.column] = tuple(v for v in held.values if _confirmed(bound, held.column, v))
    return found


def value_lookup(app: App, state: CatalogState | None = None) -> Any:
    """F1's ``ValueLookup`` (``value -> table.column names``) over a fresh index, each column
    confirmed against the database; None when there is no fresh index or no database."""
    from tht.catalog_runtime import binding

    index = load_value_index(app, state)
    bound = binding(app) if index is not None else None
    if index is None or bound is None:
        return None
    finder: ValueFinder = index.finder()
    confirmed: dict[tuple[str, str], bool] = {}

    def lookup(text: str) -> Sequence[str]:
        columns: set[str] = set()
        for match in finder.find(text):
            for column in match.columns:
                key = (column, match.value)
                if key not in confirmed:
                    confirmed[key] = _confirmed(bound, column, match.value)
                if confirmed[key]:
                    columns.add(column)
        return sorted(columns)

    return lookup
