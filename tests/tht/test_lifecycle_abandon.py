"""``tht session abandon`` (issue 10, item 6): the explicit end of a refused or blocked session.
An abandoned session is immutable like a finalized one, listed as ``abandoned``, and derivable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kernel import events as ev
from kernel.fold import fold
from kernel.workflow import default_workflow_path, load_workflow


def _tht(root: Path, *args: str, actor: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("THT_ACTOR", "THT_SESSION")}
    env.update(
        THT_WORKSPACE=str(root),
        THT_CLOCK="fixed:2026-01-01T00:00:00Z",
        THT_SEED="7",
        THT_HOME=str(root.parent / "home"),
    )
    if actor is not None:
        env["THT_ACTOR"] = actor
    return subprocess.run(
        [sys.executable, "-m", "tht", *args], env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def refused(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "ws"
    assert _tht(root, "workspace", "init", str(root)).returncode == 0
    done = _tht(root, "session", "new", "??? !!! 123", "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["admitted"] is False
    return root, body["session"]


def test_a_refused_session_can_be_abandoned_and_then_accepts_nothing(
    refused: tuple[Path, str],
) -> None:
    root, session = refused
    done = _tht(
        root, "session", "abandon", session, "--reason", "garbage", "--as", "human:ann", "--json"
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["lifecycle"] == "abandoned"
    assert [e["type"] for e in body["events"]] == ["session_abandoned"]
    log = json.loads(_tht(root, "session", "log", session, "--json").stdout)
    assert log[-1]["payload"] == {"reason": "garbage"}
    assert log[-1]["actor"] == "human:ann" and log[-1]["stage"] is None

    ledger = root / "sessions" / session / "ledger.jsonl"
    before = ledger.read_bytes()
    for argv in (
        ("session", "abandon", session, "--reason", "again", "--as", "human:ann"),
        ("session", "pause", session, "--as", "human:ann"),
        ("session", "finalize", session, "--as", "human:ann"),
        ("stage", "skip", "memory_recall", session, "--reason", "r", "--as", "human:ann"),
        ("decision", "retract", "3", session, "--reason", "r", "--as", "human:ann"),
    ):
        attempt = _tht(root, *argv)
        assert attempt.returncode == 5, (argv, attempt.stderr)
        assert "abandoned" in attempt.stderr
    assert ledger.read_bytes() == before

    listed = json.loads(_tht(root, "session", "list", "--json").stdout)
    assert [(r["session"], r["lifecycle"]) for r in listed] == [(session, "abandoned")]
    verified = json.loads(_tht(root, "ledger", "verify", session, "--json").stdout)
    assert verified["ok"] is True, verified

    derived = _tht(root, "session", "derive", session, "--as", "human:ann", "--json")
    assert derived.returncode == 0, derived.stderr
    assert json.loads(derived.stdout)["derived_from"] == session


def test_abandon_is_human_only_and_needs_a_reason(refused: tuple[Path, str]) -> None:
    root, session = refused
    assert _tht(root, "session", "abandon", session, "--as", "human:ann").returncode == 2
    agent = _tht(
        root, "session", "abandon", session, "--reason", "r", "--as", "human:ann", actor="agent"
    )
    assert agent.returncode == 5
    assert _tht(root, "session", "abandon", session, "--reason", "r").returncode == 2
    status = json.loads(_tht(root, "session", "status", session, "--json").stdout)
    assert status["lifecycle"] == "active"


def test_an_event_after_session_abandoned_is_an_integrity_issue(
    refused: tuple[Path, str],
) -> None:
    root, session = refused
    assert (
        _tht(root, "session", "abandon", session, "--reason", "r", "--as", "human:ann").returncode
        == 0
    )
    events = [
        ev.decode_event(line)
        for line in (root / "sessions" / session / "ledger.jsonl").read_bytes().splitlines()
    ]
    last = events[-1]
    envelope = {f: getattr(last, f) for f in last.__struct_fields__ if f not in ("payload", "sig")}
    forged = ev.SessionResumed(
        **{**envelope, "seq": last.seq + 1}, payload=ev.OptionalReasonPayload()
    )
    state = fold(load_workflow(default_workflow_path()), [*events, forged])

    assert [(i.rule, i.seq) for i in state.integrity] == [("after_abandon", last.seq + 1)]
    assert msgspec.to_builtins(events[-1].payload) == {"reason": "r"}
