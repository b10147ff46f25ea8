"""Percentiles, one definition for every query and the report.

Linear interpolation between closest ranks over ``n`` sorted values, with the integer arithmetic
of ``statistics.quantiles(data, n=100, method="inclusive")`` so results match it exactly. The
values are reached through ``at(rank)`` (1-based), so a caller may fetch from SQL only the two
ranks around ``q * (n - 1) / 100`` instead of the whole column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["percentile", "percentile_of"]


def percentile(q: int, n: int, at: Callable[[int], float]) -> float:
    """The ``q``-th percentile (0–100) of ``n`` sorted values, ``at(rank)`` giving each value."""
    if n < 1:
        raise ValueError("a percentile needs at least one value")
    m = n - 1
    j = q * m // 100
    delta = q * m - j * 100
    if delta == 0:
        return float(at(j + 1))
    return (at(j + 1) * (100 - delta) + at(j + 2) * delta) / 100


def percentile_of(q: int, values: Sequence[float]) -> float | None:
    """The ``q``-th percentile of unsorted ``values``; ``None`` when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return percentile(q, len(ordered), lambda rank: ordered[rank - 1])
