"""``tht route eval --oracle / --profile`` (spec 000 §27.3–27.4) as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.openai_server import OpenAITestServer
from tests.tht.routing_fixtures import REPO, evaluation

PACK = REPO / "golden" / "routing" / "compiled" / "tesisquare.pack"
CASES = REPO / "golden" / "routing" / "evals" / "tesisquare" / "validation.jsonl"


def eval_run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {
        k: v for k, v in os.environ.items() if not k.startswith(("MCP_ROUTING_EVALUATOR_", "THT_"))
    }
    full.update({"THT_HOME": str(tmp_path / "home"), "THT_CONFIG": str(tmp_path / "config.yaml")})
    full.update(env or {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tht",
            "route",
            "eval",
            "--catalog",
            str(PACK),
            "--cases",
            str(CASES),
            *args,
        ],
        capture_output=True,
        text=True,
        env=full,
        check=False,
        timeout=120,
    )


def test_the_oracle_never_lowers_precision_and_cuts_ambiguous_false_positives(
    tmp_path: Path,
) -> None:
    done = eval_run(tmp_path, "--oracle", "--mode", "hybrid", "--json")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["evaluator"] == "oracle"
    det, hyb, amb = run["deterministic"], run["evaluated"], run["ambiguous"]
    assert hyb["precision_at_1"] >= det["precision_at_1"]
    assert amb["false_positives_evaluated"] <= amb["false_positives_deterministic"]
    assert amb["cases"] > 0


def test_a_live_profile_run_reports_validity_latency_and_tokens(tmp_path: Path) -> None:
    # a model that always answers the same valid-looking evaluation: mostly unknown ids
    with OpenAITestServer(
        models=["ministral-3:3b"], default_answer=evaluation("mcp-office-expert")
    ) as server:
        env = {"MCP_ROUTING_EVALUATOR_BASE_URL": server.base_url}
        done = eval_run(tmp_path, "--profile", "ollama-local", "--json", env=env)
        calls = len(server.chat_requests())
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["profile"], run["model"], run["responseFormat"]) == (
        "ollama-local",
        "ministral-3:3b",
        "json-object",
    )
    provider = run["provider"]
    assert provider["invoked"] == calls > 0
    assert 0 <= provider["json_validity_rate"] <= 1
    assert (
        provider["latency_ms_p50"] is not None
        and provider["latency_ms_p95"] >= provider["latency_ms_p50"]
    )
    assert provider["input_tokens"] > 0 and provider["output_tokens"] > 0
    assert sum(provider["statuses"].values()) == provider["invoked"]
