"""Options every command accepts, and the one way commands write results.

ARCHITECTURE §6: every command takes ``--workspace PATH`` (default env ``THT_WORKSPACE``, else the
current directory), ``--json`` and ``--debug`` after its name; accepting them before the command
name is a convenience handled by the root callback. Results go to stdout (pristine JSON under
``--json``); messages go to stderr.

This module is imported by every command module at start-up: keep it to the standard library and
typer.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        help="Workspace folder (default: $THT_WORKSPACE, else the current directory).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Pristine JSON on stdout.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]
SessionArg = Annotated[
    str | None,
    typer.Argument(help="Session id (default: $THT_SESSION).", show_default=False),
]
ActorOpt = Annotated[
    str | None,
    typer.Option("--as", help="The human taking this decision: human:<id>.", show_default=False),
]
#: ``tht reviewer|memory|catalog verify --accept-rollback`` (kernel/ledger_witness.py)
AcceptRollbackOpt = Annotated[
    bool,
    typer.Option(
        "--accept-rollback",
        help="Human-only: accept the ledger as it is now after a rollback, unrecorded (restore "
        "the lines from a backup instead where you can).",
    ),
]


@dataclass(frozen=True)
class Invocation:
    """The resolved common options of one command run."""

    workspace: Path
    json: bool
    debug: bool

    def emit(self, data: Any, human: str | None = None) -> None:
        """Write a result: JSON under ``--json``, else ``human`` (or indented JSON)."""
        if self.json:
            sys.stdout.write(dumps(data) + "\n")
        elif human is not None:
            sys.stdout.write(human if human.endswith("\n") else human + "\n")
        else:
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def note(self, message: str) -> None:
        """A message for people: always on stderr, never mixed into results."""
        sys.stderr.write(message.rstrip("\n") + "\n")


def dumps(data: Any) -> str:
    """The JSON form of every ``--json`` result: compact, key order as produced, UTF-8."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


_ROOT_DEFAULTS: dict[str, Any] = {"workspace": None, "json": False, "debug": False}


def set_root_options(workspace: Path | None, json_: bool, debug: bool) -> None:
    """Remember options given before the command name (the root callback calls this)."""
    _ROOT_DEFAULTS.update(workspace=workspace, json=json_, debug=debug)


def invocation(
    workspace: Path | None = None, json_: bool = False, debug: bool = False
) -> Invocation:
    """Merge a command's own options with those given before its name and the environment."""
    ws = workspace or _ROOT_DEFAULTS["workspace"]
    if ws is None:
        env = os.environ.get("THT_WORKSPACE")
        ws = Path(env) if env else Path.cwd()
    inv = Invocation(
        workspace=Path(ws),
        json=json_ or bool(_ROOT_DEFAULTS["json"]),
        debug=debug or bool(_ROOT_DEFAULTS["debug"]),
    )
    if inv.debug:
        from kernel.log import enable_debug

        enable_debug()
    return inv


def session_or_env(session: str | None) -> str | None:
    """A command's optional SESSION argument defaults to ``$THT_SESSION``."""
    return session or os.environ.get("THT_SESSION") or None
