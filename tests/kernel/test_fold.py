"""The fold's semantics on hand-built event sequences (pure: no files)."""

from __future__ import annotations

from kernel import events as ev
from kernel.clock import FixedClock, format_ts
from kernel.fold import fold, fold_from
from kernel.ledger import genesis_hash
from kernel.workflow import load_workflow

WF = load_workflow()
CLOCK = FixedClock()


class Builder:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def add(self, kind: str, payload: ev.Payload, **envelope: object) -> int:
        seq = len(self.events) + 1
        fields: dict[str, object] = {"type": kind, "actor": "agent", "payload": payload}
        fields.update(envelope)
        draft = ev.EventDraft(**fields)  # type: ignore[arg-type]
        self.events.append(
            ev.stamp(draft, seq=seq, ts=format_ts(CLOCK.now()), prev=genesis_hash("S"))
        )
        return seq


def session() -> Builder:
    b = Builder()
    b.add(
        "session_created",
        ev.SessionCreatedPayload(
            question="q", workflow=ev.WorkflowRef(name="w", version=1, sha256="x")
        ),
        subject="S",
    )
    b.add("stage_started", ev.Empty(), stage="admission", attempt=1)
    b.add("question_admitted", ev.QuestionAdmittedPayload(), stage="admission")
    b.add("stage_completed", ev.StageCompletedPayload(via="auto"), stage="admission")
    return b


def states(events: list[ev.Event]) -> dict[str, str]:
    return {v.id: v.state for v in fold(WF, events).stages}


def test_empty_ledger_folds_to_no_session() -> None:
    state = fold(WF, [])
    assert state.session == ""
    assert state.last_seq == 0
    assert all(v.state == "pending" for v in state.stages)


def test_after_admission_f1_is_ready_and_current() -> None:
    b = session()
    state = fold(WF, b.events)
    assert state.current_stage == "disambiguation"
    assert states(b.events)["disambiguation"] == "ready"
    assert states(b.events)["memory_recall"] == "pending"


def test_review_makes_stage_awaiting_human_and_answer_closes_it() -> None:
    b = session()
    b.add("stage_started", ev.Empty(), stage="disambiguation", attempt=1)
    r = b.add(
        "review_requested",
        ev.ReviewRequestedPayload(kind="confirm", prompt="ok?"),
        stage="disambiguation",
    )
    assert states(b.events)["disambiguation"] == "awaiting_human"
    assert [o.seq for o in fold(WF, b.events).open_reviews] == [r]
    b.add(
        "review_answered",
        ev.ReviewAnsweredPayload(approved=True),
        stage="disambiguation",
        causation=r,
    )
    b.add("stage_completed", ev.StageCompletedPayload(via="review"), stage="disambiguation")
    state = fold(WF, b.events)
    assert state.open_reviews == ()
    assert state.stage("disambiguation").state == "completed"  # type: ignore[union-attr]
    assert state.current_stage == "memory_recall"


def test_retracted_decision_is_not_effective() -> None:
    b = session()
    c = b.add("concept_clarified", ev.ConceptClarifiedPayload(meaning="m"), stage="disambiguation")
    b.add("decision_retracted", ev.ReasonPayload(reason="no"), stage="disambiguation", retracts=c)
    state = fold(WF, b.events)
    assert [d.type for d in state.effective_decisions()] == ["question_admitted"]
    assert state.decision(c).status == "retracted"  # type: ignore[union-attr]


def test_reopen_makes_the_stage_and_every_later_result_stale() -> None:
    b = session()
    early = b.add(
        "concept_clarified", ev.ConceptClarifiedPayload(meaning="m"), stage="disambiguation"
    )
    b.add("stage_completed", ev.StageCompletedPayload(via="review"), stage="disambiguation")
    b.add("stage_skipped", ev.ReasonPayload(reason="x"), stage="memory_recall")
    rewrite = b.add(
        "question_rewritten", ev.QuestionRewrittenPayload(question="q2"), stage="rewriting"
    )
    b.add(
        "artifact_written",
        ev.ArtifactWrittenPayload(name="question.md", sha256="0" * 64, size=1),
        stage="rewriting",
    )
    b.add("stage_completed", ev.StageCompletedPayload(via="review"), stage="rewriting")
    b.add("stage_reopened", ev.ReasonPayload(reason="again"), stage="rewriting")
    state = fold(WF, b.events)
    assert state.decision(rewrite).status == "stale"  # type: ignore[union-attr]
    assert state.decision(early).status == "effective"  # type: ignore[union-attr]
    assert state.effective_artifact("question.md") is None
    assert state.current_stage == "rewriting"
    view = state.stage("rewriting")
    assert view is not None and view.state == "ready" and view.epoch == 2
    assert states(b.events)["memory_recall"] == "skipped"


def test_failed_required_stage_blocks_and_best_effort_does_not() -> None:
    b = session()
    b.add("stage_failed", ev.FailurePayload(code="x", message="boom"), stage="disambiguation")
    state = fold(WF, b.events)
    assert state.blocked
    assert state.blocked_reason == "disambiguation failed: boom"
    b.add("stage_started", ev.Empty(), stage="disambiguation", attempt=2)
    retried = fold(WF, b.events)
    assert not retried.blocked
    assert retried.stage("disambiguation").attempt == 2  # type: ignore[union-attr]


def test_finalized_session_has_no_current_stage() -> None:
    b = session()
    b.add("session_finalized", ev.SessionFinalizedPayload(effective_decisions=1), stage="finalize")
    state = fold(WF, b.events)
    assert state.lifecycle == "finalized"
    assert state.current_stage is None


def test_fold_is_total_on_references_to_nothing() -> None:
    b = session()
    b.add("review_answered", ev.ReviewAnsweredPayload(), causation=999)
    b.add("decision_retracted", ev.ReasonPayload(reason="x"), retracts=999)
    b.add("stage_completed", ev.StageCompletedPayload(via="auto"), stage="no_such_stage")
    b.add("stage_reopened", ev.ReasonPayload(reason="x"), stage="no_such_stage")
    state = fold(WF, b.events)
    assert state.last_seq == 8
    assert state.current_stage == "disambiguation"


def test_incremental_fold_equals_full_fold_at_every_split() -> None:
    b = session()
    c = b.add("concept_clarified", ev.ConceptClarifiedPayload(meaning="m"), stage="disambiguation")
    b.add("decision_retracted", ev.ReasonPayload(reason="no"), stage="disambiguation", retracts=c)
    b.add("session_paused", ev.OptionalReasonPayload())
    b.add("session_resumed", ev.OptionalReasonPayload())
    full = fold(WF, b.events)
    for cut in range(len(b.events) + 1):
        assert fold_from(WF, fold(WF, b.events[:cut]), b.events[cut:]) == full
