"""Schema Synchronization (glossary): what a completed Catalog Sync Run does to the catalog. Pure.

- **Synchronize All** (scope None): the Catalog Tables become the observed Physical Tables —
  new ones created, observed ones updated, absent ones deleted definitively; the Catalog
  Relationships become the observed foreign keys.
- **Scoped** (Table Synchronization of the tables in scope): only those tables are replaced
  (a scoped table no longer observed is deleted), with the foreign keys declared on them.
- Curated Catalog Metadata (``description`` with its Generated Description and history,
  ``sensitive``) survives for the same names; the
  observed facts (position, type, nullability, keys, comment) follow the snapshot.
- An **unavailable** Introspection Capability says nothing about the database: what the catalog
  knew of that category is kept (``tables`` unavailable: no table is touched; ``columns``: a
  table keeps its columns; ``primary_keys``: its columns keep their key flags;
  ``relationships``: its foreign keys are kept). Only an *observed* category replaces.
- A column that existed before and is gone after (dropped in the database, or its table) takes
  every relationship that had it as an endpoint with it: Logical Relationships — exclusions of
  logically deleted ones included — and Catalog Relationships. What a human decided about them
  (and the Descriptions and flags of what left) is remembered by the fold, not here
  (modules/catalog/curation_memory.py): a sync only follows the database.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from kernel.database.types import Introspection, ObservedColumn, ObservedTable
from modules.catalog.endpoints import relationship_id
from modules.catalog.records import (
    CatalogColumn,
    CatalogRelationship,
    CatalogTable,
    LogicalRelationship,
)

__all__ = [
    "CatalogContent",
    "TableChanges",
    "apply_snapshot",
    "column_set",
    "drop_endpoints",
    "resolve_scope",
    "table_changes",
]


@dataclass
class CatalogContent:
    """The mutable working copy the fold and the planners apply changes to."""

    tables: dict[str, CatalogTable]
    physical: dict[str, CatalogRelationship]
    logical: dict[str, LogicalRelationship]


@dataclass(frozen=True)
class TableChanges:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]


def column_set(tables: Collection[CatalogTable]) -> set[tuple[str, str]]:
    return {(t.name, c.name) for t in tables for c in t.columns}


def _observed(category: str, snapshot: Introspection) -> bool:
    return snapshot.capabilities.get(category, "observed") == "observed"


def _column(
    observed: ObservedColumn, before: CatalogColumn | None, keys_observed: bool
) -> CatalogColumn:
    keep_keys = not keys_observed and before is not None
    return CatalogColumn(
        name=observed.name,
        position=observed.position,
        type=observed.type,
        nullable=observed.nullable,
        pk=before.pk if keep_keys and before is not None else observed.pk,
        pk_position=before.pk_position
        if keep_keys and before is not None
        else observed.pk_position,
        comment=observed.comment,
        description=before.description if before is not None else "",
        sensitive=before.sensitive if before is not None else False,
        **_described(before),
    )


def _described(before: CatalogColumn | CatalogTable | None) -> dict[str, Any]:
    """The description metadata a resync keeps for the same name (beside ``description``)."""
    if before is None:
        return {}
    return {
        "generated": before.generated,
        "description_seq": before.description_seq,
        "description_history": before.description_history,
    }


def _table(
    observed: ObservedTable,
    before: CatalogTable | None,
    snapshot: Introspection,
    version: str,
) -> CatalogTable:
    if _observed("columns", snapshot) or before is None:
        keys = _observed("primary_keys", snapshot)
        old = {c.name: c for c in before.columns} if before is not None else {}
        columns = tuple(
            _column(c, old.get(c.name), keys)
            for c in sorted(observed.columns, key=lambda c: (c.position, c.name))
        )
    else:
        columns = before.columns
    return CatalogTable(
        name=observed.name,
        kind=observed.kind,
        columns=columns,
        comment=observed.comment,
        description=before.description if before is not None else "",
        synced_version=version,
        **_described(before),
    )


def _match(name: str, names: Collection[str]) -> str | None:
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def resolve_scope(
    scope: tuple[str, ...], snapshot: Introspection, tables: Collection[str]
) -> set[str]:
    """The real names of the scoped tables: as the database spells them (exact, else the one
    case-insensitive match), else as the catalog does, else as asked."""
    observed = [t.name for t in snapshot.tables]
    resolved = set()
    for asked in scope:
        resolved.add(_match(asked, observed) or _match(asked, tables) or asked)
    return resolved


def apply_snapshot(
    content: CatalogContent,
    snapshot: Introspection,
    *,
    scope: tuple[str, ...] | None,
    version: str,
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Apply a completed run's snapshot in place; returns the columns it removed and those it
    added (the newly observed ones)."""
    before_columns = column_set(content.tables.values())
    if _observed("tables", snapshot):
        in_scope = None if scope is None else resolve_scope(scope, snapshot, content.tables)
        observed = {t.name: t for t in snapshot.tables if in_scope is None or t.name in in_scope}
        replaced = set(content.tables) if in_scope is None else in_scope
        tables = {n: t for n, t in content.tables.items() if n not in replaced}
        for name in sorted(observed):
            tables[name] = _table(observed[name], content.tables.get(name), snapshot, version)
        content.tables = dict(sorted(tables.items()))
        if _observed("relationships", snapshot):
            physical = (
                {}
                if in_scope is None
                else {k: r for k, r in content.physical.items() if r.from_table not in replaced}
            )
            for fk in snapshot.relationships:
                if fk.from_table not in observed:
                    continue
                rid = relationship_id(
                    "physical", fk.from_table, fk.from_columns, fk.to_table, fk.to_columns
                )
                physical[rid] = CatalogRelationship(
                    id=rid,
                    constraint=fk.constraint,
                    from_table=fk.from_table,
                    from_columns=tuple(fk.from_columns),
                    to_table=fk.to_table,
                    to_columns=tuple(fk.to_columns),
                )
            content.physical = dict(sorted(physical.items()))
    after_columns = column_set(content.tables.values())
    removed = before_columns - after_columns
    drop_endpoints(content, removed)
    return removed, after_columns - before_columns


def drop_endpoints(content: CatalogContent, removed: set[tuple[str, str]]) -> None:
    """Remove every relationship with an endpoint among the ``removed`` columns."""
    if not removed:
        return

    def touches(
        table_a: str, cols_a: tuple[str, ...], table_b: str, cols_b: tuple[str, ...]
    ) -> bool:
        return any((table_a, c) in removed for c in cols_a) or any(
            (table_b, c) in removed for c in cols_b
        )

    content.logical = {
        k: r
        for k, r in content.logical.items()
        if not touches(r.from_table, r.from_columns, r.to_table, r.to_columns)
    }
    content.physical = {
        k: r
        for k, r in content.physical.items()
        if not touches(r.from_table, r.from_columns, r.to_table, r.to_columns)
    }


def table_changes(before: dict[str, CatalogTable], after: dict[str, CatalogTable]) -> TableChanges:
    """Tables added, removed and changed (observed facts only) by a run."""

    def facts(t: CatalogTable) -> tuple[object, ...]:
        return (
            t.kind,
            t.comment,
            tuple(
                (c.name, c.position, c.type, c.nullable, c.pk, c.pk_position, c.comment)
                for c in t.columns
            ),
        )

    names = set(before) | set(after)
    added = sorted(n for n in names if n in after and n not in before)
    removed = sorted(n for n in names if n in before and n not in after)
    changed = sorted(
        n for n in names if n in before and n in after and facts(before[n]) != facts(after[n])
    )
    return TableChanges(tuple(added), tuple(removed), tuple(changed))
