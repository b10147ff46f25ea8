"""Weighted RRF (``kernel.vectors.fusion.weighted_rrf_fuse``): limits, ties, monotonicity."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.vectors.fusion import RankedHit, order_hits, rrf_fuse, weighted_rrf_fuse

_IDS = st.lists(st.uuids().map(str), unique=True, min_size=0, max_size=25)
_WEIGHT = st.floats(min_value=0.01, max_value=10, allow_nan=False, allow_infinity=False)


def _ranking(ids: Sequence[str]) -> list[RankedHit]:
    return [RankedHit(i, float(len(ids) - n)) for n, i in enumerate(ids)]


def _ids(hits: Sequence[object]) -> list[object]:
    return [h.id for h in hits]  # type: ignore[attr-defined]


@given(_IDS, _IDS, st.integers(1, 100), st.integers(0, 60))
def test_weights_one_zero_return_the_dense_ranking(
    dense: list[str], bm25: list[str], k: int, limit: int
) -> None:
    fused = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=1, bm25_weight=0, limit=limit
    )
    assert _ids(fused) == dense[:limit]


@given(_IDS, _IDS, st.integers(1, 100), st.integers(0, 60))
def test_weights_zero_one_return_the_bm25_ranking(
    dense: list[str], bm25: list[str], k: int, limit: int
) -> None:
    fused = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=0, bm25_weight=1, limit=limit
    )
    assert _ids(fused) == bm25[:limit]
    assert all(f.bm25_rank == n + 1 for n, f in enumerate(fused))


@given(_IDS, _IDS, st.integers(1, 100), _WEIGHT)
def test_equal_weights_are_plain_rrf_in_the_same_order(
    dense: list[str], bm25: list[str], k: int, w: float
) -> None:
    weighted = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=w, bm25_weight=w, limit=100
    )
    plain = rrf_fuse(_ranking(dense), _ranking(bm25), k=k, limit=100)
    assert _ids(weighted) == _ids(plain)
    assert [(f.dense_rank, f.bm25_rank) for f in weighted] == [
        (f.dense_rank, f.bm25_rank) for f in plain
    ]


@given(_IDS, _IDS, st.integers(1, 100), _WEIGHT, _WEIGHT, st.floats(1.01, 50))
def test_only_the_weights_ratio_matters(
    dense: list[str], bm25: list[str], k: int, wd: float, wb: float, c: float
) -> None:
    a = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=wd, bm25_weight=wb, limit=100
    )
    b = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=wd * c, bm25_weight=wb * c, limit=100
    )
    # scaling both weights scales every score: same ids unless two scores were within rounding
    assert [pytest.approx(f.score * c) for f in a] == [f.score for f in b]


@given(_IDS, _IDS, st.integers(1, 100), _WEIGHT, _WEIGHT, _WEIGHT)
def test_more_bm25_weight_never_lowers_a_point_below_one_bm25_ranks_lower(
    dense: list[str], bm25: list[str], k: int, wd: float, wb: float, extra: float
) -> None:
    """Monotone: raising BM25's weight, a point never falls behind a point it beats on BM25
    and ties or beats on dense."""
    low = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=wd, bm25_weight=wb, limit=100
    )
    high = weighted_rrf_fuse(
        _ranking(dense), _ranking(bm25), k=k, dense_weight=wd, bm25_weight=wb + extra, limit=100
    )
    pos_low = {f.id: n for n, f in enumerate(low)}
    pos_high = {f.id: n for n, f in enumerate(high)}
    for a in high:
        for b in high:
            a_b, b_b = a.bm25_rank or math.inf, b.bm25_rank or math.inf
            a_d, b_d = a.dense_rank or math.inf, b.dense_rank or math.inf
            if a_b < b_b and a_d <= b_d:
                assert pos_high[a.id] < pos_high[b.id]
            if pos_low[a.id] < pos_low[b.id] and a_b < b_b:
                assert pos_high[a.id] < pos_high[b.id]


def test_scores_are_the_weighted_formula_and_ties_break_by_id() -> None:
    dense = [RankedHit("b", 0.9), RankedHit("a", 0.8)]
    bm25 = [RankedHit("a", 3.0), RankedHit("b", 2.0)]
    fused = weighted_rrf_fuse(dense, bm25, k=10, dense_weight=0.3, bm25_weight=0.3, limit=5)
    assert [f.id for f in fused] == ["a", "b"]  # equal scores: id ascending
    assert fused[0].score == pytest.approx(0.3 / 10 + 0.3 / 11)
    leaning = weighted_rrf_fuse(dense, bm25, k=10, dense_weight=0.7, bm25_weight=0.3, limit=5)
    assert [f.id for f in leaning] == ["b", "a"]
    assert leaning[0].score == pytest.approx(0.7 / 10 + 0.3 / 11)


def test_input_order_of_equal_scores_does_not_change_the_result() -> None:
    ids = [f"{n:02d}" for n in range(10)]
    dense = order_hits([RankedHit(i, 1.0) for i in reversed(ids)])  # one big tie, id order
    bm25 = order_hits([RankedHit(i, float(n % 3)) for n, i in enumerate(ids)])
    a = weighted_rrf_fuse(dense, bm25, k=5, dense_weight=0.4, bm25_weight=0.6, limit=10)
    b = weighted_rrf_fuse(dense, bm25, k=5, dense_weight=0.4, bm25_weight=0.6, limit=10)
    assert a == b
    assert _ids(dense) == ids


def test_a_bm25_scale_lowers_only_the_scaled_points() -> None:
    dense = [RankedHit("d", 1.0), RankedHit("x", 0.5)]
    bm25 = [RankedHit("x", 9.0), RankedHit("d", 1.0)]
    plain = weighted_rrf_fuse(dense, bm25, k=1, dense_weight=0.4, bm25_weight=0.6, limit=5)
    assert [f.id for f in plain] == ["x", "d"]
    scaled = weighted_rrf_fuse(
        dense, bm25, k=1, dense_weight=0.4, bm25_weight=0.6, limit=5, bm25_scale={"x": 0.1}
    )
    assert [f.id for f in scaled] == ["d", "x"]
    assert scaled[0].score == pytest.approx(0.4 / 1 + 0.6 / 2)  # "d" is not scaled
    zero = weighted_rrf_fuse(
        [], bm25, k=1, dense_weight=0.4, bm25_weight=0.6, limit=5, bm25_scale={"x": 0.0}
    )
    assert [f.id for f in zero] == ["d"]  # no score left: dropped
    assert zero[0].bm25_rank == 2


@pytest.mark.parametrize(
    ("wd", "wb", "k", "scale"),
    [
        (-0.1, 1.0, 10, 1.0),
        (1.0, math.nan, 10, 1.0),
        (math.inf, 1.0, 10, 1.0),
        (0.0, 0.0, 10, 1.0),
        (1.0, 1.0, 0, 1.0),
        (1.0, 1.0, 10, -1.0),
    ],
)
def test_bad_weights_k_or_scales_are_refused(wd: float, wb: float, k: int, scale: float) -> None:
    with pytest.raises(ValueError):
        weighted_rrf_fuse(
            [RankedHit("a", 1.0)],
            [RankedHit("a", 1.0)],
            k=k,
            dense_weight=wd,
            bm25_weight=wb,
            limit=5,
            bm25_scale={"a": scale},
        )
