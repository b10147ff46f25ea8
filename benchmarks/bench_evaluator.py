"""The semantic evaluator's costs (issue 4), each against a baseline measured in the same run.

1. **Non-ambiguous prompts through the hook process**: ``tht-route-hook`` with the evaluator
   enabled (boost-only, a local profile) against the same hook with it disabled (milestone A), on
   prompts the gate does not send to the evaluator. Target: p50 ratio ≤ 1.10 (nothing heavy is
   imported on that path).
2. **Evaluator overhead excluding server time**, in process: ``run_routing`` with the evaluator
   plug on ambiguous prompts, minus ``run_routing`` without it, with a client that answers
   instantly (context build + redaction + parse + validate + resolve). Target: p50 ≤ 15 ms.
3. The same ambiguous prompts against the real 127.0.0.1 test server, for reference: end-to-end
   minus the transport's measured latency.

Prompts and catalog: the real tesisquare catalog and eval set in ``golden/routing``.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "golden" / "routing" / "compiled" / "tesisquare.pack"
CASES = ROOT / "golden" / "routing" / "evals" / "tesisquare"
RUNS = int(os.environ.get("BENCH_RUNS", "30"))


def _prompts() -> tuple[list[str], list[str]]:
    """(non-ambiguous, ambiguous) prompts of the eval set, as the enabled gate sees them."""
    from modules.routing.gate import GATE_CONFIG
    from modules.routing.pack import open_pack
    from modules.routing.pipeline import run_routing

    pack = open_pack(PACK)
    gate = {**GATE_CONFIG, "enabled": True, "mode": "boost-only"}
    clear: list[str] = []
    ambiguous: list[str] = []
    for file in sorted(CASES.glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            prompt = json.loads(line)["prompt"]
            verdict = run_routing(prompt, pack, gate_config=gate).verdict
            (ambiguous if verdict.invoke else clear).append(prompt)
    return clear, ambiguous


def _hook_command() -> list[str]:
    script = Path(sys.executable).with_name("tht-route-hook")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tht.hooks.route_hook"]


def _time(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, env=env, check=False)
    return time.perf_counter() - start


def bench_hook(clear: list[str], work: Path) -> None:
    disabled = work / "disabled.yaml"
    disabled.write_text(f"routing:\n  catalog: {PACK}\n", encoding="utf-8")
    enabled = work / "enabled.yaml"
    enabled.write_text(
        f"routing:\n  catalog: {PACK}\n  evaluator:\n    version: 2\n    enabled: true\n"
        "    mode: boost-only\n    activeProfile: ollama-local\n",
        encoding="utf-8",
    )
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_ROUTING_")}
    envs = {
        "milestone A (evaluator off)": {
            **base_env,
            "THT_HOME": str(work / "home-a"),
            "THT_CONFIG": str(disabled),
        },
        "evaluator enabled": {
            **base_env,
            "THT_HOME": str(work / "home-b"),
            "THT_CONFIG": str(enabled),
        },
    }
    command = _hook_command()
    samples: dict[str, list[float]] = {name: [] for name in envs}
    picks = [clear[i * len(clear) // RUNS] for i in range(RUNS)]
    for env in envs.values():  # warm the config snapshot and the page cache
        _time(command, json.dumps({"prompt": picks[0]}).encode(), env)
    for prompt in picks:
        stdin = json.dumps({"prompt": prompt, "hook_event_name": "UserPromptSubmit"}).encode()
        for name, env in envs.items():  # interleaved, so drift hits both alike
            samples[name].append(_time(command, stdin, env))
    base = statistics.median(samples["milestone A (evaluator off)"])
    with_eval = statistics.median(samples["evaluator enabled"])
    print(f"hook, non-ambiguous prompts ({RUNS} runs each, interleaved)")
    for name, values in samples.items():
        print(f"  {name:28s} p50 {statistics.median(values) * 1000:7.1f} ms")
    print(f"  ratio enabled/milestone A    {with_eval / base:7.3f}   (target ≤ 1.10)")


class _InstantClient:
    """Answers at once with a valid evaluation naming the first shortlisted candidate."""

    def evaluate(self, evaluation_input: Any, profile: Any, **_: Any) -> Any:
        from kernel.llm.client import ChatCompletion
        from kernel.llm.wire import Usage

        first = evaluation_input.constraints.allowed_skill_ids[0]
        text = json.dumps(
            {
                "schemaVersion": 1,
                "decision": "single",
                "skills": [
                    {
                        "id": first,
                        "role": "primary",
                        "relevance": 0.9,
                        "reasonCode": "static-review",
                    }
                ],
                "mcps": [],
                "confidence": 0.9,
                "ambiguityResolved": True,
            }
        )
        return ChatCompletion(
            raw_text=text,
            model=profile.model,
            profile_id=profile.id,
            family=profile.family,
            location=profile.location,
            latency_ms=0,
            response_format_used=profile.response_format,
            finish_reason="stop",
            usage=Usage(100, 20, 120),
        )


def _routing_ms(prompts: list[str], pack: Any, gate: dict[str, Any], evaluate: Any) -> list[float]:
    from modules.routing.pipeline import run_routing

    out = []
    for prompt in prompts:
        start = time.perf_counter()
        run_routing(prompt, pack, gate_config=gate, evaluate=evaluate)
        out.append((time.perf_counter() - start) * 1000)
    return out


def bench_overhead(ambiguous: list[str], work: Path) -> None:
    from modules.routing.evaluator import RoutingEvaluatorPlug
    from modules.routing.gate import GATE_CONFIG
    from modules.routing.pack import open_pack
    from tests.support.openai_server import OpenAITestServer

    pack = open_pack(PACK)
    section = {"version": 2, "enabled": True, "mode": "boost-only", "cache": {"enabled": False}}
    gate = {**GATE_CONFIG, "enabled": True, "mode": "boost-only"}
    plug = RoutingEvaluatorPlug(section, {}, state_dir=work / "state", client=_InstantClient())  # type: ignore[arg-type]
    plug.catalog_fingerprint = pack.fingerprint
    rounds = max(1, 200 // max(1, len(ambiguous)))
    prompts = ambiguous * rounds
    _routing_ms(prompts[:10], pack, gate, plug)  # warm imports and settings
    _routing_ms(prompts[:10], pack, gate, None)
    base, evaluated = [], []
    for prompt in prompts:
        base += _routing_ms([prompt], pack, gate, None)
        evaluated += _routing_ms([prompt], pack, gate, plug)
    overhead = [e - b for e, b in zip(evaluated, base, strict=True)]
    print(f"evaluator overhead, ambiguous prompts ({len(prompts)} runs, instant client)")
    print(f"  routing without evaluator    p50 {statistics.median(base):7.2f} ms")
    print(f"  routing with evaluator       p50 {statistics.median(evaluated):7.2f} ms")
    print(
        f"  overhead (context + parse + validate + resolve + breaker file) "
        f"p50 {statistics.median(overhead):6.2f} ms  p95 "
        f"{sorted(overhead)[int(0.95 * (len(overhead) - 1))]:6.2f} ms   (target p50 ≤ 15 ms)"
    )

    with OpenAITestServer(models=["ministral-3:3b"]) as server:
        server.responder = lambda request: _answer_for(request)
        live = RoutingEvaluatorPlug(
            {**section, "profiles": {"ollama-local": {"baseUrl": server.base_url}}},
            {},
            state_dir=work / "state-live",
        )
        _routing_ms(ambiguous[:3], pack, gate, live)
        from modules.routing.pipeline import run_routing

        net = []
        for prompt in ambiguous[: min(len(ambiguous), 40)]:
            start = time.perf_counter()
            outcome = run_routing(prompt, pack, gate_config=gate, evaluate=live)
            total = (time.perf_counter() - start) * 1000
            net.append(total - float(outcome.event.get("latency_ms") or 0))
        print(
            f"  against the 127.0.0.1 server: end-to-end minus transport latency p50 "
            f"{statistics.median(net):6.2f} ms ({len(net)} runs)"
        )


def _answer_for(request: Any) -> Any:
    from tests.support.openai_server import Answer

    payload = json.loads(request.user_message.split("Evaluation input:\n", 1)[1])
    first = payload["constraints"]["allowedSkillIds"][0]
    body = {
        "schemaVersion": 1,
        "decision": "single",
        "skills": [
            {"id": first, "role": "primary", "relevance": 0.9, "reasonCode": "static-review"}
        ],
        "mcps": [],
        "confidence": 0.9,
        "ambiguityResolved": True,
    }
    return Answer(content=json.dumps(body))


def main() -> None:
    for package in ("kernel", "modules", "tht"):
        compileall.compile_dir(str(ROOT / package), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="tht-bench-evaluator-"))
    clear, ambiguous = _prompts()
    print(f"eval-set prompts: {len(clear)} non-ambiguous, {len(ambiguous)} ambiguous")
    bench_hook(clear, work)
    bench_overhead(ambiguous, work)


if __name__ == "__main__":
    main()
