"""The ``RoutingEvaluator`` event: one per prompt (spec 000 §22.3–22.5, §22.12).

:func:`build_event` is pure (the shell passes the timestamp and the random request id). Its
output holds only the allowlisted fields of §22.3/§22.5, in that order, with closed enums; it
never holds the prompt, a hash of it, a path, a provider response, an error body or a secret.
:func:`sanitize_event` re-applies the allowlist to any mapping (the log writer calls it last).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from modules.routing.gate import GateVerdict
    from modules.routing.policy import Resolution

__all__ = [
    "EVALUATOR_STATUSES",
    "EVENT_FIELDS",
    "FALLBACK_REASONS",
    "HOOK_NAME",
    "build_event",
    "sanitize_event",
]

HOOK_NAME = "tht-route-hook"
SCHEMA_VERSION = 1

# The allowlist, in canonical order. Analytics derives its own from it (tht/analytics/events.py:
# ALLOWED_FIELDS is this less the envelope); tests/tht/analytics/test_telemetry_fields.py ties them.
EVENT_FIELDS = (
    "ts",
    "event",
    "hook",
    "schema_version",
    "request_id",
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

EVALUATOR_STATUSES = frozenset(
    """not-ambiguous disabled not-sampled skipped-light-mode skipped-sensitive circuit-open
    cache-hit completed low-confidence invalid-output model-unavailable timeout rate-limited
    auth-error http-error network-error config-invalid unexpected-error""".split()
)
FALLBACK_REASONS = frozenset(
    """no-evaluation low-confidence policy-rejected-target unknown-id evaluation-uncertain
    catalog-unavailable internal-error""".split()
)
MODES = frozenset("off shadow observe boost-only hybrid force-evaluate".split())
DECISIONS = frozenset("single compose none uncertain".split())
CONFIDENCE_BUCKETS = frozenset("low medium high".split())
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-")

_SKIP_TO_STATUS = {
    "light-mode-skip": "skipped-light-mode",
    "sensitive-prompt": "skipped-sensitive",
    "circuit-open": "circuit-open",
    "model-missing": "model-unavailable",
    "key-missing": "config-invalid",
    "catalog-invalid": "config-invalid",
    "disabled": "disabled",
    "mode-off": "disabled",
}


def evaluator_status(verdict: GateVerdict | None, *, catalog_ok: bool = True) -> str:
    """The closed ``evaluator_status`` of a prompt on which no evaluator ran (milestone A)."""
    if not catalog_ok or verdict is None:
        return "config-invalid"
    if verdict.skip_reason in ("disabled", "mode-off"):
        return "disabled"
    if not verdict.ambiguous:
        return "not-ambiguous"
    return _SKIP_TO_STATUS.get(verdict.skip_reason or "", "not-ambiguous")


def _decision(resolution: Resolution | None) -> str:
    if resolution is None or not resolution.hints:
        return "none"
    skills = [h for h in resolution.hints if h.kind == "skill"]
    return "compose" if len(resolution.hints) > 1 and skills else "single"


def build_event(
    *,
    ts: str,
    request_id: str,
    verdict: GateVerdict | None,
    resolution: Resolution | None,
    config: Mapping[str, Any],
    candidate_count: int,
    evaluator: Mapping[str, Any] | None = None,
    catalog_ok: bool = True,
    fallback_reason: str | None = None,
) -> dict[str, Any]:
    """The event for one prompt; ``evaluator`` carries the provider fields when one ran."""
    extra = dict(evaluator or {})
    status = extra.pop("evaluator_status", None) or evaluator_status(verdict, catalog_ok=catalog_ok)
    event: dict[str, Any] = {
        "ts": ts,
        "event": "RoutingEvaluator",
        "hook": HOOK_NAME,
        "schema_version": SCHEMA_VERSION,
        "request_id": request_id,
        "mode": config.get("mode", "off"),
        "activation": config.get("activation", "ambiguous-only"),
        "ambiguity_detected": bool(verdict and verdict.ambiguous),
        "ambiguity_reasons": list(verdict.reasons) if verdict else [],
        "evaluator_status": status,
        "candidate_count": candidate_count,
        "candidate_ids": list(verdict.candidate_ids) if verdict else [],
        "deterministic_top": resolution.deterministic_top if resolution else None,
        "evaluator_top": resolution.evaluator_top if resolution else None,
        "final_top": resolution.final_top if resolution else None,
        "decision": _decision(resolution),
        "confidence_bucket": None,
        "changed_top": bool(resolution and resolution.changed_top),
        "applied": bool(resolution and resolution.applied),
        "fallback_reason": fallback_reason or (resolution.fallback_reason if resolution else None),
        "cache_hit": False,
        "sensitive_skip": False,
    }
    for key, value in extra.items():
        event[key] = value
    return sanitize_event(event)


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 120 and set(value) <= _ID_CHARS


def sanitize_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """Only the allowlisted fields, in canonical order, each of the expected type and domain."""
    out: dict[str, Any] = {}
    for key in EVENT_FIELDS:
        value = event.get(key)
        if key in ("ambiguity_reasons",) or key == "candidate_ids":
            value = [v for v in value or [] if _is_id(v)][:16]
        elif key in ("deterministic_top", "evaluator_top", "final_top"):
            value = value if _is_id(value) else None
        elif key == "evaluator_status":
            value = value if value in EVALUATOR_STATUSES else "unexpected-error"
        elif key == "fallback_reason":
            value = value if value in FALLBACK_REASONS else None
        elif key == "mode":
            value = value if value in MODES else "off"
        elif key == "decision":
            value = value if value in DECISIONS else "none"
        elif key == "confidence_bucket":
            value = value if value in CONFIDENCE_BUCKETS else None
        elif key in ("ambiguity_detected", "changed_top", "applied", "cache_hit", "sensitive_skip"):
            value = bool(value)
        elif key in (
            "schema_version",
            "prompt_contract_version",
            "latency_ms",
            "input_tokens",
            "output_tokens",
            "candidate_count",
        ):
            value = (
                max(0, min(int(value), 10**9))
                if isinstance(value, int | float) and not isinstance(value, bool)
                else None
            )
        elif key in ("ts", "request_id", "event", "hook", "activation"):
            value = value if isinstance(value, str) and len(value) <= 64 else None
        else:  # provider/model descriptors: short names only, never URLs or paths
            value = value if _is_model_name(value) else None
        out[key] = value
    return out


def _is_model_name(value: Any) -> bool:
    """Model names like ``ministral-3:3b-cloud`` or ``mistralai/ministral-3-3b`` (no URL)."""
    if not isinstance(value, str) or not 0 < len(value) <= 120:
        return False
    if "://" in value or value.startswith(("/", "~", ".")) or "\\" in value or " " in value:
        return False
    return value.count("/") <= 1
