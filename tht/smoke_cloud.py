"""``make smoke-cloud``: the Ollama Cloud connectivity spike of spec 000 §29 (work package 6.1).

Run by hand only (it is not part of ``make test``; it needs the network and a key). Without
``OLLAMA_API_KEY`` it prints ``skipped`` and exits 0. Otherwise, against the ``ollama-cloud``
profile (``MCP_ROUTING_EVALUATOR_BASE_URL`` / ``_MODEL`` may override it):

1. ``GET /v1/models``: authentication and presence of the model;
2. a minimal ``POST /v1/chat/completions``;
3. a request with the evaluator contract (the spec's §12.5 example input), parsed and validated;
4. a call with a 1 ms deadline, which must fail as ``timeout`` — the deterministic fallback.

It prints one line per step and a JSON summary holding only provider, model, latency, status,
schema validity and fallback (never the key, the prompt or the response) and exits 1 with a
diagnostic on authentication, timeout, missing model or invalid output.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["main"]


def _example_input() -> Any:
    from modules.routing.evaluator.contracts import (
        REASON_CODES,
        EvaluationConstraints,
        McpCandidate,
        RoutingCandidate,
        RoutingEvaluationInput,
    )

    return RoutingEvaluationInput(
        request_id="routing-smoke0001",
        prompt="Verifica il diff rispetto ai requisiti e segnala regressioni.",
        prompt_language="it",
        routing_mode="full",
        ambiguity_reasons=("small-top-score-gap", "category-overlap"),
        candidates=(
            RoutingCandidate(
                id="mcp-code-reviewer",
                category="review",
                routing_role="specialist",
                semantic_summary="Revisiona modifiche, regressioni e conformità a requisiti.",
                capabilities=("diff-review", "spec-compliance"),
                not_for=("broad-multi-source-reconstruction",),
                deterministic_score=8,
                deterministic_rank=1,
                matched_signals=("diff", "requisiti", "regressioni"),
                matched_intent_ids=(),
                soft_warnings=(),
            ),
            RoutingCandidate(
                id="mcp-technical-analyst",
                category="analysis",
                routing_role="specialist",
                semantic_summary="Ricostruisce problemi tecnici usando più fonti ed evidenze.",
                capabilities=("multi-source-analysis",),
                not_for=("single-diff-static-review",),
                deterministic_score=7,
                deterministic_rank=2,
                matched_signals=("requisiti", "regressioni"),
                matched_intent_ids=(),
                soft_warnings=(),
            ),
        ),
        mcp_candidates=(
            McpCandidate(
                id="git-node",
                semantic_summary="Accede a diff e cronologia Git.",
                capabilities=("git-diff", "commit-inspection"),
                availability="configured",
            ),
        ),
        constraints=EvaluationConstraints(
            allowed_skill_ids=("mcp-code-reviewer", "mcp-technical-analyst"),
            allowed_mcp_ids=("git-node",),
            allowed_reason_codes=REASON_CODES,
        ),
    )


def main() -> int:
    if not os.environ.get("OLLAMA_API_KEY", "").strip():
        print("smoke-cloud: skipped (OLLAMA_API_KEY is not set)")
        return 0
    from kernel.errors import UsageError
    from kernel.llm.client import ChatMessage, OpenAICompatibleClient
    from kernel.llm.errors import ProviderError
    from kernel.llm.settings import ProfileEnvNames, resolve_profile
    from modules.routing.evaluator.client import OpenAICompatibleEvaluatorClient
    from modules.routing.evaluator.config import ENV_PREFIX
    from modules.routing.evaluator.parser import parse_evaluator_output

    try:
        profile = resolve_profile(
            "ollama-cloud",
            file_profiles=None,
            layers=[ProfileEnvNames.with_prefix(ENV_PREFIX).read(os.environ)],
            env=os.environ,
            source="environment",
            cloud_opt_in=True,  # running this by hand is the opt-in
        )
    except UsageError as err:
        print(f"smoke-cloud: FAILED (configuration: {err.message})")
        return 1
    transport = OpenAICompatibleClient(env=os.environ)
    summary: dict[str, Any] = {
        "provider_profile": profile.id,
        "provider_location": profile.location,
        "model": profile.model,
        "response_format": profile.response_format,
    }

    def fail(step: str, why: str) -> int:
        summary.update(status="failed", failed_step=step, reason=why)
        print(f"smoke-cloud: FAILED at {step}: {why}")
        print(json.dumps(summary, sort_keys=True))
        return 1

    health = transport.health(profile, timeout_ms=5000)
    print(f"1. GET /models: {health.status} ({health.latency_ms} ms)")
    if not health.ok:
        return fail(
            "models",
            health.status + (f" HTTP {health.status_class}" if health.status_class else ""),
        )

    try:
        minimal = transport.chat(
            profile,
            [ChatMessage("user", 'Reply with exactly this JSON object: {"ok": true}')],
            max_tokens=20,
            timeout_ms=10_000,
        )
    except ProviderError as err:
        return fail("minimal-chat", str(err))
    print(f"2. minimal chat: ok ({minimal.latency_ms} ms)")

    evaluator = OpenAICompatibleEvaluatorClient(transport)
    example = _example_input()
    try:
        answer = evaluator.evaluate(example, profile, timeout_ms=10_000)
    except ProviderError as err:
        return fail("evaluation", str(err))
    parsed = parse_evaluator_output(answer.raw_text, example.constraints)
    usage = answer.usage
    summary.update(
        latency_ms=answer.latency_ms,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        schema_valid=parsed.ok,
        rejection=parsed.rejection,
    )
    print(
        f"3. evaluator contract: {'valid' if parsed.ok else 'INVALID ' + str(parsed.rejection)}"
        f" ({answer.latency_ms} ms)"
    )
    if not parsed.ok:
        return fail("validation", f"output rejected: {parsed.rejection} at {parsed.where}")

    try:
        evaluator.evaluate(example, profile, timeout_ms=1)
        fallback = "no-timeout"
    except ProviderError as err:
        fallback = err.kind
    print(f"4. 1 ms deadline: {fallback} → deterministic fallback")
    summary.update(fallback_check=fallback, status="completed")
    print(json.dumps(summary, sort_keys=True))
    return 0 if fallback in ("timeout", "network-error") else fail("fallback", fallback)


if __name__ == "__main__":
    sys.exit(main())
