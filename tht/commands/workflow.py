"""Workflow commands: ``propose``, ``review``, ``decision``, ``stage``, ``artifact``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from tht.commands._common import applied_json, human_actor, open_for, session_for
from tht.options import ActorOpt, DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation

review_app = typer.Typer(help="Human reviews: list, show, answer.")
decision_app = typer.Typer(help="Decisions: retract one.")
stage_app = typer.Typer(help="Stages: skip or reopen (human-only).")
artifact_app = typer.Typer(help="Artifacts: show one, verified against the ledger.")

ReasonReq = Annotated[str | None, typer.Option("--reason", help="Why (required).")]


def propose(
    stage: Annotated[str, typer.Argument(help="Semantic stage id, e.g. disambiguation.")],
    file: Annotated[Path, typer.Option("--file", help="The proposal JSON file ('-' reads stdin).")],
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The stage's owner turns a proposal into an outcome: a review request, or events applied
    directly where the stage policy allows."""
    from kernel.errors import UsageError

    inv = invocation(workspace, json_, debug)
    source = str(file)
    if source == "-":
        data = sys.stdin.buffer.read()
        source = "stdin"
    else:
        try:
            data = file.read_bytes()
        except FileNotFoundError as err:
            raise UsageError(f"{file}: proposal file not found") from err
        except OSError as err:
            raise UsageError(f"{file}: cannot read: {err}") from err
    app_ = open_for(inv)
    sid = session_for(app_, session)
    applied = app_.propose(sid, stage, data, source)
    view = applied.state.stage(stage)
    review = next(
        (
            e.seq
            for e in applied.events
            if type(e).__name__ in ("ReviewRequested", "RevisionRequested")
        ),
        None,
    )
    body = applied_json(applied, stage=stage, state=view.state if view else None, review=review)
    human = f"{stage}: {body['state']}" + (f" (review {review})" if review else "")
    inv.emit(body, human)


@review_app.command("list")
def review_list(
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Open review requests."""
    from tht.projections import review_json

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    state = app_.kernel.load(session_for(app_, session)).state
    body = [review_json(r) for r in state.open_reviews]
    if inv.json or not body:
        inv.emit(body, "no open reviews")
        return
    from tht.render import render_table

    rows = [[r["seq"], r["stage"], r["kind"], r["prompt"]] for r in body]
    inv.emit(body, render_table(["seq", "stage", "kind", "prompt"], rows))


@review_app.command("show")
def review_show(
    seq: Annotated[int, typer.Argument(help="The review request's seq.")],
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """One open review with its options and the events each would record."""
    from kernel.errors import NotFoundError, PolicyError
    from tht.projections import review_json

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    state = app_.kernel.load(session_for(app_, session)).state
    review = state.review(seq)
    if review is None:
        if seq < 1 or seq > state.last_seq:
            raise NotFoundError(f"seq {seq} does not exist (last seq is {state.last_seq})")
        raise PolicyError(f"seq {seq} is not an open review request")
    body = review_json(review, full=True)
    lines = [f"review {seq} ({review.stage}, {review.kind}): {review.prompt}"]
    for option in review.options:
        lines.append(f"  [{option.id}] {option.label}")
    if review.target:
        lines.append(f"  reopens: {review.target}")
    for name in review.artifacts:
        lines.append(f"  artifact: {name}")
    inv.emit(body, "\n".join(lines))


@review_app.command("answer")
def review_answer(
    seq: Annotated[int, typer.Argument(help="The review request's seq.")],
    session: SessionArg = None,
    choose: Annotated[
        list[str] | None,
        typer.Option("--choose", help="Option id(s): repeat, or separate with commas."),
    ] = None,
    approve: Annotated[bool, typer.Option("--approve", help="Approve (confirm/revision).")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject (confirm/revision).")] = False,
    rationale: Annotated[str, typer.Option("--rationale", help="Why.")] = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Answer a review: the chosen options' events are appended, caused by the request."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    chosen = tuple(
        part.strip() for item in (choose or []) for part in item.split(",") if part.strip()
    )
    app_ = open_for(inv)
    sid = session_for(app_, session)
    applied = app_.kernel.answer(
        sid, seq, actor=who, choose=chosen, approve=approve, reject=reject, rationale=rationale
    )
    body = applied_json(applied, answered=seq)
    inv.emit(body, f"answered {seq}; current stage: {applied.state.current_stage}")


@decision_app.command("retract")
def decision_retract(
    seq: Annotated[int, typer.Argument(help="The decision's seq.")],
    session: SessionArg = None,
    reason: ReasonReq = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Withdraw one decision (decision_retracted); it is no longer effective."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    applied = app_.kernel.retract(sid, seq, actor=who, reason=reason)
    inv.emit(applied_json(applied, retracts=seq), f"retracted {seq}")


@stage_app.command("skip")
def stage_skip(
    stage: Annotated[str, typer.Argument(help="Semantic stage id.")],
    session: SessionArg = None,
    reason: ReasonReq = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Conclude the current stage without running it, where its policy allows."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    applied = app_.kernel.skip(sid, stage, actor=who, reason=reason)
    inv.emit(applied_json(applied, stage=stage), f"skipped {stage}")


@stage_app.command("reopen")
def stage_reopen(
    stage: Annotated[str, typer.Argument(help="Semantic stage id.")],
    session: SessionArg = None,
    reason: ReasonReq = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Reopen a stage (approving its revision request if one is open); later results go stale."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    applied = app_.kernel.reopen(sid, stage, actor=who, reason=reason)
    inv.emit(applied_json(applied, stage=stage), f"reopened {stage}")


@artifact_app.command("show")
def artifact_show(
    name: Annotated[str, typer.Argument(help="Artifact name, e.g. question.md.")],
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The artifact's content, verified against the SHA-256 recorded in the ledger."""
    import hashlib

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    data = app_.kernel.artifact(sid, name)
    if inv.json:
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        inv.emit(
            {
                "session": sid,
                "name": name,
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "content": text,
            }
        )
        return
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
