"""Fail-closed search of the schema index: hybrid rankings of tables and columns.

Before any query the index is checked (:func:`check_index`): its header must exist and be
readable, have been built with the workspace's embedder and BM25 encoder, hold its completion
marker in the store, and match the SchemaView — the same version, or, when the catalog moved on
without touching what the index holds (a relationship added, say), the same entries. Anything
else is :class:`SchemaIndexUnavailable` (exit 6) with the remedy: never an empty result, never a
stale one.

The rankings (:func:`search_index`) are the store's dense and BM25 queries under the same filter
(the kind and this index's id; BM25's IDF over the same population), once for tables and once
for columns. A hit keeps its competition rank in each ranking (ties share a rank, so the order is
the same in every workspace), which linking scores; hits are ordered by RRF of those ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kernel.schema_view import SchemaView
from kernel.vectors import DEFAULT_RRF_K, projection
from modules.catalog.schema_capabilities import SchemaIndexCapabilities, SchemaIndexUnavailable
from modules.catalog.schema_index import (
    COLUMN_KIND,
    SCHEMA_INDEX,
    TABLE_KIND,
    SchemaIndexHeader,
    build_fingerprint,
    schema_entries,
)

if TYPE_CHECKING:
    from kernel.vectors import ScoredPoint, VectorFilter

__all__ = [
    "REINDEX_COMMAND",
    "IndexHit",
    "QueryVectors",
    "check_index",
    "embed_query",
    "index_filter",
    "search_index",
]

REINDEX_COMMAND: Final = SCHEMA_INDEX.remedy


@dataclass(frozen=True)
class QueryVectors:
    dense: Any  # a 1-D float array (the embedder's query role)
    sparse: Any  # kernel.vectors.SparseVector


@dataclass(frozen=True)
class IndexHit:
    """A table (``column == ""``) or column in a ranking, with its 1-based component ranks."""

    table: str
    column: str
    score: float
    dense_rank: int | None
    bm25_rank: int | None


def _unavailable(reason: str, message: str) -> SchemaIndexUnavailable:
    return SchemaIndexUnavailable(reason, message, remedy=[REINDEX_COMMAND])


def check_index(caps: SchemaIndexCapabilities, view: SchemaView) -> SchemaIndexHeader:
    """The header of an index that can serve ``view``, else :class:`SchemaIndexUnavailable`."""
    checked = projection.check_header(
        SCHEMA_INDEX,
        caps.state_dir,
        SchemaIndexHeader,
        embedder=caps.embedder(),
        bm25_identity=caps.bm25().identity,
    )
    if isinstance(checked, projection.ProjectionProblem):
        raise _unavailable(checked.reason, checked.message)
    header = checked
    problem = projection.check_marker(SCHEMA_INDEX, caps.vector_store(), header)
    if problem is not None:
        raise _unavailable(problem.reason, problem.message)
    if header.view_version != view.version:
        entries = schema_entries(view, embedder=header.embedder, bm25=header.bm25)
        if build_fingerprint(e.hash for e in entries) != header.build:
            raise _unavailable(
                "stale",
                f"the schema index was built from catalog version {header.view_version}, the "
                f"catalog is now at {view.version}: run `{REINDEX_COMMAND}`",
            )
    return header


def index_filter(kind: str, index: str) -> VectorFilter:
    return projection.index_filter(SCHEMA_INDEX, kind, index)


def _ranked(points: Sequence[ScoredPoint], limit: int) -> dict[tuple[str, str], int]:
    """``(table, column) -> rank`` with ties sharing a rank (1 + hits scoring strictly more).

    The store orders equal scores by point id, and point ids carry the index id (random per
    workspace), so positions within a tie would differ from workspace to workspace; competition
    ranks do not. A tie group the ``limit`` may have cut is dropped whole, for the same reason.
    """
    scores = [float(p.score) for p in points]
    if len(points) >= limit and scores:
        cut = scores[-1]
        kept = [p for p, s in zip(points, scores, strict=True) if s != cut]
        if kept:  # all tied: keep them (the engine returned what exists)
            points, scores = kept, [s for s in scores if s != cut]
    ranks: dict[tuple[str, str], int] = {}
    higher = 0
    for i, (point, score) in enumerate(zip(points, scores, strict=True)):
        if i and score != scores[i - 1]:
            higher = i
        key = (str(point.payload.get("table", "")), str(point.payload.get("column", "")))
        ranks.setdefault(key, higher + 1)
    return ranks


def _rrf(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / (DEFAULT_RRF_K + rank - 1)


def embed_query(caps: SchemaIndexCapabilities, text: str) -> QueryVectors:
    return QueryVectors(
        dense=caps.embedder().embed_queries([text])[0], sparse=caps.bm25().embed_query(text)
    )


def search_index(
    caps: SchemaIndexCapabilities,
    header: SchemaIndexHeader,
    vectors: QueryVectors,
) -> tuple[list[IndexHit], list[IndexHit]]:
    """Table and column hits: every candidate of the dense and the BM25 ranking
    (``prefetch_limit`` each), best first by RRF of their competition ranks, ties by name.
    Raises ``VectorStoreError`` when the store fails (exit 6)."""
    store = caps.vector_store()
    prefetch = caps.prefetch_limit
    out: list[list[IndexHit]] = []
    for kind in (TABLE_KIND, COLUMN_KIND):
        where = index_filter(kind, header.index)
        dense = _ranked(
            store.query_dense(dense=vectors.dense, where=where, limit=prefetch), prefetch
        )
        sparse = _ranked(
            store.query_sparse(sparse=vectors.sparse, where=where, limit=prefetch, idf_corpus=where)
            if vectors.sparse.indices
            else [],
            prefetch,
        )
        hits = [
            IndexHit(
                table=key[0],
                column=key[1],
                score=_rrf(dense.get(key)) + _rrf(sparse.get(key)),
                dense_rank=dense.get(key),
                bm25_rank=sparse.get(key),
            )
            for key in dense.keys() | sparse.keys()
        ]
        hits.sort(key=lambda h: (-h.score, h.table, h.column))
        out.append(hits)
    return out[0], out[1]
