"""Deterministic rankings and RRF fusion (``kernel/vectors/fusion.py``)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
import qdrant_edge as qe
from hypothesis import given
from hypothesis import strategies as st

from kernel.vectors.fusion import RankedHit, complete_top, order_hits, rrf_fuse

_IDS = st.uuids().map(str)


def _ranking(ids: Sequence[str], scores: Sequence[float]) -> list[RankedHit]:
    return order_hits([RankedHit(i, s) for i, s in zip(ids, scores, strict=False)])


def test_rrf_scores_are_qdrants_formula() -> None:
    dense = [RankedHit("a", 0.9), RankedHit("b", 0.8), RankedHit("c", 0.7)]
    bm25 = [RankedHit("c", 5.0), RankedHit("d", 4.0)]
    fused = rrf_fuse(dense, bm25, k=60, limit=10)
    scores = {f.id: f.score for f in fused}
    assert scores == pytest.approx({"a": 1 / 60, "b": 1 / 61, "c": 1 / 62 + 1 / 60, "d": 1 / 61})
    assert [f.id for f in fused] == ["c", "a", "b", "d"]  # b and d tie: id order
    c = next(f for f in fused if f.id == "c")
    assert (c.dense_rank, c.bm25_rank) == (3, 1)
    assert next(f for f in fused if f.id == "d").dense_rank is None


def test_rrf_k_changes_the_balance_between_depth_and_agreement() -> None:
    dense = [RankedHit("top", 1.0)] + [RankedHit(f"x{i}", 0.5 - i / 100) for i in range(5)]
    bm25 = [RankedHit(f"y{i}", 9 - i) for i in range(3)] + [RankedHit("x3", 1.0)]
    # x3 is in both rankings, deep; "top" leads one ranking only
    assert rrf_fuse(dense, bm25, k=1, limit=1)[0].id == "top"
    assert rrf_fuse(dense, bm25, k=60, limit=1)[0].id == "x3"


def test_rrf_k_must_be_positive() -> None:
    with pytest.raises(ValueError):
        rrf_fuse([], [], k=0, limit=5)


@given(
    st.lists(_IDS, unique=True, max_size=40),
    st.lists(_IDS, unique=True, max_size=40),
    st.integers(1, 100),
    st.integers(0, 50),
)
def test_rrf_is_deterministic_and_ordered(
    dense_ids: list[str], bm25_ids: list[str], k: int, limit: int
) -> None:
    dense = [RankedHit(i, 1.0 - n / 100) for n, i in enumerate(dense_ids)]
    bm25 = [RankedHit(i, 10.0 - n) for n, i in enumerate(bm25_ids)]
    fused = rrf_fuse(dense, bm25, k=k, limit=limit)
    assert len(fused) == min(limit, len(set(dense_ids) | set(bm25_ids)))
    keys = [(-f.score, f.id) for f in fused]
    assert keys == sorted(keys)
    assert fused == rrf_fuse(dense, bm25, k=k, limit=limit)
    for f in fused:
        assert f.dense_rank == (dense_ids.index(f.id) + 1 if f.id in dense_ids else None)
        assert f.bm25_rank == (bm25_ids.index(f.id) + 1 if f.id in bm25_ids else None)


@given(
    st.lists(st.tuples(_IDS, st.integers(0, 4)), unique_by=lambda t: t[0], max_size=60),
    st.integers(1, 20),
    st.randoms(use_true_random=False),
)
def test_complete_top_is_independent_of_the_engines_tie_order(
    points: list[tuple[str, int]], limit: int, rnd: random.Random
) -> None:
    """Whatever order an engine gives equal scores, and wherever it cuts, the result is the same."""
    hits = [RankedHit(pid, float(score)) for pid, score in points]
    expected = order_hits(hits)[:limit]

    def engine(n: int) -> list[RankedHit]:  # top n by score, ties shuffled
        shuffled = hits[:]
        rnd.shuffle(shuffled)
        return sorted(shuffled, key=lambda h: -h.score)[:n]

    assert complete_top(engine, limit, margin=2) == expected


def test_complete_top_fetches_until_the_boundary_tie_group_is_complete() -> None:
    hits = [RankedHit(str(uuid.UUID(int=i)), 1.0) for i in range(100)]  # all tied
    asked: list[int] = []

    def engine(n: int) -> list[RankedHit]:
        asked.append(n)
        return list(reversed(hits))[:n]  # adversarial: worst ids first

    assert complete_top(engine, 3, margin=2) == hits[:3]
    assert asked == [5, 10, 20, 40, 80, 160]


def test_fusion_equals_qdrant_edges_own_rrf_on_tie_free_data(tmp_path: Path) -> None:
    """Same formula as the engine's ``Fusion.Rrf(k)``: on data without ties, same order."""
    rnd = random.Random(7)
    shard = qe.EdgeShard.create(
        str(tmp_path / "shard"),
        qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=8, distance=qe.Distance.Cosine),
            sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        ),
    )
    points = []
    for n in range(300):
        terms = sorted(rnd.sample(range(40), 4))
        points.append(
            qe.Point(
                str(uuid.UUID(int=n + 1)),
                {
                    "": [rnd.gauss(0, 1) for _ in range(8)],
                    "bm25": qe.SparseVector(terms, [rnd.uniform(0.5, 2.0) for _ in terms]),
                },
            )
        )
    shard.update(qe.UpdateOperation.upsert_points(points))
    for k in (1, 2, 60):
        dense_query = [rnd.gauss(0, 1) for _ in range(8)]
        sparse_query = qe.SparseVector(sorted(rnd.sample(range(40), 3)), [1.0, 1.0, 1.0])
        prefetch = [
            qe.Prefetch(limit=30, query=qe.Query.Nearest(dense_query)),
            qe.Prefetch(limit=30, query=qe.Query.Nearest(sparse_query, using="bm25")),
        ]
        engine = shard.query(
            qe.QueryRequest(limit=60, prefetches=prefetch, query=qe.Fusion.Rrf(k=k))
        )
        dense = shard.query(qe.QueryRequest(limit=30, query=qe.Query.Nearest(dense_query)))
        bm25 = shard.query(
            qe.QueryRequest(limit=30, query=qe.Query.Nearest(sparse_query, using="bm25"))
        )
        ours = rrf_fuse(
            _ranking([str(p.id) for p in dense], [p.score for p in dense]),
            _ranking([str(p.id) for p in bm25], [p.score for p in bm25]),
            k=k,
            limit=60,
        )
        # every candidate gets the engine's score; the order is the engine's, ties broken by id
        assert {f.id: f.score for f in ours} == pytest.approx(
            {str(p.id): p.score for p in engine}, rel=1e-6
        )
        assert [f.id for f in ours] == [
            pid for _, pid in sorted((-round(p.score, 6), str(p.id)) for p in engine)
        ]
    shard.close()


def test_fusion_equals_qdrant_client_local_rrf_with_k() -> None:
    """qdrant-client also takes an explicit k (``RrfQuery(rrf=Rrf(k=...))``), same formula."""
    from qdrant_client import QdrantClient
    from qdrant_client import models as qm

    rnd = random.Random(11)
    client = QdrantClient(location=":memory:")
    client.create_collection(
        "c",
        vectors_config=qm.VectorParams(size=8, distance=qm.Distance.COSINE),
        sparse_vectors_config={"bm25": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    points = []
    for n in range(200):
        terms = sorted(rnd.sample(range(40), 4))
        points.append(
            qm.PointStruct(
                id=str(uuid.UUID(int=n + 1)),
                vector={
                    "": [rnd.gauss(0, 1) for _ in range(8)],
                    "bm25": qm.SparseVector(
                        indices=terms, values=[rnd.uniform(0.5, 2.0) for _ in terms]
                    ),
                },
            )
        )
    client.upsert("c", points)
    for k in (1, 2, 60):
        dense_query = [rnd.gauss(0, 1) for _ in range(8)]
        sparse_query = qm.SparseVector(indices=sorted(rnd.sample(range(40), 3)), values=[1.0] * 3)
        engine = client.query_points(
            "c",
            prefetch=[
                qm.Prefetch(query=dense_query, limit=30),
                qm.Prefetch(query=sparse_query, using="bm25", limit=30),
            ],
            query=qm.RrfQuery(rrf=qm.Rrf(k=k)),
            limit=60,
        ).points
        dense = client.query_points("c", query=dense_query, limit=30).points
        bm25 = client.query_points("c", query=sparse_query, using="bm25", limit=30).points
        ours = rrf_fuse(
            _ranking([str(p.id) for p in dense], [p.score for p in dense]),
            _ranking([str(p.id) for p in bm25], [p.score for p in bm25]),
            k=k,
            limit=60,
        )
        assert {f.id: f.score for f in ours} == pytest.approx(
            {str(p.id): p.score for p in engine}, rel=1e-9
        )
    client.close()
