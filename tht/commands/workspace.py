"""``tht workspace init [PATH]``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(help="Workspaces: the folder that holds settings, sessions and evidence.")


@app.command("init")
def init(
    path: Annotated[
        Path | None, typer.Argument(help="Folder to initialize (default: --workspace).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Workspace name.")] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Create workspace.yaml, sessions/, evidence/sources/, evidence/units/ and .tht/."""
    from kernel.errors import UsageError
    from kernel.workspace import init_workspace

    inv = invocation(workspace, json_, debug)
    target = path or inv.workspace
    try:
        ws, created = init_workspace(target, name=name)
    except OSError as err:  # init_workspace maps those it can foresee; never "internal error"
        raise UsageError(f"{target}: cannot create the workspace: {err.strerror or err}") from err
    body = {"workspace": str(ws.root), "created": created}
    verb = "initialized" if created else "already initialized"
    inv.emit(body, f"{verb}: {ws.root}")
