"""``tht route eval --profile P / --oracle``: the eval set through router + semantic evaluator
(spec 000 §16.7, §27.3–27.5), reported per profile, model and response format.

Imported by ``tht route eval`` only when one of those options is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["evaluator_runs"]


def _section() -> dict[str, Any]:
    from tht.commands.evaluator import evaluator_section

    section, _ = evaluator_section()
    return section


def evaluator_runs(
    inv: Any,
    pack: Any,
    cases: list[dict[str, Any]],
    *,
    profiles: list[str],
    oracle: bool,
    mode: str,
) -> None:
    from kernel.errors import UsageError
    from modules.routing.evaluator import RoutingEvaluatorPlug
    from modules.routing.evaluator.config import load_settings
    from modules.routing.evaluator.eval_runner import OracleEvaluator, compare_runs, run_cases
    from modules.routing.gate import GATE_CONFIG
    from modules.routing.pipeline import run_routing

    if mode not in ("boost-only", "hybrid"):
        raise UsageError(f"--mode: expected boost-only or hybrid, not {mode!r}")
    gate = {**GATE_CONFIG, "enabled": True, "mode": mode}
    baseline, _, invoked = run_cases(
        cases, lambda c: run_routing(c["prompt"], pack, gate_config=gate)
    )
    runs: list[dict[str, Any]] = []
    if oracle:
        judge = OracleEvaluator(mode=mode)

        def with_oracle(case: Mapping[str, Any]) -> Any:
            judge.case = case
            return run_routing(case["prompt"], pack, gate_config=gate, evaluate=judge)

        results, events, _ = run_cases(cases, with_oracle)
        runs.append({"evaluator": "oracle", **compare_runs(baseline, results, events, invoked)})

    for profile_id in profiles:
        section = {
            **_section(),
            "enabled": True,
            "mode": mode,
            "activeProfile": profile_id,
            "cloudOptIn": True,  # naming the profile on the command line is the opt-in
            "cache": {"enabled": False},
        }
        if mode == "hybrid":
            section["policy"] = {**(section.get("policy") or {}), "allowSoftSuppression": True}
        settings = load_settings(section, os.environ, source="routing.evaluator")  # exit 2 if bad
        plug = RoutingEvaluatorPlug(section, os.environ, state_dir=None)
        plug.catalog_fingerprint = pack.fingerprint
        profile_gate = {**gate, **plug.gate_overrides}

        def with_profile(case: Mapping[str, Any], plug: Any = plug, g: Any = profile_gate) -> Any:
            return run_routing(case["prompt"], pack, gate_config=g, evaluate=plug)

        results, events, _ = run_cases(cases, with_profile)
        runs.append(
            {
                "evaluator": "profile",
                "profile": settings.profile.id,
                "model": settings.profile.model,
                "responseFormat": settings.profile.response_format,
                "location": settings.profile.location,
                **compare_runs(baseline, results, events, invoked),
            }
        )
    body = {"catalog": pack.fingerprint, "cases": len(cases), "mode": mode, "runs": runs}
    inv.emit(body, human=_human(body))


def _human(body: dict[str, Any]) -> str:
    lines = [f"{body['cases']} cases, mode {body['mode']}, catalog {body['catalog'][:19]}…"]
    for run in body["runs"]:
        name = (
            "oracle"
            if run["evaluator"] == "oracle"
            else f"{run['profile']} / {run['model']} / {run['responseFormat']}"
        )
        det, hyb, amb, prov = (
            run["deterministic"],
            run["evaluated"],
            run["ambiguous"],
            run["provider"],
        )
        lines.append(f"[{name}]")
        lines.append(
            f"  precision@1 {det['precision_at_1']} → {hyb['precision_at_1']}   "
            f"recall@2 {det['recall_at_2']} → {hyb['recall_at_2']}   "
            f"none {det['none_accuracy']} → {hyb['none_accuracy']}   "
            f"FP rate {det['false_positive_rate']} → {hyb['false_positive_rate']}"
        )
        lines.append(
            f"  ambiguous cases {amb['cases']}: false positives "
            f"{amb['false_positives_deterministic']} → {amb['false_positives_evaluated']} "
            f"(reduction {amb['false_positive_reduction']}),"
            f" p@1 {amb['precision_at_1_deterministic']} → {amb['precision_at_1_evaluated']},"
            f" changed {amb['changed']}"
        )
        if run["evaluator"] == "profile":
            lines.append(
                f"  invoked {prov['invoked']}, JSON validity {prov['json_validity_rate']}, "
                f"latency p50 {prov['latency_ms_p50']} ms p95 {prov['latency_ms_p95']} ms, "
                f"tokens {prov['input_tokens']} in / {prov['output_tokens']} out, "
                f"statuses {prov['statuses']}"
            )
    return "\n".join(lines)
