"""``tht hooks install``: write tht's hooks into a coding-agent host's settings (ARCHITECTURE §5).

Hosts and files (both use the same shape: ``{"hooks": {Event: [{"matcher"?, "hooks": [{"type":
"command", "command", "timeout"}]}]}}``, timeout in seconds):

==============  ==============================  ==========================
host            --user                          --project (in the workspace)
==============  ==============================  ==========================
claude-code     ``~/.claude/settings.json``     ``.claude/settings.json``
codex           ``$CODEX_HOME/hooks.json``      ``.codex/hooks.json``
                (default ``~/.codex``)
==============  ==============================  ==========================

The merge keeps everything else in the file, recognizes our own entries by the script name and
updates them in place, so running it twice changes nothing. Nothing secret is ever written: the
commands carry no keys, tokens or environment values. The hook list is the static table
:data:`HOOKS` (add the anti-bypass guard there with one entry); :data:`AGENT_ENV` is written into
the host's ``env`` block where the host's settings have one (Claude Code).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(help="Agent-host hooks (Claude Code, Codex).", no_args_is_help=True)


class HookSpec(NamedTuple):
    event: str  # host event name
    script: str  # console script; also how we recognize our own entries
    timeout: int  # seconds (spec 000 §6.1: 8 s host timeout)
    matcher: str | None = None  # tool-name matcher for tool events (PreToolUse); None otherwise


class HostSpec(NamedTuple):
    user_file: str  # relative to the host's home folder
    project_file: str  # relative to the project root
    home_env: str | None  # env var that relocates the host's home folder
    home_default: str  # relative to the user's home
    env_block: bool  # the settings file has an "env" mapping for the agent's environment


HOOKS: tuple[HookSpec, ...] = (
    HookSpec(event="UserPromptSubmit", script="tht-route-hook", timeout=8),
    # the anti-bypass guard: human-only tht commands and direct ledger writes are refused
    HookSpec(
        event="PreToolUse",
        script="tht-guard-hook",
        timeout=8,
        matcher="Bash|Write|Edit|MultiEdit|NotebookEdit",
    ),
)
# Environment for the agent's shells, where the host supports it: tht refuses human-only
# commands (exit 5) when THT_ACTOR=agent.
AGENT_ENV: dict[str, str] = {"THT_ACTOR": "agent"}

HOSTS: dict[str, HostSpec] = {
    "claude-code": HostSpec(
        user_file="settings.json",
        project_file=".claude/settings.json",
        home_env="CLAUDE_CONFIG_DIR",
        home_default=".claude",
        env_block=True,
    ),
    "codex": HostSpec(
        user_file="hooks.json",
        project_file=".codex/hooks.json",
        home_env="CODEX_HOME",
        home_default=".codex",
        env_block=False,
    ),
}


def settings_file(host: str, project: bool, project_root: Path) -> Path:
    spec = HOSTS[host]
    if project:
        return project_root / spec.project_file
    explicit = os.environ.get(spec.home_env) if spec.home_env else None
    home = Path(explicit).expanduser() if explicit else Path.home() / spec.home_default
    return home / spec.user_file


def hook_command(spec: HookSpec, project: bool) -> str:
    """The command line: the script's absolute path for a user install (found next to this
    Python), the bare name for a project install (a shared file names no machine path)."""
    import shlex

    if not project:
        script = Path(sys.executable).with_name(spec.script)
        if script.exists():
            return shlex.quote(str(script))
    return spec.script


def _is_ours(handler: Any, spec: HookSpec) -> bool:
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    import shlex

    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return False
    return bool(words) and Path(words[0]).name == spec.script


def merge_hooks(
    settings: dict[str, Any], hooks: list[tuple[HookSpec, str]], env: dict[str, str] | None
) -> list[dict[str, Any]]:
    """Merge our hooks (and env) into ``settings`` in place; returns what happened per hook."""
    from kernel.errors import UsageError

    table = settings.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise UsageError("hooks: must be an object")
    actions: list[dict[str, Any]] = []
    for spec, command in hooks:
        wanted: dict[str, Any] = {"type": "command", "command": command, "timeout": spec.timeout}
        groups = table.setdefault(spec.event, [])
        if not isinstance(groups, list):
            raise UsageError(f"hooks.{spec.event}: must be a list")
        found = False
        action = "added"
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            if spec.matcher is not None and group.get("matcher") != spec.matcher:
                continue
            for position, handler in enumerate(list(handlers)):
                if not _is_ours(handler, spec):
                    continue
                if found:  # a duplicate of ours: drop it
                    handlers.remove(handler)
                    action = "updated"
                    continue
                found = True
                merged = {**handler, **wanted}
                action = "unchanged" if merged == handler else "updated"
                handlers[position] = merged
        if not found:
            group_new: dict[str, Any] = {"hooks": [wanted]}
            if spec.matcher is not None:
                group_new = {"matcher": spec.matcher, **group_new}
            groups.append(group_new)
        actions.append({"event": spec.event, "command": command, "action": action})
    if env:
        block = settings.setdefault("env", {})
        if not isinstance(block, dict):
            raise UsageError("env: must be an object")
        block.update(env)
    return actions


@app.command("install")
def install(
    host: Annotated[str, typer.Option("--host", help="claude-code or codex.")],
    project: Annotated[
        bool, typer.Option("--project/--user", help="Project settings (in the workspace) or user.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Merge tht's hooks into the host's settings file (idempotent; no secret written)."""
    import json

    from kernel.errors import UsageError

    inv = invocation(workspace, json_, debug)
    if host not in HOSTS:
        raise UsageError(f"--host: unknown host {host!r} (choose: {', '.join(HOSTS)})")
    path = settings_file(host, project, inv.workspace)
    original = None
    settings: dict[str, Any] = {}
    if path.exists():
        try:
            original = path.read_text(encoding="utf-8")
            loaded = json.loads(original) if original.strip() else {}
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise UsageError(f"{path}: not valid JSON; fix or move it first ({err})") from err
        if not isinstance(loaded, dict):
            raise UsageError(f"{path}: the top level must be an object")
        settings = loaded
    before = json.dumps(settings, sort_keys=True)
    try:
        actions = merge_hooks(
            settings,
            [(spec, hook_command(spec, project)) for spec in HOOKS],
            AGENT_ENV if HOSTS[host].env_block else None,
        )
    except UsageError as err:
        raise UsageError(f"{path}: {err.message}") from err
    changed = json.dumps(settings, sort_keys=True) != before or original is None
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    body = {
        "host": host,
        "scope": "project" if project else "user",
        "file": str(path),
        "changed": changed,
        "hooks": actions,
    }
    summary = ", ".join(f"{a['event']} {a['action']}" for a in actions)
    inv.emit(body, human=f"{path}: {summary}" + ("" if changed else " (nothing to change)"))
