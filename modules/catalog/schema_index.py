"""The schema index: Catalog Tables and Columns as points of the workspace collection.

Kinds ``schema_table`` (one point per table) and ``schema_column`` (one per column), each with a
dense vector (the workspace embedder, passage role) and a sparse ``bm25`` vector of its index text
(:mod:`modules.catalog.schema_text`). It is a projection of the catalog, rebuilt incrementally
after each Catalog Sync Run (and by ``tht catalog reindex``):

- an **entry**'s content hash covers the layout, the embedder and BM25 identities, the kind, the
  table, the column and the index text (so the type, key flag and Description); the point id is a
  UUID of the index id and that hash. Unchanged tables and columns keep their points and are never
  embedded again; removed or changed ones are deleted; new ones are added;
- two small records in ``state_dir``: the **header** (``schema_index.json``: index id, build
  fingerprint, the SchemaView version it was built from, embedder, BM25, dense size, counts) and
  the **manifest** (``schema_index.manifest.json``: the hashes of the entries in the store);
- a **marker** point (kind ``schema_table``, ``marker: schema_index_complete``, the build) written
  after the last point and deleted before the first change, so a half-written index is never
  taken for a complete one. The header is written last: a crash at any step leaves records that
  do not agree with the store, and the next reindex rebuilds from scratch.

Every point carries ``schema_index: <index id>`` and every query filters on it: points of another
index (another workspace sharing a server collection, an index whose records were lost) are
never returned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from kernel.atomic import atomic_write
from kernel.schema_view import SchemaView
from modules.catalog.schema_capabilities import SchemaIndexCapabilities
from modules.catalog.schema_text import column_text, table_text

if TYPE_CHECKING:
    from kernel.vectors import CollectionSpec, VectorFilter, VectorPoint, VectorStore

__all__ = [
    "COLUMN_KIND",
    "COMPLETE_MARKER",
    "HEADER_FILE",
    "INDEX_LAYOUT",
    "MANIFEST_FILE",
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
_EMBED_BATCH: Final = 64
_UPSERT_BATCH: Final = 512
_DELETE_BATCH: Final = 500


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


class _Manifest(msgspec.Struct, frozen=True, kw_only=True):
    build: str
    entries: tuple[str, ...]


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


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8") + b"\0")
    return h.hexdigest()


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
                hash=_digest(INDEX_LAYOUT, embedder, bm25, TABLE_KIND, table.name, "", text),
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
                    hash=_digest(
                        INDEX_LAYOUT, embedder, bm25, COLUMN_KIND, table.name, column.name, text
                    ),
                )
            )
    return entries


def build_fingerprint(hashes: Iterable[str]) -> str:
    """The build of a set of entries: equal sets, equal builds (order does not matter)."""
    return _digest(INDEX_LAYOUT, *sorted(hashes))[:32]


def collection_spec(dense_size: int) -> CollectionSpec:
    """Dense + ``bm25``, with keyword indexes on the keys the schema index filters by."""
    from kernel.vectors import CollectionSpec

    return CollectionSpec(
        dense_size=dense_size,
        bm25=True,
        indexes={"schema_index": "keyword", "entry": "keyword", "marker": "keyword"},
    )


def marker_filter(index: str, build: str) -> VectorFilter:
    from kernel.vectors import VectorFilter

    return VectorFilter(
        kind=TABLE_KIND, match={"schema_index": index, "marker": COMPLETE_MARKER, "build": build}
    )


# --- records -------------------------------------------------------------------------------


_HEADER_DECODER = msgspec.json.Decoder(SchemaIndexHeader)
_MANIFEST_DECODER = msgspec.json.Decoder(_Manifest)
_ENCODER = msgspec.json.Encoder(order="deterministic")


def load_header(state_dir: Path) -> SchemaIndexHeader | None:
    """The header, or None when there is none; ``msgspec`` errors when it is unreadable."""
    path = state_dir / HEADER_FILE
    if not path.is_file():
        return None
    return _HEADER_DECODER.decode(path.read_bytes())


def _load_manifest(state_dir: Path) -> _Manifest | None:
    path = state_dir / MANIFEST_FILE
    try:
        return _MANIFEST_DECODER.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _save(state_dir: Path, manifest: _Manifest, header: SchemaIndexHeader) -> None:
    atomic_write(state_dir / MANIFEST_FILE, _ENCODER.encode(manifest) + b"\n", durable=False)
    atomic_write(state_dir / HEADER_FILE, _ENCODER.encode(header) + b"\n", durable=True)


# --- reindex -------------------------------------------------------------------------------


def _trusted(
    caps: SchemaIndexCapabilities, store: VectorStore, identity: tuple[str, str, int]
) -> tuple[SchemaIndexHeader | None, frozenset[str] | None]:
    """The previous header, and the entries in the store when the records can be trusted."""
    try:
        header = load_header(caps.state_dir)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None, None
    if header is None:
        return None, None
    same = (header.embedder, header.bm25, header.dense_size) == identity
    manifest = _load_manifest(caps.state_dir)
    if not same or header.layout != INDEX_LAYOUT or manifest is None:
        return header, None
    if manifest.build != header.build or build_fingerprint(manifest.entries) != header.build:
        return header, None
    if store.count(marker_filter(header.index, header.build)) != 1:
        return header, None
    return header, frozenset(manifest.entries)


def reindex(caps: SchemaIndexCapabilities, view: SchemaView) -> ReindexReport:
    """Bring the schema index to ``view``: embed only new or changed entries (raises
    ``VectorStoreError`` / ``EmbedderUnavailableError`` when a dependency fails, exit 6)."""
    from kernel.vectors import VectorFilter

    embedder, bm25 = caps.embedder(), caps.bm25()
    entries = schema_entries(view, embedder=embedder.identity, bm25=bm25.identity)
    wanted = {e.hash: e for e in entries}
    build = build_fingerprint(wanted)
    store = caps.vector_store()
    store.ensure_collection(collection_spec(embedder.dimension))
    header, previous = _trusted(caps, store, (embedder.identity, bm25.identity, embedder.dimension))
    index = header.index if header is not None else caps.nonce()[:16]
    rebuilt = previous is None
    present: frozenset[str] = previous if previous is not None else frozenset()
    gone = sorted(present - wanted.keys())
    new = [e for e in entries if e.hash not in present]
    if rebuilt:  # the records cannot be trusted: start again (the marker goes first)
        store.delete(VectorFilter(kind=TABLE_KIND, match={"schema_index": index}))
        store.delete(VectorFilter(kind=COLUMN_KIND, match={"schema_index": index}))
    elif gone or new:
        store.delete(
            VectorFilter(kind=TABLE_KIND, match={"schema_index": index, "marker": COMPLETE_MARKER})
        )
        for kind in (TABLE_KIND, COLUMN_KIND):  # a hash is of one kind; the other matches none
            _delete_entries(store, kind, index, gone)
    if rebuilt or gone or new:
        _write_entries(caps, store, index, new)
        _write_marker(store, index, build, embedder.dimension)
    tables = sum(1 for e in entries if e.kind == TABLE_KIND)
    _save(
        caps.state_dir,
        _Manifest(build=build, entries=tuple(sorted(wanted))),
        SchemaIndexHeader(
            layout=INDEX_LAYOUT,
            index=index,
            build=build,
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
        embedded=len(new),
        deleted=len(gone),
        kept=len(entries) - len(new),
        rebuilt=rebuilt,
        version=view.version,
        build=build,
    )


def _delete_entries(store: VectorStore, kind: str, index: str, hashes: Sequence[str]) -> None:
    from kernel.vectors import VectorFilter

    for start in range(0, len(hashes), _DELETE_BATCH):
        chunk = list(hashes[start : start + _DELETE_BATCH])
        store.delete(VectorFilter(kind=kind, match={"schema_index": index, "entry": chunk}))


def _payload(entry: SchemaEntry, index: str) -> dict[str, object]:
    payload: dict[str, object] = {"schema_index": index, "entry": entry.hash, "table": entry.table}
    if entry.kind == COLUMN_KIND:
        payload["column"] = entry.column
        payload["type"] = entry.type
    return payload


def _write_entries(
    caps: SchemaIndexCapabilities, store: VectorStore, index: str, entries: Sequence[SchemaEntry]
) -> None:
    from kernel.vectors import VectorPoint, point_id

    embedder, bm25 = caps.embedder(), caps.bm25()
    total = len(entries)
    caps.report("embedding", 0, total)
    points: list[VectorPoint] = []
    for start in range(0, total, _EMBED_BATCH):
        batch = entries[start : start + _EMBED_BATCH]
        dense = embedder.embed_passages([e.text for e in batch])
        for row, entry in enumerate(batch):
            points.append(
                VectorPoint(
                    id=point_id(f"schema:{index}:{entry.hash}", order=f"schema:{entry.hash}"),
                    kind=entry.kind,
                    dense=dense[row],
                    sparse=bm25.embed_document(entry.text),
                    payload=_payload(entry, index),
                )
            )
        caps.report("embedding", min(start + _EMBED_BATCH, total), total)
        if len(points) >= _UPSERT_BATCH:
            store.upsert(points)
            points = []
    if points:
        store.upsert(points)


def _write_marker(store: VectorStore, index: str, build: str, dense_size: int) -> None:
    from kernel.vectors import VectorPoint, point_id

    unit = [0.0] * dense_size
    unit[0] = 1.0
    store.upsert(
        [
            VectorPoint(
                id=point_id(f"schema:{index}:{COMPLETE_MARKER}"),
                kind=TABLE_KIND,
                dense=unit,
                payload={"schema_index": index, "marker": COMPLETE_MARKER, "build": build},
            )
        ]
    )
