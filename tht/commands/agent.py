"""``tht agent skill build / install``: the agent skill (SKILL.md) generated from the modules'
fragments (tht/agent_skill.py; docs/agent-skill.md).

Where each host reads skills (a folder per skill holding its ``SKILL.md``; the folder is
named after the skill, ``tht-session``):

- claude-code: ``--user`` ``~/.claude/skills/`` (``$CLAUDE_CONFIG_DIR/skills/`` when set),
  ``--project`` ``.claude/skills/`` in the project folder;
- codex: ``--user`` ``~/.agents/skills/``, ``--project`` ``.agents/skills/``.

The project folder is ``--project-dir DIR``, else the current directory (as ``tht hooks
install``). Writes are atomic and idempotent (the same bytes: nothing written, ``"changed":
false``); a refused write leaves nothing behind, not even a folder it had created. The skill holds
no secret, no path and nothing from the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, NamedTuple

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(help="Agent instructions for coding-agent hosts.", no_args_is_help=True)
skill_app = typer.Typer(
    help="The tht-session skill (SKILL.md): build it from the fragments, install it for a host.",
    no_args_is_help=True,
)
app.add_typer(skill_app, name="skill")


class SkillHost(NamedTuple):
    project_dir: str  # the skills folder, relative to the project root
    home_env: str | None  # env var that relocates the host's home folder
    home_default: str  # the host's home, relative to the user's home
    user_dir: str  # the skills folder, relative to the host's home


SKILL_HOSTS: dict[str, SkillHost] = {
    "claude-code": SkillHost(".claude/skills", "CLAUDE_CONFIG_DIR", ".claude", "skills"),
    # Codex reads skills from .agents/skills (repository) and ~/.agents/skills (user)
    "codex": SkillHost(".agents/skills", None, ".agents", "skills"),
}

WorkflowOpt = Annotated[
    Path | None,
    typer.Option(
        "--workflow",
        help="Render against this workflow.yaml (default: the packaged one).",
        show_default=False,
    ),
]


def skill_file(host: str, project: bool, project_root: Path) -> Path:
    """Where ``host`` reads the tht-session skill, in the project or the user's scope."""
    from tht.agent_skill import SKILL_NAME

    spec = SKILL_HOSTS[host]
    if project:
        folder = project_root / spec.project_dir
    else:
        explicit = os.environ.get(spec.home_env) if spec.home_env else None
        home = Path(explicit).expanduser() if explicit else Path.home() / spec.home_default
        folder = home / spec.user_dir
    return folder / SKILL_NAME / "SKILL.md"


def _skill_bytes(workflow: Path | None) -> bytes:
    from kernel.workflow import parse_workflow
    from tht.agent_skill import build

    return build(parse_workflow(workflow) if workflow is not None else None)


def _same(path: Path, data: bytes) -> bool:
    """Whether ``path`` already holds exactly ``data`` (a usage error when it cannot)."""
    from kernel.errors import UsageError

    if path.is_symlink():
        raise UsageError(f"{path}: a symbolic link; remove it first (nothing was written)")
    if path.is_dir():
        raise UsageError(f"{path}: a folder is in the way (nothing was written)")
    try:
        return path.read_bytes() == data
    except FileNotFoundError:
        return False
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror or err}") from err


def write_skill(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically unless it is already there; whether it changed.
    On a failure every folder this call created is removed again."""
    from kernel.atomic import atomic_write
    from kernel.errors import UsageError

    if _same(path, data):
        return False
    missing = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    try:
        atomic_write(path, data, durable=True)
    except OSError as err:
        for folder in missing:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break
        raise UsageError(f"{path}: cannot write: {err.strerror or err}") from err
    return True


def _body(path: Path | None, data: bytes, changed: bool | None) -> dict[str, object]:
    import hashlib

    return {
        "path": str(path) if path is not None else None,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "changed": changed,
    }


@skill_app.command("build")
def build_cmd(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write SKILL.md here (e.g. skills/tht-session/SKILL.md); default: stdout.",
            show_default=False,
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; exit 2 when the file at --out differs."),
    ] = False,
    workflow: WorkflowOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Render SKILL.md from the fragments (a static list) and the workflow; byte-stable.

    Without --out the skill goes to stdout. --out writes it atomically when it differs;
    --check --out compares only (the committed skill: `tht agent skill build --check --out
    skills/tht-session/SKILL.md`).
    """
    import sys

    from kernel.errors import UsageError

    inv = invocation(workspace, json_, debug)
    if check and out is None:
        raise UsageError("--check needs --out PATH: the file to compare with the fragments")
    data = _skill_bytes(workflow)
    if out is None:
        if inv.json:
            inv.emit({**_body(None, data, None), "content": data.decode("utf-8")})
        else:
            sys.stdout.write(data.decode("utf-8"))
        return
    path = out.expanduser().absolute()
    if check:
        if not _same(path, data):
            raise UsageError(
                f"{path} differs from the skill fragments: run `tht agent skill build --out "
                f"{out}` and commit it"
            )
        inv.emit(_body(path, data, False), f"{path}: up to date")
        return
    changed = write_skill(path, data)
    word = "written" if changed else "unchanged"
    inv.emit(_body(path, data, changed), f"{path}: {word} ({len(data)} bytes)")


@skill_app.command("install")
def install_cmd(
    host: Annotated[str, typer.Option("--host", help="claude-code or codex.")],
    project: Annotated[
        bool,
        typer.Option("--project/--user", help="The project's skills folder, or the user's."),
    ] = False,
    project_dir: Annotated[
        Path | None,
        typer.Option(
            "--project-dir",
            help="The project folder for --project (default: the current directory).",
            show_default=False,
        ),
    ] = None,
    workflow: WorkflowOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Write the skill where the host reads skills (idempotent; no secret, no path in it)."""
    from kernel.errors import UsageError

    inv = invocation(workspace, json_, debug)
    if host not in SKILL_HOSTS:
        raise UsageError(f"--host: unknown host {host!r} (choose: {', '.join(SKILL_HOSTS)})")
    root = Path()
    if project:
        root = (project_dir or Path.cwd()).expanduser().absolute()
        if not root.is_dir():
            raise UsageError(f"--project-dir: {root} is not a folder")
    data = _skill_bytes(workflow)
    path = skill_file(host, project, root)
    changed = write_skill(path, data)
    scope = "project" if project else "user"
    body = {"host": host, "scope": scope, **_body(path, data, changed)}
    word = "written" if changed else "unchanged"
    inv.emit(body, f"{host} {scope}: {path} {word}")
