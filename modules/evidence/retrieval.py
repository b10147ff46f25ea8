"""Hybrid Evidence retrieval over one generation, with fragments grouped into units.

One query embeds the Evidence query text twice — dense (the embedder, query role) and sparse
(BM25) — and asks the vector store for the dense and the BM25 rankings under the same filter
(``kind: evidence``, the generation, the mandatory purpose, optional Evidence kinds and
``--where`` metadata) in one engine call (kernel/vectors/store.py), fused by the workspace's
fusion (:mod:`modules.evidence.fusion`: plain RRF with an explicit ``k``, or weighted,
language-aware RRF). Fragments are then grouped per unit: a unit ranks at its best fragment, and
units with equal scores order by unit id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kernel.log import get_logger

if TYPE_CHECKING:
    from kernel.vectors import ScoredPoint, SparseVector, VectorFilter, VectorStore
    from kernel.vectors.embedder import Embedder
    from modules.evidence.capabilities import SparseEncoder
    from modules.evidence.fusion import FusionSettings
    from modules.evidence.vocabulary import VocabularyTable

__all__ = [
    "EXCERPT_CHARS",
    "Mode",
    "QueryVectors",
    "RankedUnit",
    "embed_query",
    "evidence_filter",
    "fetch_size",
    "rank_units",
]

Mode = Literal["hybrid", "dense", "bm25"]
_logger = get_logger(__name__)
EXCERPT_CHARS = 400


@dataclass(frozen=True)
class QueryVectors:
    dense: Any  # a 1-D float array
    sparse: SparseVector
    text: str = ""  # the Evidence query text (its language steers the weighted fusion)


@dataclass(frozen=True)
class RankedUnit:
    """One Evidence Result before projection: a unit at the rank of its best fragment."""

    unit_id: str
    kind: str
    title: str
    score: float
    excerpt: str
    source: str
    fragments: tuple[str, ...]
    dense_rank: int | None
    bm25_rank: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.unit_id,
            "kind": self.kind,
            "title": self.title,
            "score": round(self.score, 6),
            "excerpt": self.excerpt,
            "source": self.source,
            "fragments": list(self.fragments),
        }


def embed_query(
    embedder: Embedder,
    bm25: SparseEncoder,
    text: str,
    fusion: FusionSettings | None = None,
    corpus: Sequence[str] | None = None,
    vocabulary: VocabularyTable | None = None,
) -> QueryVectors:
    """Both query vectors of ``text``; BM25's of the translated text when ``fusion`` says so
    (:mod:`modules.evidence.translation`, towards the ``corpus`` languages, the generation's,
    and :mod:`modules.evidence.vocabulary`'s aligned words when the generation's ``vocabulary``
    is given), the dense one and ``text`` as written. One embedder call: the text and the
    words to align are embedded together."""
    from modules.evidence.translation import bm25_query_text

    words: list[str] = []
    if fusion is not None and fusion.align_vocabulary and vocabulary is not None:
        from modules.evidence.vocabulary import words_to_align

        words = words_to_align(text, corpus, vocabulary)
    vectors = embedder.embed_queries([text, *words])
    aligned: list[str] = []
    if words:  # so fusion and vocabulary are given
        from modules.evidence.vocabulary import aligned_terms

        assert fusion is not None and vocabulary is not None
        aligned = aligned_terms(words, vectors[1:], vocabulary, fusion.align_min_cosine)
    sparse_text = text
    if fusion is not None:
        sparse_text = bm25_query_text(text, fusion, corpus=corpus, aligned=aligned)
        # what the BM25 query gained (lexicon terms and corpus words, never the query's own words)
        _logger.debug(
            "BM25 query gained %r (of which aligned with the corpus vocabulary: %r)",
            sparse_text[len(text) :].split(),
            aligned,
        )
    return QueryVectors(dense=vectors[0], sparse=bm25.embed_query(sparse_text), text=text)


def evidence_filter(
    generation: str,
    purpose: str,
    kinds: Sequence[str] = (),
    where: Mapping[str, object] | None = None,
) -> VectorFilter:
    """``kind: evidence`` + generation + purpose (mandatory) + kinds and metadata (optional)."""
    from kernel.vectors import VectorFilter

    match: dict[str, Any] = {"generation": generation, "purpose": purpose}
    if kinds:
        match["unit_kind"] = list(kinds)
    for key, value in sorted((where or {}).items()):
        match[f"metadata.{key}"] = metadata_value(value)
    return VectorFilter(kind="evidence", match=match)


def metadata_value(value: object) -> str:
    """Metadata is stored and matched as strings (``true``/``false`` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fetch_size(limit: int) -> int:
    """Fragments to fetch to fill ``limit`` units (several fragments may share a unit)."""
    return min(max(limit * 3 + 10, 20), 300)


def rank_units(
    store: VectorStore,
    vectors: QueryVectors,
    where: VectorFilter,
    *,
    generation: str,
    limit: int,
    mode: Mode = "hybrid",
    rrf_k: int = 60,
    prefetch_limit: int = 50,
    fusion: FusionSettings | None = None,
    check_points: Callable[[list[Mapping[str, object]]], None] | None = None,
) -> list[RankedUnit]:
    """The top ``limit`` units for one query (raises ``VectorStoreError`` when unavailable).

    ``hybrid`` fuses with ``fusion`` (None: plain RRF with ``rrf_k``, the former behaviour).
    ``check_points`` is given every returned point's payload first (a search checks them
    against the generation's record: modules/evidence/approval.py) and raises to refuse them.
    """
    from kernel.vectors import VectorFilter

    fetch = fetch_size(limit)
    corpus = VectorFilter(kind="evidence", match={"generation": generation})
    hits: list[ScoredPoint]
    if mode == "hybrid" and fusion is not None and fusion.method == "weighted":
        hits = _weighted_hits(store, vectors, where, fusion, fetch, prefetch_limit, corpus)
    elif mode == "hybrid":
        if fusion is not None:
            rrf_k = fusion.rrf_k
        hits = store.query_hybrid(
            dense=vectors.dense,
            sparse=vectors.sparse,
            where=where,
            limit=fetch,
            prefetch_limit=max(prefetch_limit, fetch),
            rrf_k=rrf_k,
            idf_corpus=corpus,
        )
    elif mode == "dense":
        hits = store.query_dense(dense=vectors.dense, where=where, limit=fetch)
    else:
        hits = store.query_sparse(
            sparse=vectors.sparse, where=where, limit=fetch, idf_corpus=corpus
        )
    if check_points is not None:
        check_points([h.payload for h in hits])
    return group_units(hits, limit)


def _weighted_hits(
    store: VectorStore,
    vectors: QueryVectors,
    where: VectorFilter,
    fusion: FusionSettings,
    fetch: int,
    prefetch_limit: int,
    corpus: VectorFilter,
) -> list[ScoredPoint]:
    """Both rankings from one ``query_hybrid`` call, then the weighted fusion.

    Asking for every candidate (``2 * prefetch``, the most the union can hold) returns each one
    with its rank in each ranking, which is all weighted RRF needs: the rankings are rebuilt
    from those ranks, exactly as the store ordered them.
    """
    from modules.evidence.fusion import fuse_rankings

    prefetch = max(prefetch_limit, fetch)
    union = store.query_hybrid(
        dense=vectors.dense,
        sparse=vectors.sparse,
        where=where,
        limit=2 * prefetch,
        prefetch_limit=prefetch,
        idf_corpus=corpus,
    )
    dense = sorted((h for h in union if h.dense_rank is not None), key=lambda h: h.dense_rank or 0)
    bm25 = sorted((h for h in union if h.bm25_rank is not None), key=lambda h: h.bm25_rank or 0)
    return fuse_rankings(dense, bm25, fusion, query_text=vectors.text, limit=fetch)


def group_units(hits: Sequence[ScoredPoint], limit: int) -> list[RankedUnit]:
    """Fragments → units, in the order of each unit's best fragment; units whose best scores
    tie order by unit id (the store breaks ties by point id, a digest that changes with each
    generation: the order people see must not)."""
    order: list[str] = []
    best: dict[str, ScoredPoint] = {}
    fragments: dict[str, list[str]] = {}
    ranks: dict[str, tuple[int | None, int | None]] = {}
    for hit in hits:
        uid = str(hit.payload.get("unit_id", ""))
        if not uid:
            continue
        if uid not in best:
            order.append(uid)
            best[uid] = hit
            fragments[uid] = []
            ranks[uid] = (hit.dense_rank, hit.bm25_rank)
        fragments[uid].append(str(hit.payload.get("fragment_id", "")))
        d, b = ranks[uid]
        ranks[uid] = (_min(d, hit.dense_rank), _min(b, hit.bm25_rank))
    order.sort(key=lambda u: (-float(best[u].score), u))  # stable: a refinement of the order
    out = []
    for uid in order[:limit]:
        hit = best[uid]
        p = hit.payload
        out.append(
            RankedUnit(
                unit_id=uid,
                kind=str(p.get("unit_kind", "")),
                title=str(p.get("title", "")),
                score=float(hit.score),
                excerpt=str(p.get("text", ""))[:EXCERPT_CHARS],
                source=str(p.get("source", "")),
                fragments=tuple(fragments[uid]),
                dense_rank=ranks[uid][0],
                bm25_rank=ranks[uid][1],
            )
        )
    return out


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
