"""Deterministic rankings and Reciprocal Rank Fusion: pure functions shared by every adapter.

Why the fusion is computed here and not by the engine's ``Fusion.RRF``: both engines support an
explicit RRF ``k``, but neither breaks ties (Qdrant's ``rrf_scoring``: "Does not break ties"), and
they order equal scores differently (Qdrant Edge by internal offsets and a hash map, qdrant-client's
local mode by reverse insertion). Equal scores are common in real data: duplicated excerpts give
equal dense scores, short fragments with the same terms give equal BM25 scores. A tie inside a
component ranking changes the RRF score of the tied points, so engine-side fusion returns different
ids and orders from the two adapters on the same data. Here every ranking is ordered by
``(score descending, point id ascending)``, cut only after its whole tie group was fetched, and
fused by one function, so both adapters agree exactly. The component ranks are kept on each hit:
the Evidence evaluation set records dense, BM25 and fused positions (glossary).

The formula is Qdrant's, so ``k`` means what it means in ``Fusion.Rrf(k=...)``: a point at
0-based position ``p`` of a ranking contributes ``1 / (k + p)``; contributions are summed in a
fixed order (dense, then BM25).

:func:`weighted_rrf_fuse` (beside it; ``rrf_fuse`` and its callers are unchanged) weighs the two
rankings: a point at 0-based position ``p`` contributes ``weight / (k + p)``, BM25's weight
optionally scaled per point (a caller lowers BM25 where the query and the point are in different
languages). A ranking of weight 0 contributes nothing, and a point no ranking scores is dropped,
so weights ``(1, 0)`` return the dense ranking and ``(0, 1)`` the BM25 ranking, in their order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

__all__ = [
    "FusedHit",
    "RankedHit",
    "complete_top",
    "order_hits",
    "rrf_fuse",
    "weighted_rrf_fuse",
]


class RankedHit(msgspec.Struct, frozen=True):
    """An engine hit before payloads are attached: point id, score, payload if fetched.

    ``id`` is the engine's own id object: a canonical UUID string, or a ``uuid.UUID`` (Qdrant
    Edge; converting every candidate to ``str`` cost a tenth of a millisecond per query). Both
    order alike: a UUID compares by its 128-bit value, which is the order of its canonical
    fixed-width hexadecimal form. One adapter never mixes the two.
    """

    id: Any
    score: float
    payload: Mapping[str, Any] | None = None


def order_hits(hits: Sequence[RankedHit]) -> list[RankedHit]:
    """Score descending, then point id ascending: a total, engine-independent order."""
    return sorted(hits, key=lambda h: (-h.score, h.id))


def complete_top(
    fetch: Callable[[int], Sequence[RankedHit]],
    limit: int,
    *,
    margin: int = 8,
    cap: int = 4096,
) -> list[RankedHit]:
    """The first ``limit`` hits in :func:`order_hits` order, whatever order the engine used.

    ``fetch(n)`` returns the engine's top ``n`` (ties in any order). A tie group that straddles
    position ``limit`` may be cut arbitrarily by the engine, so we fetch ``limit + margin`` and,
    while the lowest fetched score still equals the score at position ``limit``, fetch twice as
    many (up to ``cap``; past it, ties at the boundary keep the engine's choice).
    """
    if limit <= 0:
        return []
    n = min(limit + margin, max(cap, limit))
    while True:
        hits = order_hits(fetch(n))
        if len(hits) < n or len(hits) <= limit or n >= cap:
            return hits[:limit]
        if hits[-1].score < hits[limit - 1].score:
            return hits[:limit]
        n = min(n * 2, cap)


class FusedHit(msgspec.Struct, frozen=True):
    """A fused hit: RRF score and the 1-based rank in each component ranking (None if absent)."""

    id: Any  # as in RankedHit
    score: float
    dense_rank: int | None
    bm25_rank: int | None


def rrf_fuse(
    dense: Sequence[RankedHit], bm25: Sequence[RankedHit], *, k: int, limit: int
) -> list[FusedHit]:
    """Fuse two rankings (already in :func:`order_hits` order) with RRF; top ``limit`` fused hits.

    Result order: fused score descending, then point id ascending.
    """
    if k < 1:
        raise ValueError(f"rrf k must be at least 1, got {k}")
    scores: dict[Any, float] = {}
    dense_rank: dict[Any, int] = {}
    bm25_rank: dict[Any, int] = {}
    for ranking, ranks in ((dense, dense_rank), (bm25, bm25_rank)):
        for position, hit in enumerate(ranking):
            if hit.id in ranks:  # defensive: an engine never repeats an id in one ranking
                continue
            ranks[hit.id] = position + 1
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (k + position)
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: max(limit, 0)]
    return [FusedHit(pid, score, dense_rank.get(pid), bm25_rank.get(pid)) for pid, score in ordered]


def weighted_rrf_fuse(
    dense: Sequence[RankedHit],
    bm25: Sequence[RankedHit],
    *,
    k: int,
    dense_weight: float,
    bm25_weight: float,
    limit: int,
    bm25_scale: Mapping[Any, float] | None = None,
) -> list[FusedHit]:
    """Weighted RRF of two rankings (already in :func:`order_hits` order); top ``limit``.

    Score: ``dense_weight / (k + p_dense) + bm25_weight * scale(id) / (k + p_bm25)`` over the
    rankings a point is in (``scale`` from ``bm25_scale``, 1.0 when absent). Points whose score is
    0 are dropped. Order: fused score descending, then point id ascending. Weights and scales must
    be finite and >= 0, and the two weights must not both be 0.
    """
    if k < 1:
        raise ValueError(f"rrf k must be at least 1, got {k}")
    for name, weight in (("dense_weight", dense_weight), ("bm25_weight", bm25_weight)):
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {weight}")
    if dense_weight == 0 and bm25_weight == 0:
        raise ValueError("dense_weight and bm25_weight cannot both be 0")
    scales = bm25_scale or {}
    scores: dict[Any, float] = {}
    dense_rank: dict[Any, int] = {}
    bm25_rank: dict[Any, int] = {}
    for ranking, ranks, weight, scaled in (
        (dense, dense_rank, dense_weight, False),
        (bm25, bm25_rank, bm25_weight, True),
    ):
        for position, hit in enumerate(ranking):
            if hit.id in ranks:  # defensive, as in rrf_fuse
                continue
            ranks[hit.id] = position + 1
            w = weight * _scale(scales, hit.id) if scaled else weight
            if w > 0:
                scores[hit.id] = scores.get(hit.id, 0.0) + w / (k + position)
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: max(limit, 0)]
    return [FusedHit(pid, score, dense_rank.get(pid), bm25_rank.get(pid)) for pid, score in ordered]


def _scale(scales: Mapping[Any, float], pid: Any) -> float:
    value = float(scales.get(pid, 1.0))
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"bm25 scale must be a finite number >= 0, got {value}")
    return value
