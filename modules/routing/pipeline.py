"""One prompt through the whole routing (spec 000 §7, §23.1): the function the hook and the
commands call.

    hotwords → deterministic router → ambiguity gate → (optional evaluator) → policy resolver
    → renderer → telemetry event

The evaluator is a plug point, not an import: ``evaluate`` is a callable the caller passes only
when one is configured (the hook imports ``modules.routing.evaluator`` lazily, and only then). It
receives the routing and the gate verdict and returns an :class:`EvaluatorOutcome`; whatever it
does, the deterministic result stands unless the policy resolver accepts a validated evaluation.
An exception inside it is a fallback (``unexpected-error``), never an error for the user.
"""

from __future__ import annotations

from modules.routing.gate import GATE_CONFIG, EvaluatorEnvironment, GateVerdict, assess_ambiguity
from modules.routing.policy import Resolution, resolve
from modules.routing.render import render_hints
from modules.routing.router import Routing, route
from modules.routing.telemetry import build_event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from modules.routing.pack import CatalogPack

__all__ = ["EvaluatorOutcome", "Outcome", "run_routing"]


class EvaluatorOutcome:
    """What an evaluator hands back: a closed status, a *validated* evaluation (or None), the
    mode it ran in, and the allowlisted telemetry fields (§22.3: provider_profile, model, …)."""

    __slots__ = ("evaluation", "mode", "policy", "status", "telemetry")

    def __init__(
        self,
        *,
        status: str,
        mode: str,
        evaluation: Mapping[str, Any] | None = None,
        telemetry: Mapping[str, Any] | None = None,
        policy: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.mode = mode
        self.evaluation = evaluation
        self.telemetry = dict(telemetry or {})
        self.policy = dict(policy) if policy else None  # the evaluator's policy (§17.2)


Evaluate = "Callable[[Routing, GateVerdict], EvaluatorOutcome]"


class Outcome:
    __slots__ = ("context", "event", "resolution", "routing", "verdict")

    def __init__(
        self,
        routing: Routing,
        verdict: GateVerdict,
        resolution: Resolution,
        context: str,
        event: dict[str, Any],
    ) -> None:
        self.routing = routing
        self.verdict = verdict
        self.resolution = resolution
        self.context = context
        self.event = event

    def explain(self) -> dict[str, Any]:
        """Every diagnostic (``tht route explain``); building it never changes the result."""
        return {
            "routing": self.routing.diagnostics(),
            "gate": self.verdict.to_json(),
            "evaluatorStatus": self.event["evaluator_status"],
            "resolution": self.resolution.to_json(),
            "additionalContext": self.context,
        }

    def hints(self) -> list[dict[str, Any]]:
        return [{"id": h.id, "kind": h.kind, "role": h.role} for h in self.resolution.hints]


def run_routing(
    prompt: str,
    pack: CatalogPack,
    *,
    context_extensions: Iterable[str] = (),
    gate_config: Mapping[str, Any] | None = None,
    evaluate: Callable[[Routing, GateVerdict], EvaluatorOutcome] | None = None,
    environment: EvaluatorEnvironment | None = None,
    ts: str = "",
    request_id: str = "",
    semantic: Callable[[Routing, Resolution], Any] | None = None,
) -> Outcome:
    """Route one prompt end to end (pure unless ``evaluate`` or ``semantic`` does I/O).

    ``semantic``: the semantic rescue (:func:`modules.routing.semantic.semantic_plug`), asked
    only when the resolution has no hint; the candidate it returns becomes the primary hint."""
    gate_cfg = gate_config or GATE_CONFIG
    routing = route(prompt, pack.lookup_many, pack.target, context_extensions=context_extensions)
    verdict = assess_ambiguity(routing, config=gate_cfg, environment=environment)
    outcome_eval: EvaluatorOutcome | None = None
    forced = gate_cfg.get("mode") == "force-evaluate" and bool(gate_cfg.get("enabled"))
    if evaluate is not None and (verdict.invoke or (forced and routing.candidates)):
        try:
            outcome_eval = evaluate(routing, verdict)
        except Exception:  # the evaluator never breaks routing (§19.1)
            outcome_eval = EvaluatorOutcome(status="unexpected-error", mode="off")
    resolution = resolve(
        routing,
        verdict,
        evaluation=outcome_eval.evaluation if outcome_eval else None,
        mode=outcome_eval.mode if outcome_eval else str(gate_cfg.get("mode", "off")),
        policy=outcome_eval.policy if outcome_eval else None,
        agents_for=lambda skill_id: _agents_for(pack, skill_id),
    )
    if semantic is not None and not resolution.hints:
        try:
            rescued = semantic(routing, resolution)
        except Exception:  # the rescue never breaks routing, like the evaluator (§19.1)
            rescued = None
        if rescued is not None:
            from modules.routing.semantic import apply_rescue

            apply_rescue(resolution, rescued)
    context = render_hints(
        resolution.hints,
        language=routing.language,
        context_mode=routing.prompt.context_mode,
        explicit="explicit-user-choice" in resolution.reason_codes,
    )
    telemetry: dict[str, Any] | None = None
    if outcome_eval is not None:
        telemetry = {**outcome_eval.telemetry, "evaluator_status": outcome_eval.status}
    event = build_event(
        ts=ts,
        request_id=request_id,
        verdict=verdict,
        resolution=resolution,
        config=gate_cfg,
        candidate_count=len(verdict.candidate_ids),
        evaluator=telemetry,
    )
    return Outcome(routing, verdict, resolution, context, event)


def _agents_for(pack: CatalogPack, skill_id: str) -> list[dict[str, Any]]:
    postings = pack.lookup_many([f"agent:{skill_id}", "agent:*"])
    seen: dict[int, dict[str, Any]] = {}
    for entries in postings.values():
        for entry in entries:
            seen.setdefault(int(entry[0]), pack.target(int(entry[0])))
    return [seen[i] for i in sorted(seen)]
