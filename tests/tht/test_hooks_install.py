"""``tht hooks install``: merge into host settings, idempotent, nothing lost, no secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _install(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THT_", "CLAUDE_", "CODEX_"))}
    env.update(HOME=str(home), THT_HOME=str(home / "tht"), OPENAI_API_KEY="sk-SEEDED-SECRET")
    return subprocess.run(
        [sys.executable, "-m", "tht", "hooks", "install", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
        timeout=60,
    )


USER_SETTINGS = {
    "model": "opus",
    "env": {"FOO": "bar"},
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "my-own-hook"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
    },
}


def test_claude_code_install_merges_and_is_idempotent(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS))
    first = _install(tmp_path, "--host", "claude-code", "--user")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["changed"] is True
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["env"] == {"FOO": "bar", "THT_ACTOR": "agent"}
    guard_groups = data["hooks"]["PreToolUse"]
    assert guard_groups[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert guard_groups[1]["matcher"] == "Bash|Write|Edit|MultiEdit|NotebookEdit"
    assert guard_groups[1]["hooks"][0]["command"].endswith("tht-guard-hook")
    groups = data["hooks"]["UserPromptSubmit"]
    assert groups[0] == USER_SETTINGS["hooks"]["UserPromptSubmit"][0]
    ours = groups[1]["hooks"][0]
    assert ours["type"] == "command" and ours["timeout"] == 8
    assert ours["command"].endswith("tht-route-hook")
    snapshot = settings.read_text()
    second = _install(tmp_path, "--host", "claude-code", "--user")
    assert json.loads(second.stdout)["changed"] is False and settings.read_text() == snapshot
    assert "SEEDED" not in snapshot


def test_existing_entry_is_updated_in_place_not_duplicated(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {"type": "command", "command": "tht-route-hook", "timeout": 60},
                        {"type": "command", "command": "/old/bin/tht-route-hook --catalog x"},
                    ]
                }
            ]
        }
    }
    settings.write_text(json.dumps(old))
    done = _install(tmp_path, "--host", "claude-code", "--project", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    project = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    handlers = project["hooks"]["UserPromptSubmit"][0]["hooks"]
    assert handlers == [{"type": "command", "command": "tht-route-hook", "timeout": 8}]


def test_codex_user_and_project_files(tmp_path: Path) -> None:
    done = _install(tmp_path, "--host", "codex", "--user")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 8
    project = tmp_path / "proj"
    project.mkdir()
    done = _install(tmp_path, "--host", "codex", "--project", cwd=project)
    data = json.loads((project / ".codex" / "hooks.json").read_text())
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == "tht-route-hook"


def test_invalid_settings_file_is_refused_untouched(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    done = _install(tmp_path, "--host", "claude-code")
    assert done.returncode == 2 and settings.read_text() == "{not json"
    assert _install(tmp_path, "--host", "vim").returncode == 2
