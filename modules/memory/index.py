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
truth, rebuilt incrementally after each registry write and by ``tht memory reindex``, with the
mechanics every projection of the workspace collection shares (:mod:`kernel.vectors.projection`:
entries named by content hash, so 10,000 unchanged memories embed nothing and a forgotten one
disappears; a header and a manifest in ``state_dir``, ``memory_index.json`` and
``memory_index.manifest.json``; a completion marker written last). Memory's marker is bound to
the registry head it was built from, so a header edited to claim another head does not match it;
when only the head moved, the marker is rewritten and nothing is embedded. Every point carries
``memory_index: <index id>`` and every query filters on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from kernel.vectors import projection
from modules.memory.index_capabilities import MemoryIndexCapabilities

if TYPE_CHECKING:
    from kernel.vectors import CollectionSpec, VectorFilter
    from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

__all__ = [
    "COMPLETE_MARKER",
    "HEADER_FILE",
    "INDEX_KINDS",
    "INDEX_LAYOUT",
    "MANIFEST_FILE",
    "MEMORY_INDEX",
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
#: Memory's index as a projection of the workspace collection (:mod:`kernel.vectors.projection`)
MEMORY_INDEX: Final = projection.ProjectionSpec(
    noun="memory index",
    layout=INDEX_LAYOUT,
    index_key="memory_index",
    point_prefix="memory",
    marker=COMPLETE_MARKER,
    marker_kind=MEMORY_KIND,
    kinds=INDEX_KINDS,
    header_file=HEADER_FILE,
    manifest_file=MANIFEST_FILE,
    remedy="tht memory reindex",
)


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
    return projection.content_digest(
        INDEX_LAYOUT, embedder, bm25, entry.kind, entry.id, entry.text, entry.dense_text
    )


def build_fingerprint(hashes: Iterable[str]) -> str:
    """The build of a set of entries: equal sets, equal builds (order does not matter)."""
    return projection.build_fingerprint(MEMORY_INDEX, hashes)


def collection_spec(dense_size: int) -> CollectionSpec:
    """Dense + ``bm25``, with keyword indexes on the keys Memory's index filters by."""
    return projection.collection_spec(MEMORY_INDEX, dense_size)


def marker_filter(index: str, build: str, *, head: str | None = None) -> VectorFilter:
    """The completion marker of ``build`` (and, when given, of the registry ``head``)."""
    bound = {"registry_head": head} if head is not None else None
    return projection.marker_filter(MEMORY_INDEX, index, build, bound=bound)


def load_header(state_dir: Path) -> MemoryIndexHeader | None:
    """The header, or None when there is none; ``msgspec`` errors when it is unreadable."""
    return projection.load_header(MEMORY_INDEX, state_dir, MemoryIndexHeader)


def reindex(
    caps: MemoryIndexCapabilities, state: MemoryState, *, registry_head: str
) -> ReindexReport:
    """Bring Memory's index to ``state`` (the registry folded up to ``state.last_seq``, whose
    chain head is ``registry_head``): embed only new or changed entries, delete removed ones.
    Raises ``VectorStoreError`` / ``EmbedderUnavailableError`` when a dependency fails (exit 6)."""
    embedder, bm25 = caps.embedder(), caps.bm25()
    entries = memory_entries(state)
    points = [
        projection.ProjectionEntry(
            kind=e.kind,
            digest=entry_hash(e, embedder=embedder.identity, bm25=bm25.identity),
            text=e.text,
            dense_text=e.dense_text,
            payload={"item": e.id},
        )
        for e in entries
    ]
    store = caps.vector_store()
    store.ensure_collection(collection_spec(embedder.dimension))
    identity = (embedder.identity, bm25.identity, embedder.dimension)
    header, present = projection.trusted_entries(
        MEMORY_INDEX, caps.state_dir, store, identity, MemoryIndexHeader
    )
    index = header.index if header is not None else caps.nonce()[:16]
    bound = {"registry_head": registry_head}
    outcome = projection.sync_points(
        MEMORY_INDEX,
        store,
        embedder=embedder,
        bm25=bm25,
        index=index,
        entries=points,
        present=present,
        bound=bound,
        report=caps.report,
    )
    if not outcome.changed and header is not None and header.registry_head != registry_head:
        # the registry moved without changing what the index holds: the same marker point,
        # now naming the new head (a crash before the header keeps the entries trusted)
        projection.write_marker(
            MEMORY_INDEX, store, index, outcome.build, embedder.dimension, bound=bound
        )
    memories = sum(1 for e in entries if e.kind == MEMORY_KIND)
    projection.save_records(
        MEMORY_INDEX,
        caps.state_dir,
        (p.digest for p in points),
        MemoryIndexHeader(
            layout=INDEX_LAYOUT,
            index=index,
            build=outcome.build,
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
        embedded=outcome.embedded,
        deleted=outcome.deleted,
        kept=outcome.kept,
        rebuilt=outcome.rebuilt,
        head=registry_head,
        last_seq=state.last_seq,
        build=outcome.build,
    )
