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
        actor="agent",
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
