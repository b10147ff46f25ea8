"""``tht session new | rephrase | list | status | log | pause | resume | finalize | abandon |
derive``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    pass

from tht.commands._common import applied_json, human_actor, open_for, session_for
from tht.options import ActorOpt, DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation

app = typer.Typer(help="Sessions: one question, one ledger, from admission to finalization.")

ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (recorded in the ledger).")]


@app.command("new")
def new(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Create a session for QUESTION; Question Admission runs at once."""
    from tht.projections import stage_list_json

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    who = human_actor(actor) if actor else "agent"
    applied = app_.new_session(question, actor=who)
    state = applied.state
    admitted = state.stage("admission")
    body = {
        "session": applied.session,
        "seq": state.last_seq,
        "admitted": admitted is not None and admitted.state == "completed",
        "current_stage": state.current_stage,
        "stages": stage_list_json(state),
    }
    if admitted is not None and admitted.state == "failed":
        body["refusal"] = {"code": admitted.failure_code, "reason": admitted.reason}
        inv.note(f"question refused: {admitted.reason}")
    inv.emit(body, f"session {applied.session} (current stage: {state.current_stage})")


@app.command("rephrase")
def rephrase(
    question: Annotated[str, typer.Argument(help="The refused question, asked again.")],
    session: SessionArg = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Ask a refused question again in other words; Question Admission runs at once. The
    refusal of the last allowed attempt (`admission: {attempts: N}`) closes the session."""
    from kernel.admission_attempts import attempts_left
    from tht.projections import stage_list_json

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    who = human_actor(actor) if actor else "agent"
    sid = session_for(app_, session)
    applied = app_.rephrase(sid, question, actor=who)
    state = applied.state
    view = state.stage("admission")
    admitted = view is not None and view.state == "completed"
    closed = state.lifecycle == "abandoned"
    body: dict[str, Any] = {
        "session": applied.session,
        "seq": state.last_seq,
        "admitted": admitted,
        "attempt": state.question_attempt,
        "attempts_left": attempts_left(state),
        "current_stage": state.current_stage,
        "stages": stage_list_json(state),
    }
    of = f"question {state.question_attempt} of {state.admission_attempts}"
    if view is not None and view.state == "failed":
        body["refusal"] = {"code": view.failure_code, "reason": view.reason}
        inv.note(f"question refused: {view.reason}")
    body["closed"] = closed
    if admitted:
        text = f"session {sid}: {of} admitted (current stage: {state.current_stage})"
    elif closed:
        text = (
            f"session {sid}: {of} refused; the session is closed — `tht session derive "
            f"{sid} --as human:ID` starts again from it"
        )
    else:
        left = body["attempts_left"]
        text = (
            f"session {sid}: {of} refused; {left} attempt{'s' if left != 1 else ''} left "
            "(`tht session rephrase QUESTION`)"
        )
    inv.emit(body, text)


@app.command("list")
def list_(workspace: WorkspaceOpt = None, json_: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Sessions with lifecycle, current stage and last seq (oldest first)."""
    from tht.session_views import session_rows

    inv = invocation(workspace, json_, debug)
    rows = session_rows(open_for(inv))
    unsound = [r["session"] for r in rows if not r["integrity_ok"]]
    if unsound:
        inv.note(
            f"warning: {len(unsound)} session ledger(s) do not verify (display only, nothing can "
            f"be appended): run `tht ledger verify SESSION` ({', '.join(unsound)})"
        )
    if inv.json:
        inv.emit(rows)
        return
    from tht.render import render_table

    # the question is prose: render_table wraps it, never cuts it (docs/cli.md)
    inv.emit(
        rows,
        render_table(
            ["session", "lifecycle", "current", "seq", "question"],
            [
                [
                    r["session"],
                    _lifecycle_cell(r),
                    r["current_stage"],
                    r["last_seq"],
                    r["question"],
                ]
                for r in rows
            ],
        )
        if rows
        else "no sessions",
    )


#: how ``session list`` marks a session whose ledger does not verify (the JSON has
#: ``integrity_ok: false``; ``session status`` warns on stderr)
UNVERIFIED_MARK = "DOES NOT VERIFY (tht ledger verify)"


def _lifecycle_cell(row: dict[str, Any]) -> str:
    """The lifecycle, with :data:`UNVERIFIED_MARK` when the session's ledger does not verify:
    what it folds to is display only and may not be what was recorded."""
    if row["integrity_ok"]:
        return str(row["lifecycle"])
    return f"{row['lifecycle']} — {UNVERIFIED_MARK}"


@app.command("status")
def status(
    session: SessionArg = None,
    at: Annotated[
        int | None, typer.Option("--at", help="Fold only up to this seq (time travel).")
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The folded session state: lifecycle, stage timeline, open reviews, blocked flag."""
    from tht.session_views import status_body

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    body, loaded = status_body(app_, sid, at=at)
    if not body["integrity"]["ok"]:
        inv.note(
            "warning: this ledger does not verify (status is display only, nothing can be "
            "appended): run `tht ledger verify`"
        )
    if inv.json:
        inv.emit(body)
        return
    from tht.render import render_result, render_status

    text = render_status(body, loaded.state)
    sample = _verified_sample(app_, sid, loaded.state)
    if sample is not None:
        text += render_result(sample)
    inv.emit(body, text)


def _verified_sample(app_: Any, sid: str, state: Any) -> Any:
    """F7's result sample when the session has a verified one whose file still hashes to what
    the ledger recorded (display only: anything else shows nothing)."""
    import hashlib

    from kernel.verification import RESULT_SAMPLE, read_sample

    record = state.effective_artifact(RESULT_SAMPLE)
    if record is None:
        return None
    data = app_.kernel.store.read_artifact(sid, RESULT_SAMPLE)
    if data is None or hashlib.sha256(data).hexdigest() != record.sha256:
        return None
    return read_sample(data)


@app.command("log")
def log(
    session: SessionArg = None,
    from_seq: Annotated[int, typer.Option("--from", help="First seq to show.")] = 1,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Ledger events, each with its envelope fields (a JSON list under --json)."""
    from kernel.events import info_of
    from tht.projections import event_json

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    events = app_.kernel.log(sid, from_seq=from_seq)
    body = [event_json(e) for e in events]
    if inv.json:
        inv.emit(body)
        return
    from tht.render import render_table

    rows = [[e.seq, e.ts, info_of(e).type, e.stage or "", e.actor, e.subject or ""] for e in events]
    inv.emit(body, render_table(["seq", "ts", "type", "stage", "actor", "subject"], rows))


def _lifecycle(
    verb: str,
    session: str | None,
    actor: str | None,
    reason: str,
    workspace: object,
    json_: bool,
    debug: bool,
) -> None:
    inv = invocation(workspace, json_, debug)  # type: ignore[arg-type]
    who = human_actor(actor)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    from tht import reviewer_actions

    if verb == "finalize":
        body = reviewer_actions.finalize_session(app_, sid, actor=who)
        inv.emit(body, _finalized_text(sid, body["seq"], body["after_finalize"]))
        return
    body = reviewer_actions.lifecycle(app_, sid, verb, actor=who, reason=reason)
    inv.emit(body, f"session {sid} {body['lifecycle']}")


def _finalized_text(session: str, seq: int, hooks: list[dict[str, object]]) -> str:
    """The finalization stands (exit 0); a hook that did not run is said, with the retry."""
    lines = [f"session {session} finalized at seq {seq}"]
    bad = [h for h in hooks if h["status"] != "done"]
    if hooks:
        lines.append(f"after-finalize hooks: {len(hooks) - len(bad)} of {len(hooks)} done")
    for hook in bad:
        error = f": {hook['error']}" if hook["error"] else ""
        lines.append(f"  {hook['task']} {hook['status']}{error}")
    if bad:
        lines.append("`tht outbox run` retries them (`tht outbox list` shows them)")
    return "\n".join(lines)


@app.command("pause")
def pause(
    session: SessionArg = None,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Stop and save: the session can be resumed later (human-only)."""
    _lifecycle("pause", session, actor, reason, workspace, json_, debug)


@app.command("resume")
def resume(
    session: SessionArg = None,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Resume a paused session (human-only)."""
    _lifecycle("resume", session, actor, reason, workspace, json_, debug)


@app.command("finalize")
def finalize(
    session: SessionArg = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Finalize: writes report.md; the session is immutable afterwards (human-only)."""
    _lifecycle("finalize", session, actor, "", workspace, json_, debug)


@app.command("abandon")
def abandon(
    session: SessionArg = None,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """End a session that will not finalize (refused, blocked, unwanted): it becomes
    immutable; `tht session derive` starts again from its question (human-only)."""
    _lifecycle("abandon", session, actor, reason, workspace, json_, debug)


@app.command("derive")
def derive(
    session: SessionArg = None,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """A new session linked to a finalized or abandoned one, to correct it (human-only)."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    applied = app_.new_session("", actor=who, derived_from=sid, reason=reason)
    body = applied_json(applied, derived_from=sid)
    inv.emit(body, f"session {applied.session} derived from {sid}")
