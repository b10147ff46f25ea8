"""The read-only ``SchemaView`` protocol (ARCHITECTURE §3.8): what modules may know of the
Workspace Database's structure, without importing the Metadata Catalog.

The catalog (``modules/catalog``) implements it from its folded ledger; the composition root
hands it to Disambiguation (ambiguity detection, value grounding), schema linking (F4) and SQL
validation (F5/F6) inside their capability objects. :class:`StaticSchemaView` is the frozen form:
the **Effective Relationship Snapshot** a session records as an artifact (so the session replays
against the catalog it saw), and what tests build by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import msgspec

__all__ = [
    "SNAPSHOT_ARTIFACT",
    "SchemaColumn",
    "SchemaRelationship",
    "SchemaTable",
    "SchemaView",
    "StaticSchemaView",
    "decode_snapshot",
    "encode_snapshot",
]

#: the artifact name of a session's Effective Relationship Snapshot
SNAPSHOT_ARTIFACT = "catalog_snapshot.json"

RelationshipOrigin = Literal["physical", "generated", "manual"]


class SchemaColumn(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str = ""
    position: int = 0
    nullable: bool = True
    pk: bool = False
    sensitive: bool = False
    description: str = ""


class SchemaTable(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    columns: tuple[SchemaColumn, ...] = ()
    description: str = ""

    def column(self, name: str) -> SchemaColumn | None:
        """The column named ``name`` (exact, else the one case-insensitive match)."""
        for column in self.columns:
            if column.name == name:
                return column
        folded = [c for c in self.columns if c.name.lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None


class SchemaRelationship(msgspec.Struct, frozen=True, kw_only=True):
    """An active relationship of the Effective Relationship Map: ``from_columns[i]`` of
    ``from_table`` joins ``to_columns[i]`` of ``to_table``."""

    id: str
    from_table: str
    from_columns: tuple[str, ...]
    to_table: str
    to_columns: tuple[str, ...]
    origin: RelationshipOrigin


class SchemaView(Protocol):
    """Read-only structure of the Workspace Database as the catalog knows it."""

    @property
    def dialect(self) -> str:
        """sqlglot's dialect name: ``sqlite`` or ``postgres``."""
        ...

    @property
    def version(self) -> str:
        """Identity of what this view shows (the catalog's ``seq:head``, or a snapshot's)."""
        ...

    def tables(self) -> Sequence[SchemaTable]: ...

    def table(self, name: str) -> SchemaTable | None:
        """The table named ``name`` (exact, else the one case-insensitive match)."""
        ...

    def relationships(self) -> Sequence[SchemaRelationship]:
        """The active relationships only (the Effective Relationship Snapshot)."""
        ...


class StaticSchemaView(msgspec.Struct, frozen=True, kw_only=True):
    """A frozen :class:`SchemaView`: the Effective Relationship Snapshot of a session."""

    dialect: str
    version: str = ""
    #: the redacted display of the Database Binding the catalog was synced from ("" when not
    #: recorded): F7 runs the approved SQL only against that database
    binding: str = ""
    schema_tables: tuple[SchemaTable, ...] = msgspec.field(default=(), name="tables")
    schema_relationships: tuple[SchemaRelationship, ...] = msgspec.field(
        default=(), name="relationships"
    )

    def tables(self) -> Sequence[SchemaTable]:
        return self.schema_tables

    def table(self, name: str) -> SchemaTable | None:
        for table in self.schema_tables:
            if table.name == name:
                return table
        folded = [t for t in self.schema_tables if t.name.lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None

    def relationships(self) -> Sequence[SchemaRelationship]:
        return self.schema_relationships

    @classmethod
    def of(cls, view: SchemaView) -> StaticSchemaView:
        """Freeze any view (sorted, so equal structures encode to equal bytes)."""
        return cls(
            dialect=view.dialect,
            version=view.version,
            binding=getattr(view, "binding", ""),
            schema_tables=tuple(sorted(view.tables(), key=lambda t: t.name)),
            schema_relationships=tuple(sorted(view.relationships(), key=lambda r: r.id)),
        )


_ENCODER = msgspec.json.Encoder(order="deterministic")
_DECODER = msgspec.json.Decoder(StaticSchemaView)


def encode_snapshot(view: SchemaView) -> bytes:
    """The snapshot artifact's bytes (canonical JSON; equal views, equal bytes)."""
    return _ENCODER.encode(StaticSchemaView.of(view)) + b"\n"


def decode_snapshot(data: bytes) -> StaticSchemaView:
    """A snapshot artifact back; ``msgspec.ValidationError`` / ``DecodeError`` when malformed."""
    return _DECODER.decode(data)
