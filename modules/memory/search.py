"""Fail-closed search of Memory's index, and the relevance floor F2 recalls above.

Before any query the index is checked (:func:`check_index`): its header must exist and be
readable, have been built with the workspace's embedder and BM25 encoder from the registry as it
is now (the same ``(last_seq, head)``), and its completion marker — naming that build and that
head — must be in the store. Anything else is :class:`MemoryIndexUnavailable` (exit 6) with the
remedy: never an empty result, never a stale one.

:func:`search` ranks the points of one index (filtered on ``memory_index``), kind by kind:
``dense`` (cosine), ``bm25`` (BM25 over this index's points of that kind) or ``hybrid``, the two
rankings (``prefetch_limit`` each) fused by RRF exactly as ``VectorStore.query_hybrid`` fuses
them, keeping each hit's raw cosine and BM25 score beside its fused score.

:func:`relevant` is the **relevance floor**: what F2 may recall is what clears it, not the top k
of whatever the index holds, so a question about something no memory covers recalls nothing.
The signal is each hit's dense cosine (:func:`relevance`) against a floor per kind, chosen and
tuned by measurement on the dev split of the recall evaluation set
(``benchmarks/data/memory_recall``, see :data:`DEFAULT_FLOOR`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from kernel.vectors import DEFAULT_RRF_K, projection
from modules.memory.index import (
    INDEX_KINDS,
    MEMORY_INDEX,
    MEMORY_KIND,
    SOLVED_KIND,
    MemoryIndexHeader,
)
from modules.memory.index_capabilities import MemoryIndexCapabilities, MemoryIndexUnavailable

if TYPE_CHECKING:
    from kernel.vectors import ScoredPoint, SparseVector, VectorFilter, VectorStore
    from modules.memory.recall import RecallHit, RecallKind
    from modules.memory.terms import TermIndex

__all__ = [
    "DEFAULT_FLOOR",
    "MENTION_OFFSET",
    "NAMED_RELEVANCE",
    "NOT_RECALLED_BECAUSE",
    "RECALLED_BECAUSE",
    "REINDEX_COMMAND",
    "ScoredMemoryHit",
    "SearchMode",
    "check_index",
    "explain_relevance",
    "index_filter",
    "relevance",
    "relevant",
    "search",
]

REINDEX_COMMAND: Final = MEMORY_INDEX.remedy

DEFAULT_FLOOR: Final[Mapping[str, float]] = MappingProxyType(
    {MEMORY_KIND: 0.855, SOLVED_KIND: 0.879}
)
"""The dense cosine (multilingual-e5-small, query vs passage) a hit must reach to be recalled,
per kind: a memory's vector is of its subject alone, a solved question's of its question and
rewritten question, and the two spread differently (a later question is always somewhat like
an earlier question: unrelated solved questions reach 0.84, unrelated subjects 0.85).

Chosen on the dev split of the recall evaluation set only (``EVAL_TUNE=1 python -m
benchmarks.eval_memory_recall``): for each kind, the middle of the floors with the highest
dev hit@3 whose dev false recall stays ≤ 0.05. e5's cosines are compressed, so the floors sit
high, and they are a property of the embedder: another embedder needs its own. They favour
recalling nothing over recalling noise: on the locked split, no near-miss recalls anything, and
fused hit@3 is 0.27 (the ranking alone, without a floor, 0.80); ``dev_tradeoff`` in
``golden/memory_recall/report.json`` shows what lower floors would give on dev (memories: dev
false recall 0.1 at 0.827, hit@3 0.52).
"""

SearchMode = Literal["hybrid", "dense", "bm25"]


class ScoredMemoryHit(msgspec.Struct, frozen=True, kw_only=True):
    """A memory or solved question in a ranking: ``score`` is the ranking's own (RRF when
    hybrid), ``dense`` the cosine and ``lexical`` the BM25 score, ``None`` when the hit is not
    in that ranking (or it was not queried)."""

    id: str
    kind: str
    score: float
    dense: float | None
    lexical: float | None
    #: a memory's :mod:`~modules.memory.mention` signal (None when it was not computed)
    mention: float | None = None
    #: whether the question names the memory's subject (:mod:`~modules.memory.terms`)
    named: bool = False
    #: whether the question writes an acronym and the item a sibling of it, none shared
    #: (:func:`~modules.memory.acronyms.contradicts`): no likeness recalls it
    contradicted: bool = False


def _unavailable(reason: str, message: str) -> MemoryIndexUnavailable:
    return MemoryIndexUnavailable(reason, message, remedy=[REINDEX_COMMAND])


def check_index(caps: MemoryIndexCapabilities, *, last_seq: int, head: str) -> MemoryIndexHeader:
    """The header of an index built from the registry at ``(last_seq, head)``, complete in the
    store, else :class:`MemoryIndexUnavailable` (``missing`` | ``stale`` | ``incompatible`` |
    ``corrupt``)."""
    checked = projection.check_header(
        MEMORY_INDEX,
        caps.state_dir,
        MemoryIndexHeader,
        embedder=caps.embedder(),
        bm25_identity=caps.bm25().identity,
    )
    if isinstance(checked, projection.ProjectionProblem):
        raise _unavailable(checked.reason, checked.message)
    header = checked
    if (header.registry_seq, header.registry_head) != (last_seq, head):
        now = (
            f"the registry is now at seq {last_seq}"
            if header.registry_seq != last_seq
            else f"the registry's head is now {head[:12]}…, not {header.registry_head[:12]}…"
        )
        raise _unavailable(
            "stale",
            f"the memory index was built from the registry at seq {header.registry_seq}, "
            f"{now}: run `{REINDEX_COMMAND}`",
        )
    problem = projection.check_marker(
        MEMORY_INDEX, caps.vector_store(), header, bound={"registry_head": head}
    )
    if problem is not None:
        raise _unavailable(problem.reason, problem.message)
    return header


def index_filter(kind: str, index: str) -> VectorFilter:
    """The points of ``kind`` of one index (never its completion marker)."""
    return projection.index_filter(MEMORY_INDEX, kind, index)


def search(
    caps: MemoryIndexCapabilities,
    header: MemoryIndexHeader,
    text: str,
    *,
    limit: int,
    mode: SearchMode = "hybrid",
    kinds: Sequence[str] = INDEX_KINDS,
    subjects: Mapping[str, str] | None = None,
    terms: TermIndex | None = None,
) -> list[ScoredMemoryHit]:
    """The best ``limit`` memories and solved questions for ``text`` (of ``kinds``), best first
    (score descending, then kind and id). ``subjects`` (memory id → subject, from the registry):
    the memory hits also get their mention signal (dense modes only). ``terms`` (the live
    memories' subjects, :class:`~modules.memory.terms.TermIndex`): every memory whose subject
    ``text`` names is marked ``named`` — added after the ranking when the ranking missed it
    (hybrid mode only, the mode F2 uses). Raises
    ``VectorStoreError`` / ``EmbedderUnavailableError`` when a dependency fails (exit 6)."""
    if limit < 1:
        return []
    unknown = [k for k in kinds if k not in INDEX_KINDS]
    if unknown:
        raise ValueError(f"memory search: unknown kind(s) {', '.join(unknown)}")
    dense = caps.embedder().embed_queries([text])[0] if mode != "bm25" else None
    sparse = caps.bm25().embed_query(text) if mode != "dense" else None
    store = caps.vector_store()
    hits: list[ScoredMemoryHit] = []
    for kind in dict.fromkeys(kinds):
        hits.extend(
            _rank(caps, store, index_filter(kind, header.index), kind, dense, sparse, limit)
        )
    if subjects is not None and mode != "bm25":
        hits = _with_mentions(caps, text, hits, subjects)
    hits.sort(key=lambda h: (-h.score, h.kind, h.id))
    hits = hits[:limit]
    if terms is not None and mode == "hybrid":
        if MEMORY_KIND in kinds:
            hits = _with_names(hits, terms.named_in(text))
        against = terms.contradicted_in(text)
        hits = [
            msgspec.structs.replace(h, contradicted=True) if h.id in against else h for h in hits
        ]
    return hits


def _with_names(hits: list[ScoredMemoryHit], named: set[str]) -> list[ScoredMemoryHit]:
    if not named:
        return hits
    out = [
        msgspec.structs.replace(h, named=True) if h.kind == MEMORY_KIND and h.id in named else h
        for h in hits
    ]
    ranked = {h.id for h in hits if h.kind == MEMORY_KIND}
    out.extend(
        ScoredMemoryHit(id=item, kind=MEMORY_KIND, score=0.0, dense=None, lexical=None, named=True)
        for item in sorted(named - ranked)
    )
    return out


def _rank(
    caps: MemoryIndexCapabilities,
    store: VectorStore,
    where: VectorFilter,
    kind: str,
    dense: Sequence[float] | None,
    sparse: SparseVector | None,
    limit: int,
) -> list[ScoredMemoryHit]:
    fetch = limit if dense is None or sparse is None else max(caps.prefetch_limit, limit)
    cosines = (
        _scores(store.query_dense(dense=dense, where=where, limit=fetch))
        if dense is not None
        else {}
    )
    lexical = (
        _scores(store.query_sparse(sparse=sparse, where=where, limit=fetch, idf_corpus=where))
        if sparse is not None and sparse.indices
        else {}
    )
    if dense is None or sparse is None:
        only = cosines if sparse is None else lexical
        return [
            ScoredMemoryHit(
                id=item, kind=kind, score=score, dense=cosines.get(item), lexical=lexical.get(item)
            )
            for item, score in only.items()
        ]
    return [
        ScoredMemoryHit(
            id=item, kind=kind, score=score, dense=cosines.get(item), lexical=lexical.get(item)
        )
        for item, score in _rrf(list(cosines), list(lexical)).items()
    ][:limit]


def _scores(points: Sequence[ScoredPoint]) -> dict[str, float]:
    """``item id -> score`` in the store's order (score descending, point id ascending)."""
    out: dict[str, float] = {}
    for point in points:
        item = point.payload.get("item")
        if isinstance(item, str):
            out.setdefault(item, float(point.score))
    return out


def _rrf(dense: Sequence[str], bm25: Sequence[str]) -> dict[str, float]:
    """RRF of two rankings as ``kernel.vectors.fusion.rrf_fuse`` computes it (position ``p``
    contributes ``1 / (k + p)``, dense first), ordered by fused score then id."""
    scores: dict[str, float] = {}
    for ranking in (dense, bm25):
        for position, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (DEFAULT_RRF_K + position)
    return dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))


def _with_mentions(
    caps: MemoryIndexCapabilities,
    text: str,
    hits: list[ScoredMemoryHit],
    subjects: Mapping[str, str],
) -> list[ScoredMemoryHit]:
    from modules.memory.mention import mention_scores

    wanted = {h.id: subjects[h.id] for h in hits if h.kind == MEMORY_KIND and h.id in subjects}
    scores = mention_scores(caps.embedder(), text, wanted)
    return [msgspec.structs.replace(h, mention=scores[h.id]) if h.id in scores else h for h in hits]


#: how far below its own scale the mention signal is read against the floor: a memory is
#: relevant when its dense cosine reaches the floor, or when the question names its subject —
#: an n-gram of the question within cosine ``floor + MENTION_OFFSET`` of it (0.9725 for a
#: memory: practically the subject itself, in another inflection or spelling). Chosen on the
#: dev split only: hit@3 0.226 → 0.419 at false recall 0.0, flat for offsets 0.11–0.125;
#: this is the middle of that plateau.
MENTION_OFFSET: Final = 0.1175


#: the relevance of a memory whose subject the question names (:mod:`~modules.memory.terms`):
#: above every floor and every cosine, so a named memory is always recalled and ranks first
NAMED_RELEVANCE: Final = 1.0


def relevance(hit: ScoredMemoryHit) -> float | None:
    """The signal the floor applies to: :data:`NAMED_RELEVANCE` when the question names the
    memory's subject; else the hit's dense cosine, or its mention signal less
    :data:`MENTION_OFFSET` when that is higher. None when the hit is in neither (it came from
    BM25 alone), or when the question writes a sibling of its acronym (``contradicted``): below
    every candidate that was, never relevant.

    Measured on the dev split, adding the BM25 score (weights 0.005 to 0.04 of a cosine point)
    moved dev hit@3 at the same false recall by at most one question: the simpler signal won.
    """
    if hit.named:
        return NAMED_RELEVANCE
    if hit.contradicted:
        return None
    if hit.mention is None:
        return hit.dense
    named = hit.mention - MENTION_OFFSET
    return named if hit.dense is None else max(hit.dense, named)


#: why a hit clears the floor (:func:`explain_relevance`), strongest first
RECALLED_BECAUSE: Final = ("named", "cosine", "mention")
#: why it does not: its signal is under its kind's floor; it came from BM25 alone (no signal
#: the floor reads); its kind has no floor; the question writes a sibling of its acronym
NOT_RECALLED_BECAUSE: Final = ("below-floor", "bm25-only", "no-floor", "acronym-conflict")


def explain_relevance(
    hit: ScoredMemoryHit, floor: float | Mapping[str, float] = DEFAULT_FLOOR
) -> tuple[float | None, float | None, str]:
    """``(relevance, floor, why)`` of one hit, by the rule :func:`relevant` applies (pure):
    ``why`` is one of :data:`RECALLED_BECAUSE` exactly when the hit clears its kind's floor —
    ``named`` (the question names the subject, or its acronym), ``cosine`` (the dense cosine
    reaches the floor), ``mention`` (an n-gram of the question is the subject, read
    :data:`MENTION_OFFSET` below its scale) — else one of :data:`NOT_RECALLED_BECAUSE`."""
    signal, bar = relevance(hit), _floor_of(floor, hit.kind)
    if bar is None:
        return signal, None, "no-floor"
    if hit.contradicted and not hit.named:
        return None, bar, "acronym-conflict"
    if signal is None:
        return None, bar, "bm25-only"
    if signal < bar:
        return signal, bar, "below-floor"
    if hit.named:
        return signal, bar, "named"
    if hit.dense is not None and hit.dense >= bar:
        return signal, bar, "cosine"
    return signal, bar, "mention"


def _floor_of(floor: float | Mapping[str, float], kind: str) -> float | None:
    if isinstance(floor, Mapping):
        value = floor.get(kind)
        return None if value is None else float(value)
    return float(floor)


def relevant(
    hits: Sequence[ScoredMemoryHit], *, floor: float | Mapping[str, float] = DEFAULT_FLOOR
) -> list[RecallHit]:
    """The hits whose :func:`relevance` reaches ``floor`` (one number, or one per kind; a kind
    without a floor is never relevant), in their order, as recall hits whose ``score`` is that
    relevance (comparable with the floor, unlike a fused RRF score): nothing when nothing clears
    it (a floor, not top-k of noise)."""
    from modules.memory.recall import RecallHit

    out: list[RecallHit] = []
    for hit in hits:
        signal, _, why = explain_relevance(hit, floor)
        if why in RECALLED_BECAUSE and signal is not None:
            kind: RecallKind = "memory" if hit.kind == MEMORY_KIND else "solved_question"
            out.append(RecallHit(id=hit.id, kind=kind, score=signal, why=why))
    return out
