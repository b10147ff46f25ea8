"""The contract with the routing hook: what ``tht-route-hook`` really logs imports cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tht.analytics.hooklog import scan_hook_log
from tht.analytics.routing_query import RoutingEvaluatorQuery, routing_evaluator
from tht.analytics.store import AnalyticsStore

from .conftest import NOW, every_text_value

REPO = Path(__file__).resolve().parents[3]
CATALOG = REPO / "golden" / "routing" / "compiled" / "tesisquare.pack"
SECRET = "SEEDED-PROMPT acme-secret-project password hunter2"
PROMPTS = [
    "rivedi il codice della pull request e analizza le query SQL lente",
    f"scrivi una query SQL per il report mensile {SECRET}",
    "ciao",
]


def _hook(home: Path, prompt: str, catalog: Path | None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(home)
    if catalog is not None:
        env["THT_ROUTING_CATALOG"] = str(catalog)
    done = subprocess.run(
        [sys.executable, "-c", "from tht.hooks.route_hook import main; main()"],
        input=json.dumps({"prompt": prompt, "cwd": str(home)}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_hook_event_imports_with_no_normalisation_and_no_prompt(
    store: AnalyticsStore, tmp_path: Path
) -> None:
    home = tmp_path / "hook-home"
    for prompt in PROMPTS:
        _hook(home, prompt, CATALOG)
    _hook(home, PROMPTS[0], None)  # no catalog: the hook still logs one event (a fallback)
    log = home / "logs" / "route-hook.jsonl"
    report = scan_hook_log(store, log, now=NOW)
    assert (report.imported, report.invalid_lines, report.ignored_events) == (4, 0, 0)
    assert report.warnings == {}, report.warnings  # the hook writes exactly our vocabulary
    result = routing_evaluator(store.conn, RoutingEvaluatorQuery(group_by=("fallback_reason",)))
    assert result["totals"]["routing_decisions"] == 4
    assert "catalog-unavailable" in {g["fallback_reason"] for g in result["groups"]}
    values = every_text_value(store)
    assert [v for v in values if "SEEDED-PROMPT" in v or "hunter2" in v or str(home) in v] == []


def test_evaluator_events_from_the_real_hook_import_cleanly_and_add_up(
    store: AnalyticsStore, tmp_path: Path
) -> None:
    from tests.support.openai_server import Answer, OpenAITestServer, Stall, Status
    from tests.tht.routing_fixtures import (
        AMBIGUOUS_NO_HINT,
        CLEAR,
        HookRunner,
        build_catalog,
        evaluation,
    )

    hook = HookRunner(tmp_path, build_catalog(tmp_path / "catalog.pack"))
    with OpenAITestServer(flavor="ollama", models=["ministral-3:3b"]) as server:
        endpoint = server.base_url

        def configure(timeout_ms: int) -> None:
            hook.configure(
                {
                    "version": 2,
                    "enabled": True,
                    "mode": "shadow",
                    "activeProfile": "ollama-local",
                    "profiles": {"ollama-local": {"baseUrl": server.base_url}},
                    "limits": {"timeoutMs": timeout_ms},
                    "cache": {"enabled": False},
                }
            )

        steps = [  # in this order: a 429 opens the breaker, so it comes last
            Answer(
                content=evaluation("mcp-docs-navigator", reason="documentation-evidence-required")
            ),
            Answer(content=evaluation("mcp-invented-skill")),
            Stall(seconds=3),
            Status(429),
        ]
        for step in steps:
            # 400 ms only where the server stalls: on a loaded CI machine an answer may come
            # back after 400 ms and read as a timeout
            configure(400 if isinstance(step, Stall) else 2500)
            server.script(step)
            assert hook.run(AMBIGUOUS_NO_HINT).returncode == 0
        assert hook.run(CLEAR).returncode == 0
    report = scan_hook_log(store, hook.log, now=NOW)
    assert (report.imported, report.invalid_lines) == (5, 0)
    assert report.warnings == {}, report.warnings
    result = routing_evaluator(store.conn, RoutingEvaluatorQuery(group_by=("evaluator_status",)))
    statuses = {g["evaluator_status"]: g["totals"]["routing_decisions"] for g in result["groups"]}
    assert statuses == {
        "completed": 1,
        "invalid-output": 1,
        "rate-limited": 1,
        "timeout": 1,
        "not-ambiguous": 1,
    }
    totals, latency = result["totals"], result["latency_ms"]
    assert (totals["evaluator_invoked"], totals["completed"], totals["fallbacks"]) == (4, 1, 3)
    assert (totals["changed_top_shadow"], totals["changed_top_applied"]) == (1, 0)
    assert result["rates"]["disagreement_rate"] == 1.0
    assert latency["max"] is not None  # completed and failed calls report their latency
    (row,) = store.conn.execute(
        "SELECT provider_profile, provider_family, provider_location, model, response_format "
        "FROM routing_evaluations WHERE evaluator_status = 'completed'"
    ).fetchall()
    assert row == ("ollama-local", "ollama", "local", "ministral-3:3b", "json-object")
    assert [v for v in every_text_value(store) if endpoint in v or "127.0.0.1" in v] == []
