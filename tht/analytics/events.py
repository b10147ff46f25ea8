"""The ``RoutingEvaluator`` hook event (spec 000 §22.3–22.5): its closed vocabulary.

The routing hook appends one event per prompt to its JSONL log. This module names what analytics
may keep of it: the §22.5 allowlist (:data:`ALLOWED_FIELDS`), the forbidden fields, the closed
enums of §22.4 and of the provider contract (§15.2), what "looks like an identifier" means (no
spaces, no paths, no URLs, at most 128 characters), and the canonical timestamp text. The line-level
normalisation that applies them is :mod:`tht.analytics.normalize`. Pure; no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

from kernel.clock import format_ts
from modules.routing import gate as _gate
from modules.routing import telemetry as _telemetry

__all__ = [
    "ACTIVATIONS",
    "ALLOWED_FIELDS",
    "AMBIGUITY_REASONS",
    "CONFIDENCE_BUCKETS",
    "DECISIONS",
    "ENVELOPE_FIELDS",
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
    "is_identifier",
    "looks_like_id",
    "normalize_timestamp",
    "parse_bound",
]

EVENT_NAME: Final = "RoutingEvaluator"
UNKNOWN: Final = "unknown"

# The closed vocabularies the routing module writes (modules/routing/telemetry.py and gate.py are
# the single source: a value they may write is a value analytics keeps as itself).
EVALUATOR_STATUSES: Final = _telemetry.EVALUATOR_STATUSES  # §22.4
MODES: Final = _telemetry.MODES  # §17.4
DECISIONS: Final = _telemetry.DECISIONS  # §13.1
CONFIDENCE_BUCKETS: Final = _telemetry.CONFIDENCE_BUCKETS
FALLBACK_REASONS: Final = _telemetry.FALLBACK_REASONS  # §18.8, closed per §22.4
# §9.1 activation rules, plus the §9.2 / §9.5 non-activation reasons some writers put there.
AMBIGUITY_REASONS: Final = frozenset(_gate.ACTIVATION_REASONS) | frozenset(_gate.SKIP_REASONS)
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
# §9.3 / §17.2 activation policy of the evaluator (free text in the routing config: closed here).
ACTIVATIONS: Final = frozenset({"ambiguous-only", "sampled", "always", "never"})
# §15.2 provider profile contract.
PROVIDER_FAMILIES: Final = frozenset({"ollama", "lmstudio", "custom"})
PROVIDER_LOCATIONS: Final = frozenset({"local", "lan", "cloud"})
MODEL_VARIANTS: Final = frozenset({"instruct", "reasoning", "unknown"})
RESPONSE_FORMATS: Final = frozenset({"json-schema", "json-object", "prompt-json"})

# The hook event's envelope: analytics keeps these as columns of the event row (occurred_at, the
# event and hook names, request_id), never in metadata_json.
ENVELOPE_FIELDS: Final = ("ts", "event", "hook", "request_id")
# §22.5: the only fields metadata_json may hold, in this order: what the routing hook writes
# (modules/routing/telemetry.py's EVENT_FIELDS is the single source) less the envelope. A field the
# hook starts writing is kept only once tht/analytics/normalize.py says how to check it.
ALLOWED_FIELDS: Final = tuple(f for f in _telemetry.EVENT_FIELDS if f not in ENVELOPE_FIELDS)
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


# (low, high) clamps; a latency above ten minutes or a billion tokens is a broken counter.
def is_identifier(value: object) -> bool:
    """A catalog-style id: no spaces, not a path or URL, at most 128 characters."""
    if not isinstance(value, str):
        return False
    known = _IDENTIFIERS_SEEN.get(value)
    if known is None:
        known = looks_like_id(value)
        if len(_IDENTIFIERS_SEEN) >= 4096:  # ids repeat (profiles, models, skills): a small memo
            _IDENTIFIERS_SEEN.clear()
        _IDENTIFIERS_SEEN[value] = known
    return known


_IDENTIFIERS_SEEN: dict[str, bool] = {}


def looks_like_id(value: str) -> bool:
    """:func:`is_identifier` without the memo (for values that never repeat, like request ids)."""
    return _ID_RE.fullmatch(value) is not None and ":/" not in value and ".." not in value


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
    if len(value) == 24 and value[19] == "." and value[23] == "Z":
        return value  # already canonical (the hook writes this form): skip reformatting
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
