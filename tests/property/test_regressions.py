"""Failing examples the invariant machine found, kept as plain regression tests (one per bug)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.errors import PolicyError
from kernel.events import ProposedEvent
from kernel.fold import fold
from kernel.outcomes import Failure, ModuleOutcome
from tests.support.kernel_env import QUESTION, admitted_session, advance_to, make_kernel


def _ledger_bytes(root: Path, session: str) -> bytes:
    return (root / "sessions" / session / "ledger.jsonl").read_bytes()


def test_a_payload_integer_beyond_64_bits_is_recorded_and_the_session_stays_usable(
    tmp_path: Path,
) -> None:
    # Found: ``rows`` = 191788287392449921024 was appended, then encoding the msgpack status
    # cache raised OverflowError: the command failed after its events were committed, and every
    # later load of the session failed the same way.
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    advance_to(kernel, session, "verification")
    huge = 191_788_287_392_449_921_024
    applied = kernel.apply_outcome(
        session,
        "verification",
        ModuleOutcome(
            status="completed",
            events=(ProposedEvent(type="result_verified", payload={"rows": huge}),),
        ),
        actor="module:core",  # F7 is tht's own verification (kernel/events.py)
    )
    assert applied.state.current_stage == "datamart"
    for fresh in (kernel, make_kernel(tmp_path)):
        loaded = fresh.load(session)
        events = fresh.store.ledger(session).read().events
        assert loaded.state == fold(fresh.session_workflow(session), events)
        (verified,) = [d for d in loaded.state.decisions if d.type == "result_verified"]
        assert verified.event.payload.rows == huge  # type: ignore[union-attr]


def test_an_agent_cannot_complete_a_review_required_stage_without_review(tmp_path: Path) -> None:
    # Found: an ``auto`` proposal with no decision events (status ``completed``) closed the
    # review_required stage ``disambiguation`` with no human approval.
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    before = _ledger_bytes(tmp_path, session)
    receipts = (
        ProposedEvent(
            type="evidence_consulted", payload={"purpose": "disambiguation", "generation": "g"}
        ),
    )
    for events in ((), receipts):
        with pytest.raises(PolicyError, match="review_required"):
            kernel.apply_outcome(
                session,
                "disambiguation",
                ModuleOutcome(status="completed", events=events),
                actor="agent",
            )
    assert _ledger_bytes(tmp_path, session) == before
    assert kernel.load(session).state.stage("disambiguation").state == "ready"  # type: ignore[union-attr]


def test_only_the_owner_module_decides_question_admission(tmp_path: Path) -> None:
    # Found: after Question Admission refused a question, an agent's ``auto`` proposal for the
    # ``admission`` stage (with or without ``question_admitted``) admitted it anyway.
    kernel = make_kernel(tmp_path)
    session = kernel.create_session(QUESTION, actor="agent").session
    refusal = ModuleOutcome(
        status="failed",
        events=(
            ProposedEvent(type="question_refused", payload={"code": "out_of_scope", "reason": "x"}),
        ),
        failure=Failure(code="refused:out_of_scope", message="outside the workspace scope"),
    )
    kernel.apply_outcome(session, "admission", refusal, actor="module:disambiguation")
    before = _ledger_bytes(tmp_path, session)
    admit = ModuleOutcome(
        status="completed",
        events=(ProposedEvent(type="question_admitted", payload={"checks": ["usable"]}),),
    )
    for actor in ("agent", "human:ana", "module:memory"):
        for outcome in (admit, ModuleOutcome(status="completed")):
            with pytest.raises(PolicyError, match=r"module:disambiguation only|module outcome"):
                kernel.apply_outcome(session, "admission", outcome, actor=actor)
    assert _ledger_bytes(tmp_path, session) == before
    state = kernel.load(session).state
    assert state.blocked and state.current_stage == "admission"
    # the module itself may run admission again (e.g. after the workspace scope changed)
    again = kernel.apply_outcome(session, "admission", admit, actor="module:disambiguation")
    assert again.state.current_stage == "disambiguation"


def test_an_answer_choosing_an_option_with_an_invalid_payload_folds_and_is_an_issue() -> None:
    # Found by the kernel benchmark: the replay validated a chosen option's payload without
    # catching the schema error, so folding such a hand-written ledger raised (the fold is total).
    from kernel import events as ev
    from kernel.fold import fold
    from kernel.ledger_verify import genesis_hash, line_hash
    from kernel.workflow import compiled_sha256, load_workflow

    workflow = load_workflow()
    session = "01KDVDNA00V3RS3DTR98H6BCFN"
    option = ev.ReviewOptionPayload(
        id="o1",
        label="broken",
        events=(ev.ProposedEvent(type="memory_applied", payload={"not": "valid"}),),
    )
    drafts = [
        ev.EventDraft(
            type="session_created",
            actor="agent",
            subject=session,
            payload=ev.SessionCreatedPayload(
                question="q",
                workflow=ev.WorkflowRef(
                    name=workflow.name,
                    version=workflow.version,
                    sha256=workflow.sha256,
                    compiled=compiled_sha256(workflow),
                ),
            ),
        ),
        ev.EventDraft(
            type="review_requested",
            actor="agent",
            stage="disambiguation",
            invocation="disambiguation#1",
            payload=ev.ReviewRequestedPayload(kind="select", prompt="?", options=(option,)),
        ),
        ev.EventDraft(
            type="review_answered",
            actor="human:ann",
            stage="disambiguation",
            invocation="disambiguation#1",
            causation=2,
            payload=ev.ReviewAnsweredPayload(choice=("o1",)),
        ),
    ]
    events, prev = [], genesis_hash(session)
    for seq, draft in enumerate(drafts, start=1):
        event = ev.stamp(draft, seq=seq, ts="2026-01-01T00:00:00.000Z", prev=prev)
        prev = line_hash(ev.encode_event(event))
        events.append(event)
    state = fold(workflow, events)  # never raises
    assert any(issue.seq == 3 and issue.rule == "answer" for issue in state.integrity)
