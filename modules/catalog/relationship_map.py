"""The Effective Relationship Map (glossary): the unified view of the Catalog Relationships and
the Logical Relationships, with explicit origin and state. A projection of the fold, never a
persisted model. Pure.

Entries: ``{"id", "from": "t.c", "to": "t.c", "origin": "physical" | "generated" | "manual",
"state": "active" | "deleted"}`` (ARCHITECTURE §6; a composite key is ``t.(a,b)``,
modules/catalog/endpoints.py). Sorted by ``from``, ``to``, origin, id. Deleted entries (the
exclusions of Logical Relationship Deletion) only with ``include_deleted``.
"""

from __future__ import annotations

from kernel.schema_view import SchemaRelationship
from modules.catalog.endpoints import format_endpoint
from modules.catalog.records import CatalogState

__all__ = ["active_relationships", "relationship_map"]

_ORIGIN_ORDER = {"physical": 0, "generated": 1, "manual": 2}


def relationship_map(state: CatalogState, *, include_deleted: bool = False) -> list[dict[str, str]]:
    entries = [
        {
            "id": r.id,
            "from": format_endpoint(r.from_table, r.from_columns),
            "to": format_endpoint(r.to_table, r.to_columns),
            "origin": "physical",
            "state": "active",
        }
        for r in state.physical.values()
    ]
    entries += [
        {
            "id": r.id,
            "from": format_endpoint(r.from_table, r.from_columns),
            "to": format_endpoint(r.to_table, r.to_columns),
            "origin": r.origin,
            "state": r.state,
        }
        for r in state.logical.values()
        if include_deleted or r.state == "active"
    ]
    entries.sort(key=lambda e: (e["from"], e["to"], _ORIGIN_ORDER[e["origin"]], e["id"]))
    return entries


def active_relationships(state: CatalogState) -> list[SchemaRelationship]:
    """The active relationships between Catalog Tables (the Effective Relationship Snapshot's
    content), sorted by id; a foreign key to a table the catalog does not hold is left out."""
    found = [
        SchemaRelationship(
            id=r.id,
            from_table=r.from_table,
            from_columns=r.from_columns,
            to_table=r.to_table,
            to_columns=r.to_columns,
            origin="physical",
        )
        for r in state.physical.values()
        if r.from_table in state.tables and r.to_table in state.tables
    ]
    found += [
        SchemaRelationship(
            id=r.id,
            from_table=r.from_table,
            from_columns=r.from_columns,
            to_table=r.to_table,
            to_columns=r.to_columns,
            origin=r.origin,
        )
        for r in state.logical.values()
        if r.state == "active"
    ]
    found.sort(key=lambda r: r.id)
    return found
