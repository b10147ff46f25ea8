"""``tht hooks install / uninstall / status``: merge, remove, report; nothing lost, no secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).absolute().parent
ROUTE_HOOK = str(BIN / "tht-route-hook")
GUARD_HOOK = str(BIN / "tht-guard-hook")


def _install(
    home: Path, *args: str, cwd: Path | None = None, verb: str = "install", **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THT_", "CLAUDE_", "CODEX_"))}
    env.update(HOME=str(home), THT_HOME=str(home / "tht"), OPENAI_API_KEY="sk-SEEDED-SECRET")
    env.update(extra)
    env["PATH"] = "/usr/bin:/bin"  # the venv is not on PATH, as in a host's shell
    return subprocess.run(
        [sys.executable, "-m", "tht", "hooks", verb, *args, "--json"],
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
    assert handlers == [{"type": "command", "command": ROUTE_HOOK, "timeout": 8}]


def test_codex_user_and_project_files(tmp_path: Path) -> None:
    done = _install(tmp_path, "--host", "codex", "--user")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 8
    project = tmp_path / "proj"
    project.mkdir()
    done = _install(tmp_path, "--host", "codex", "--project", cwd=project)
    data = json.loads((project / ".codex" / "hooks.json").read_text())
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == ROUTE_HOOK


def test_invalid_settings_file_is_refused_untouched(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    done = _install(tmp_path, "--host", "claude-code")
    assert done.returncode == 2 and settings.read_text() == "{not json"
    assert _install(tmp_path, "--host", "vim").returncode == 2


def test_project_install_writes_into_the_project_folder_not_the_workspace(tmp_path: Path) -> None:
    workspace, project, other = tmp_path / "ws", tmp_path / "proj", tmp_path / "other"
    for folder in (workspace, project, other):
        folder.mkdir()
    done = _install(
        tmp_path, "--host", "claude-code", "--project", cwd=project, THT_WORKSPACE=str(workspace)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["file"] == str(project / ".claude" / "settings.json")
    assert not (workspace / ".claude").exists()
    data = json.loads((project / ".claude" / "settings.json").read_text())
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == ROUTE_HOOK
    assert data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == GUARD_HOOK
    explicit = _install(
        tmp_path, "--host", "codex", "--project", "--project-dir", str(other), cwd=project
    )
    assert explicit.returncode == 0, explicit.stderr
    assert (other / ".codex" / "hooks.json").is_file() and not (project / ".codex").exists()
    missing = _install(tmp_path, "--host", "codex", "--project", "--project-dir", "nope", cwd=other)
    assert missing.returncode == 2


def test_commands_are_absolute_executable_paths_in_both_scopes(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert _install(tmp_path, "--host", "claude-code", "--user").returncode == 0
    assert _install(tmp_path, "--host", "claude-code", "--project", cwd=project).returncode == 0
    for path in (tmp_path / ".claude" / "settings.json", project / ".claude" / "settings.json"):
        data = json.loads(path.read_text())
        for event in ("UserPromptSubmit", "PreToolUse"):
            command = data["hooks"][event][-1]["hooks"][0]["command"]
            assert Path(command).is_absolute() and os.access(command, os.X_OK), command
    # the installed route hook really runs with the venv off PATH
    hook = subprocess.run(
        [ROUTE_HOOK, "--version"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )
    assert hook.returncode == 0


def test_uninstall_removes_exactly_what_install_added(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS))
    assert _install(tmp_path, "--host", "claude-code", "--user").returncode == 0
    done = _install(tmp_path, "--host", "claude-code", "--user", verb="uninstall")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["changed"] is True and body["file_removed"] is False
    assert {r.get("event") for r in body["removed"]} == {"UserPromptSubmit", "PreToolUse", None}
    after = settings.read_text()
    assert json.loads(after) == USER_SETTINGS
    assert list(json.loads(after)) == list(USER_SETTINGS)  # key order kept
    # nothing of ours left: the file is not touched again, byte for byte
    settings.write_text(json.dumps(USER_SETTINGS))
    snapshot = settings.read_bytes()
    again = _install(tmp_path, "--host", "claude-code", "--user", verb="uninstall")
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] is False
    assert settings.read_bytes() == snapshot


def test_uninstall_of_a_file_that_held_only_ours_removes_it(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert _install(tmp_path, "--host", "codex", "--project", cwd=project).returncode == 0
    done = _install(tmp_path, "--host", "codex", "--project", cwd=project, verb="uninstall")
    assert done.returncode == 0 and json.loads(done.stdout)["file_removed"] is True
    assert list(project.iterdir()) == []
    nothing = _install(tmp_path, "--host", "codex", "--project", cwd=project, verb="uninstall")
    assert nothing.returncode == 0 and json.loads(nothing.stdout)["changed"] is False


def test_status_reports_what_is_installed_where_and_whether_it_runs(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert _install(tmp_path, "--host", "claude-code", "--project", cwd=project).returncode == 0
    broken = tmp_path / ".codex" / "hooks.json"
    broken.parent.mkdir()
    gone = str(tmp_path / "old-venv" / "bin" / "tht-route-hook")
    hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": gone}]}]}
    broken.write_text(json.dumps({"hooks": hooks}))
    done = _install(tmp_path, cwd=project, verb="status")
    assert done.returncode == 0, done.stderr
    entries = {(e["host"], e["scope"]): e for e in json.loads(done.stdout)["installs"]}
    assert set(entries) == {(h, s) for h in ("claude-code", "codex") for s in ("user", "project")}
    ours = entries[("claude-code", "project")]
    assert ours["file"] == str(project / ".claude" / "settings.json") and ours["exists"]
    assert [h["installed"] for h in ours["hooks"]] == [True, True]
    assert all(h["exists"] and h["executable"] for h in ours["hooks"])
    assert ours["env"] == {"THT_ACTOR": "agent"}
    stale = entries[("codex", "user")]["hooks"][0]
    assert stale["installed"] and stale["command"] == gone
    assert stale["exists"] is False and stale["executable"] is False
    assert entries[("claude-code", "user")]["exists"] is False


def test_install_says_when_the_route_hook_has_no_catalog_to_read(tmp_path: Path) -> None:
    bare = _install(tmp_path, "--host", "claude-code", "--user")
    assert bare.returncode == 0, bare.stderr
    assert "no routing catalog yet" in bare.stderr and "tht route catalog build" in bare.stderr
    configured = _install(
        tmp_path, "--host", "claude-code", "--user", THT_ROUTING_CATALOG=str(tmp_path / "x.pack")
    )
    assert configured.returncode == 0 and "routing catalog" not in configured.stderr
