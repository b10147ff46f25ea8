"""Memory's projection: live memories and solved questions as points of the workspace collection.

Kinds ``memory`` (one point per **live** memory) and ``solved_question`` (one per solved
question). Each point has a sparse ``bm25`` vector of its index text (a memory's subject,
meaning, target and rationale; a solved question's question and rewritten question) and a dense
vector (the workspace embedder, passage role) of its *dense text*: a solved question's index
text, but a memory's **subject alone**. Measured on the dev split of the recall evaluation set
(``benchmarks/data/memory_recall``), the subject's vector put the right memory in the fused top
3 for 10 of 17 Italian↔English questions, the whole text's for 5: the meaning, target and
rationale dilute the concept the later question names in the other language, while BM25 still
reads them all. Superseded and forgotten memories are not in the index: the registry keeps their
history, the index only what F2 may recall. It is a projection of the Memory registry, never the
truth, rebuilt incrementally after each registry write and by ``tht memory reindex``:

- an **entry**'s content hash covers the layout, the embedder and BM25 identities, the kind, the
  id, the index text and the dense text; the point id is a UUID of the index id and that hash.
  Unchanged entries keep their points and are never embedded again (10,000 unchanged memories
  embed nothing); removed or changed ones are deleted (a forgotten memory disappears); new ones
  are added;
- two small records in ``state_dir``: the **header** (``memory_index.json``: index id, build
  fingerprint, the registry ``(last_seq, head)`` it was built from, embedder, BM25, dense size,
  counts) and the **manifest** (``memory_index.manifest.json``: the hashes in the store);
- a **marker** point (kind ``memory``, ``marker: memory_index_complete``, the build and the
  registry head) written after the last point and deleted before the first change, so a
  half-written index is never taken for a complete one, and a header edited to claim another
  registry head does not match it. The header is written last: a crash at any step leaves
  records that do not agree with the store, and the next reindex rebuilds from scratch (or,
  when only the head moved, rewrites the marker).

Every point carries ``memory_index: <index id>`` and every query filters on it: points of another
index (another workspace sharing a server collection, an index whose records were lost) are
never returned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from kernel.atomic import atomic_write
from modules.memory.index_capabilities import MemoryIndexCapabilities

if TYPE_CHECKING:
    from kernel.vectors import CollectionSpec, VectorFilter, VectorStore
    from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

__all__ = [
    "COMPLETE_MARKER",
    "HEADER_FILE",
    "INDEX_KINDS",
    "INDEX_LAYOUT",
    "MANIFEST_FILE",
    "MEMORY_KIND",
    "SOLVED_KIND",
    "MemoryEntry",
    "MemoryIndexHeader",
    "ReindexReport",
    "build_fingerprint",
    "collection_spec",
    "entry_hash",
    "load_header",
    "marker_filter",
    "memory_entries",
    "memory_text",
    "reindex",
    "solved_text",
]

INDEX_LAYOUT: Final = "memory-index/v1"
MEMORY_KIND: Final = "memory"
SOLVED_KIND: Final = "solved_question"
INDEX_KINDS: Final = (MEMORY_KIND, SOLVED_KIND)
COMPLETE_MARKER: Final = "memory_index_complete"
HEADER_FILE: Final = "memory_index.json"
MANIFEST_FILE: Final = "memory_index.manifest.json"
_EMBED_BATCH: Final = 64
_UPSERT_BATCH: Final = 512
_DELETE_BATCH: Final = 500


class MemoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One live memory (``kind`` ``memory``, ``id`` its memory id) or solved question (``kind``
    ``solved_question``, ``id`` its solved id) as the index holds it: ``text`` is what BM25
    reads, ``dense_text`` what the embedder embeds."""

    kind: str
    id: str
    text: str
    dense_text: str


class MemoryIndexHeader(msgspec.Struct, frozen=True, kw_only=True):
    layout: str
    index: str  # the index id every point carries (``memory_index``)
    build: str  # fingerprint of the entries in the store (see build_fingerprint)
    registry_seq: int  # the registry (last_seq, head) the index was last built from
    registry_head: str
    embedder: str
    bm25: str
    dense_size: int
    memories: int
    solved: int


class _Manifest(msgspec.Struct, frozen=True, kw_only=True):
    build: str
    entries: tuple[str, ...]


class ReindexReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one reindex did: ``embedded`` texts sent to the embedder, points ``deleted``,
    entries ``kept`` unchanged; ``rebuilt`` when the previous records could not be trusted;
    ``head`` (and ``last_seq``) the registry it was built from."""

    memories: int
    solved: int
    embedded: int
    deleted: int
    kept: int
    rebuilt: bool
    head: str
    last_seq: int = 0
    build: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "memories": self.memories,
            "solved": self.solved,
            "embedded": self.embedded,
            "deleted": self.deleted,
            "kept": self.kept,
            "rebuilt": self.rebuilt,
            "head": self.head,
            "last_seq": self.last_seq,
        }


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", errors="surrogatepass") + b"\0")
    return h.hexdigest()


def memory_text(record: MemoryRecord) -> str:
    """The index text of a memory: subject, meaning, target and rationale, one per line."""
    parts = (record.subject, record.meaning, record.target or "", record.rationale)
    return "\n".join(p.strip() for p in parts if p and p.strip())


def solved_text(solved: SolvedQuestion) -> str:
    """The index text of a solved question: the question, then its rewritten form."""
    parts = (solved.question, solved.rewritten)
    return "\n".join(p.strip() for p in parts if p and p.strip())


def memory_entries(state: MemoryState) -> list[MemoryEntry]:
    """Every live memory, then every solved question, each in id order (pure)."""
    entries = [
        MemoryEntry(
            kind=MEMORY_KIND,
            id=m.memory_id,
            text=memory_text(m),
            dense_text=m.subject.strip() or memory_text(m),
        )
        for m in state.live()
    ]
    entries.sort(key=lambda e: e.id)
    for s in sorted(state.solved.values(), key=lambda s: s.solved_id):
        text = solved_text(s)
        entries.append(MemoryEntry(kind=SOLVED_KIND, id=s.solved_id, text=text, dense_text=text))
    return entries


def entry_hash(entry: MemoryEntry, *, embedder: str, bm25: str) -> str:
    """The content hash of an entry: layout, embedder, BM25, kind, id and both texts."""
    return _digest(INDEX_LAYOUT, embedder, bm25, entry.kind, entry.id, entry.text, entry.dense_text)


def build_fingerprint(hashes: Iterable[str]) -> str:
    """The build of a set of entries: equal sets, equal builds (order does not matter)."""
    return _digest(INDEX_LAYOUT, *sorted(hashes))[:32]


def collection_spec(dense_size: int) -> CollectionSpec:
    """Dense + ``bm25``, with keyword indexes on the keys Memory's index filters by."""
    from kernel.vectors import CollectionSpec

    return CollectionSpec(
        dense_size=dense_size,
        bm25=True,
        indexes={"memory_index": "keyword", "entry": "keyword", "marker": "keyword"},
    )


def marker_filter(index: str, build: str, *, head: str | None = None) -> VectorFilter:
    """The completion marker of ``build`` (and, when given, of the registry ``head``)."""
    from kernel.vectors import VectorFilter

    match: dict[str, str] = {"memory_index": index, "marker": COMPLETE_MARKER, "build": build}
    if head is not None:
        match["registry_head"] = head
    return VectorFilter(kind=MEMORY_KIND, match=match)


# --- records -------------------------------------------------------------------------------


_HEADER_DECODER = msgspec.json.Decoder(MemoryIndexHeader)
_MANIFEST_DECODER = msgspec.json.Decoder(_Manifest)
_ENCODER = msgspec.json.Encoder(order="deterministic")


def load_header(state_dir: Path) -> MemoryIndexHeader | None:
    """The header, or None when there is none; ``msgspec`` errors when it is unreadable."""
    path = state_dir / HEADER_FILE
    if not path.is_file():
        return None
    return _HEADER_DECODER.decode(path.read_bytes())


def _load_manifest(state_dir: Path) -> _Manifest | None:
    try:
        return _MANIFEST_DECODER.decode((state_dir / MANIFEST_FILE).read_bytes())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _save(state_dir: Path, manifest: _Manifest, header: MemoryIndexHeader) -> None:
    atomic_write(state_dir / MANIFEST_FILE, _ENCODER.encode(manifest) + b"\n", durable=False)
    atomic_write(state_dir / HEADER_FILE, _ENCODER.encode(header) + b"\n", durable=True)


# --- reindex -------------------------------------------------------------------------------


def _trusted(
    caps: MemoryIndexCapabilities, store: VectorStore, identity: tuple[str, str, int]
) -> tuple[MemoryIndexHeader | None, frozenset[str] | None]:
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


def reindex(
    caps: MemoryIndexCapabilities, state: MemoryState, *, registry_head: str
) -> ReindexReport:
    """Bring Memory's index to ``state`` (the registry folded up to ``state.last_seq``, whose
    chain head is ``registry_head``): embed only new or changed entries, delete removed ones.
    Raises ``VectorStoreError`` / ``EmbedderUnavailableError`` when a dependency fails (exit 6)."""
    from kernel.vectors import VectorFilter

    embedder, bm25 = caps.embedder(), caps.bm25()
    entries = memory_entries(state)
    hashed = [(entry_hash(e, embedder=embedder.identity, bm25=bm25.identity), e) for e in entries]
    wanted = dict(hashed)
    build = build_fingerprint(wanted)
    store = caps.vector_store()
    store.ensure_collection(collection_spec(embedder.dimension))
    header, previous = _trusted(caps, store, (embedder.identity, bm25.identity, embedder.dimension))
    index = header.index if header is not None else caps.nonce()[:16]
    rebuilt = previous is None
    present: frozenset[str] = previous if previous is not None else frozenset()
    gone = sorted(present - wanted.keys())
    new = [(h, e) for h, e in hashed if h not in present]
    if rebuilt:  # the records cannot be trusted: start again (the marker goes first)
        for kind in INDEX_KINDS:
            store.delete(VectorFilter(kind=kind, match={"memory_index": index}))
    elif gone or new:
        store.delete(
            VectorFilter(kind=MEMORY_KIND, match={"memory_index": index, "marker": COMPLETE_MARKER})
        )
        for kind in INDEX_KINDS:  # a hash is of one kind; the other matches none
            _delete_entries(store, kind, index, gone)
    if rebuilt or gone or new:
        _write_entries(caps, store, index, new)
        _write_marker(store, index, build, registry_head, embedder.dimension)
    elif header is not None and header.registry_head != registry_head:
        # the registry moved without changing what the index holds: the same marker point,
        # now naming the new head (a crash before the header keeps the entries trusted)
        _write_marker(store, index, build, registry_head, embedder.dimension)
    memories = sum(1 for e in entries if e.kind == MEMORY_KIND)
    _save(
        caps.state_dir,
        _Manifest(build=build, entries=tuple(sorted(wanted))),
        MemoryIndexHeader(
            layout=INDEX_LAYOUT,
            index=index,
            build=build,
            registry_seq=state.last_seq,
            registry_head=registry_head,
            embedder=embedder.identity,
            bm25=bm25.identity,
            dense_size=embedder.dimension,
            memories=memories,
            solved=len(entries) - memories,
        ),
    )
    return ReindexReport(
        memories=memories,
        solved=len(entries) - memories,
        embedded=len(new),
        deleted=len(gone),
        kept=len(entries) - len(new),
        rebuilt=rebuilt,
        head=registry_head,
        last_seq=state.last_seq,
        build=build,
    )


def _delete_entries(store: VectorStore, kind: str, index: str, hashes: Sequence[str]) -> None:
    from kernel.vectors import VectorFilter

    for start in range(0, len(hashes), _DELETE_BATCH):
        chunk = list(hashes[start : start + _DELETE_BATCH])
        store.delete(VectorFilter(kind=kind, match={"memory_index": index, "entry": chunk}))


def _write_entries(
    caps: MemoryIndexCapabilities,
    store: VectorStore,
    index: str,
    entries: Sequence[tuple[str, MemoryEntry]],
) -> None:
    from kernel.vectors import VectorPoint, point_id

    embedder, bm25 = caps.embedder(), caps.bm25()
    total = len(entries)
    caps.report("embedding", 0, total)
    points: list[VectorPoint] = []
    for start in range(0, total, _EMBED_BATCH):
        batch = entries[start : start + _EMBED_BATCH]
        dense = embedder.embed_passages([e.dense_text for _, e in batch])
        for row, (digest, entry) in enumerate(batch):
            points.append(
                VectorPoint(
                    id=point_id(f"memory:{index}:{digest}", order=f"memory:{digest}"),
                    kind=entry.kind,
                    dense=dense[row],
                    sparse=bm25.embed_document(entry.text),
                    payload={"memory_index": index, "entry": digest, "item": entry.id},
                )
            )
        caps.report("embedding", min(start + _EMBED_BATCH, total), total)
        if len(points) >= _UPSERT_BATCH:
            store.upsert(points)
            points = []
    if points:
        store.upsert(points)


def _write_marker(store: VectorStore, index: str, build: str, head: str, dense_size: int) -> None:
    from kernel.vectors import VectorPoint, point_id

    unit = [0.0] * dense_size
    unit[0] = 1.0
    store.upsert(
        [
            VectorPoint(
                id=point_id(f"memory:{index}:{COMPLETE_MARKER}"),
                kind=MEMORY_KIND,
                dense=unit,
                payload={
                    "memory_index": index,
                    "marker": COMPLETE_MARKER,
                    "build": build,
                    "registry_head": head,
                },
            )
        ]
    )
