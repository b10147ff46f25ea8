"""Normalisation of one ``RoutingEvaluator`` log line (spec 000 §22.5, §23.7): pure.

What survives is exactly the allowlist of :data:`~tht.analytics.events.ALLOWED_FIELDS`, each field
through one check of a table built once (so the per-line cost is a dictionary comprehension):

- closed enums: an unknown value becomes ``"unknown"`` (``"unexpected-error"`` for
  ``evaluator_status``), never stored verbatim — it could be an error message or prompt text;
- identifiers (profile, model, candidate ids, …): :func:`~tht.analytics.events.is_identifier`
  or ``None``;
- numbers: clamped to plausible ranges; booleans must be booleans (or 0/1);
- lists: capped (32 candidate ids, 16 ambiguity reasons).

Forbidden and unknown fields are dropped. Every normalisation increments a ``warnings`` key:
``forbidden_fields``, ``unknown_fields``, ``unknown_enum_values``, ``invalid_values``,
``clamped_numbers``, ``invalid_timestamp``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from tht.analytics.events import (
    ACTIVATIONS,
    ALLOWED_FIELDS,
    AMBIGUITY_REASONS,
    CONFIDENCE_BUCKETS,
    DECISIONS,
    ENVELOPE_FIELDS,
    EVALUATOR_STATUSES,
    EVENT_NAME,
    FALLBACK_REASONS,
    FORBIDDEN_FIELDS,
    MODEL_VARIANTS,
    MODES,
    PROVIDER_FAMILIES,
    PROVIDER_LOCATIONS,
    RESPONSE_FORMATS,
    UNKNOWN,
    is_identifier,
    looks_like_id,
    normalize_timestamp,
)

__all__ = ["RoutingEvaluatorEvent", "normalize_routing_event"]

_INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "schema_version": (0, 1_000),
    "prompt_contract_version": (0, 1_000),
    "latency_ms": (0, 600_000),
    "input_tokens": (0, 10_000_000),
    "output_tokens": (0, 10_000_000),
    "candidate_count": (0, 1_000),
}
_BOOLS: Final = ("ambiguity_detected", "changed_top", "applied", "cache_hit", "sensitive_skip")
_REQUIRED_ENUMS: Final[dict[str, frozenset[str]]] = {
    "mode": MODES,
    "activation": ACTIVATIONS,
}
_OPTIONAL_ENUMS: Final[dict[str, frozenset[str]]] = {
    "provider_family": PROVIDER_FAMILIES,
    "provider_location": PROVIDER_LOCATIONS,
    "model_variant": MODEL_VARIANTS,
    "response_format": RESPONSE_FORMATS,
    "decision": DECISIONS,
    "confidence_bucket": CONFIDENCE_BUCKETS,
    "fallback_reason": FALLBACK_REASONS,
}
_IDENTIFIERS: Final = (
    "provider_profile",
    "model",
    "model_family",
    "model_parameter_class",
    "model_quantization",
    "evaluator_profile_version",
    "deterministic_top",
    "evaluator_top",
    "final_top",
)


class RoutingEvaluatorEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One normalised ``RoutingEvaluator`` event: envelope plus the allowlisted metadata."""

    occurred_at: str
    hook_name: str
    request_id: str
    metadata: dict[str, Any]


def normalize_routing_event(
    raw: Mapping[str, Any], warnings: Counter[str]
) -> RoutingEvaluatorEvent | None:
    """The allowlisted, validated form of one decoded log line, or ``None`` if it cannot be kept.

    ``None`` means the line is not a ``RoutingEvaluator`` event with a usable timestamp; the caller
    counts it. Every field-level normalisation increments a key of ``warnings``.
    """
    if raw.get("event") != EVENT_NAME:
        return None
    occurred_at = normalize_timestamp(raw.get("ts"))
    if occurred_at is None:
        warnings["invalid_timestamp"] += 1
        return None
    if not raw.keys() <= _KNOWN_FIELDS:
        for name in raw.keys() - _KNOWN_FIELDS:
            warnings["forbidden_fields" if name in FORBIDDEN_FIELDS else "unknown_fields"] += 1
    get = raw.get
    meta = {name: check(get(name), warnings) for name, check in _CHECKS}
    if meta["candidate_count"] is None:
        meta["candidate_count"] = len(meta["candidate_ids"])
    request_id = get("request_id")
    if not (isinstance(request_id, str) and looks_like_id(request_id)):  # unique: no memo
        if request_id is not None:
            warnings["invalid_values"] += 1
        request_id = UNKNOWN
    return RoutingEvaluatorEvent(
        occurred_at=occurred_at,
        hook_name=_identifier(get("hook"), warnings) or UNKNOWN,
        request_id=request_id,
        metadata=meta,
    )


_Check = Callable[[object, Counter[str]], Any]


def _int(low: int, high: int) -> _Check:
    def check(value: object, warnings: Counter[str]) -> int | None:
        if value is None:
            return None
        if type(value) is not int:
            if isinstance(value, bool) or not isinstance(value, int | float):
                warnings["invalid_values"] += 1
                return None
            if isinstance(value, float) and not math.isfinite(value):
                warnings["invalid_values"] += 1
                return None
            value = round(value)
        assert isinstance(value, int)
        if value < low or value > high:
            warnings["clamped_numbers"] += 1
            return low if value < low else high
        return value

    return check


def _enum(allowed: frozenset[str], fallback: str, *, optional: bool) -> _Check:
    def check(value: object, warnings: Counter[str]) -> str | None:
        if isinstance(value, str) and value in allowed:
            return value
        if value is None and optional:
            return None
        warnings["unknown_enum_values"] += 1
        return fallback

    return check


def _bool(value: object, warnings: Counter[str]) -> bool:
    if value is True or value is False:
        return value
    if value is None:
        return False
    if type(value) is int and value in (0, 1):
        return bool(value)
    warnings["invalid_values"] += 1
    return False


def _identifier(value: object, warnings: Counter[str]) -> str | None:
    if value is None:
        return None
    if is_identifier(value):
        assert isinstance(value, str)
        return value
    warnings["invalid_values"] += 1
    return None


def _id_list(limit: int) -> _Check:
    def check(value: object, warnings: Counter[str]) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list):
            warnings["invalid_values"] += 1
            return []
        kept = [item for item in value if is_identifier(item)]
        if len(kept) != len(value):
            warnings["invalid_values"] += 1
        if len(kept) > limit:
            warnings["clamped_numbers"] += 1
            kept = kept[:limit]
        return kept

    return check


def _reasons(limit: int) -> _Check:
    def check(value: object, warnings: Counter[str]) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list):
            warnings["invalid_values"] += 1
            return []
        kept: list[str] = []
        for item in value:
            if isinstance(item, str) and item in AMBIGUITY_REASONS:
                kept.append(item)
            else:
                warnings["unknown_enum_values"] += 1
                kept.append(UNKNOWN)
        if len(kept) > limit:
            warnings["clamped_numbers"] += 1
            kept = kept[:limit]
        return kept

    return check


def _check_for(name: str) -> _Check:
    if name in _INT_RANGES:
        return _int(*_INT_RANGES[name])
    if name in _REQUIRED_ENUMS:
        return _enum(_REQUIRED_ENUMS[name], UNKNOWN, optional=False)
    if name in _OPTIONAL_ENUMS:
        return _enum(_OPTIONAL_ENUMS[name], UNKNOWN, optional=True)
    if name == "evaluator_status":
        return _enum(EVALUATOR_STATUSES, "unexpected-error", optional=False)
    if name in _BOOLS:
        return _bool
    if name == "candidate_ids":
        return _id_list(32)
    if name == "ambiguity_reasons":
        return _reasons(16)
    assert name in _IDENTIFIERS, name
    return _identifier


# One check per allowlisted field, in allowlist order: the whole per-line work is this table.
_CHECKS: Final = tuple((name, _check_for(name)) for name in ALLOWED_FIELDS)
_KNOWN_FIELDS: Final = frozenset(ALLOWED_FIELDS) | frozenset(ENVELOPE_FIELDS)
