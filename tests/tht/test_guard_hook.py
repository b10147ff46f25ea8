"""``tht-guard-hook``: human-only tht commands and direct ledger writes are refused before the
agent's tool runs; everything else passes untouched; the hook always exits 0."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tht.hooks.guard_hook import check_tool_call


def bash(command: str) -> dict:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


@pytest.mark.parametrize(
    "command",
    [
        "tht review answer 6 --choose flag --as human:ann",
        "THT_SESSION=X tht decision retract 8 --reason r --as human:me",
        "cd ws && tht --json stage skip memory_recall --reason x --as human:a",
        "tht --workspace /w stage reopen cte --reason x",
        ".venv/bin/tht session finalize --as human:x",
        "python -m tht session pause",
        "bash -c 'tht session resume --as human:x'",
        "tht session derive S --as human:x; echo done",
        "ls && tht   review   answer 3 --approve",
        "tht catalog relationship add ricoveri.procedura_id procedure.id --as human:x",
        "tht catalog relationship delete lr_1 --reason r",
        "tht --json catalog relationship reconstruct",
        "tht catalog cleanup --table t --reason r",
        "tht catalog verify --repair --reason r --as human:x",
        "tht store migrate --to postgres --as human:x",
        "tht store init --as human:x",
    ],
)
def test_human_only_commands_are_denied(command: str) -> None:
    reason = check_tool_call(bash(command))
    assert reason is not None and "human-only" in reason


@pytest.mark.parametrize(
    "command",
    [
        "tht propose disambiguation --file p.json",
        "tht review list --json",
        "tht review show 6",
        "tht session status --at 4",
        "tht session new 'How many?'",
        "tht session log --json",
        "tht ledger verify",
        "tht catalog verify",
        "tht catalog sync",
        "tht catalog relationships --include-deleted",
        "tht stage run verification",
        "tht sql run q.sql",
        "tht store status --json",
        "tht stage --help",
        "python -m pytest tests/",
        "ls sessions/ABC/",
        "cat sessions/ABC/ledger.jsonl | head",
        "git commit -m 'session finalize docs'",
        "tht-route-hook < payload.json",
    ],
)
def test_everything_else_passes(command: str) -> None:
    assert check_tool_call(bash(command)) is None


@pytest.mark.parametrize(
    "command",
    [
        "echo '{}' >> sessions/01ABC/ledger.jsonl",
        "sed -i 's/a/b/' ws/sessions/01ABC/ledger.jsonl",
        "rm -rf sessions/01ABC/objects/",
        "cp x.md sessions/01ABC/artifacts/question.md",
    ],
)
def test_direct_writes_to_session_files_are_denied(command: str) -> None:
    reason = check_tool_call(bash(command))
    assert reason is not None and "written only by tht" in reason


def test_editing_tools_cannot_touch_session_files() -> None:
    edit = {"tool_name": "Edit", "tool_input": {"file_path": "/w/sessions/01A/ledger.jsonl"}}
    write = {
        "tool_name": "Write",
        "tool_input": {"file_path": "/w/sessions/01A/artifacts/sql_final.sql"},
    }
    fine = {"tool_name": "Write", "tool_input": {"file_path": "/w/proposals/p.json"}}
    assert check_tool_call(edit) is not None
    assert check_tool_call(write) is not None
    assert check_tool_call(fine) is None


def _run(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tht.hooks.guard_hook"],
        input=stdin,
        capture_output=True,
        check=False,
        timeout=30,
    )


def test_hook_process_denies_with_the_host_json_and_exit_0() -> None:
    done = _run(json.dumps(bash("tht review answer 6 --approve --as human:a")).encode())
    assert done.returncode == 0
    body = json.loads(done.stdout)
    out = body["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == "deny"
    assert "tht review answer" in out["permissionDecisionReason"]


def test_hook_process_allows_silently() -> None:
    done = _run(json.dumps(bash("tht review list")).encode())
    assert done.returncode == 0 and done.stdout == b""


@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_hook_never_fails_on_any_input(raw: bytes) -> None:
    from tht.hooks.guard_hook import _decide

    out = _decide(raw)
    assert out == "" or json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_oversized_command_is_parsed_whole_not_cut() -> None:
    padding = "x" * 1_100_000
    payload = {
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {padding}; tht review answer 3"},
    }
    done = _run(json.dumps(payload).encode())
    assert done.returncode == 0
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_absurdly_large_stdin_is_refused() -> None:
    done = _run(b" " * (65 * 1024 * 1024))
    assert done.returncode == 0
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_invalid_utf8_and_odd_json_do_not_crash() -> None:
    for raw in (b"\xff\xfe{", b"[1, 2]", b"null", b'{"tool_input": 3}', b'{"tool_name": "Bash"}'):
        done = _run(raw)
        assert done.returncode == 0
        assert done.stdout == b"" or json.loads(done.stdout)["hookSpecificOutput"]


def test_internal_error_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import tht.hooks.guard_hook as guard

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(guard, "_analyse_text", boom)
    reason = check_tool_call(bash("ls"))
    assert reason is not None and "fail closed" in reason
