"""The evaluator plug of the routing pipeline (spec 000 §24.1 ``evaluateRoutingIfNeeded``).

:func:`hook_evaluator` is what the hook (and ``tht route eval --profile``) hands to
:func:`modules.routing.pipeline.run_routing` as ``evaluate``. Building it is cheap (standard
library only, nothing validated, nothing imported); the work happens only when the ambiguity gate
asks for an evaluation:

1. configuration validated (§17.5; invalid → ``config-invalid``, routing stays deterministic);
2. shadow sampling (``not-sampled``), light-mode skip;
3. sensitive-skip for a profile classified cloud (§21.3) → ``skipped-sensitive``;
4. circuit breaker (§19.3) → ``circuit-open``;
5. context built: minimized, redacted input (§8.4);
6. cache (§20) → ``cache-hit`` (the stored evaluation is validated again before use);
7. one call to the profile's OpenAI-compatible endpoint — no retry, no failover;
8. output parsed and validated (§13.4) → ``invalid-output`` when anything is off;
9. the validated evaluation goes back to the pipeline, whose policy resolver alone decides
   (and only in ``boost-only``/``hybrid`` mode) — ``completed`` or ``low-confidence``.

Every failure is a closed ``evaluator_status`` (§22.4) and *no* evaluation: the deterministic
result stands. The telemetry fields returned are the allowlisted ones of §22.3 — never the prompt,
the raw response, an error body, a header or a key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modules.routing.evaluator.modes import peek

if TYPE_CHECKING:
    from datetime import datetime

    from kernel.llm.abort import AbortSignal
    from modules.routing.evaluator.client import OpenAICompatibleEvaluatorClient
    from modules.routing.evaluator.config import EvaluatorSettings
    from modules.routing.gate import GateVerdict
    from modules.routing.pipeline import EvaluatorOutcome
    from modules.routing.router import Routing

__all__ = ["STATUS_BY_PROVIDER_ERROR", "RoutingEvaluatorPlug", "hook_evaluator"]

STATUS_BY_PROVIDER_ERROR: dict[str, str] = {
    "timeout": "timeout",
    "aborted": "timeout",
    "network-error": "network-error",
    "auth-error": "auth-error",
    "rate-limited": "rate-limited",
    "model-unavailable": "model-unavailable",
    "http-error": "http-error",
    "invalid-response": "invalid-output",
    "response-too-large": "invalid-output",
    "missing-credential": "config-invalid",
}
BREAKER_FILE = "routing-evaluator-circuit.json"
CACHE_FILE = "routing-evaluator-cache.json"


def _utc_now() -> datetime:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _random() -> float:
    import random

    return random.random()


def _confidence_bucket(confidence: float, minimum: float) -> str:
    if confidence < minimum:
        return "low"
    return "high" if confidence >= 0.85 else "medium"


class RoutingEvaluatorPlug:
    """``evaluate(routing, verdict) -> EvaluatorOutcome`` with its capabilities injected.

    ``state_dir`` holds the breaker and cache files (``<data>/cache`` in the hook); ``client``
    overrides the transport (tests, benchmarks); ``clock`` and ``rng`` make sampling and
    timestamps deterministic in tests. ``catalog_fingerprint`` is set by the caller once the
    catalog is open (it is part of the cache key, §20.2).
    """

    def __init__(
        self,
        section: Mapping[str, Any] | None,
        environ: Mapping[str, str],
        *,
        state_dir: str | Path | None = None,
        client: OpenAICompatibleEvaluatorClient | None = None,
        clock: Callable[[], datetime] | None = None,
        rng: Callable[[], float] | None = None,
        abort: AbortSignal | None = None,
        home: str | None = None,
        abort_factory: Callable[[], AbortSignal] | None = None,
    ) -> None:
        self.section = dict(section or {})
        self.environ = environ
        self.enabled, self.mode = peek(self.section, environ)
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.catalog_fingerprint = ""
        self.abort = abort
        self._abort_factory = abort_factory  # e.g. SIGTERM → abort, set up at the first call
        self.home = home if home is not None else environ.get("HOME")
        self._client = client
        self._clock = clock or _utc_now
        self._rng = rng or _random
        self._settings: EvaluatorSettings | None = None
        self._settings_error = False

    # -- lazily built capabilities -----------------------------------------------------------

    def settings(self) -> EvaluatorSettings | None:
        """The validated configuration, or ``None`` when it is invalid (equivalent to off)."""
        if self._settings is None and not self._settings_error:
            from kernel.errors import UsageError
            from modules.routing.evaluator.config import load_settings

            try:
                self._settings = load_settings(self.section, self.environ)
            except UsageError:
                self._settings_error = True
        return self._settings

    def client(self) -> OpenAICompatibleEvaluatorClient:
        if self._client is None:
            from kernel.llm.client import OpenAICompatibleClient
            from modules.routing.evaluator.client import OpenAICompatibleEvaluatorClient

            self._client = OpenAICompatibleEvaluatorClient(OpenAICompatibleClient(env=self.environ))
        return self._client

    @property
    def gate_overrides(self) -> dict[str, Any]:
        """What the gate must know of this configuration (enabled, mode, topK, light-mode)."""
        out: dict[str, Any] = {"enabled": self.enabled, "mode": self.mode}
        for key in ("activation", "topK", "ambiguityMargin"):
            if key in self.section:
                out[key] = self.section[key]
        policy = self.section.get("policy")
        if isinstance(policy, Mapping) and "skipEvaluatorInLightMode" in policy:
            out["skipEvaluatorInLightMode"] = bool(policy["skipEvaluatorInLightMode"])
        return out

    # -- the plug ----------------------------------------------------------------------------

    def __call__(self, routing: Routing, verdict: GateVerdict) -> EvaluatorOutcome:
        from modules.routing.pipeline import EvaluatorOutcome

        if not self.enabled or self.mode == "off":
            return EvaluatorOutcome(status="disabled", mode="off")
        settings = self.settings()
        if settings is None:
            return EvaluatorOutcome(
                status="config-invalid", mode="off", telemetry={"fallback_reason": "no-evaluation"}
            )
        return self._evaluate(routing, verdict, settings)

    def _telemetry(self, settings: EvaluatorSettings) -> dict[str, Any]:
        from modules.routing.evaluator.contracts import PROMPT_CONTRACT_VERSION

        profile = settings.profile
        meta = profile.model_metadata
        return {
            "provider_profile": profile.id,
            "provider_family": profile.family,
            "provider_location": profile.location,
            "model": profile.model,
            "model_family": meta.family,
            "model_parameter_class": meta.parameter_class,
            "model_variant": meta.variant,
            "model_quantization": meta.quantization,
            "evaluator_profile_version": meta.evaluator_profile_version,
            "prompt_contract_version": PROMPT_CONTRACT_VERSION,
            "response_format": profile.response_format,
        }

    def _evaluate(
        self, routing: Routing, verdict: GateVerdict, settings: EvaluatorSettings
    ) -> EvaluatorOutcome:
        from kernel.llm.redaction import detect_sensitive, redact_prompt
        from modules.routing.evaluator.context import build_evaluation_input
        from modules.routing.pipeline import EvaluatorOutcome

        mode = settings.mode
        telemetry = self._telemetry(settings)

        def outcome(status: str, evaluation: Any = None, **extra: Any) -> EvaluatorOutcome:
            fields = {**telemetry, **extra}
            if evaluation is None:
                fields.setdefault("fallback_reason", "no-evaluation")
            return EvaluatorOutcome(
                status=status,
                mode=mode,
                evaluation=evaluation,
                telemetry=fields,
                policy=settings.policy.to_resolver(),
            )

        if mode == "shadow" and self._rng() >= settings.sampling_rate:
            return outcome("not-sampled")
        light = routing.prompt.context_mode == "light"
        if light and settings.policy.skip_evaluator_in_light_mode and mode != "force-evaluate":
            return outcome("skipped-light-mode")
        text = routing.prompt.text
        if settings.profile.location == "cloud" and detect_sensitive(text):
            return outcome("skipped-sensitive", sensitive_skip=True)

        breaker = self._breaker(settings)
        provider_key = settings.profile.provider_key
        if breaker is not None and not breaker.state(provider_key).allows_call:
            return outcome("circuit-open")

        redacted = redact_prompt(text, max_chars=settings.limits.max_prompt_chars, home=self.home)
        by_id = {c.id: c for c in routing.candidates}
        shortlisted = [by_id[i] for i in verdict.candidate_ids if i in by_id]
        if not shortlisted:  # force-evaluate on a prompt the gate did not shortlist
            shortlisted = routing.ranked("skill")[: settings.top_k]
        evaluation_input = build_evaluation_input(
            request_id="routing-" + os.urandom(4).hex(),
            prompt=redacted.text,
            language=routing.language,
            context_mode=routing.prompt.context_mode,
            ambiguity_reasons=verdict.reasons,
            shortlisted=shortlisted,
            mcps=routing.ranked("mcp"),
            top_k=settings.top_k,
            max_skill_suggestions=settings.policy.max_skill_suggestions,
            max_mcp_suggestions=settings.policy.max_mcp_suggestions,
        )
        return self._consult(evaluation_input, settings, breaker, outcome)

    def _consult(
        self,
        evaluation_input: Any,
        settings: EvaluatorSettings,
        breaker: Any,
        outcome: Callable[..., EvaluatorOutcome],
    ) -> EvaluatorOutcome:
        from kernel.llm.errors import ProviderError
        from modules.routing.evaluator.parser import parse_evaluator_output

        constraints = evaluation_input.constraints
        cache = self._cache(settings)
        key = self.cache_key(evaluation_input, settings) if cache is not None else ""
        if cache is not None:
            stored = cache.get(key)
            if stored is not None:
                again = parse_evaluator_output(json.dumps(stored), constraints)
                if again.evaluation is not None:
                    return self._done(again.evaluation, settings, outcome, cache_hit=True)

        provider_key = settings.profile.provider_key
        if self.abort is None and self._abort_factory is not None:
            self.abort = self._abort_factory()
        try:
            answer = self.client().evaluate(
                evaluation_input,
                settings.profile,
                timeout_ms=settings.limits.timeout_ms,
                max_output_tokens=settings.limits.max_output_tokens,
                max_response_bytes=max(4 * settings.limits.max_response_chars, 16_384),
                abort=self.abort,
            )
        except ProviderError as err:
            if breaker is not None:
                breaker.record_failure(provider_key, err.kind)
            return outcome(STATUS_BY_PROVIDER_ERROR.get(err.kind, "unexpected-error"))
        if breaker is not None:
            breaker.record_success(provider_key)
        usage = answer.usage
        measured = {
            "latency_ms": answer.latency_ms,
            "input_tokens": usage.input_tokens if usage else None,
            "output_tokens": usage.output_tokens if usage else None,
        }
        parsed = parse_evaluator_output(
            answer.raw_text, constraints, max_chars=settings.limits.max_response_chars
        )
        if parsed.evaluation is None:
            reason = "unknown-id" if parsed.rejection == "unknown-id" else "no-evaluation"
            return outcome("invalid-output", fallback_reason=reason, **measured)
        if cache is not None:
            cache.put(key, parsed.evaluation.to_json())
        return self._done(parsed.evaluation, settings, outcome, **measured)

    def _done(
        self,
        evaluation: Any,
        settings: EvaluatorSettings,
        outcome: Callable[..., EvaluatorOutcome],
        **extra: Any,
    ) -> EvaluatorOutcome:
        minimum = settings.policy.minimum_confidence
        status = "low-confidence" if evaluation.confidence < minimum else "completed"
        if extra.get("cache_hit"):
            status = "cache-hit" if status == "completed" else status
        return outcome(
            status,
            evaluation.to_json(),
            decision=evaluation.decision,
            confidence_bucket=_confidence_bucket(evaluation.confidence, minimum),
            **extra,
        )

    # -- resilience --------------------------------------------------------------------------

    def _breaker(self, settings: EvaluatorSettings) -> Any:
        if self.state_dir is None:
            return None
        from kernel.llm.breaker import CircuitBreaker

        return CircuitBreaker(
            self.state_dir / BREAKER_FILE, settings=settings.breaker, clock=self._clock
        )

    def _cache(self, settings: EvaluatorSettings) -> Any:
        if self.state_dir is None or not settings.cache.enabled:
            return None
        from kernel.llm.cache import ResultCache

        return ResultCache(
            self.state_dir / CACHE_FILE,
            ttl_s=settings.cache.ttl_seconds,
            max_entries=settings.cache.max_entries,
            clock=self._clock,
        )

    def cache_key(self, evaluation_input: Any, settings: EvaluatorSettings) -> str:
        """§20.2: sha256 of the redacted prompt, the catalog fingerprint, the candidate cards
        actually sent, provider, model, contract version and policy fingerprint."""
        import hashlib

        payload = evaluation_input.to_json()
        payload.pop("requestId", None)
        material = "\x1f".join(
            (
                json.dumps(payload, sort_keys=True, ensure_ascii=False),
                self.catalog_fingerprint,
                settings.profile.id,
                settings.profile.model,
                str(evaluation_input.schema_version),
                settings.fingerprint(),
            )
        )
        return hashlib.sha256(material.encode("utf-8")).hexdigest()


def hook_evaluator(
    settings: Mapping[str, Any],
    environ: Mapping[str, str],
    *,
    state_dir: str | Path | None = None,
    abort: AbortSignal | None = None,
    on_call: Callable[[], AbortSignal] | None = None,
) -> tuple[RoutingEvaluatorPlug, Any]:
    """The hook's entry point: ``(evaluate, environment)`` for ``run_routing``.

    Cheap by design: it validates nothing and imports nothing heavy (``on_call`` builds the
    AbortSignal — the hook's SIGTERM handler — only when a provider call is about to be made);
    the gate's environment is the default one (circuit, key, sensitivity and model checks happen
    inside ``evaluate``, and only for prompts the gate sends to it).
    """
    from modules.routing.gate import EvaluatorEnvironment

    plug = RoutingEvaluatorPlug(
        settings, environ, state_dir=state_dir, abort=abort, abort_factory=on_call
    )
    return plug, EvaluatorEnvironment()
