"""An agent in the same shell tries to claim F7 (ARCHITECTURE §3.8–3.9): through the CLI, and by
appending well-chained lines to the ledger directly. ``result_verified`` is tht's own record
(``module:core``); every forgery below is caught by the replay (exit 7) and refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adversarial.test_ledger_forgery import append_forged, cli_env, draft, tht, verify_json
from tests.golden import scenarios as sc

VERIFIED = {"rows": 3, "ok": True, "checks": ["non_empty"]}


@pytest.fixture
def at_f7(tmp_path: Path) -> tuple[Path, str]:
    ws = tmp_path / "ws"
    run = sc.make_kernel(ws)
    sc.start(run)
    sc.through_f6(run)
    return ws, run.session


def _stage_of(ws: Path, session: str) -> str:
    done = tht(ws, "session", "status", session, "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["current_stage"])


@pytest.mark.parametrize(
    "proposal",
    [
        {"kind": "auto", "events": [{"type": "result_verified", "payload": {"rows": 3}}]},
        {"kind": "auto", "events": []},
        {"kind": "confirm"},
    ],
    ids=["claim", "empty_auto", "confirm"],
)
def test_the_cli_refuses_an_agent_claiming_f7(
    at_f7: tuple[Path, str], tmp_path: Path, proposal: dict
) -> None:
    ws, session = at_f7
    path = tmp_path / "p.json"
    path.write_text(json.dumps(proposal))
    env = {**cli_env(ws), "THT_ACTOR": "agent"}
    done = tht(ws, "propose", "verification", "--file", str(path), session, "--json", env=env)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "tht stage run verification" in done.stderr
    assert _stage_of(ws, session) == "verification"


@pytest.mark.parametrize(
    "batch",
    [
        # the agent writes the verification line itself
        lambda: [
            draft(
                "stage_started",
                "kernel",
                "verification",
                {},
                invocation="verification#1",
                attempt=1,
            ),
            draft(
                "result_verified", "agent", "verification", VERIFIED, invocation="verification#1"
            ),
            draft(
                "stage_completed",
                "kernel",
                "verification",
                {"via": "auto"},
                invocation="verification#1",
            ),
        ],
        # …or closes F7 with no verification at all
        lambda: [
            draft(
                "stage_started",
                "kernel",
                "verification",
                {},
                invocation="verification#1",
                attempt=1,
            ),
            draft(
                "stage_completed",
                "kernel",
                "verification",
                {"via": "auto"},
                invocation="verification#1",
            ),
        ],
        # …or impersonates the verifier but records a failure and completes anyway
        lambda: [
            draft(
                "stage_started",
                "kernel",
                "verification",
                {},
                invocation="verification#1",
                attempt=1,
            ),
            draft(
                "result_verified",
                "module:core",
                "verification",
                {"rows": 0, "ok": False, "reason": "timeout"},
                invocation="verification#1",
            ),
            draft(
                "stage_completed",
                "kernel",
                "verification",
                {"via": "auto"},
                invocation="verification#1",
            ),
        ],
    ],
    ids=["agent_line", "no_verification", "failed_but_completed"],
)
def test_forged_verification_lines_are_caught(at_f7: tuple[Path, str], batch) -> None:
    ws, session = at_f7
    folder = ws / "sessions" / session
    seqs = append_forged(folder, session, batch())
    code, body = verify_json(ws, session)
    assert code == 7, body
    problems = {(p["seq"], p["code"]) for p in body["problems"]}
    assert problems & {(s, "module_decision") for s in seqs}, body["problems"]
    done = tht(ws, "session", "pause", session, "--as", "human:ann", "--json")
    assert done.returncode == 7  # no append on a ledger that does not verify
