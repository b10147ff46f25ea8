"""What introspection observes and what a read-only query returns (ARCHITECTURE §3.8).

Plain data, shared by the Workspace Database mechanism (:mod:`kernel.database`), the Metadata
Catalog (``modules/catalog``) and the application; importing it pulls in nothing heavy.

Introspection Capability (glossary): per category, whether the backend could observe it
(``observed``) or not (``unavailable``). ``observed`` with nothing in it ("observed, empty") is a
fact about the database; ``unavailable`` says nothing about it, and the two are never confused.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "CAPABILITY_CATEGORIES",
    "Capability",
    "Introspection",
    "ObservedColumn",
    "ObservedIndex",
    "ObservedTable",
    "PhysicalRelationship",
    "QueryResult",
    "ResultColumn",
]

Capability = Literal["observed", "unavailable"]

#: the categories an introspection reports a capability for, in this order
CAPABILITY_CATEGORIES: tuple[str, ...] = (
    "tables",
    "columns",
    "primary_keys",
    "relationships",
    "indexes",
)


class ObservedColumn(msgspec.Struct, frozen=True, kw_only=True):
    """A Physical Column: name, 1-based position, declared type, nullability, pk membership."""

    name: str
    position: int
    type: str
    nullable: bool = True
    pk: bool = False
    #: 1-based position inside the primary key, 0 when not part of it
    pk_position: int = 0
    #: the comment observed in the database (never a Description)
    comment: str = ""


class ObservedTable(msgspec.Struct, frozen=True, kw_only=True):
    """A Physical Table of the bound schema."""

    name: str
    columns: tuple[ObservedColumn, ...] = ()
    kind: Literal["table", "view"] = "table"
    comment: str = ""


class PhysicalRelationship(msgspec.Struct, frozen=True, kw_only=True):
    """A declared foreign key: its constraint and the ordered column pairs that compose it
    (``from_columns[i]`` references ``to_columns[i]``)."""

    constraint: str
    from_table: str
    from_columns: tuple[str, ...]
    to_table: str
    to_columns: tuple[str, ...]


class ObservedIndex(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    table: str
    columns: tuple[str, ...]
    unique: bool = False


class Introspection(msgspec.Struct, frozen=True, kw_only=True):
    """One observation of the bound schema (or of the tables in ``scope``), sorted by name, so
    that equal structures encode to equal bytes (the snapshot is content-addressed)."""

    dialect: str
    schema: str | None = None
    #: ``None``: the whole schema ("Synchronize All"); else the table names asked for
    scope: tuple[str, ...] | None = None
    tables: tuple[ObservedTable, ...] = ()
    relationships: tuple[PhysicalRelationship, ...] = ()
    indexes: tuple[ObservedIndex, ...] = ()
    #: category → ``observed`` | ``unavailable`` (keys: :data:`CAPABILITY_CATEGORIES`)
    capabilities: dict[str, Capability] = msgspec.field(default_factory=dict)
    #: the structure version the observation was made at (see ``structure_version``)
    version: str = ""


class ResultColumn(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str = ""


class QueryResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one read-only query returned: at most ``limit`` rows (``truncated`` when there were
    more), the elapsed time, and ``sha256``, the hash of the canonical JSON of columns and the
    returned rows (the result hash ``result_verified`` records)."""

    columns: tuple[ResultColumn, ...]
    rows: tuple[tuple[Any, ...], ...]
    row_count: int
    truncated: bool
    elapsed_ms: float
    sha256: str
