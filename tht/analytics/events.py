"""The ``RoutingEvaluator`` hook event (spec 000 §22.3–22.5): allowlist, closed enums, clamps.

The routing hook appends one event per prompt to its JSONL log. This module turns one decoded line
into what analytics may keep, and nothing else:

- only the fields of the §22.5 allowlist survive; forbidden fields (prompt, raw response, keys,
  headers, paths, …) and unknown fields are dropped and counted;
- closed enums (§22.4 and the provider contract of §15.2) are validated; an unknown value is never
  stored verbatim (it could be an error message or a prompt fragment): it becomes ``"unknown"``,
  or ``"unexpected-error"`` for ``evaluator_status`` so that an unrecognised outcome never counts
  as a success;
- identifiers (profile, model, candidate ids, …) must look like identifiers: no spaces, no paths,
  no URLs, at most 128 characters;
- numbers are clamped to plausible ranges; booleans must be booleans.

Every normalisation is counted in a :class:`collections.Counter` so ``tht analytics scan`` can
report it. Pure functions only: no I/O, no clock.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from kernel.clock import format_ts

__all__ = [
    "ACTIVATIONS",
    "ALLOWED_FIELDS",
    "AMBIGUITY_REASONS",
    "CONFIDENCE_BUCKETS",
    "DECISIONS",
    "EVALUATOR_STATUSES",
    "EVENT_NAME",
    "FALLBACK_REASONS",
    "FORBIDDEN_FIELDS",
    "INVOKED_STATUSES",
    "MODEL_VARIANTS",
    "MODES",
    "PROVIDER_FAMILIES",
    "PROVIDER_LOCATIONS",
    "RESPONSE_FORMATS",
    "UNKNOWN",
    "RoutingEvaluatorEvent",
    "is_identifier",
    "normalize_routing_event",
    "normalize_timestamp",
    "parse_bound",
]

EVENT_NAME: Final = "RoutingEvaluator"
UNKNOWN: Final = "unknown"

# §22.4: the closed enum of evaluator outcomes.
EVALUATOR_STATUSES: Final = frozenset(
    {
        "not-ambiguous",
        "disabled",
        "not-sampled",
        "skipped-light-mode",
        "skipped-sensitive",
        "circuit-open",
        "cache-hit",
        "completed",
        "low-confidence",
        "invalid-output",
        "model-unavailable",
        "timeout",
        "rate-limited",
        "auth-error",
        "http-error",
        "network-error",
        "config-invalid",
        "unexpected-error",
    }
)
# Outcomes in which a request reached the provider: the denominator of completion, fallback,
# invalid-output and timeout rates (§22.8: invoked = completed + fallbacks).
INVOKED_STATUSES: Final = frozenset(
    {
        "completed",
        "low-confidence",
        "invalid-output",
        "model-unavailable",
        "timeout",
        "rate-limited",
        "auth-error",
        "http-error",
        "network-error",
        "unexpected-error",
    }
)
# §17.4 operating modes.
MODES: Final = frozenset({"off", "shadow", "observe", "boost-only", "hybrid", "force-evaluate"})
# §9.3 / §17.2 activation policy of the evaluator.
ACTIVATIONS: Final = frozenset({"ambiguous-only", "sampled", "always", "never"})
# §9.5 gate reasons, the activation rules of §9.1, and the non-activation reasons of §9.5.
AMBIGUITY_REASONS: Final = frozenset(
    {
        "small-top-score-gap",
        "multiple-eligible-candidates",
        "near-threshold-competition",
        "primary-sidecar-overlap",
        "category-overlap",
        "composite-prompt",
        "skill-mcp-split",
        "soft-exclusion-conflict",
        "explicit-intent-mismatch",
        "disabled",
        "light-mode-skip",
        "insufficient-candidates",
    }
)
# §15.2 provider profile contract.
PROVIDER_FAMILIES: Final = frozenset({"ollama", "lmstudio", "custom"})
PROVIDER_LOCATIONS: Final = frozenset({"local", "lan", "cloud"})
MODEL_VARIANTS: Final = frozenset({"instruct", "reasoning", "unknown"})
RESPONSE_FORMATS: Final = frozenset({"json-schema", "json-object", "prompt-json"})
# §13.1 evaluator decision, and the bucket of its confidence.
DECISIONS: Final = frozenset({"single", "compose", "none", "uncertain"})
CONFIDENCE_BUCKETS: Final = frozenset({"low", "medium", "high"})
# §18.8 resolver fallbacks and the §19.1 failure matrix, as closed reason codes (§22.4).
FALLBACK_REASONS: Final = frozenset(
    {
        "no-evaluation",
        "low-confidence",
        "policy-rejected-target",
        "invalid-output",
        "invented-id",
        "model-unavailable",
        "timeout",
        "rate-limited",
        "auth-error",
        "http-error",
        "network-error",
        "circuit-open",
        "config-invalid",
        "missing-key",
        "catalog-invalid",
        "unexpected-error",
    }
)

# §22.5: the only fields metadata_json may hold, in this order.
ALLOWED_FIELDS: Final = (
    "schema_version",
    "mode",
    "activation",
    "ambiguity_detected",
    "ambiguity_reasons",
    "evaluator_status",
    "provider_profile",
    "provider_family",
    "provider_location",
    "model",
    "model_family",
    "model_parameter_class",
    "model_variant",
    "model_quantization",
    "evaluator_profile_version",
    "prompt_contract_version",
    "response_format",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "candidate_count",
    "candidate_ids",
    "deterministic_top",
    "evaluator_top",
    "final_top",
    "decision",
    "confidence_bucket",
    "changed_top",
    "applied",
    "fallback_reason",
    "cache_hit",
    "sensitive_skip",
)
_ALLOWED_SET: Final = frozenset(ALLOWED_FIELDS)
# Envelope fields read but not copied into metadata_json.
_ENVELOPE: Final = frozenset({"ts", "event", "hook", "request_id"})
# §22.5 forbidden fields under the names a log line would use. Everything outside the allowlist is
# dropped anyway; these are counted separately because their presence is a privacy incident.
FORBIDDEN_FIELDS: Final = frozenset(
    {
        "prompt",
        "prompt_text",
        "prompt_hash",
        "text",
        "args",
        "raw_response",
        "response",
        "response_body",
        "endpoint",
        "url",
        "base_url",
        "baseUrl",
        "api_key",
        "apiKey",
        "authorization",
        "headers",
        "error",
        "error_body",
        "error_message",
        "candidate_descriptions",
        "descriptions",
        "reasoning",
        "file_path",
        "path",
        "cwd",
        "repository_path",
        "repo_path",
        "transcript_path",
    }
)

_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+/-]{0,127}")
_MAX_LIST: Final = {"candidate_ids": 32, "ambiguity_reasons": 16}
# (low, high) clamps; a latency above ten minutes or a billion tokens is a broken counter.
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


def is_identifier(value: object) -> bool:
    """A catalog-style id: no spaces, not a path or URL, at most 128 characters."""
    return (
        isinstance(value, str)
        and _ID_RE.fullmatch(value) is not None
        and ":/" not in value
        and ".." not in value
    )


def normalize_timestamp(value: object) -> str | None:
    """RFC 3339 → the kernel's ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC); ``None`` if not a timestamp.

    The canonical form sorts as text, so date filters are plain string comparisons on an index.
    A timestamp without an offset is read as UTC.
    """
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return format_ts(moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC))


def parse_bound(value: str, *, end: bool) -> str:
    """A date or RFC 3339 time → canonical UTC text; an end bound covers its whole last unit.

    ``2026-07-31`` as ``date_to`` means up to ``2026-07-31T23:59:59.999Z``; a time without
    fractional seconds covers its whole second.
    """
    canonical = normalize_timestamp(value)
    if canonical is None:
        raise ValueError(f"not a date or RFC 3339 time: {value!r}")
    if end:
        if len(value.strip()) == 10:
            return canonical[:10] + "T23:59:59.999Z"
        if "." not in value:
            return canonical[:19] + ".999Z"
    return canonical


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

    for name in raw:
        if name in _ENVELOPE or name in _ALLOWED_SET:
            continue
        warnings["forbidden_fields" if name in FORBIDDEN_FIELDS else "unknown_fields"] += 1

    meta: dict[str, Any] = {}
    for name in ALLOWED_FIELDS:
        value = raw.get(name)
        if name in _INT_RANGES:
            meta[name] = _int(name, value, warnings)
        elif name in _REQUIRED_ENUMS:
            meta[name] = _enum(value, _REQUIRED_ENUMS[name], UNKNOWN, warnings)
        elif name in _OPTIONAL_ENUMS:
            allowed = _OPTIONAL_ENUMS[name]
            meta[name] = None if value is None else _enum(value, allowed, UNKNOWN, warnings)
        elif name == "evaluator_status":
            meta[name] = _enum(value, EVALUATOR_STATUSES, "unexpected-error", warnings)
        elif name in _BOOLS:
            meta[name] = _bool(value, warnings)
        elif name == "candidate_ids":
            meta[name] = _id_list(name, value, warnings)
        elif name == "ambiguity_reasons":
            meta[name] = _enum_list(name, value, warnings)
        else:  # identifiers
            meta[name] = _identifier(value, warnings)
    if meta["candidate_count"] is None:
        meta["candidate_count"] = len(meta["candidate_ids"])

    return RoutingEvaluatorEvent(
        occurred_at=occurred_at,
        hook_name=_identifier(raw.get("hook"), warnings) or UNKNOWN,
        request_id=_identifier(raw.get("request_id"), warnings) or UNKNOWN,
        metadata=meta,
    )


def _int(name: str, value: object, warnings: Counter[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        warnings["invalid_values"] += 1
        return None
    if isinstance(value, float) and not math.isfinite(value):
        warnings["invalid_values"] += 1
        return None
    number = round(value) if isinstance(value, float) else value
    low, high = _INT_RANGES[name]
    if number < low or number > high:
        warnings["clamped_numbers"] += 1
        return low if number < low else high
    return number


def _enum(value: object, allowed: frozenset[str], fallback: str, warnings: Counter[str]) -> str:
    if isinstance(value, str) and value in allowed:
        return value
    warnings["unknown_enum_values"] += 1
    return fallback


def _bool(value: object, warnings: Counter[str]) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    warnings["invalid_values"] += 1
    return False


def _identifier(value: object, warnings: Counter[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and is_identifier(value):
        return value
    warnings["invalid_values"] += 1
    return None


def _id_list(name: str, value: object, warnings: Counter[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        warnings["invalid_values"] += 1
        return []
    kept = [item for item in value if is_identifier(item)]
    if len(kept) != len(value):
        warnings["invalid_values"] += 1
    if len(kept) > _MAX_LIST[name]:
        warnings["clamped_numbers"] += 1
        kept = kept[: _MAX_LIST[name]]
    return kept


def _enum_list(name: str, value: object, warnings: Counter[str]) -> list[str]:
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
    if len(kept) > _MAX_LIST[name]:
        warnings["clamped_numbers"] += 1
        kept = kept[: _MAX_LIST[name]]
    return kept
