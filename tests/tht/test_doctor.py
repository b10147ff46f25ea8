"""``tht doctor``: every check's verdict, detail and fix, and its exit codes (golden JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "cli" / "doctor"


@pytest.fixture
def no_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    return home


def test_doctor_json_on_a_fixed_workspace_matches_its_golden_file(
    workspace: Path, no_claude: Path, tht: Callable[..., Result], update_golden: bool
) -> None:
    assert tht("session", "new", "Quante ablazioni nel 2023?").code == 0
    done = tht("doctor", "--json")
    record = f"exit {done.code}\n{done.stdout}"
    path = GOLDEN / "doctor.txt"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(record)
    assert record == path.read_text(), "doctor --json changed (see golden/cli/doctor/)"
    body = done.json()
    assert body["ok"] is True
    for check in body["checks"]:
        assert set(check) == {"name", "verdict", "detail", "fix"}
        assert check["verdict"] in ("ok", "warn", "fail")


def test_doctor_names_the_session_that_does_not_verify_and_exits_7(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    sid = tht("session", "new", "Quante ablazioni nel 2023?", "--json").json()["session"]
    ledger = workspace / "sessions" / sid / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b"ablazioni", b"ablazionX"))
    done = tht("doctor", "--json")
    assert done.code == 7
    sessions = next(c for c in done.json()["checks"] if c["name"] == "sessions")
    assert sessions["verdict"] == "fail" and sid in sessions["detail"]
    assert done.json()["ok"] is False


def test_doctor_exits_2_on_an_invalid_workspace_yaml(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    (workspace / "workspace.yaml").write_text("name: x\nno_such_field: 1\n")
    done = tht("doctor", "--json")
    assert done.code == 2
    first = done.json()["checks"][0]
    assert first["name"] == "workspace" and first["verdict"] == "fail"


def test_doctor_finds_the_hooks_in_claude_settings(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    hooks = {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"command": "tht-route-hook"}]}],
            "PreToolUse": [{"hooks": [{"command": "tht-guard-hook"}]}],
        }
    }
    settings.write_text(json.dumps(hooks))
    done = tht("doctor", "--json")
    check = next(c for c in done.json()["checks"] if c["name"] == "hooks")
    # the workspace folder (or the project folder the command runs in, when that is the same)
    assert check["verdict"] == "ok" and (
        "workspace" in check["detail"] or "project" in check["detail"]
    )
    assert not (no_claude / "settings.json").exists()  # read-only: nothing written


def test_doctor_human_output_shows_every_check(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    done = tht("doctor")
    assert done.code == 0
    for name in ("workspace", "workflow", "store", "vector index", "database", "hooks"):
        assert name in done.stdout
