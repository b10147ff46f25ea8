"""``tht evidence …``: prepare, status, resolve, publish, import-proposal (docs/evidence.md).

Command bodies import what they need (start-up time is measured); the Evidence module receives
its capabilities from :mod:`tht.evidence_runtime`, the composition root of the module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tht.options import ActorOpt, DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from kernel.trust import ReviewerSigner
    from tht.evidence_runtime import EvidenceRuntime

app = typer.Typer(
    name="evidence",
    help="Curated evidence: prepare units from sources, check them, publish the index.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@app.command("prepare")
def prepare_cmd(
    source: Annotated[
        str | None,
        typer.Option("--source", help="Prepare only this source (path under evidence/sources/)."),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Source Evidence → Curated Evidence Units (staged, applied atomically)."""
    from tht.evidence_runtime import open_evidence, progress_reporter

    inv = invocation(workspace, json_, debug)
    runtime = open_evidence(inv.workspace)
    from modules.evidence import prepare

    only = _source_rel(source) if source is not None else None
    try:
        with progress_reporter(enabled=not inv.json, label="preparing") as progress:
            plan = prepare(
                runtime.paths,
                max_chunk_chars=runtime.settings.max_chunk_chars,
                only=only,
                restructurer=runtime.restructurer(),
                progress=progress,
            )
    finally:
        runtime.close()
    body = {
        "sources": [r.to_json() for r in plan.reports],
        "created": plan.created,
        "orphaned": list(plan.orphaned),
        "written": sorted(plan.writes),
    }
    lines = []
    for report in plan.reports:
        extra = []
        if report.created:
            extra.append(f"{len(report.created)} new")
        if report.kept:
            extra.append(f"{len(report.kept)} kept")
        if report.retirement_candidates:
            extra.append(f"{len(report.retirement_candidates)} retirement candidate(s)")
        lines.append(
            f"{report.status:<10} {report.path}" + (f": {', '.join(extra)}" if extra else "")
        )
    if plan.orphaned:
        lines.append(f"orphaned units: {', '.join(plan.orphaned)}")
    lines.append(f"{len(plan.created)} unit(s) created, {len(plan.writes)} file(s) written")
    inv.emit(body, "\n".join(lines))


def _source_rel(source: str) -> str:
    from pathlib import PurePosixPath

    rel = source.replace("\\", "/")
    for prefix in ("./", "evidence/sources/"):
        rel = rel.removeprefix(prefix)
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts:
        from kernel.errors import UsageError

        raise UsageError(f"--source: {source}: give a path under evidence/sources/")
    return str(path)


@app.command("status")
def status_cmd(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Units, review items, orphans, retirement candidates, active generation."""
    from tht.evidence_runtime import open_evidence

    inv = invocation(workspace, json_, debug)
    runtime = open_evidence(inv.workspace)
    from modules.evidence import load_evidence, status_report

    loaded = load_evidence(runtime.paths, max_chunk_chars=runtime.settings.max_chunk_chars)
    body = status_report(loaded.state)
    body["active_generation"] = runtime.active_generation()
    problem = runtime.approval_problem() if body["active_generation"] is not None else None
    if problem is not None:  # signed mode: what every search will say (a record is a file)
        body["unapproved"] = problem
    inv.emit(body, _status_text(body))


def _status_text(body: dict[str, object]) -> str:
    review = body["review_items"]
    assert isinstance(review, list)
    lines = [
        f"units: {body['units']} ({body['publishable']} publishable, "
        f"{len(body['blocked'])} blocked)"  # type: ignore[arg-type]
    ]
    for item in review:
        lines.append(f"  {item['id']}: [{item['code']}] {item['message']}")
    sources = body["sources"]
    assert isinstance(sources, dict)
    if sources["unprepared"]:
        lines.append("unprepared sources: " + ", ".join(sources["unprepared"]))
    if sources["changed"]:
        lines.append("changed since prepared: " + ", ".join(sources["changed"]))
    if sources["unreadable"]:
        lines.append("unreadable sources: " + ", ".join(sources["unreadable"]))
    generation = body.get("active_generation")
    line = f"active generation: {generation['id'] if isinstance(generation, dict) else 'none'}"
    approval = generation.get("approval") if isinstance(generation, dict) else None
    if "unapproved" in body:
        line += f"\nNOT APPROVED: {body['unapproved']}"
    elif isinstance(approval, dict):
        line += f" (approved by {approval['reviewer']} at {approval['approved_at']})"
    lines.append(line)
    return "\n".join(lines)


@app.command("resolve")
def resolve_cmd(
    evidence_id: Annotated[str, typer.Argument(metavar="ID", help="evidence:<slug>[#<fragment>]")],
    retire: Annotated[
        bool, typer.Option("--retire", help="Retire the unit: delete it, keep its id reserved.")
    ] = False,
    relink: Annotated[
        str | None,
        typer.Option("--relink", metavar="SOURCE", help="Point the unit at another source."),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Citable id → unit file, source and fragment; or retire / relink the unit."""
    from kernel.errors import UsageError
    from tht.evidence_runtime import open_evidence

    inv = invocation(workspace, json_, debug)
    if retire and relink is not None:
        raise UsageError("--retire and --relink exclude each other")
    runtime = open_evidence(inv.workspace)
    from modules.evidence import relink_unit, resolve_id, retire_unit

    limit = runtime.settings.max_chunk_chars
    if retire:
        body = retire_unit(runtime.paths, evidence_id, max_chunk_chars=limit)
        inv.emit(body, f"retired {body['id']}: deleted {body['deleted']}; review with git diff")
        return
    if relink is not None:
        body = relink_unit(runtime.paths, evidence_id, relink, max_chunk_chars=limit)
        inv.emit(body, f"relinked {body['id']} to {body['source']}; review with git diff")
        return
    resolution = resolve_id(runtime.paths, evidence_id, max_chunk_chars=limit)
    out = resolution.to_json()
    human = f"{out['id']}: {out['file']} (source {out['source']})"
    if "fragment" in out:
        fragment = out["fragment"]
        assert isinstance(fragment, dict)
        human += "\n\n" + str(fragment["text"])
    inv.emit(out, human)


@app.command("publish")
def publish_cmd(
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Build a candidate generation, run the evaluation set, activate it only if it passes.

    In signed mode this is a reviewer's approval (human-only, --as human:ID, passphrase at the
    terminal): the generation goes live signed, and searches use it only while that verifies."""
    from tht.evidence_runtime import open_evidence, progress_reporter

    inv = invocation(workspace, json_, debug)
    runtime = open_evidence(inv.workspace)
    from modules.evidence.publish import publish, publish_lock

    approver = _approver(runtime, actor)
    # one publish at a time per workspace: a second one exits 4 at once, changing nothing; the
    # lock spans opening and closing the vector store too
    with publish_lock(runtime.paths.state_dir):
        try:
            with progress_reporter(enabled=not inv.json, label="publishing") as progress:
                caps = runtime.capabilities(progress, approver=approver)
                report = publish(caps, lock=False)
        finally:
            runtime.close()
    for warning in report.warnings:
        inv.note(f"warning: {warning}")
    body = report.to_json()
    gen = report.generation
    human = f"{report.status}: generation {gen.id} ({gen.units} units, {gen.fragments} fragments)"
    if gen.approval is not None:
        human += f", approved by {gen.approval.reviewer}"
    if report.evaluation is not None:
        summary = report.evaluation.to_json()
        human += (
            f"; evaluation: {summary['hit_at_10']}/{summary['cases']} in the top 10, "
            f"{summary['hit_at_5']} in the top 5"
        )
    inv.emit(body, human)


def _approver(runtime: EvidenceRuntime, actor: str | None) -> ReviewerSigner | None:
    """Signed mode: the approving reviewer's key, unlocked (passphrase at the controlling
    terminal) before anything is built; a workspace that is not signed needs none (``--as`` is
    then only checked)."""
    from tht.commands._common import human_actor

    trust = runtime.trust()
    if actor is not None or trust.signed:  # given, or required: signed mode
        who = human_actor(actor)
        if trust.signed:
            return _unlock(runtime, who)
    return None


def _unlock(runtime: EvidenceRuntime, who: str) -> ReviewerSigner:
    """``who``'s key, unlocked at the terminal, refused unless the registry trusts it now."""
    from kernel.errors import PolicyError

    trust = runtime.trust()
    if trust.unlock is None:
        raise PolicyError("signed mode: no way to unlock a reviewer key here")
    key = trust.unlock(who)
    if key.reviewer != who:
        raise PolicyError(f"the key unlocked is {key.reviewer}'s, not {who}'s")
    probe = b"tht evidence publish: is this key trusted now?"
    now = runtime.clock.now().isoformat().replace("+00:00", "Z")
    if trust.check_signature is None or not trust.check_signature(who, probe, key.sign(probe), now):
        raise PolicyError(
            f"{who}'s key cannot approve evidence: the reviewer registry does not trust it "
            "(revoked, or not the registered key); nothing was changed"
        )
    return key


@app.command("import-proposal")
def import_proposal_cmd(
    session: Annotated[
        str | None, typer.Argument(help="Session id (default: $THT_SESSION).", show_default=False)
    ] = None,
    seq: Annotated[
        int | None,
        typer.Option("--seq", help="An effective concept_formula_approved decision to import."),
    ] = None,
    artifact: Annotated[
        str | None,
        typer.Option("--artifact", help="A session artifact holding a JSON formula proposal."),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Import a session's formula proposal as a curated unit awaiting review."""
    from kernel.errors import UsageError
    from tht.evidence_runtime import open_evidence
    from tht.options import session_or_env

    inv = invocation(workspace, json_, debug)
    if (seq is None) == (artifact is None):
        raise UsageError("give exactly one of --seq SEQ or --artifact NAME")
    runtime = open_evidence(inv.workspace)
    from tht.composition import open_app, resolve_session

    app_ = open_app(inv.workspace)
    sid = resolve_session(app_, session_or_env(session))
    from modules.evidence.proposals import (
        import_proposal,
        proposal_from_artifact,
        proposal_from_decision,
    )

    if artifact is not None:
        proposal = proposal_from_artifact(sid, artifact, app_.kernel.artifact(sid, artifact))
    else:
        assert seq is not None
        state = app_.kernel.load(sid).state
        proposal = proposal_from_decision(sid, state.decision(seq), seq)
    body = import_proposal(
        runtime.paths, proposal, max_chunk_chars=runtime.settings.max_chunk_chars
    )
    inv.emit(
        body,
        f"imported {body['id']} ({body['file']}, source {body['source']}); it awaits review",
    )
