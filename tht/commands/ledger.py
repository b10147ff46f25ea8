"""``tht ledger verify``, ``tht schemas export``, ``tht outbox run | list``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tht.commands._common import human_actor, open_for, session_for
from tht.options import DebugOpt, Invocation, JsonOpt, SessionArg, WorkspaceOpt, invocation

ledger_app = typer.Typer(help="Ledgers: verify (and repair a torn tail).")
schemas_app = typer.Typer(help="Ledger schemas: regenerate ledger_schemas/ from the code.")
outbox_app = typer.Typer(help="After-finalize outbox: run pending hooks, list them.")


@ledger_app.command("verify")
def verify(
    session: SessionArg = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Human-only: quarantine a torn tail and every line from the first one that "
            "fails, accept valid lines past the anchor, re-anchor; recorded as ledger_repaired.",
        ),
    ] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (required with --repair).")
    ] = None,
    actor: Annotated[
        str | None, typer.Option("--as", help="human:<id> (required with --repair).")
    ] = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Audit: verify every human signature, not only those after the last one "
            "that verifies (which witnesses the history before it).",
        ),
    ] = False,
    all_: Annotated[
        bool,
        typer.Option(
            "--all", help="Verify every session of the workspace (no SESSION); exit 7 if any fails."
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Schemas, seq, hash chain, head anchor, torn tail, workflow snapshot, and the replay of
    every event (and its signature in signed mode). Exit 7 if not ok."""
    inv = invocation(workspace, json_, debug)
    if all_:
        _verify_all(inv, session, repair=repair, full=full)
        return
    if repair:
        who = human_actor(actor)
        if not reason or not reason.strip():
            from kernel.errors import UsageError

            raise UsageError("--repair needs a reason (--reason TEXT)")
    app_ = open_for(inv)
    sid = session_for(app_, session)
    if repair:
        before, applied = app_.kernel.repair(sid, actor=who, reason=reason or "")
        after = app_.kernel.verify(sid)
        body = {
            "session": sid,
            **after.to_json(),
            "repaired": True,
            "before": before.to_json()["problems"],
            "seq": applied.state.last_seq,
        }
        text = (
            f"repaired: {len(before.problems)} problem(s) recorded as ledger_repaired "
            f"(seq {applied.state.last_seq}); now {'ok' if after.ok else 'NOT OK'}"
        )
        inv.emit(body, text)
        if not after.ok:
            raise typer.Exit(7)
        return
    report = app_.kernel.verify(sid, full=full)
    body = {"session": sid, **report.to_json()}
    if report.ok:
        inv.emit(body, f"ok: {report.events} events, head {report.head}")
        return
    lines = [f"NOT OK: {report.events} events"]
    for problem in report.problems:
        where = f"line {problem.line}: " if problem.line else ""
        where = where or (f"seq {problem.seq}: " if problem.seq else "")
        hint = " (repairable: --repair)" if problem.repairable else ""
        lines.append(f"  {where}{problem.code}: {problem.message}{hint}")
    inv.emit(body, "\n".join(lines))
    raise typer.Exit(7)


def _verify_all(inv: Invocation, session: str | None, *, repair: bool, full: bool) -> None:
    """``verify --all``: every session of the workspace, oldest first."""
    from kernel.errors import UsageError

    if session is not None:
        raise UsageError("--all verifies every session: give no SESSION with it")
    if repair:
        raise UsageError("--repair works on one session: give its SESSION instead of --all")
    app_ = open_for(inv)
    rows: list[dict[str, Any]] = []
    for sid in app_.kernel.session_ids():
        report = app_.kernel.verify(sid, full=full)
        data = report.to_json()
        rows.append(
            {"session": sid, "ok": report.ok, "events": report.events, "problems": data["problems"]}
        )
    failed = [r["session"] for r in rows if not r["ok"]]
    body = {"ok": not failed, "sessions": rows}
    lines = [f"{len(rows)} session(s): {len(rows) - len(failed)} ok, {len(failed)} NOT OK"]
    for row in rows:
        verdict = "ok" if row["ok"] else f"NOT OK ({len(row['problems'])} problem(s))"
        lines.append(f"  {row['session']}  {row['events']} events  {verdict}")
    inv.emit(body, "\n".join(lines))
    if failed:
        raise typer.Exit(7)


def _repo_root() -> Path:
    here = Path(__file__).resolve().parents[2]
    return here if (here / "pyproject.toml").is_file() else Path.cwd()


@schemas_app.command("export")
def export(
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder (default: ledger_schemas/).")
    ] = None,
    doc: Annotated[
        Path | None, typer.Option("--doc", help="Markdown file (default: docs/ledger.md).")
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Regenerate ledger_schemas/ (one schema per event type and version + index.json)."""
    from kernel.errors import UsageError
    from kernel.schemas import render_ledger_doc, schema_documents, write_documents

    inv = invocation(workspace, json_, debug)
    root = _repo_root()
    folder = out or root / "ledger_schemas"
    doc_path = doc or root / "docs" / "ledger.md"
    text = render_ledger_doc()
    try:
        written, removed = write_documents(folder, schema_documents())
        doc_changed = not doc_path.exists() or doc_path.read_text(encoding="utf-8") != text
        if doc_changed:
            doc_path.parent.mkdir(parents=True, exist_ok=True)
            doc_path.write_text(text, encoding="utf-8")
    except OSError as err:
        where = err.filename or folder
        raise UsageError(f"{where}: cannot write: {err.strerror or err}") from err
    body = {
        "folder": str(folder),
        "written": written,
        "removed": removed,
        "doc": str(doc_path),
        "doc_changed": doc_changed,
    }
    inv.emit(body, f"{len(written)} written, {len(removed)} removed in {folder}")


@outbox_app.command("run")
def outbox_run(
    session: SessionArg = None,
    force: Annotated[bool, typer.Option("--force", help="Ignore retry back-off.")] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Execute pending after-finalize hooks (best effort; failures are retried later)."""
    import msgspec

    from tht.options import session_or_env

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    sid = session_for(app_, session) if session_or_env(session) else None
    run = app_.run_outbox(session=sid, force=force)
    body = msgspec.to_builtins(run)
    inv.emit(
        body,
        f"done {len(body['done'])}, retrying {len(body['retrying'])}, "
        f"failed {len(body['failed'])}, not due {len(body['not_due'])}",
    )


@outbox_app.command("list")
def outbox_list(
    workspace: WorkspaceOpt = None, json_: JsonOpt = False, debug: DebugOpt = False
) -> None:
    """Every outbox item with its status, attempts and last error."""
    import msgspec

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    outbox = app_.kernel.outbox
    items = [msgspec.to_builtins(i) for i in (outbox.items() if outbox else [])]
    if inv.json or not items:
        inv.emit(items, "outbox empty")
        return
    from tht.render import render_table

    rows = [[i["id"], i["status"], i["attempts"], i["last_error"] or ""] for i in items]
    inv.emit(items, render_table(["item", "status", "attempts", "last error"], rows))
