"""What the pages show, folded from the verified ledger through the same kernel calls as the CLI
(``session list`` / ``session status`` / ``review show``): plain dicts for the templates.

Display only: nothing here decides; every action posts back and the kernel decides on the state it
folds then (ARCHITECTURE §3.9 rule 4).
"""

from __future__ import annotations

from typing import Any

from tht.web.artifacts import render_artifact

__all__ = ["inbox_rows", "session_view"]

_LIFECYCLE_ORDER = {"active": 0, "paused": 1, "finalized": 2, "abandoned": 3}


def inbox_rows(app: Any) -> list[dict[str, Any]]:
    """``session list`` with each session's open reviews: waiting reviews first, then blocked,
    then by lifecycle; newest first within each group."""
    rows: list[dict[str, Any]] = []
    for session in app.kernel.session_ids():
        loaded, problems = app.kernel.load_for_display(session)
        state = loaded.state
        rows.append(
            {
                "session": session,
                "question": state.question,
                "lifecycle": state.lifecycle,
                "current_stage": state.current_stage,
                "current_display": _display(state, state.current_stage),
                "open_reviews": len(state.open_reviews),
                "blocked": state.blocked,
                "blocked_reason": state.blocked_reason,
                "last_seq": state.last_seq,
                "last_ts": state.last_ts or "",
                "integrity_ok": not problems,
            }
        )
    rows.sort(key=lambda r: r["last_ts"], reverse=True)
    rows.sort(
        key=lambda r: (
            0 if r["open_reviews"] else 1,
            0 if r["blocked"] else 1,
            _LIFECYCLE_ORDER.get(r["lifecycle"], 9),
        )
    )
    return rows


def _display(state: Any, stage: str | None) -> str:
    if stage is None:
        return ""
    view = state.stage(stage)
    return (view.display or stage) if view is not None else stage


#: the history shows the newest lines; ``?history=all`` shows every one (a 10,000-event session's
#: whole table is most of the page's time: benchmarks/bench_web.py)
HISTORY_SHOWN = 200


def session_view(app: Any, session: str, *, all_history: bool = False) -> dict[str, Any]:
    """Everything the session page shows."""
    from kernel.events import info_of
    from tht.projections import review_json, status_json

    loaded, problems = app.kernel.load_for_display(session)
    state = loaded.state
    workflow = loaded.workflow
    status = status_json(state, loaded.head)
    decisions = {d.seq: d for d in state.decisions}
    first = 1 if all_history else max(1, state.last_seq - HISTORY_SHOWN + 1)
    events = app.kernel.log(session, from_seq=first) if not problems else []
    writable = not problems and state.lifecycle in ("active", "paused")
    reviews = []
    for review in state.open_reviews:
        body = review_json(review, full=True)
        body["display"] = _display(state, review.stage)
        names = list(review.artifacts)
        if review.kind == "confirm":  # what the confirm approves: the stage's effective artifacts
            names += [
                a.name
                for a in state.artifacts
                if a.status == "effective" and a.stage == review.stage and a.name not in names
            ]
        body["artifact_views"] = [render_artifact(app, session, state, n) for n in names]
        reviews.append(body)
    stages = []
    for view in state.stages:
        step = workflow.step(view.id) if workflow.has(view.id) else None
        stages.append(
            {
                "id": view.id,
                "display": view.display or view.id,
                "kind": view.kind,
                "state": view.state,
                "reason": view.reason,
                "current": view.id == state.current_stage,
                "skippable": bool(
                    writable
                    and step is not None
                    and step.skip == "human"
                    and view.id == state.current_stage
                ),
                "reopenable": writable
                and view.kind in ("stage", "contribution")
                and view.state in ("completed", "skipped", "failed"),
            }
        )
    history = []
    for event in events:
        record = decisions.get(event.seq)
        history.append(
            {
                "seq": event.seq,
                "ts": event.ts,
                "type": info_of(event).type,
                "stage": event.stage or "",
                "actor": event.actor,
                "subject": event.subject or "",
                "status": record.status if record is not None else "",
                "signed": event.sig is not None,
                "retracts": event.retracts,
                "causation": event.causation,
            }
        )
    effective = [
        {
            "seq": d.seq,
            "type": d.type,
            "stage": d.stage or "",
            "subject": d.subject or "",
            "actor": d.event.actor,
            "signed": d.event.sig is not None,
            "retractable": writable and d.event.actor.startswith("human:"),
        }
        for d in state.effective_decisions()
    ]
    artifacts = [
        render_artifact(app, session, state, a.name)
        for a in state.artifacts
        if a.status == "effective"
    ]
    return {
        "session": session,
        "status": status,
        "question": state.question,
        "lifecycle": state.lifecycle,
        "current_stage": state.current_stage,
        "blocked": state.blocked,
        "blocked_reason": state.blocked_reason,
        "last_seq": state.last_seq,
        "head": loaded.head,
        "stages": stages,
        "reviews": reviews,
        "effective": effective,
        "history": history,
        "history_hidden": first - 1,
        "history_all": all_history,
        "artifacts": artifacts,
        "problems": [{"code": p.code, "message": p.message, "seq": p.seq} for p in problems],
        "writable": writable,
        "can_pause": writable and state.lifecycle == "active",
        "can_resume": writable and state.lifecycle == "paused",
        "can_finalize": writable and state.lifecycle == "active" and state.current_stage is None,
    }
