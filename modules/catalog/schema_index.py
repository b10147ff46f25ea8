"""The schema index: Catalog Tables and Columns as points of the workspace collection.

Kinds ``schema_table`` (one point per table) and ``schema_column`` (one per column), each with a
dense vector (the workspace embedder, passage role) and a sparse ``bm25`` vector of its index text
(:mod:`modules.catalog.schema_text`). It is a projection of the catalog, rebuilt incrementally
after each Catalog Sync Run (and by ``tht catalog reindex``), with the mechanics every projection
of the workspace collection shares (:mod:`kernel.vectors.projection`): an entry's content hash
covers the layout, the embedder and BM25 identities, the kind, the table, the column and the
index text (so the type, key flag and Description), so unchanged tables and columns are never
embedded again; the header (``schema_index.json``: index id, build, the SchemaView version it
was built from, embedder, BM25, dense size, counts) and the manifest
(``schema_index.manifest.json``) in ``state_dir``; a completion marker (kind ``schema_table``)
written last. Every point carries ``schema_index: <index id>`` and every query filters on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from kernel.schema_view import SchemaView
from kernel.vectors import projection
from kernel.vectors.projection import content_digest
from modules.catalog.schema_capabilities import SchemaIndexCapabilities
from modules.catalog.schema_text import column_text, table_text

if TYPE_CHECKING:
    from kernel.vectors import CollectionSpec, VectorFilter

__all__ = [
    "COLUMN_KIND",
    "COMPLETE_MARKER",
    "HEADER_FILE",
    "INDEX_LAYOUT",
    "MANIFEST_FILE",
    "SCHEMA_INDEX",
    "TABLE_KIND",
    "ReindexReport",
    "SchemaEntry",
    "SchemaIndexHeader",
    "build_fingerprint",
    "collection_spec",
    "load_header",
    "marker_filter",
    "reindex",
    "schema_entries",
]

INDEX_LAYOUT: Final = "schema-index/v1"
TABLE_KIND: Final = "schema_table"
COLUMN_KIND: Final = "schema_column"
COMPLETE_MARKER: Final = "schema_index_complete"
HEADER_FILE: Final = "schema_index.json"
MANIFEST_FILE: Final = "schema_index.manifest.json"
#: the schema index as a projection of the workspace collection (:mod:`kernel.vectors.projection`)
SCHEMA_INDEX: Final = projection.ProjectionSpec(
    noun="schema index",
    layout=INDEX_LAYOUT,
    index_key="schema_index",
    point_prefix="schema",
    marker=COMPLETE_MARKER,
    marker_kind=TABLE_KIND,
    kinds=(TABLE_KIND, COLUMN_KIND),
    header_file=HEADER_FILE,
    manifest_file=MANIFEST_FILE,
    remedy="tht catalog reindex",
)


class SchemaEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One table or column as the index holds it; ``column`` is ``""`` for a table."""

    kind: str
    table: str
    column: str
    type: str
    text: str
    hash: str


class SchemaIndexHeader(msgspec.Struct, frozen=True, kw_only=True):
    layout: str
    index: str  # the index id every point carries (``schema_index``)
    build: str  # fingerprint of the entries in the store (see build_fingerprint)
    view_version: str  # the SchemaView version the index was last built from
    embedder: str
    bm25: str
    dense_size: int
    tables: int
    columns: int


@dataclass(frozen=True)
class ReindexReport:
    """What one reindex did: ``embedded`` texts sent to the embedder, points ``deleted``,
    entries ``kept`` unchanged; ``rebuilt`` when the previous records could not be trusted."""

    tables: int
    columns: int
    embedded: int
    deleted: int
    kept: int
    rebuilt: bool
    version: str
    build: str

    def to_json(self) -> dict[str, object]:
        return {
            "tables": self.tables,
            "columns": self.columns,
            "embedded": self.embedded,
            "deleted": self.deleted,
            "kept": self.kept,
            "rebuilt": self.rebuilt,
            "version": self.version,
        }


def schema_entries(view: SchemaView, *, embedder: str, bm25: str) -> list[SchemaEntry]:
    """Every table and column of ``view`` as an entry, in (table, position) order (pure)."""
    entries: list[SchemaEntry] = []
    for table in sorted(view.tables(), key=lambda t: t.name):
        columns = sorted(table.columns, key=lambda c: (c.position, c.name))
        text = table_text(table, columns)
        entries.append(
            SchemaEntry(
                kind=TABLE_KIND,
                table=table.name,
                column="",
                type="",
                text=text,
                hash=content_digest(INDEX_LAYOUT, embedder, bm25, TABLE_KIND, table.name, "", text),
            )
        )
        for column in columns:
            text = column_text(table, column)
            entries.append(
                SchemaEntry(
                    kind=COLUMN_KIND,
                    table=table.name,
                    column=column.name,
                    type=column.type,
                    text=text,
                    hash=content_digest(
                        INDEX_LAYOUT, embedder, bm25, COLUMN_KIND, table.name, column.name, text
                    ),
                )
            )
    return entries


def build_fingerprint(hashes: Iterable[str]) -> str:
    """The build of a set of entries: equal sets, equal builds (order does not matter)."""
    return projection.build_fingerprint(SCHEMA_INDEX, hashes)


def collection_spec(dense_size: int) -> CollectionSpec:
    """Dense + ``bm25``, with keyword indexes on the keys the schema index filters by."""
    return projection.collection_spec(SCHEMA_INDEX, dense_size)


def marker_filter(index: str, build: str) -> VectorFilter:
    return projection.marker_filter(SCHEMA_INDEX, index, build)


def load_header(state_dir: Path) -> SchemaIndexHeader | None:
    """The header, or None when there is none; ``msgspec`` errors when it is unreadable."""
    return projection.load_header(SCHEMA_INDEX, state_dir, SchemaIndexHeader)


def _payload(entry: SchemaEntry) -> dict[str, object]:
    payload: dict[str, object] = {"table": entry.table}
    if entry.kind == COLUMN_KIND:
        payload["column"] = entry.column
        payload["type"] = entry.type
    return payload


def reindex(caps: SchemaIndexCapabilities, view: SchemaView) -> ReindexReport:
    """Bring the schema index to ``view``: embed only new or changed entries (raises
    ``VectorStoreError`` / ``EmbedderUnavailableError`` when a dependency fails, exit 6)."""
    embedder, bm25 = caps.embedder(), caps.bm25()
    entries = schema_entries(view, embedder=embedder.identity, bm25=bm25.identity)
    points = [
        projection.ProjectionEntry(
            kind=e.kind, digest=e.hash, text=e.text, dense_text=e.text, payload=_payload(e)
        )
        for e in entries
    ]
    store = caps.vector_store()
    store.ensure_collection(collection_spec(embedder.dimension))
    identity = (embedder.identity, bm25.identity, embedder.dimension)
    header, present = projection.trusted_entries(
        SCHEMA_INDEX, caps.state_dir, store, identity, SchemaIndexHeader
    )
    index = header.index if header is not None else caps.nonce()[:16]
    outcome = projection.sync_points(
        SCHEMA_INDEX,
        store,
        embedder=embedder,
        bm25=bm25,
        index=index,
        entries=points,
        present=present,
        report=caps.report,
    )
    tables = sum(1 for e in entries if e.kind == TABLE_KIND)
    projection.save_records(
        SCHEMA_INDEX,
        caps.state_dir,
        (e.hash for e in entries),
        SchemaIndexHeader(
            layout=INDEX_LAYOUT,
            index=index,
            build=outcome.build,
            view_version=view.version,
            embedder=embedder.identity,
            bm25=bm25.identity,
            dense_size=embedder.dimension,
            tables=tables,
            columns=len(entries) - tables,
        ),
    )
    return ReindexReport(
        tables=tables,
        columns=len(entries) - tables,
        embedded=outcome.embedded,
        deleted=outcome.deleted,
        kept=outcome.kept,
        rebuilt=outcome.rebuilt,
        version=view.version,
        build=outcome.build,
    )
