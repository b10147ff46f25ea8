"""JSON projections of kernel objects: the CLI's ``--json`` shapes (ARCHITECTURE §6, docs/cli.md).

These shapes are contracts guarded by golden files; add keys, never rename or remove them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kernel.events import Event, ReviewOptionPayload
from kernel.fold import OpenReview, SessionState

__all__ = ["event_json", "review_json", "stage_list_json", "status_json"]


def event_json(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(event)
    return data


def stage_list_json(state: SessionState) -> list[dict[str, Any]]:
    return [
        {"id": v.id, "display": v.display, "kind": v.kind, "state": v.state} for v in state.stages
    ]


def _option_json(option: ReviewOptionPayload, *, full: bool) -> dict[str, Any]:
    """An option: id and label; ``selected`` when pre-selected; with ``full``, the events it
    records when chosen and, in a closing decide, those it records when not chosen."""
    body: dict[str, Any] = {"id": option.id, "label": option.label}
    if option.selected is True:
        body["selected"] = True
    if full:
        body["events"] = msgspec.to_builtins(option.events)
        if not isinstance(option.unchosen, msgspec.UnsetType):
            body["unchosen"] = msgspec.to_builtins(option.unchosen)
    return body


def review_json(review: OpenReview, *, full: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "seq": review.seq,
        "stage": review.stage,
        "kind": review.kind,
        "prompt": review.prompt,
    }
    if review.kind in ("select", "decide") or full:
        body["options"] = [_option_json(o, full=full) for o in review.options]
    if review.closes:
        body["closes"] = True  # answering it completes the stage
    if review.artifacts or full:
        body["artifacts"] = list(review.artifacts)
    if review.target is not None:
        body["target"] = review.target
    return body


def status_json(state: SessionState, head: str) -> dict[str, Any]:
    return {
        "session": state.session,
        "question": state.question,
        "lifecycle": state.lifecycle,
        "current_stage": state.current_stage,
        "stages": stage_list_json(state),
        "open_reviews": [review_json(r) for r in state.open_reviews],
        "blocked": state.blocked,
        "blocked_reason": state.blocked_reason,
        "warnings": [msgspec.to_builtins(w) for w in state.warnings],
        "derived_from": state.derived_from,
        "effective_decisions": [
            {"seq": d.seq, "type": d.type, "stage": d.stage, "subject": d.subject}
            for d in state.effective_decisions()
        ],
        "artifacts": [
            {"name": a.name, "stage": a.stage, "sha256": a.sha256, "size": a.size}
            for a in state.artifacts
            if a.status == "effective"
        ],
        "last_seq": state.last_seq,
        "head": head,
        "integrity": {
            "ok": not state.integrity,
            "problems": [
                {"code": i.rule, "message": i.message, "seq": i.seq} for i in state.integrity
            ],
        },
    }
