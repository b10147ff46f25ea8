"""An incremental projection in the workspace collection: the mechanics the schema index
(Catalog) and Memory's index share, each keeping its own entries, header and layout.

A projection is derived, never the truth: its owner rebuilds it from its ledger at any time.
What this module keeps honest is that a reader never takes a partial, foreign or outdated
projection for a complete one, and that a rebuild embeds only what changed:

- an **entry** is one point, named by the content hash its owner computes (layout, embedder and
  BM25 identities, kind, identity and texts: see :func:`content_digest`); the point id is a UUID
  of the index id and that hash. Unchanged entries keep their points and are never embedded
  again; removed or changed ones are deleted; new ones are added (:func:`sync_points`);
- two small records in the owner's ``state_dir``: the **header** (the owner's type, at least
  :class:`ProjectionHeader`'s fields) and the **manifest** (the hashes in the store,
  :class:`ProjectionManifest`);
- a **marker** point (``marker: <spec.marker>`` and the build, plus what the owner binds it to,
  e.g. Memory's registry head) written after the last point and deleted before the first change,
  so a half-written projection is never complete. The header is written last
  (:func:`save_records`): a crash at any step leaves records that do not agree with the store,
  and the next sync rebuilds from scratch (:func:`trusted_entries`).

Every point carries ``<spec.index_key>: <index id>`` and every query filters on it: points of
another index (another workspace sharing a server collection, an index whose records were lost)
are never returned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

import msgspec

from kernel.atomic import atomic_write

if TYPE_CHECKING:
    from kernel.vectors.embedder import Embedder
    from kernel.vectors.records import CollectionSpec, SparseVector, VectorFilter
    from kernel.vectors.store import VectorStore

__all__ = [
    "ProjectionEncoder",
    "ProjectionEntry",
    "ProjectionHeader",
    "ProjectionManifest",
    "ProjectionProblem",
    "ProjectionSpec",
    "SyncOutcome",
    "build_fingerprint",
    "check_header",
    "check_marker",
    "collection_spec",
    "content_digest",
    "index_filter",
    "load_header",
    "marker_filter",
    "save_records",
    "sync_points",
    "trusted_entries",
    "write_marker",
]

_EMBED_BATCH: Final = 64
_UPSERT_BATCH: Final = 512
_DELETE_BATCH: Final = 500

H = TypeVar("H", bound=msgspec.Struct)


@dataclass(frozen=True)
class ProjectionSpec:
    """What names one kind of projection: its records, its points and its marker."""

    #: what a user reads in a message ("memory index", "schema index")
    noun: str
    #: the layout version in the header (a reader refuses another)
    layout: str
    #: the payload key every point carries, with the index id ("memory_index")
    index_key: str
    #: the point ids' namespace ("memory" → ``memory:<index>:<hash>``)
    point_prefix: str
    #: the marker's value of ``marker``
    marker: str
    #: the kind the marker point is filed under (one of ``kinds``)
    marker_kind: str
    #: every kind of point the projection holds
    kinds: tuple[str, ...]
    header_file: str
    manifest_file: str
    #: the command that rebuilds it, named in every problem's message
    remedy: str


class ProjectionHeader(Protocol):
    """The fields every owner's header has (each adds its own)."""

    @property
    def layout(self) -> str: ...
    @property
    def index(self) -> str: ...
    @property
    def build(self) -> str: ...
    @property
    def embedder(self) -> str: ...
    @property
    def bm25(self) -> str: ...
    @property
    def dense_size(self) -> int: ...


class ProjectionEncoder(Protocol):
    """The BM25 encoder a projection's points are written with."""

    @property
    def identity(self) -> str: ...

    def embed_document(self, text: str) -> SparseVector: ...


class ProjectionEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One point as its owner wants it: ``text`` is what BM25 reads, ``dense_text`` what the
    embedder embeds, ``payload`` what the point carries besides the index id and the hash."""

    kind: str
    digest: str
    text: str
    dense_text: str
    payload: Mapping[str, object] = msgspec.field(default_factory=dict)


class ProjectionManifest(msgspec.Struct, frozen=True, kw_only=True):
    build: str
    entries: tuple[str, ...]


class SyncOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one sync did: ``embedded`` texts sent to the embedder, points ``deleted``, entries
    ``kept`` unchanged; ``rebuilt`` when the previous records could not be trusted; ``changed``
    when a point (the marker included) was written or deleted."""

    build: str
    embedded: int
    deleted: int
    kept: int
    rebuilt: bool
    changed: bool


class ProjectionProblem(msgspec.Struct, frozen=True, kw_only=True):
    """Why a projection cannot serve a read: ``reason`` is ``missing`` | ``stale`` |
    ``incompatible`` | ``corrupt``; the owner raises it as its own unavailable error (exit 6)."""

    reason: str
    message: str


def content_digest(*parts: str) -> str:
    """SHA-256 of the parts, each followed by a NUL (so no two part lists collide)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", errors="surrogatepass") + b"\0")
    return h.hexdigest()


def build_fingerprint(spec: ProjectionSpec, hashes: Iterable[str]) -> str:
    """The build of a set of entries: equal sets, equal builds (order does not matter)."""
    return content_digest(spec.layout, *sorted(hashes))[:32]


def collection_spec(spec: ProjectionSpec, dense_size: int) -> CollectionSpec:
    """Dense + ``bm25``, with keyword indexes on the keys a projection filters by."""
    from kernel.vectors.records import CollectionSpec

    return CollectionSpec(
        dense_size=dense_size,
        bm25=True,
        indexes={spec.index_key: "keyword", "entry": "keyword", "marker": "keyword"},
    )


def marker_filter(
    spec: ProjectionSpec, index: str, build: str, *, bound: Mapping[str, str] | None = None
) -> VectorFilter:
    """The completion marker of ``build``, and, when given, of what it is ``bound`` to."""
    from kernel.vectors.records import VectorFilter

    match: dict[str, str] = {spec.index_key: index, "marker": spec.marker, "build": build}
    match.update(bound or {})
    return VectorFilter(kind=spec.marker_kind, match=match)


def index_filter(spec: ProjectionSpec, kind: str, index: str) -> VectorFilter:
    """The points of ``kind`` of one index (never its completion marker)."""
    from kernel.vectors.records import VectorFilter

    exclude = {"marker": spec.marker} if kind == spec.marker_kind else {}
    return VectorFilter(kind=kind, match={spec.index_key: index}, exclude=exclude)


# --- records -------------------------------------------------------------------------------


_ENCODER = msgspec.json.Encoder(order="deterministic")


@lru_cache(maxsize=16)
def _decoder(kind: type[msgspec.Struct]) -> msgspec.json.Decoder[msgspec.Struct]:
    return msgspec.json.Decoder(kind)


_MANIFEST_DECODER = msgspec.json.Decoder(ProjectionManifest)


def load_header(spec: ProjectionSpec, state_dir: Path, kind: type[H]) -> H | None:
    """The header, or None when there is none; ``OSError`` or ``msgspec`` errors when it is
    unreadable."""
    path = state_dir / spec.header_file
    if not path.is_file():
        return None
    header: H = _decoder(kind).decode(path.read_bytes())  # type: ignore[assignment]
    return header


def _load_manifest(spec: ProjectionSpec, state_dir: Path) -> ProjectionManifest | None:
    try:
        return _MANIFEST_DECODER.decode((state_dir / spec.manifest_file).read_bytes())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def save_records(
    spec: ProjectionSpec, state_dir: Path, hashes: Iterable[str], header: msgspec.Struct
) -> None:
    """The manifest, then the header (durably): the header is the records' last word."""
    entries = tuple(sorted(hashes))
    manifest = ProjectionManifest(build=build_fingerprint(spec, entries), entries=entries)
    atomic_write(state_dir / spec.manifest_file, _ENCODER.encode(manifest) + b"\n", durable=False)
    atomic_write(state_dir / spec.header_file, _ENCODER.encode(header) + b"\n", durable=True)


def trusted_entries(
    spec: ProjectionSpec,
    state_dir: Path,
    store: VectorStore,
    identity: tuple[str, str, int],
    kind: type[H],
) -> tuple[H | None, frozenset[str] | None]:
    """The previous header, and the entries in the store when the records can be trusted:
    the same ``(embedder, bm25, dense size)`` and layout, a manifest whose hashes make the
    header's build, and that build's marker in the store (exactly one)."""
    try:
        header = load_header(spec, state_dir, kind)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None, None
    if header is None:
        return None, None
    seen: ProjectionHeader = header  # type: ignore[assignment]
    same = (seen.embedder, seen.bm25, seen.dense_size) == identity
    manifest = _load_manifest(spec, state_dir)
    if not same or seen.layout != spec.layout or manifest is None:
        return header, None
    if manifest.build != seen.build or build_fingerprint(spec, manifest.entries) != seen.build:
        return header, None
    if store.count(marker_filter(spec, seen.index, seen.build)) != 1:
        return header, None
    return header, frozenset(manifest.entries)


# --- sync ----------------------------------------------------------------------------------


def sync_points(
    spec: ProjectionSpec,
    store: VectorStore,
    *,
    embedder: Embedder,
    bm25: ProjectionEncoder,
    index: str,
    entries: Sequence[ProjectionEntry],
    present: frozenset[str] | None,
    bound: Mapping[str, str] | None = None,
    report: Callable[[str, int, int], None] | None = None,
) -> SyncOutcome:
    """Bring the points of ``index`` to ``entries``. ``present``: the hashes the store holds
    (:func:`trusted_entries`), None when the records cannot be trusted (everything of the index
    is deleted, marker first, and written again). The marker is written last, bound to
    ``bound``. Raises what the store or the embedder raise (``VectorStoreError``,
    ``EmbedderUnavailableError``)."""
    from kernel.vectors.records import VectorFilter

    wanted = {e.digest: e for e in entries}
    build = build_fingerprint(spec, wanted)
    rebuilt = present is None
    held: frozenset[str] = present if present is not None else frozenset()
    gone = sorted(held - wanted.keys())
    new = [e for e in entries if e.digest not in held]
    if rebuilt:  # the records cannot be trusted: start again (the marker goes first)
        for kind in (spec.marker_kind, *(k for k in spec.kinds if k != spec.marker_kind)):
            store.delete(VectorFilter(kind=kind, match={spec.index_key: index}))
    elif gone or new:
        store.delete(
            VectorFilter(
                kind=spec.marker_kind, match={spec.index_key: index, "marker": spec.marker}
            )
        )
        for kind in spec.kinds:  # a hash is of one kind; the others match none
            for start in range(0, len(gone), _DELETE_BATCH):
                chunk = gone[start : start + _DELETE_BATCH]
                store.delete(VectorFilter(kind=kind, match={spec.index_key: index, "entry": chunk}))
    changed = rebuilt or bool(gone or new)
    if changed:
        _write_points(spec, store, embedder, bm25, index, new, report)
        write_marker(spec, store, index, build, embedder.dimension, bound=bound)
    return SyncOutcome(
        build=build,
        embedded=len(new),
        deleted=len(gone),
        kept=len(entries) - len(new),
        rebuilt=rebuilt,
        changed=changed,
    )


def _write_points(
    spec: ProjectionSpec,
    store: VectorStore,
    embedder: Embedder,
    bm25: ProjectionEncoder,
    index: str,
    entries: Sequence[ProjectionEntry],
    report: Callable[[str, int, int], None] | None,
) -> None:
    from kernel.vectors.records import VectorPoint, point_id

    total = len(entries)
    if report is not None:
        report("embedding", 0, total)
    points: list[VectorPoint] = []
    prefix = spec.point_prefix
    for start in range(0, total, _EMBED_BATCH):
        batch = entries[start : start + _EMBED_BATCH]
        dense = embedder.embed_passages([e.dense_text for e in batch])
        for row, entry in enumerate(batch):
            key, order = f"{prefix}:{index}:{entry.digest}", f"{prefix}:{entry.digest}"
            points.append(
                VectorPoint(
                    id=point_id(key, order=order),
                    kind=entry.kind,
                    dense=dense[row],
                    sparse=bm25.embed_document(entry.text),
                    payload={spec.index_key: index, "entry": entry.digest, **entry.payload},
                )
            )
        if report is not None:
            report("embedding", min(start + _EMBED_BATCH, total), total)
        if len(points) >= _UPSERT_BATCH:
            store.upsert(points)
            points = []
    if points:
        store.upsert(points)


def write_marker(
    spec: ProjectionSpec,
    store: VectorStore,
    index: str,
    build: str,
    dense_size: int,
    *,
    bound: Mapping[str, str] | None = None,
) -> None:
    """The completion marker of ``build`` (one point, its id fixed per index: writing it again
    replaces it), carrying what it is ``bound`` to."""
    from kernel.vectors.records import VectorPoint, point_id

    unit = [0.0] * dense_size
    unit[0] = 1.0
    payload: dict[str, object] = {spec.index_key: index, "marker": spec.marker, "build": build}
    payload.update(bound or {})
    store.upsert(
        [
            VectorPoint(
                id=point_id(f"{spec.point_prefix}:{index}:{spec.marker}"),
                kind=spec.marker_kind,
                dense=unit,
                payload=payload,
            )
        ]
    )


# --- reads ---------------------------------------------------------------------------------


def check_header(
    spec: ProjectionSpec, state_dir: Path, kind: type[H], *, embedder: Embedder, bm25_identity: str
) -> H | ProjectionProblem:
    """The header of a projection a reader may query with ``embedder`` and BM25
    ``bm25_identity``, or why not (``corrupt``, ``missing``, ``incompatible``). What the header
    was built *from* (a registry head, a catalog version) is the owner's to check."""
    remedy = f"run `{spec.remedy}`"
    try:
        header = load_header(spec, state_dir, kind)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as err:
        return ProjectionProblem(
            reason="corrupt", message=f"the {spec.noun} records are unreadable ({err}): {remedy}"
        )
    if header is None:
        return ProjectionProblem(
            reason="missing", message=f"the {spec.noun} was never built: {remedy}"
        )
    seen: ProjectionHeader = header  # type: ignore[assignment]
    if seen.layout != spec.layout:
        return ProjectionProblem(
            reason="incompatible",
            message=f"the {spec.noun} has layout {seen.layout}, this tht reads {spec.layout}: "
            f"{remedy}",
        )
    if (seen.embedder, seen.dense_size) != (embedder.identity, embedder.dimension):
        return ProjectionProblem(
            reason="incompatible",
            message=f"the {spec.noun} was built with embedder {seen.embedder}; the workspace "
            f"now uses {embedder.identity}: {remedy}",
        )
    if seen.bm25 != bm25_identity:
        return ProjectionProblem(
            reason="incompatible",
            message=f"the {spec.noun} was built with {seen.bm25}; the workspace now uses "
            f"{bm25_identity}: {remedy}",
        )
    return header


def check_marker(
    spec: ProjectionSpec,
    store: VectorStore,
    header: ProjectionHeader,
    *,
    bound: Mapping[str, str] | None = None,
) -> ProjectionProblem | None:
    """None when the store holds the complete projection ``header`` describes (its build's
    marker, bound to ``bound``), else why not (``missing``, ``stale``)."""
    from kernel.vectors.errors import CollectionMissingError

    remedy = f"run `{spec.remedy}`"
    try:
        complete = store.count(marker_filter(spec, header.index, header.build, bound=bound)) == 1
    except CollectionMissingError as err:
        return ProjectionProblem(
            reason="missing", message=f"the {spec.noun} is missing ({err.message}): {remedy}"
        )
    if not complete:
        return ProjectionProblem(
            reason="stale",
            message=f"the vector store does not hold the {spec.noun} its records describe "
            f"(partial, removed or foreign): {remedy}",
        )
    return None
