"""The ``VectorStore`` port and the query logic its Qdrant adapters share.

Two adapters implement it and pass one contract suite (``tests/contract/test_vector_store.py``):
:class:`kernel.vectors.edge.EdgeVectorStore` (Qdrant Edge, embedded, the default) and
:class:`kernel.vectors.qdrant_server.QdrantServerVectorStore` (qdrant-client: a server or cluster
by URL; its local mode serves the tests). Modules receive a ``VectorStore`` through their
capability object and never see the engine.

Queries (every one filtered by a :class:`VectorFilter`, whose ``kind`` is mandatory):

- :meth:`VectorStore.query_hybrid` - one engine call (a query batch) runs the dense and the BM25
  ranking under the same filter; the rankings are fused with RRF and an explicit ``k`` by
  :func:`kernel.vectors.fusion.rrf_fuse` (why not the engine's fusion: see that module);
- :meth:`VectorStore.query_dense` and :meth:`VectorStore.query_sparse` - one ranking alone, for
  diagnostics and comparisons.

All three return hits ordered by (score descending, point id ascending), the same ids in the
same order from both adapters. Failures are :class:`kernel.vectors.errors.VectorStoreError`
(exit 6): the caller reports an ``unavailable`` search outcome and never falls back to stale data.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Protocol

from kernel.vectors.errors import CollectionIncompatibleError
from kernel.vectors.fusion import RankedHit, complete_top, order_hits, rrf_fuse
from kernel.vectors.records import (
    CollectionInfo,
    CollectionSpec,
    ScoredPoint,
    SparseVector,
    VectorFilter,
    VectorPoint,
)

__all__ = [
    "DEFAULT_PREFETCH_LIMIT",
    "DEFAULT_RRF_K",
    "QdrantStoreBase",
    "VectorStore",
]

DEFAULT_RRF_K: Final = 60
"""RRF ``k`` when the caller gives none (workspace setting ``evidence.rrf_k``)."""
DEFAULT_PREFETCH_LIMIT: Final = 50
"""Candidates taken from each ranking before fusion."""

Using = Literal["dense", "bm25"]


class VectorStore(Protocol):
    """One workspace collection. Every method may raise ``VectorStoreError`` (exit 6)."""

    def ensure_collection(self, spec: CollectionSpec) -> CollectionInfo:
        """Create the collection, or check and extend an existing one; idempotent.

        An existing collection must have ``spec.dense_size`` (cosine), else
        ``CollectionIncompatibleError``. ``spec.bm25`` on a dense-only collection adds the sparse
        ``bm25`` vector (IDF) keeping every point and dense vector: the Additive BM25 upgrade.
        Missing payload indexes are created.
        """
        ...

    def describe(self) -> CollectionInfo:
        """The collection's layout and size; ``CollectionMissingError`` if there is none."""
        ...

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points (by id), durably, as one batch."""
        ...

    def delete(self, where: VectorFilter) -> None:
        """Delete every point matching ``where``."""
        ...

    def count(self, where: VectorFilter) -> int:
        """Exact number of points matching ``where``."""
        ...

    def query_hybrid(
        self,
        *,
        dense: Sequence[float],
        sparse: SparseVector,
        where: VectorFilter,
        limit: int = 10,
        prefetch_limit: int = DEFAULT_PREFETCH_LIMIT,
        rrf_k: int = DEFAULT_RRF_K,
        idf_corpus: VectorFilter | None = None,
    ) -> list[ScoredPoint]:
        """Dense + BM25 rankings (``prefetch_limit`` each, same filter) fused by RRF(``rrf_k``).

        ``idf_corpus`` is the population BM25's IDF is computed over: by default every live
        point that carries a ``bm25`` vector (only Evidence Fragments do); pass a filter (e.g.
        kind + generation) to narrow it. Adapters keep the default exact after deletions and
        replacements, which Qdrant's collection-wide statistics would otherwise still count.
        """
        ...

    def query_dense(
        self, *, dense: Sequence[float], where: VectorFilter, limit: int = 10
    ) -> list[ScoredPoint]:
        """The dense ranking alone (cosine similarity)."""
        ...

    def query_sparse(
        self,
        *,
        sparse: SparseVector,
        where: VectorFilter,
        limit: int = 10,
        idf_corpus: VectorFilter | None = None,
    ) -> list[ScoredPoint]:
        """The BM25 ranking alone (document TF weights x engine IDF over ``idf_corpus``)."""
        ...

    def close(self) -> None:
        """Flush and release the store (the embedded engine's lock, the client's connections)."""
        ...


class QdrantStoreBase(ABC):
    """Query orchestration shared by the adapters; they implement the engine primitives."""

    # --- engine primitives -------------------------------------------------------------------

    @abstractmethod
    def describe(self) -> CollectionInfo: ...

    @abstractmethod
    def _search(
        self,
        using: Using,
        vector: Sequence[float] | SparseVector,
        where: VectorFilter,
        limit: int,
        idf_corpus: VectorFilter | None,
    ) -> list[RankedHit]:
        """The engine's top ``limit`` for one vector, without payloads."""

    @abstractmethod
    def _search_pair(
        self,
        dense: Sequence[float],
        sparse: SparseVector,
        where: VectorFilter,
        limit: int,
        idf_corpus: VectorFilter | None,
    ) -> tuple[list[RankedHit], list[RankedHit]]:
        """Both rankings' top ``limit`` (a server: in one request, a query batch), no payloads."""

    @abstractmethod
    def _payloads(self, ids: Sequence[Any]) -> dict[Any, Mapping[str, Any]]:
        """Payloads of the given points (ids as the engine gave them), keyed like ``ids``."""

    # --- shared logic ------------------------------------------------------------------------

    def _layout(self) -> CollectionInfo:
        return self.describe()

    def _check_dense(self, dense: Sequence[float], info: CollectionInfo) -> None:
        if len(dense) != info.dense_size:
            raise CollectionIncompatibleError(
                f"vector store: the collection holds {info.dense_size}-dimensional vectors, "
                f"the query has {len(dense)} (embedder changed? rebuild the index)",
                details={"expected": info.dense_size, "got": len(dense)},
            )

    def _check_bm25(self, info: CollectionInfo) -> None:
        if not info.bm25:
            raise CollectionIncompatibleError(
                "vector store: the collection has no `bm25` sparse vector "
                "(run the additive BM25 upgrade: ensure_collection with bm25=True)"
            )
        if not info.bm25_idf:
            raise CollectionIncompatibleError(
                "vector store: the collection's `bm25` vector has no IDF modifier"
            )

    def _check_points(self, points: Sequence[VectorPoint], info: CollectionInfo) -> None:
        for point in points:
            try:
                uuid.UUID(point.id)
            except ValueError:
                raise ValueError(
                    f"vector store: point id {point.id!r} is not a UUID (use point_id(key))"
                ) from None
            if "kind" in point.payload:
                raise ValueError("vector store: `kind` is reserved; set VectorPoint.kind instead")
            self._check_dense(point.dense, info)
            if point.sparse is not None:
                self._check_bm25(info)

    def _attach(self, ranked: Sequence[RankedHit]) -> dict[Any, Mapping[str, Any]]:
        missing = [h.id for h in ranked if h.payload is None]
        payloads = self._payloads(missing) if missing else {}
        for hit in ranked:
            if hit.payload is not None:
                payloads[hit.id] = hit.payload
        return payloads

    def query_dense(
        self, *, dense: Sequence[float], where: VectorFilter, limit: int = 10
    ) -> list[ScoredPoint]:
        info = self._layout()
        vector = _floats(dense)
        self._check_dense(vector, info)
        top = complete_top(lambda n: self._search("dense", vector, where, n, None), limit)
        payloads = self._attach(top)
        return [
            ScoredPoint(
                id=str(h.id), score=h.score, payload=payloads.get(h.id, {}), dense_rank=i + 1
            )
            for i, h in enumerate(top)
        ]

    def query_sparse(
        self,
        *,
        sparse: SparseVector,
        where: VectorFilter,
        limit: int = 10,
        idf_corpus: VectorFilter | None = None,
    ) -> list[ScoredPoint]:
        info = self._layout()
        self._check_bm25(info)
        top = complete_top(lambda n: self._search("bm25", sparse, where, n, idf_corpus), limit)
        payloads = self._attach(top)
        return [
            ScoredPoint(
                id=str(h.id), score=h.score, payload=payloads.get(h.id, {}), bm25_rank=i + 1
            )
            for i, h in enumerate(top)
        ]

    def query_hybrid(
        self,
        *,
        dense: Sequence[float],
        sparse: SparseVector,
        where: VectorFilter,
        limit: int = 10,
        prefetch_limit: int = DEFAULT_PREFETCH_LIMIT,
        rrf_k: int = DEFAULT_RRF_K,
        idf_corpus: VectorFilter | None = None,
    ) -> list[ScoredPoint]:
        if prefetch_limit < 1 or limit < 0:
            raise ValueError("vector store: limit must be >= 0 and prefetch_limit >= 1")
        if rrf_k < 1:
            raise ValueError(f"vector store: rrf_k must be at least 1, got {rrf_k}")
        info = self._layout()
        vector = _floats(dense)
        self._check_dense(vector, info)
        self._check_bm25(info)
        if limit == 0:
            return []
        fetch = prefetch_limit + 8
        dense_hits, bm25_hits = self._search_pair(vector, sparse, where, fetch, idf_corpus)
        dense_top = _cut_or_refetch(
            dense_hits,
            prefetch_limit,
            fetch,
            lambda n: self._search("dense", vector, where, n, None),
        )
        bm25_top = _cut_or_refetch(
            bm25_hits,
            prefetch_limit,
            fetch,
            lambda n: self._search("bm25", sparse, where, n, idf_corpus),
        )
        fused = rrf_fuse(dense_top, bm25_top, k=rrf_k, limit=limit)
        payloads = self._payloads([f.id for f in fused]) if fused else {}
        return [
            ScoredPoint(
                id=str(f.id),
                score=f.score,
                payload=payloads.get(f.id, {}),
                dense_rank=f.dense_rank,
                bm25_rank=f.bm25_rank,
            )
            for f in fused
        ]


def _cut_or_refetch(
    hits: Sequence[RankedHit],
    limit: int,
    fetched: int,
    refetch: Callable[[int], Sequence[RankedHit]],
) -> list[RankedHit]:
    """The first ``limit`` of a ranking, refetching (rarely) when a tie group crosses the cut."""
    ordered = order_hits(hits)
    if len(ordered) < fetched or len(ordered) <= limit:
        return ordered[:limit]
    if ordered[-1].score < ordered[limit - 1].score:
        return ordered[:limit]
    return complete_top(refetch, limit)


def _floats(dense: Sequence[float]) -> list[float]:
    """A plain list of Python floats (accepts lists, tuples and 1-D numpy arrays)."""
    tolist = getattr(dense, "tolist", None)
    if tolist is not None:
        values = tolist()  # numpy: already Python floats
        if isinstance(values, list):
            return values
    return [float(v) for v in dense]
