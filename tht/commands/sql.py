"""``tht sql check`` / ``tht sql run``: SQL over the Workspace Database (docs/sql.md).

``check`` is the reviewer's early, precise feedback (parse, one read-only statement, every table
and column in the session's catalog snapshot or the live catalog); ``run`` executes one query on
a read-only connection with a row limit and a timeout — a write of any kind is refused there, by
the connection (exit 5), not by this command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation, session_or_env

app = typer.Typer(
    name="sql",
    help="SQL over the workspace database: check it against the catalog, run it read-only.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

FileArg = Annotated[
    Path, typer.Argument(metavar="FILE", help="The SQL file ('-' reads stdin).", show_default=False)
]


def _source(file: Path) -> str:
    return "stdin" if str(file) == "-" else str(file)


@app.command("check")
def check_cmd(
    file: FileArg,
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Check one query: it parses in the database's dialect, is a single read-only statement,
    and names only tables and columns of the session's catalog snapshot (with SESSION or
    $THT_SESSION) or of the catalog. Exit 2 when it does not (the JSON is still printed)."""
    from tht.commands._common import open_for, session_for
    from tht.commands.workflow import read_input_file
    from tht.sql_runtime import MAX_SQL_BYTES, check_file

    inv = invocation(workspace, json_, debug)
    runtime = open_for(inv)
    sid = session_for(runtime, session) if session_or_env(session) else None
    data = read_input_file(file, what="SQL file", limit=MAX_SQL_BYTES)
    result, sensitive = check_file(runtime, data, _source(file), sid)
    inv.emit({**result.to_json(), "sensitive": sensitive}, _check_text(result, _source(file)))
    if sensitive:
        inv.note(
            f"warning: the SQL reads sensitive column(s): {', '.join(sensitive)}; their values "
            "are masked in its results (result_sample.json, tht sql run)"
        )
    if not result.ok:
        count = len(result.problems)
        inv.note(f"error: the SQL fails the check ({count} problem{'s' if count != 1 else ''})")
        raise typer.Exit(2)


def _check_text(result: Any, source: str) -> str:
    from tht.render import visible

    if result.ok:
        return (
            f"ok ({result.dialect}): {len(result.tables)} table(s), "
            f"{len(result.columns)} column(s): {', '.join(result.columns) or '-'}"
        )
    return "\n".join(visible(p.line(source)) for p in result.problems)


@app.command("run")
def run_cmd(
    file: FileArg,
    limit: Annotated[
        int | None,
        typer.Option("--limit", metavar="N", help="At most N rows (default: database.row_limit)."),
    ] = None,
    timeout_ms: Annotated[
        int | None,
        typer.Option(
            "--timeout-ms", metavar="T", help="Stop after T ms (default: database.timeout_ms)."
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run one read-only query on the workspace database, with a row limit and a timeout.
    A write of any kind is refused by the connection (exit 5)."""
    from tht.commands._common import open_for
    from tht.commands.workflow import read_input_file
    from tht.sql_runtime import MAX_SQL_BYTES, run_file

    inv = invocation(workspace, json_, debug)
    runtime = open_for(inv)
    data = read_input_file(file, what="SQL file", limit=MAX_SQL_BYTES)
    body = run_file(runtime, data, _source(file), limit=limit, timeout_ms=timeout_ms)
    if inv.json:
        inv.emit(body)
        return
    inv.emit(body, _run_text(body))


def _run_text(body: dict[str, Any]) -> str:
    from tht.render import render_table

    columns = [c["name"] for c in body["columns"]]
    rows = [["NULL" if v is None else _cell(v) for v in row] for row in body["rows"]]
    table = render_table(columns, rows) if columns else ""
    more = " (truncated: more rows exist; raise --limit)" if body["truncated"] else ""
    masked = body.get("masked") or []
    if masked:
        names = ", ".join(columns[i] for i in masked)
        more += f"; sensitive, masked: {names}"
    return f"{table}{body['row_count']} row(s){more} in {body['elapsed_ms']:g} ms"


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, ensure_ascii=False)
    return str(value)
