"""``tht analytics routing-evaluator``: operational metrics of the evaluator (spec 000 §22.8).

Input: the §22.8 filter object (date range, profiles, locations, models, families, variants,
profile versions, modes, statuses) and ``group_by``. Output, exactly the §22.8 shape::

    {"ok": true, "totals": {...}, "rates": {...}, "latency_ms": {avg, p50, p95, max}, "groups": []}

Definitions (all over the filtered rows):

- ``evaluator_invoked``: rows whose status means the provider was called
  (:data:`~tht.analytics.events.INVOKED_STATUSES`); ``fallbacks`` = invoked − completed;
- ``changed_top_shadow`` / ``changed_top_applied``: ``changed_top`` with ``applied`` false / true;
- ``disagreement_rate``: completed evaluations whose evaluator top differs from the deterministic
  top, over completed evaluations;
- ``ambiguity_rate`` and ``invocation_rate`` are over all decisions; completion, fallback,
  invalid-output and timeout rates over invoked evaluations. A rate whose denominator is 0 is
  ``null``. Rates are rounded to 4 decimals;
- ``latency_ms``: over invoked evaluations that report a latency. ``p50``/``p95`` interpolate
  linearly between closest ranks (``statistics.quantiles(method="inclusive")``), computed in SQL
  with window functions so only four rows per group leave the database.

Every group of ``groups`` carries its key fields plus its own ``totals``, ``rates`` and
``latency_ms``. Filters are plain predicates on the typed projection, so the date range uses
``idx_routing_evaluations_occurred_at`` and profile/status filters
``idx_routing_evaluations_profile_status``.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tht.analytics.events import (
    EVALUATOR_STATUSES,
    INVOKED_STATUSES,
    MODEL_VARIANTS,
    MODES,
    PROVIDER_FAMILIES,
    PROVIDER_LOCATIONS,
    parse_bound,
)
from tht.analytics.stats import percentile

__all__ = [
    "DIMENSIONS",
    "RoutingEvaluatorQuery",
    "routing_evaluator",
    "statements",
    "where_clause",
]

# group_by name → SQL expression over routing_evaluations.
DIMENSIONS: Final[dict[str, str]] = {
    "provider_profile": "provider_profile",
    "provider_family": "provider_family",
    "provider_location": "provider_location",
    "model": "model",
    "model_family": "model_family",
    "model_parameter_class": "model_parameter_class",
    "model_variant": "model_variant",
    "model_quantization": "model_quantization",
    "evaluator_profile_version": "evaluator_profile_version",
    "prompt_contract_version": "prompt_contract_version",
    "response_format": "response_format",
    "mode": "mode",
    "activation": "activation",
    "evaluator_status": "evaluator_status",
    "decision": "decision",
    "confidence_bucket": "confidence_bucket",
    "fallback_reason": "fallback_reason",
    "month": "substr(occurred_at, 1, 7)",
    "day": "substr(occurred_at, 1, 10)",
    "hour": "substr(occurred_at, 1, 13)",
}
# filter name → column.
_FILTERS: Final[dict[str, str]] = {
    "provider_profiles": "provider_profile",
    "provider_families": "provider_family",
    "provider_locations": "provider_location",
    "models": "model",
    "model_families": "model_family",
    "model_variants": "model_variant",
    "model_quantizations": "model_quantization",
    "evaluator_profile_versions": "evaluator_profile_version",
    "modes": "mode",
    "statuses": "evaluator_status",
}
_CLOSED: Final[dict[str, frozenset[str]]] = {
    "provider_families": PROVIDER_FAMILIES,
    "provider_locations": PROVIDER_LOCATIONS,
    "model_variants": MODEL_VARIANTS | {"unknown"},
    "modes": MODES | {"unknown"},
    "statuses": EVALUATOR_STATUSES,
}
_INVOKED_SQL: Final = "evaluator_status IN ({})".format(
    ", ".join(f"'{s}'" for s in sorted(INVOKED_STATUSES))
)


class RoutingEvaluatorQuery(BaseModel):
    """The §22.8 input object. Every list filter is "any of"; absent or empty means no filter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    date_from: str | None = None
    date_to: str | None = None
    provider_profiles: tuple[str, ...] = ()
    provider_families: tuple[str, ...] = ()
    provider_locations: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    model_families: tuple[str, ...] = ()
    model_variants: tuple[str, ...] = ()
    model_quantizations: tuple[str, ...] = ()
    evaluator_profile_versions: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    group_by: tuple[str, ...] = Field(default=())

    @field_validator("date_from")
    @classmethod
    def _from(cls, value: str | None) -> str | None:
        return None if value is None else parse_bound(value, end=False)

    @field_validator("date_to")
    @classmethod
    def _to(cls, value: str | None) -> str | None:
        return None if value is None else parse_bound(value, end=True)

    @field_validator("group_by")
    @classmethod
    def _group_by(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in DIMENSIONS]
        if unknown:
            raise ValueError(
                f"unknown group_by {', '.join(unknown)}; allowed: {', '.join(DIMENSIONS)}"
            )
        if len(set(value)) != len(value):
            raise ValueError("group_by lists a dimension twice")
        return value

    @field_validator(*_CLOSED)
    @classmethod
    def _closed(cls, value: tuple[str, ...], info: Any) -> tuple[str, ...]:
        allowed = _CLOSED[info.field_name]
        unknown = [v for v in value if v not in allowed]
        if unknown:
            shown = ", ".join(sorted(allowed))
            raise ValueError(f"unknown value {', '.join(unknown)}; allowed: {shown}")
        return value


def where_clause(query: RoutingEvaluatorQuery) -> tuple[str, list[Any]]:
    """The ``WHERE`` predicate (never empty: ``1`` when unfiltered) and its parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if query.date_from is not None:
        parts.append("occurred_at >= ?")
        params.append(query.date_from)
    if query.date_to is not None:
        parts.append("occurred_at <= ?")
        params.append(query.date_to)
    for name, column in _FILTERS.items():
        values = getattr(query, name)
        if values:
            parts.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    return (" AND ".join(parts) or "1"), params


def routing_evaluator(conn: sqlite3.Connection, query: RoutingEvaluatorQuery) -> dict[str, Any]:
    """Run the query; the result has exactly the §22.8 output shape."""
    where, params = where_clause(query)
    overall = _aggregate(conn, where, params, ())
    body = overall.get((), _metrics(None, {}))
    groups: list[dict[str, Any]] = []
    if query.group_by:
        for key, metrics in _aggregate(conn, where, params, query.group_by).items():
            groups.append({**dict(zip(query.group_by, key, strict=True)), **metrics})
    return {"ok": True, **body, "groups": groups}


def statements(query: RoutingEvaluatorQuery) -> list[tuple[str, list[Any]]]:
    """Every SQL statement :func:`routing_evaluator` runs for ``query`` (for query plans)."""
    where, params = where_clause(query)
    dims_list = [(), query.group_by] if query.group_by else [()]
    return [
        (sql, params)
        for dims in dims_list
        for sql in (_aggregate_sql(where, dims), _percentile_sql(where, dims))
    ]


def _aggregate_sql(where: str, dims: tuple[str, ...]) -> str:
    keys = [f"{DIMENSIONS[d]} AS g{i}" for i, d in enumerate(dims)]
    names = [f"g{i}" for i in range(len(dims))]
    group = f" GROUP BY {', '.join(names)} ORDER BY {', '.join(names)}" if dims else ""
    return (
        f"SELECT {''.join(k + ', ' for k in keys)}"
        "COUNT(*), SUM(ambiguity_detected), "
        f"SUM({_INVOKED_SQL}), SUM(evaluator_status = 'completed'), "
        "SUM(evaluator_status = 'invalid-output'), SUM(evaluator_status = 'timeout'), "
        "SUM(changed_top = 1 AND applied = 0), SUM(changed_top = 1 AND applied = 1), "
        "SUM(cache_hit), SUM(sensitive_skip), TOTAL(input_tokens), TOTAL(output_tokens), "
        "SUM(evaluator_status = 'completed' AND evaluator_top IS NOT deterministic_top), "
        f"AVG(CASE WHEN {_INVOKED_SQL} THEN latency_ms END), "
        f"MAX(CASE WHEN {_INVOKED_SQL} THEN latency_ms END) "
        f"FROM routing_evaluations WHERE {where}{group}"
    )


def _percentile_sql(where: str, dims: tuple[str, ...]) -> str:
    names = [f"g{i}" for i in range(len(dims))]
    keys = "".join(f"{DIMENSIONS[d]} AS g{i}, " for i, d in enumerate(dims))
    partition = f"PARTITION BY {', '.join(names)} " if dims else ""
    return (
        f"WITH f AS (SELECT {keys}latency_ms AS x FROM routing_evaluations "
        f"WHERE {where} AND latency_ms IS NOT NULL AND {_INVOKED_SQL}), "
        f"r AS (SELECT {''.join(n + ', ' for n in names)}x, "
        f"ROW_NUMBER() OVER ({partition}ORDER BY x) AS rn, COUNT(*) OVER ({partition}) AS n "
        "FROM f) "
        f"SELECT {''.join(n + ', ' for n in names)}n, rn, x FROM r "
        # the two ranks stats.percentile reads for q = 50 and 95 (integer division, as there)
        "WHERE rn IN ((50 * (n - 1)) / 100 + 1, (50 * (n - 1)) / 100 + 2, "
        "(95 * (n - 1)) / 100 + 1, (95 * (n - 1)) / 100 + 2)"
    )


def _aggregate(
    conn: sqlite3.Connection, where: str, params: list[Any], dims: tuple[str, ...]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    percentiles = _percentiles(conn, where, params, dims)
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in conn.execute(_aggregate_sql(where, dims), params):
        key = tuple(row[: len(dims)])
        counts = row[len(dims) :]
        if counts[0] == 0:
            continue  # an ungrouped aggregate over no rows
        out[key] = _metrics(counts, percentiles.get(key, {}))
    return out


def _percentiles(
    conn: sqlite3.Connection, where: str, params: list[Any], dims: tuple[str, ...]
) -> dict[tuple[Any, ...], dict[str, float]]:
    ranks: dict[tuple[Any, ...], tuple[int, dict[int, int]]] = {}
    for row in conn.execute(_percentile_sql(where, dims), params):
        key = tuple(row[: len(dims)])
        n, rn, x = row[len(dims) :]
        ranks.setdefault(key, (n, {}))[1][rn] = x
    return {
        key: {"p50": percentile(50, n, at.__getitem__), "p95": percentile(95, n, at.__getitem__)}
        for key, (n, at) in ranks.items()
    }


def _metrics(counts: Any, percentiles: dict[str, float]) -> dict[str, Any]:
    """The ``totals`` / ``rates`` / ``latency_ms`` blocks from one aggregate row."""
    if counts is None:
        counts = (0,) * 13 + (None, None)
    n = [int(c or 0) for c in counts[:13]]
    decisions, ambiguous, invoked, completed, invalid, timeouts = n[:6]
    shadow, applied, cache_hits, sensitive, tokens_in, tokens_out, disagreements = n[6:]
    latency_avg, latency_max = counts[13], counts[14]
    fallbacks = invoked - completed
    return {
        "totals": {
            "routing_decisions": decisions,
            "ambiguity_detected": ambiguous,
            "evaluator_invoked": invoked,
            "completed": completed,
            "fallbacks": fallbacks,
            "changed_top_shadow": shadow,
            "changed_top_applied": applied,
            "cache_hits": cache_hits,
            "sensitive_skips": sensitive,
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
        },
        "rates": {
            "ambiguity_rate": _rate(ambiguous, decisions),
            "invocation_rate": _rate(invoked, decisions),
            "completion_rate": _rate(completed, invoked),
            "fallback_rate": _rate(fallbacks, invoked),
            "invalid_output_rate": _rate(invalid, invoked),
            "timeout_rate": _rate(timeouts, invoked),
            "disagreement_rate": _rate(disagreements, completed),
        },
        "latency_ms": {
            "avg": _round(latency_avg),
            "p50": _round(percentiles.get("p50")),
            "p95": _round(percentiles.get("p95")),
            "max": None if latency_max is None else int(latency_max),
        },
    }


def _rate(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else round(numerator / denominator, 4)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 2)
