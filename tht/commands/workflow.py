"""Workflow commands: ``propose``, ``review``, ``decision``, ``stage``, ``artifact``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tht.commands._common import applied_json, human_actor, open_for, session_for
from tht.options import ActorOpt, DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation

review_app = typer.Typer(help="Human reviews: list, show, answer.")
decision_app = typer.Typer(help="Decisions: retract one.")
stage_app = typer.Typer(help="Stages: run (tht's own work), skip or reopen (human-only).")
artifact_app = typer.Typer(help="Artifacts: show one, verified against the ledger.")

ReasonReq = Annotated[str | None, typer.Option("--reason", help="Why (required).")]

# What `review show` prints of each artifact a review approves (the rest: `tht artifact show`).
MAX_SHOWN_ARTIFACT_BYTES = 64 * 1024


def read_input_file(file: Path, *, what: str, limit: int | None = None) -> bytes:
    """The bytes of a ``--file`` input (``-``: stdin), read with a size bound.

    A path is opened by fd with ``O_NONBLOCK`` and must be a regular file (a FIFO, ``/dev/zero``
    or another device is refused, never read until memory runs out or forever); at most
    ``limit + 1`` bytes are read, so anything larger is refused (exit 2) without being loaded.
    """
    from kernel.errors import UsageError
    from kernel.reviewer_tools import MAX_PROPOSAL_BYTES

    bound = MAX_PROPOSAL_BYTES if limit is None else limit
    too_big = f"{file}: {what} larger than {bound} bytes"
    if str(file) == "-":
        data = sys.stdin.buffer.read(bound + 1)
        if len(data) > bound:
            raise UsageError(f"stdin: {what} larger than {bound} bytes")
        return data
    from kernel.files import FileRefused, read_regular

    try:
        return read_regular(file, limit=bound)
    except FileRefused as refused:
        message = {
            "missing": f"{file}: {what} not found",
            "symlink": f"{file}: cannot read: a symbolic link",
            "not_regular": (
                f"{file}: not a regular file (FIFO, device or folder); give a {what} "
                "path, or '-' for stdin"
            ),
            "too_large": too_big,
            "unreadable": f"{file}: cannot read: {refused.detail}",
        }[refused.reason]
        raise UsageError(message) from refused


def _visible(text: str, *, multiline: bool = False) -> str:
    from tht.render import visible

    return visible(text, multiline=multiline)


def _artifact_views(
    app_: Any, sid: str, state: Any, names: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Each artifact a review carries, read through the kernel (verified against the SHA-256
    the ledger recorded), its text bounded to :data:`MAX_SHOWN_ARTIFACT_BYTES`."""
    from kernel.errors import ThtError

    views: list[dict[str, Any]] = []
    for name in names:
        record = state.effective_artifact(name)
        view: dict[str, Any] = {
            "name": name,
            "sha256": record.sha256 if record is not None else None,
            "size": record.size if record is not None else None,
            "content": None,
            "truncated": False,
        }
        try:
            data = app_.kernel.artifact(sid, name)
        except ThtError as err:
            view["error"] = err.message
            views.append(view)
            continue
        view["size"] = len(data)
        shown = data[:MAX_SHOWN_ARTIFACT_BYTES]
        view["truncated"] = len(data) > len(shown)
        try:
            view["content"] = shown.decode("utf-8")
        except UnicodeDecodeError as err:
            if view["truncated"] and err.start >= len(shown) - 3:  # a character cut in two
                view["content"] = shown[: err.start].decode("utf-8", errors="replace")
            else:
                view["binary"] = True
        views.append(view)
    return views


def _event_line(event: dict[str, Any]) -> str:
    import json

    subject = "" if event.get("subject") is None else f" subject={event['subject']}"
    payload = json.dumps(event.get("payload", {}), ensure_ascii=False, sort_keys=True)
    return f"{event['type']}{subject} payload={payload}"


def propose(
    stage: Annotated[str, typer.Argument(help="Semantic stage id, e.g. disambiguation.")],
    file: Annotated[Path, typer.Option("--file", help="The proposal JSON file ('-' reads stdin).")],
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The stage's owner turns a proposal into an outcome: a review request, or events applied
    directly where the stage policy allows.

    \b
    A proposal is one JSON object (unknown fields are errors), e.g.
      {"kind": "select", "prompt": "What does 'ablazione' mean here?",
       "options": [{"id": "flag", "label": "the flag_ablazione column",
                    "events": [{"type": "concept_clarified", "subject": "ablazione",
                                "payload": {"meaning": "flag"}}]}],
       "artifacts": []}
    options: {"id" (what the reviewer chooses), "label", "events": [{"type", "subject",
    "payload"}]}; artifacts: {"name", "content"}, only names the stage declares
    (e.g. sql_final.sql in F6), never one tht writes itself.

    \b
    Kinds:
      select    a review: the human chooses one option (prompt, options)
      decide    a review: the human chooses any subset of the options
      confirm   a review: approve (completes the stage) or reject its artifacts; no options
      auto      top-level "events" applied without review; automatic stages only
      revision  {"target": STAGE, "reason": T}: ask a human to reopen this or an earlier stage
      fail      {"failure": {"code", "message"}}: the stage cannot complete
    Optional "invocation" names the stage's current invocation (<stage>#<epoch>).

    \b
    Stages, in order (display code, id; what each may emit and write; completion):
      pre admission         emits: question_admitted, question_refused
                            completion: automatic; skip: never
      F1  disambiguation    emits: concept_clarified, ambiguity_open, value_grounded
                            completion: review_required; skip: human
      F2  memory_recall     emits: memory_applied, memory_rejected, memory_nothing_recalled
                            completion: review_required; skip: human
      F3  rewriting         emits: question_rewritten
                            artifacts: question.md
                            completion: review_required; skip: never
      F4  schema_linking    emits: schema_linked, evidence_accepted, evidence_rejected,
                                   concept_formula_approved, concept_formula_rejected
                            artifacts: schema_linking.json, catalog_snapshot.json
                            completion: review_required; skip: never
      F5  cte               emits: cte_approved
                            artifacts: cte/*
                            completion: review_required; skip: human
      F6  sql               emits: sql_approved
                            artifacts: sql_final.sql
                            completion: review_required; skip: never
      F7  verification      emits: result_verified
                            artifacts: result_sample.json
                            completion: automatic; skip: human
      F8  datamart          emits: datamart_defined, datamart_skipped
                            artifacts: datamart.sql
                            completion: review_required; skip: human
      ext memory_promotion  emits: memory_promoted, memory_promotion_declined,
                                   memory_nothing_to_promote
                            completion: review_required; skip: human
      fin finalize          emits: -
                            artifacts: report.md
                            completion: automatic; skip: never
      any stage may also append the receipts: evidence_consulted
    Only the current stage accepts a proposal; admission is run by its module and
    finalize is a human decision (tht session finalize).

    \b
    tht's own work (tht stage run STAGE; propose only revision or fail there):
      memory_recall, verification, memory_promotion
    Written by tht, never proposed: question.md, catalog_snapshot.json,
      result_sample.json, report.md
    Decisions are the reviewer's: an option's events are recorded only when a human
    chooses it (tht review answer, human-only). The agent's full guide, generated from
    the same workflow: tht agent skill build (docs/agent-skill.md).
    """
    inv = invocation(workspace, json_, debug)
    source = str(file)
    if source == "-":
        source = "stdin"
    data = read_input_file(file, what="proposal file")
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
    inv.emit(body, human if inv.json else _visible(human))


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

    def options(review: Any) -> str:
        if review.kind in ("confirm", "revision"):
            return "--approve | --reject"
        return "; ".join(f"{o.id}: {o.label}" for o in review.options)

    rows = [
        [r["seq"], r["stage"], r["kind"], r["prompt"], options(review)]
        for r, review in zip(body, state.open_reviews, strict=True)
    ]
    inv.emit(body, render_table(["seq", "stage", "kind", "prompt", "options"], rows))


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
    sid = session_for(app_, session)
    state = app_.kernel.load(sid).state
    review = state.review(seq)
    if review is None:
        if seq < 1 or seq > state.last_seq:
            raise NotFoundError(f"seq {seq} does not exist (last seq is {state.last_seq})")
        raise PolicyError(f"seq {seq} is not an open review request")
    body = review_json(review, full=True)
    # beside the documented fields: what each artifact the review carries holds (verified)
    body["artifact_contents"] = _artifact_views(app_, sid, state, review.artifacts)
    if inv.json:
        inv.emit(body)
        return
    v = _visible
    lines = [f"review {seq} ({v(review.stage)}, {v(review.kind)}): {v(review.prompt)}"]
    for option in body.get("options", []):
        mark = " (pre-selected)" if option.get("selected") else ""
        lines.append(f"  option [{v(option['id'])}] {v(option['label'])}{mark}")
        if not option["events"]:
            lines.append("    choosing it records no event beyond review_answered")
        for event in option["events"]:
            lines.append(f"    records: {v(_event_line(event))}")
        for event in option.get("unchosen", []):
            lines.append(f"    not chosen, records: {v(_event_line(event))}")
    if review.closes:
        lines.append("  answering completes the stage (name every option you choose)")
    if review.kind == "confirm":
        lines.append(
            "  --approve completes the stage, accepting the artifacts below; --reject does not"
        )
    if review.target:
        lines.append(f"  reopens: {v(review.target)}")
    for view in body["artifact_contents"]:
        head = f"  artifact {v(view['name'])}"
        if view.get("error"):
            lines.append(f"{head}: NOT VERIFIED: {v(view['error'])}")
            continue
        lines.append(f"{head} (sha256 {view['sha256']}, {view['size']} bytes):")
        if view["content"] is None:
            lines.append("    (binary content; see `tht artifact show`)")
        else:
            for text_line in v(view["content"], multiline=True).split("\n"):
                lines.append(f"    | {text_line}")
        if view["truncated"]:
            lines.append(
                f"    … truncated: first {MAX_SHOWN_ARTIFACT_BYTES} of {view['size']} bytes "
                f"shown; `tht artifact show {v(view['name'])}` prints it all"
            )
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
    from tht.reviewer_actions import answer_review

    body = answer_review(
        app_, sid, seq, actor=who, choose=chosen, approve=approve, reject=reject,
        rationale=rationale,
    )  # fmt: skip
    message = f"answered {seq}; current stage: {body['current_stage']}"
    saved = body.get("memory")
    if saved is not None:
        message += (
            f"\nworkspace memory: saved {len(saved['saved'])}, already there "
            f"{len(saved['already'])}"
        )
    if "ran" in body:
        from tht.commands.stage_run import describe_run

        message += "\n" + describe_run(body["ran"])
    inv.emit(body, message)


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
    from tht.reviewer_actions import retract_decision

    inv.emit(retract_decision(app_, sid, seq, actor=who, reason=reason), f"retracted {seq}")


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
    from tht.reviewer_actions import skip_stage

    body = skip_stage(app_, sid, stage, actor=who, reason=reason)  # F8 skipped → promotion runs
    message = f"skipped {stage}"
    if "ran" in body:
        from tht.commands.stage_run import describe_run

        message += "\n" + describe_run(body["ran"])
    inv.emit(body, message)


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
    from tht.reviewer_actions import reopen_stage

    inv.emit(reopen_stage(app_, sid, stage, actor=who, reason=reason), f"reopened {stage}")


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
    if sys.stdout.isatty():  # a reviewer's terminal: never interpret escapes from an artifact
        text = data.decode("utf-8", errors="backslashreplace")
        sys.stdout.write(_visible(text, multiline=True))
        if not text.endswith("\n"):
            sys.stdout.write("\n")
    else:  # a pipe or a file: the exact bytes
        sys.stdout.buffer.write(data)
    sys.stdout.flush()
