"""The ``tht`` command line: grammar and exit codes of ARCHITECTURE §5–6 (docs/cli.md).

Start-up cost matters (``tht session status`` is measured against ``tht --version``): this module
and every command module import only typer and the standard library at top level; each command
imports what it needs inside its body.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from tht import __version__
from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, dumps, set_root_options

app = typer.Typer(
    name="tht",
    help="Deterministic, event-sourced workflow kernel for human-reviewed analytics sessions.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"tht {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    set_root_options(workspace, json_, debug)


def _register() -> None:
    """Static composition of the command groups (no discovery)."""
    from tht.commands import (
        agent,
        analytics,
        catalog,
        doctor,
        evaluator,
        evidence,
        gate,
        hooks,
        intent,
        ledger,
        memory,
        reviewer,
        route,
        schema,
        search,
        serve,
        session,
        show,
        sql,
        stage_run,
        store,
        workflow,
        workspace,
    )

    app.add_typer(workspace.app, name="workspace")
    app.add_typer(session.app, name="session")
    session.app.command("show")(show.show)
    app.command("propose")(workflow.propose)
    app.add_typer(workflow.review_app, name="review")
    app.add_typer(workflow.decision_app, name="decision")
    app.add_typer(workflow.stage_app, name="stage")
    workflow.stage_app.command("run")(stage_run.stage_run)
    app.add_typer(workflow.artifact_app, name="artifact")
    app.add_typer(ledger.ledger_app, name="ledger")
    app.add_typer(ledger.schemas_app, name="schemas")
    app.add_typer(ledger.outbox_app, name="outbox")
    app.add_typer(route.app, name="route")
    app.add_typer(hooks.app, name="hooks")
    app.add_typer(evaluator.app, name="evaluator")
    app.add_typer(analytics.app, name="analytics")
    app.add_typer(evidence.app, name="evidence")
    app.add_typer(search.app, name="search")
    app.add_typer(reviewer.app, name="reviewer")
    app.add_typer(catalog.app, name="catalog")
    app.add_typer(memory.app, name="memory")
    app.add_typer(gate.app, name="gate")
    app.add_typer(intent.app, name="intent")
    app.add_typer(sql.app, name="sql")
    app.add_typer(schema.app, name="schema")
    app.add_typer(store.app, name="store")
    app.command("doctor")(doctor.doctor)
    app.add_typer(serve.app, name="serve")
    app.add_typer(agent.app, name="agent")


_register()


def _wants(flag: str, argv: list[str]) -> bool:
    return flag in argv


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turn every error into one line and its documented exit code."""
    from kernel.errors import ThtError

    try:
        from typer._click.exceptions import ClickException
    except ImportError:  # typer < 0.25 depends on click instead of vendoring it
        from click.exceptions import ClickException  # type: ignore[no-redef,assignment,unused-ignore]

    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants("--json", args)
    debug = _wants("--debug", args)
    command = typer.main.get_command(app)
    try:
        rc = command.main(args=args, prog_name="tht", standalone_mode=False)
    except ThtError as err:
        _fail(err.message, err.to_json(), err.exit_code, as_json, debug)
    except ClickException as err:
        code = getattr(err, "exit_code", 2)
        if as_json:
            payload = {
                "error": {"code": "usage", "exit_code": code, "message": err.format_message()}
            }
            sys.stdout.write(dumps(payload) + "\n")
        err.show()
        sys.exit(code)
    except typer.Abort:
        sys.stderr.write("Aborted.\n")
        sys.exit(1)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as err:  # a bug: one line, traceback only under --debug
        message = f"internal error: {type(err).__name__}: {err}"
        body = {"error": {"code": "internal", "exit_code": 1, "message": message}}
        _fail(message, body, 1, as_json, debug)
    # click returns the code of a ``typer.Exit`` (``--help``, ``--version``) when not standalone
    sys.exit(rc if isinstance(rc, int) else 0)


def _fail(message: str, body: Mapping[str, object], code: int, as_json: bool, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    if as_json:
        sys.stdout.write(dumps(body) + "\n")
    sys.stderr.write(f"error: {message}\n")
    sys.exit(code)


__all__ = ["Path", "app", "main"]
