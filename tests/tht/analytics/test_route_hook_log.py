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
