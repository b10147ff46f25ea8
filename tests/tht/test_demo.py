"""``make demo`` works end to end: question to a finalized, verified session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_demo_drives_a_session_to_a_verified_finalization(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(tmp_path / "home")
    env["THT_DEMO_DIR"] = str(target)
    done = subprocess.run(
        [sys.executable, "-m", "tht.demo"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    assert "decision retract" in out
    assert "(review" in out and "--approve" in out
    assert "finalized at seq" in out
    assert "activated: generation" in out  # evidence published
    assert "tht search pack --stage schema_linking" in out
    assert "mcp-technical-analyst" in out  # the routing hook's hint
    assert "memory_promotion" in out.split("$ tht analytics sessions")[1]
    assert "\n$ tht ledger verify\nok: " in out
    sessions = [p for p in (target / "sessions").iterdir() if p.is_dir()]
    assert len(sessions) == 1
    status = subprocess.run(
        [sys.executable, "-m", "tht", "session", "status", sessions[0].name, "--json"],
        env={**env, "THT_WORKSPACE": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    body = json.loads(status.stdout)
    assert body["lifecycle"] == "finalized"
    states = {s["id"]: s["state"] for s in body["stages"]}
    assert states["memory_recall"] == states["datamart"] == "skipped"
    assert states["cte"] == states["sql"] == states["memory_promotion"] == "completed"
    log = subprocess.run(
        [sys.executable, "-m", "tht", "session", "log", sessions[0].name, "--json"],
        env={**env, "THT_WORKSPACE": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    types = [e["type"] for e in json.loads(log.stdout)]
    assert "decision_retracted" in types
    assert types.count("evidence_consulted") == 2
    assert "revision_requested" in types and "stage_reopened" in types
