"""``tht hooks install / uninstall / status``: tht's hooks in a coding-agent host's settings
(ARCHITECTURE §5).

Hosts and files (both use the same shape: ``{"hooks": {Event: [{"matcher"?, "hooks": [{"type":
"command", "command", "timeout"}]}]}}``, timeout in seconds):

==============  ==============================  =================================
host            --user                          --project (in the project folder)
==============  ==============================  =================================
claude-code     ``~/.claude/settings.json``     ``.claude/settings.json``
codex           ``$CODEX_HOME/hooks.json``      ``.codex/hooks.json``
                (default ``~/.codex``)
==============  ==============================  =================================

The project folder is ``--project-dir DIR``, else the current directory — never
``$THT_WORKSPACE``: the host reads the settings of the folder it runs in. Commands are the absolute
paths of the console scripts next to the running interpreter (its ``bin`` folder), in both
scopes, so a hook works without the virtual environment on ``PATH``.

The merge keeps everything else in the file, recognizes our own entries by the script name and
updates them in place, so running it twice changes nothing; ``uninstall`` removes exactly those
entries (and ``THT_ACTOR=agent``), leaving a file without them untouched, byte for byte. Nothing
secret is ever written: the commands carry no keys, tokens or environment values. The hook list
is the static table :data:`HOOKS` (add the anti-bypass guard there with one entry);
:data:`AGENT_ENV` is written into the host's ``env`` block where the host's settings have one
(Claude Code).
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


def script_path(spec: HookSpec) -> Path:
    """The console script in the running interpreter's ``bin`` folder (not resolved through the
    venv's ``python`` symlink: the scripts live beside the link, not beside its target)."""
    return Path(sys.executable).absolute().parent / spec.script


def hook_command(spec: HookSpec) -> str:
    """The command line: the script's absolute path, in both scopes (a bare name runs only
    when the virtual environment happens to be on the host's ``PATH``)."""
    import shlex

    return shlex.quote(str(script_path(spec)))


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


def remove_hooks(settings: dict[str, Any], env: dict[str, str] | None) -> list[dict[str, Any]]:
    """Remove our hooks (and env) from ``settings`` in place; returns what was removed.

    Only our handlers go; a group, an event list, the ``hooks`` table or the ``env`` block is
    dropped only when removing ours left it empty. Everything else keeps its place and order.
    """
    removed: list[dict[str, Any]] = []
    table = settings.get("hooks")
    if isinstance(table, dict):
        for spec in HOOKS:
            groups = table.get(spec.event)
            if not isinstance(groups, list):
                continue
            event_removed = False
            for group in list(groups):
                handlers = group.get("hooks") if isinstance(group, dict) else None
                if not isinstance(handlers, list):
                    continue
                ours = [h for h in handlers if _is_ours(h, spec)]
                for handler in ours:
                    handlers.remove(handler)
                    removed.append({"event": spec.event, "command": handler["command"]})
                    event_removed = True
                if ours and not handlers:
                    groups.remove(group)
            if event_removed and not groups:
                del table[spec.event]
        if removed and not table:
            del settings["hooks"]
    block = settings.get("env")
    if env and isinstance(block, dict):
        gone = [k for k, v in env.items() if block.get(k) == v]
        for key in gone:
            del block[key]
            removed.append({"env": key})
        if gone and not block:
            del settings["env"]
    return removed


ScopeOpt = Annotated[
    bool,
    typer.Option("--project/--user", help="Project settings (in the project folder) or user."),
]
ProjectDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--project-dir",
        help="The project folder for --project (default: the current directory).",
        show_default=False,
    ),
]
HostOpt = Annotated[str, typer.Option("--host", help="claude-code or codex.")]


def _check_host(host: str) -> None:
    from kernel.errors import UsageError

    if host not in HOSTS:
        raise UsageError(f"--host: unknown host {host!r} (choose: {', '.join(HOSTS)})")


def _project_root(project_dir: Path | None) -> Path:
    """``--project-dir``, else the current directory; never the workspace."""
    from kernel.errors import UsageError

    root = (project_dir or Path.cwd()).expanduser().absolute()
    if not root.is_dir():
        raise UsageError(f"--project-dir: {root} is not a folder")
    return root


def _load(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when absent) and its object; a bad file is a usage error."""
    import json

    from kernel.errors import UsageError

    if not path.exists():
        return None, {}
    try:
        original = path.read_text(encoding="utf-8")
        loaded = json.loads(original) if original.strip() else {}
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise UsageError(f"{path}: not valid JSON; fix or move it first ({err})") from err
    if not isinstance(loaded, dict):
        raise UsageError(f"{path}: the top level must be an object")
    return original, loaded


def _write(path: Path, settings: dict[str, Any]) -> None:
    import json

    from kernel.errors import UsageError

    try:
        from kernel.atomic import atomic_write

        text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
        atomic_write(path, text.encode("utf-8"), durable=True)  # keeps the file's mode
    except OSError as err:
        raise UsageError(f"{path}: cannot write: {err.strerror or err}") from err


def _note_routing_catalog(inv: Any) -> None:
    """The route hook gives no hint without a catalog: say so where the hooks are installed."""
    from kernel.errors import ThtError
    from tht.commands.route import configured_catalog
    from tht.paths import user_config_file

    try:
        configured = configured_catalog()
    except ThtError:  # a bad user config: `tht doctor` and `tht route` name the field
        return
    if configured is None:
        inv.note(
            "note: no routing catalog yet, so the route hook gives no hints: build one with "
            "`tht route catalog build --skills DIR --out FILE` and set routing.catalog in "
            f"{user_config_file()} (the guard hook needs nothing)"
        )


@app.command("install")
def install(
    host: HostOpt,
    project: ScopeOpt = False,
    project_dir: ProjectDirOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Merge tht's hooks into the host's settings file (idempotent; no secret written)."""
    import json

    from kernel.errors import UsageError

    inv = invocation(workspace, json_, debug)
    _check_host(host)
    path = settings_file(host, project, _project_root(project_dir) if project else Path())
    original, settings = _load(path)
    before = json.dumps(settings, sort_keys=True)
    try:
        actions = merge_hooks(
            settings,
            [(spec, hook_command(spec)) for spec in HOOKS],
            AGENT_ENV if HOSTS[host].env_block else None,
        )
    except UsageError as err:
        raise UsageError(f"{path}: {err.message}") from err
    changed = json.dumps(settings, sort_keys=True) != before or original is None
    if changed:
        _write(path, settings)
    for spec in HOOKS:
        if not os.access(script_path(spec), os.X_OK):
            inv.note(f"warning: {script_path(spec)} is missing or not executable; reinstall tht")
    _note_routing_catalog(inv)
    body = {
        "host": host,
        "scope": "project" if project else "user",
        "file": str(path),
        "changed": changed,
        "hooks": actions,
    }
    summary = ", ".join(f"{a['event']} {a['action']}" for a in actions)
    inv.emit(body, human=f"{path}: {summary}" + ("" if changed else " (nothing to change)"))


@app.command("uninstall")
def uninstall(
    host: HostOpt,
    project: ScopeOpt = False,
    project_dir: ProjectDirOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Remove exactly the hooks (and THT_ACTOR) that install added; nothing else changes.

    A file without tht's entries is left untouched; a file that held only them is removed.
    """
    inv = invocation(workspace, json_, debug)
    _check_host(host)
    path = settings_file(host, project, _project_root(project_dir) if project else Path())
    original, settings = _load(path)
    removed = remove_hooks(settings, AGENT_ENV if HOSTS[host].env_block else None)
    deleted = False
    if removed and not settings:  # nothing but ours was in it: as before install
        import contextlib

        try:
            path.unlink()
        except OSError as err:
            from kernel.errors import UsageError

            raise UsageError(f"{path}: cannot remove: {err.strerror or err}") from err
        deleted = True
        with contextlib.suppress(OSError):  # the .claude/ or .codex/ folder install made
            path.parent.rmdir()  # only when empty
    elif removed:
        _write(path, settings)
    body = {
        "host": host,
        "scope": "project" if project else "user",
        "file": str(path),
        "changed": bool(removed),
        "file_removed": deleted,
        "removed": removed,
    }
    if original is None:
        human = f"{path}: no such file (nothing to remove)"
    elif not removed:
        human = f"{path}: no tht hooks (nothing to remove)"
    else:
        hooks = [r["event"] for r in removed if "event" in r]
        human = f"{path}: removed {', '.join(hooks) or 'env'}" + (
            " (the file held nothing else: removed)" if deleted else ""
        )
    inv.emit(body, human=human)


def _command_check(command: str) -> dict[str, Any]:
    """Where a hook's command points and whether it can run."""
    import shlex
    import shutil

    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if not words:
        return {"path": None, "exists": False, "executable": False}
    program = words[0]
    found = program if os.sep in program else shutil.which(program)
    if found is None:
        return {"path": None, "exists": False, "executable": False}
    target = Path(found)
    return {
        "path": str(target),
        "exists": target.is_file(),
        "executable": target.is_file() and os.access(target, os.X_OK),
    }


def describe(host: str, project: bool, project_root: Path) -> dict[str, Any]:
    """What of tht is installed in one settings file (pure but for reading files)."""
    path = settings_file(host, project, project_root)
    entry: dict[str, Any] = {
        "host": host,
        "scope": "project" if project else "user",
        "file": str(path),
        "exists": path.exists(),
        "error": None,
        "hooks": [],
    }
    try:
        _, settings = _load(path)
    except Exception as err:  # a bad file is reported, not fatal: status describes
        entry["error"] = getattr(err, "message", str(err))
        settings = {}
    table = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
    assert isinstance(table, dict)
    for spec in HOOKS:
        groups = table.get(spec.event)
        commands = [
            h["command"]
            for g in (groups if isinstance(groups, list) else [])
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
            if _is_ours(h, spec)
        ]
        item: dict[str, Any] = {
            "event": spec.event,
            "script": spec.script,
            "installed": bool(commands),
            "command": commands[0] if commands else None,
        }
        item.update(_command_check(commands[0]) if commands else {"path": None})
        if not commands:
            item.update(exists=False, executable=False)
        entry["hooks"].append(item)
    if HOSTS[host].env_block:
        block = settings.get("env") if isinstance(settings.get("env"), dict) else {}
        assert isinstance(block, dict)
        entry["env"] = {k: block.get(k) for k in AGENT_ENV}
    return entry


@app.command("status")
def status(
    host: Annotated[
        str | None, typer.Option("--host", help="One host (default: every host).")
    ] = None,
    project_dir: ProjectDirOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """What tht installed where (user and project settings of each host), and whether each
    hook's command exists and is executable."""
    inv = invocation(workspace, json_, debug)
    hosts = list(HOSTS)
    if host is not None:
        _check_host(host)
        hosts = [host]
    root = _project_root(project_dir)
    entries = [describe(h, project, root) for h in hosts for project in (False, True)]
    lines = []
    for entry in entries:
        head = f"{entry['host']} {entry['scope']}: {entry['file']}"
        if entry["error"]:
            lines.append(f"{head}: unreadable ({entry['error']})")
            continue
        if not any(h["installed"] for h in entry["hooks"]):
            lines.append(f"{head}: " + ("no tht hooks" if entry["exists"] else "no file"))
            continue
        lines.append(head)
        for hook in entry["hooks"]:
            if not hook["installed"]:
                lines.append(f"  {hook['event']}: not installed")
                continue
            ok = "ok" if hook["executable"] else ("not executable" if hook["exists"] else "missing")
            lines.append(f"  {hook['event']}: {hook['command']} ({ok})")
        if entry.get("env"):
            shown = ", ".join(f"{k}={v}" for k, v in entry["env"].items() if v is not None)
            lines.append(f"  env: {shown or '(none)'}")
    inv.emit({"installs": entries}, human="\n".join(lines))
