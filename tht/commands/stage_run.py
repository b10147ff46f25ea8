"""``tht stage run STAGE [SESSION]``: a Module invocation run by tht (ARCHITECTURE §6)."""

from __future__ import annotations

from typing import Annotated

import typer

from tht.commands._common import open_for, session_for
from tht.options import DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation


def stage_run(
    stage: Annotated[str, typer.Argument(help="Semantic stage id, e.g. verification.")],
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run the stage's own module and apply its outcome (F7: the approved SQL runs read-only
    against the workspace database; result_sample.json and result_verified are recorded)."""
    from tht.verification_runtime import run_stage

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    body = run_stage(app_, sid, stage)
    inv.emit(body, describe_run(body))


def describe_run(body: dict[str, object]) -> str:
    """One or two lines for a person: what the run did."""
    verified = body.get("verified")
    stage = body.get("stage")
    if body.get("status") == "not_run":
        return f"{stage} did not run: {body.get('reason')}; run `tht stage run {stage}` later"
    if isinstance(verified, dict):
        if verified.get("ok"):
            digest = str(verified.get("result_sha256"))[:12]
            return (
                f"{stage}: verified, {verified.get('rows')} row(s) in "
                f"{verified.get('elapsed_ms')} ms (result {digest}); "
                f"current stage: {body.get('current_stage')}"
            )
        return (
            f"{stage}: FAILED: {verified.get('reason')}\n"
            "  finalization is blocked until a human approves a revision of the SQL "
            f"(propose a revision for {stage}) or the run succeeds (`tht stage run {stage}`)"
        )
    if body.get("status") == "review":
        return (
            f"{stage}: review {body.get('review')} ({body.get('options')} options): "
            f"{body.get('prompt')}; current stage: {body.get('current_stage')}"
        )
    reason = f" ({body['reason']})" if body.get("reason") else ""
    return f"{stage}: {body.get('status')}{reason}; current stage: {body.get('current_stage')}"
