"""The evaluator's configuration (spec 000 §17): the ``routing.evaluator`` section of the user
config file, environment variables (§17.3) and command-line overrides, in that order of
increasing strength, over built-in defaults.

Two readers:

- :func:`peek` — standard library only, for the hook's hot path: is the evaluator on, in which
  mode (``MCP_ROUTING_EVALUATOR_ENABLED=false`` or ``enabled: false`` rolls everything back to
  ``off``)? It never validates and never fails.
- :func:`load_settings` — the full validation of §17.5 (pydantic, imported on first use),
  including the active provider profile (``kernel.llm.settings``). It raises
  :class:`kernel.errors.UsageError` naming the file and field path; the hook turns that into
  mode ``off`` with ``evaluator_status = config-invalid`` (an invalid configuration equals off).

Section shape (camelCase, as in the spec's ``routing-evaluator.json``)::

    routing:
      evaluator:
        version: 2
        enabled: true
        mode: shadow              # off | shadow | observe | boost-only | hybrid
        activation: ambiguous-only
        activeProfile: ollama-local
        cloudOptIn: false         # a profile classified cloud needs this
        samplingRate: 1.0         # shadow mode: share of ambiguous prompts evaluated
        profiles: {...}           # kernel/llm profile entries, merged over the built-ins
        limits: {timeoutMs, maxPromptChars, maxCandidateCount, maxResponseChars, maxOutputTokens}
        policy: {minimumConfidence, minimumRelevance, maxSkillSuggestions, maxMcpSuggestions,
                 allowSoftSuppression, allowCandidateReordering, skipEvaluatorInLightMode}
        telemetry: {enabled, emitDecisionEventForNonInvokedPrompts}
        cache: {enabled, ttlSeconds, maxEntries}
        breaker: {failureThreshold, windowMs, openDurationMs, rateLimitOpenDurationMs,
                  authErrorOpenDurationMs}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kernel.config_errors import usage_error_from_validation
from kernel.errors import UsageError
from modules.routing.evaluator.modes import ENV_PREFIX, MODES, Mode, peek

if TYPE_CHECKING:
    from pydantic import BaseModel

    from kernel.llm.breaker import BreakerSettings
    from kernel.llm.profiles import ProviderProfile
    from kernel.llm.settings import ProfileOverrides

__all__ = [
    "ENV_PREFIX",
    "MODES",
    "CliOverrides",
    "EvaluatorSettings",
    "Limits",
    "Mode",
    "Policy",
    "load_settings",
    "peek",
]

DEFAULT_PROFILE = "ollama-local"

# Global ceilings (§17.5 "limiti cardinalità non superiori ai limiti globali").
MAX_TIMEOUT_MS = 2500
MIN_TIMEOUT_MS = 100
MAX_CANDIDATES = 5
MAX_SKILL_SUGGESTIONS = 2
MAX_MCP_SUGGESTIONS = 2


@dataclass(frozen=True)
class CliOverrides:
    """Non-sensitive overrides from a command line (strongest layer)."""

    profile: str | None = None
    base_url: str | None = None
    model: str | None = None
    response_format: str | None = None
    mode: str | None = None
    timeout_ms: int | None = None
    enabled: bool | None = None


@dataclass(frozen=True)
class Limits:
    timeout_ms: int = 1500
    max_prompt_chars: int = 6000
    max_candidate_count: int = 5
    max_response_chars: int = 8000
    max_output_tokens: int = 400


@dataclass(frozen=True)
class Policy:
    minimum_confidence: float = 0.7
    minimum_relevance: float = 0.65
    max_skill_suggestions: int = 2
    max_mcp_suggestions: int = 1
    allow_soft_suppression: bool = False
    allow_candidate_reordering: bool = False
    skip_evaluator_in_light_mode: bool = True

    def to_resolver(self) -> dict[str, Any]:
        """The keys the policy resolver reads (its own config names)."""
        return {
            "minimumConfidence": self.minimum_confidence,
            "minimumRelevance": self.minimum_relevance,
            "maxSkillHints": self.max_skill_suggestions,
            "allowSoftSuppression": self.allow_soft_suppression,
        }


@dataclass(frozen=True)
class CacheSettings:
    enabled: bool = True
    ttl_seconds: int = 900
    max_entries: int = 256


@dataclass(frozen=True)
class EvaluatorSettings:
    """A validated configuration. ``profile`` holds no key (only the variable's name)."""

    enabled: bool
    mode: Mode
    activation: Literal["ambiguous-only"]
    profile: ProviderProfile
    limits: Limits
    policy: Policy
    cache: CacheSettings
    breaker: BreakerSettings
    top_k: int
    sampling_rate: float = 1.0
    telemetry_enabled: bool = True
    emit_for_non_invoked: bool = True
    cloud_opt_in: bool = False
    warnings: tuple[str, ...] = field(default=())

    def fingerprint(self) -> str:
        """A digest of everything that changes what a cached evaluation means (§20.3: policy
        and model changes invalidate the cache). No secret is part of it."""
        import hashlib
        import json

        material = {
            "profile": self.profile.provider_key,
            "format": self.profile.response_format,
            "policy": self.policy.__dict__,
            "topK": self.top_k,
            "limits": [self.limits.max_prompt_chars, self.limits.max_candidate_count],
        }
        text = json.dumps(material, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _models() -> type[BaseModel]:
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

    class LimitsModel(_Strict):
        timeoutMs: int = Field(default=1500, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
        maxPromptChars: int = Field(default=6000, ge=200, le=16_000)
        maxCandidateCount: int = Field(default=5, ge=2, le=MAX_CANDIDATES)
        maxResponseChars: int = Field(default=8000, ge=500, le=32_000)
        maxOutputTokens: int = Field(default=400, ge=50, le=2000)

    class PolicyModel(_Strict):
        minimumConfidence: float = Field(default=0.7, ge=0, le=1)
        minimumRelevance: float = Field(default=0.65, ge=0, le=1)
        maxSkillSuggestions: int = Field(default=2, ge=1, le=MAX_SKILL_SUGGESTIONS)
        maxMcpSuggestions: int = Field(default=1, ge=0, le=MAX_MCP_SUGGESTIONS)
        allowSoftSuppression: bool = False
        allowCandidateReordering: bool = False
        skipEvaluatorInLightMode: bool = True

    class TelemetryModel(_Strict):
        enabled: bool = True
        storePromptText: Literal[False] = False
        storePromptHash: Literal[False] = False
        storeRawProviderResponse: Literal[False] = False
        emitDecisionEventForNonInvokedPrompts: bool = True

    class CacheModel(_Strict):
        enabled: bool = True
        ttlSeconds: int = Field(default=900, ge=1, le=86_400)
        maxEntries: int = Field(default=256, ge=1, le=10_000)

    class BreakerModel(_Strict):
        failureThreshold: int = Field(default=3, ge=1, le=100)
        windowMs: int = Field(default=60_000, ge=1000, le=3_600_000)
        openDurationMs: int = Field(default=300_000, ge=1000, le=86_400_000)
        rateLimitOpenDurationMs: int = Field(default=900_000, ge=1000, le=86_400_000)
        authErrorOpenDurationMs: int = Field(default=3_600_000, ge=1000, le=86_400_000)

    class Section(_Strict):
        version: Literal[2] = 2
        enabled: bool = False
        mode: Literal["off", "shadow", "observe", "boost-only", "hybrid", "force-evaluate"] = (
            "shadow"
        )
        activation: Literal["ambiguous-only"] = "ambiguous-only"
        activeProfile: str = Field(default=DEFAULT_PROFILE, min_length=1)
        cloudOptIn: bool = False
        samplingRate: float = Field(default=1.0, ge=0, le=1)
        topK: int = Field(default=5, ge=2, le=MAX_CANDIDATES)
        profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
        limits: LimitsModel = Field(default_factory=LimitsModel)
        policy: PolicyModel = Field(default_factory=PolicyModel)
        telemetry: TelemetryModel = Field(default_factory=TelemetryModel)
        cache: CacheModel = Field(default_factory=CacheModel)
        breaker: BreakerModel = Field(default_factory=BreakerModel)

        @model_validator(mode="after")
        def _coherent(self) -> Section:
            if self.topK > self.limits.maxCandidateCount:
                raise ValueError(
                    f"topK {self.topK} exceeds limits.maxCandidateCount "
                    f"{self.limits.maxCandidateCount}"
                )
            return self

    return Section


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """The §17.3 variables as section fields (values left as strings for pydantic)."""
    out: dict[str, Any] = {}
    mapping = {
        "ENABLED": ("enabled",),
        "MODE": ("mode",),
        "PROFILE": ("activeProfile",),
        "CLOUD_OPT_IN": ("cloudOptIn",),
        "TOP_K": ("topK",),
        "TIMEOUT_MS": ("limits", "timeoutMs"),
        "MIN_CONFIDENCE": ("policy", "minimumConfidence"),
    }
    for suffix, path in mapping.items():
        raw = env.get(f"{ENV_PREFIX}{suffix}", "").strip()
        if raw:
            _set(out, path, raw)
    return out


def _set(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            target[part] = nxt
        target = nxt
    target[path[-1]] = value


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def load_settings(
    section: Mapping[str, Any] | None,
    env: Mapping[str, str],
    *,
    cli: CliOverrides | None = None,
    source: str = "routing.evaluator",
) -> EvaluatorSettings:
    """Validate the configuration with precedence CLI > env > file > defaults (§17.1, §17.5).

    Raises :class:`UsageError` naming ``source`` and the field path; never includes a secret.
    """
    from pydantic import ValidationError

    from kernel.llm.breaker import BreakerSettings
    from kernel.llm.settings import ProfileEnvNames, ProfileOverrides, resolve_profile

    if section is not None and not isinstance(section, Mapping):
        raise UsageError(f"{source}: must be a mapping")
    raw: dict[str, Any] = dict(section or {})
    raw = _merge(raw, _env_layer(env))
    cli = cli or CliOverrides()
    cli_layer: dict[str, Any] = {}
    if cli.profile:
        cli_layer["activeProfile"] = cli.profile
    if cli.mode:
        cli_layer["mode"] = cli.mode
    if cli.enabled is not None:
        cli_layer["enabled"] = cli.enabled
    if cli.timeout_ms is not None:
        cli_layer["limits"] = {"timeoutMs": cli.timeout_ms}
    raw = _merge(raw, cli_layer)
    try:
        model = _models().model_validate(raw)
    except ValidationError as err:
        raise usage_error_from_validation(
            source, err.errors(include_input=False, include_url=False)
        ) from err
    data = model.model_dump()

    env_names = ProfileEnvNames.with_prefix(ENV_PREFIX)
    env_layer = env_names.read(env)
    layers: list[ProfileOverrides] = [
        env_layer,
        ProfileOverrides(
            base_url=cli.base_url, model=cli.model, response_format=cli.response_format
        ),
    ]
    profile = resolve_profile(
        data["activeProfile"],
        file_profiles=data["profiles"],
        layers=layers,
        env=env,
        source=source,
        cloud_opt_in=bool(data["cloudOptIn"]),
        opt_in_hint=(
            "set routing.evaluator.cloudOptIn: true (or MCP_ROUTING_EVALUATOR_CLOUD_OPT_IN=true)"
            " to allow it"
        ),
    )
    lim, pol, tel, cac, brk = (
        data["limits"],
        data["policy"],
        data["telemetry"],
        data["cache"],
        data["breaker"],
    )
    warnings: list[str] = []
    if profile.location == "lan" and profile.base_url.startswith("http://"):
        warnings.append("lan profile over plain http: put a TLS reverse proxy in front of it")
    return EvaluatorSettings(
        enabled=bool(data["enabled"]),
        mode=data["mode"] if data["enabled"] else "off",
        activation=data["activation"],
        profile=profile,
        limits=Limits(
            timeout_ms=lim["timeoutMs"],
            max_prompt_chars=lim["maxPromptChars"],
            max_candidate_count=lim["maxCandidateCount"],
            max_response_chars=lim["maxResponseChars"],
            max_output_tokens=lim["maxOutputTokens"],
        ),
        policy=Policy(
            minimum_confidence=pol["minimumConfidence"],
            minimum_relevance=pol["minimumRelevance"],
            max_skill_suggestions=pol["maxSkillSuggestions"],
            max_mcp_suggestions=pol["maxMcpSuggestions"],
            allow_soft_suppression=pol["allowSoftSuppression"],
            allow_candidate_reordering=pol["allowCandidateReordering"],
            skip_evaluator_in_light_mode=pol["skipEvaluatorInLightMode"],
        ),
        cache=CacheSettings(
            enabled=cac["enabled"], ttl_seconds=cac["ttlSeconds"], max_entries=cac["maxEntries"]
        ),
        breaker=BreakerSettings(
            failure_threshold=brk["failureThreshold"],
            window_ms=brk["windowMs"],
            open_duration_ms=brk["openDurationMs"],
            rate_limit_open_duration_ms=brk["rateLimitOpenDurationMs"],
            auth_error_open_duration_ms=brk["authErrorOpenDurationMs"],
        ),
        top_k=data["topK"],
        sampling_rate=data["samplingRate"],
        telemetry_enabled=tel["enabled"],
        emit_for_non_invoked=tel["emitDecisionEventForNonInvokedPrompts"],
        cloud_opt_in=bool(data["cloudOptIn"]),
        warnings=tuple(warnings),
    )
