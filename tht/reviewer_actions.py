"""A reviewer's decisions, one function each, called by the CLI and by the reviewer web UI alike
(ARCHITECTURE §5: every action in the page goes through the same kernel calls as the CLI).

Each returns the command's ``--json`` body (``applied_json`` plus what the action adds). Who the
reviewer is was settled by the caller (``--as human:<id>`` at the terminal, the signed-in reviewer
in the page); signing, in signed mode, is the kernel's (the key the App's trust unlocks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.workflow_kernel import Applied
    from tht.composition import App

__all__ = [
    "answer_review",
    "applied_json",
    "finalize_session",
    "lifecycle",
    "reopen_stage",
    "retract_decision",
    "skip_stage",
]


def applied_json(applied: Applied, **extra: Any) -> dict[str, Any]:
    from kernel.events import info_of

    body: dict[str, Any] = {
        "session": applied.session,
        "seq": applied.state.last_seq,
        "events": [{"seq": e.seq, "type": info_of(e).type} for e in applied.events],
        "current_stage": applied.state.current_stage,
        "lifecycle": applied.state.lifecycle,
    }
    body.update(extra)
    return body


def _then_run(app: App, applied: Applied, body: dict[str, Any]) -> dict[str, Any]:
    """What tht runs by itself once a decision lands (F6 approved → F7; F8 skipped → the
    memory promotion): its run is reported under ``ran``."""
    from tht.verification_runtime import after_answer

    ran = after_answer(app, applied)
    if ran is not None:
        body["ran"] = ran
    return body


def answer_review(
    app: App,
    session: str,
    seq: int,
    *,
    actor: str,
    choose: tuple[str, ...] = (),
    approve: bool = False,
    reject: bool = False,
    rationale: str = "",
) -> dict[str, Any]:
    """``tht review answer``: the memory promotion's registry entries first (written before
    ``memory_promoted``), then the answer, then what tht runs by itself."""
    from tht.memory_runtime import before_answer

    saved = before_answer(
        app, session, seq, choose, actor=actor, rationale=rationale, approve=approve, reject=reject
    )
    applied = app.kernel.answer(
        session, seq, actor=actor, choose=choose, approve=approve, reject=reject,
        rationale=rationale,
    )  # fmt: skip
    body = applied_json(applied, answered=seq)
    if saved is not None:
        body["memory"] = saved
    return _then_run(app, applied, body)


def retract_decision(
    app: App, session: str, seq: int, *, actor: str, reason: str | None
) -> dict[str, Any]:
    applied = app.kernel.retract(session, seq, actor=actor, reason=reason)
    return applied_json(applied, retracts=seq)


def skip_stage(
    app: App, session: str, stage: str, *, actor: str, reason: str | None
) -> dict[str, Any]:
    applied = app.kernel.skip(session, stage, actor=actor, reason=reason)
    return _then_run(app, applied, applied_json(applied, stage=stage))


def reopen_stage(
    app: App, session: str, stage: str, *, actor: str, reason: str | None
) -> dict[str, Any]:
    applied = app.kernel.reopen(session, stage, actor=actor, reason=reason)
    return applied_json(applied, stage=stage)


def lifecycle(app: App, session: str, verb: str, *, actor: str, reason: str = "") -> dict[str, Any]:
    """``pause`` / ``resume`` / ``abandon`` (``finalize``: :func:`finalize_session`)."""
    kernel = app.kernel
    if verb == "pause":
        applied = kernel.pause(session, actor=actor, reason=reason)
    elif verb == "resume":
        applied = kernel.resume(session, actor=actor, reason=reason)
    elif verb == "abandon":
        applied = kernel.abandon(session, actor=actor, reason=reason)
    else:
        from kernel.errors import UsageError

        raise UsageError(f"unknown lifecycle action {verb!r}")
    return applied_json(applied)


def finalize_session(app: App, session: str, *, actor: str) -> dict[str, Any]:
    """Finalize, then run the after-finalize outbox (best effort: the finalization stands)."""
    applied = app.finalize(session, actor=actor)
    hooks = app.run_after_finalize(session)
    return applied_json(applied, after_finalize=hooks)
