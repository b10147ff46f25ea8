"""Question Admission's attempts policy (spec 003 §17; kernel/admission_attempts.py): a refused
question is rephrased in the same session up to the session's limit, then the session is closed
as refused by the kernel — the fold, the replay (forged lines are integrity issues) and the
kernel API, on the in-memory store."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kernel import events as ev
from kernel.admission_attempts import attempts_left, check_attempts
from kernel.clock import FixedClock, SeededIds
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState, fold, fold_from
from kernel.outcomes import Failure, ModuleOutcome
from kernel.store.memory import MemoryStore
from kernel.workflow import load_workflow
from kernel.workflow_kernel import WorkflowKernel

WF = load_workflow()
MODULE = "module:disambiguation"
ADMITTED = ModuleOutcome(
    status="completed",
    events=(ev.ProposedEvent(type="question_admitted", payload={"checks": ["usable"]}),),
)
REFUSED = ModuleOutcome(
    status="failed",
    events=(
        ev.ProposedEvent(type="question_refused", payload={"code": "too_short", "reason": "no"}),
    ),
    failure=Failure(code="refused:too_short", message="the question has no words to work with"),
)


def kernel() -> WorkflowKernel:
    return WorkflowKernel(MemoryStore(), clock=FixedClock(), ids=SeededIds(3))


def refused_session(k: WorkflowKernel, *, attempts: int | None = None) -> str:
    created = k.create_session("xx", actor="agent", admission_attempts=attempts)
    k.apply_outcome(created.session, "admission", REFUSED, actor=MODULE)
    return created.session


def events_of(k: WorkflowKernel, session: str) -> list[ev.Event]:
    return k.log(session)


def types(events: list[ev.Event]) -> list[str]:
    return [ev.info_of(e).type for e in events]


def lines(k: WorkflowKernel, session: str) -> list[bytes]:
    return list(k.store.ledger(session).lines)  # type: ignore[attr-defined]


def rules(events: list[ev.Event]) -> list[tuple[int, str]]:
    return [(i.seq, i.rule) for i in fold(WF, events).integrity]


def forge(events: list[ev.Event], *drafts: ev.EventDraft) -> list[ev.Event]:
    """``events`` plus ``drafts`` appended as one well-formed batch."""
    last = events[-1]
    forged = [
        ev.stamp(d, seq=last.seq + i + 1, ts=last.ts, prev="", batch_left=len(drafts) - i - 1)
        for i, d in enumerate(drafts)
    ]
    return [*events, *forged]


def rephrased(
    attempt: int, actor: str = "agent", question: str = "Quante visite?"
) -> ev.EventDraft:
    return ev.EventDraft(
        type="question_rephrased",
        actor=actor,
        stage="admission",
        payload=ev.QuestionRephrasedPayload(question=question, attempt=attempt),
    )


def outcome_drafts(epoch: int, *, admitted: bool) -> list[ev.EventDraft]:
    inv = f"admission#{epoch}"
    started = ev.EventDraft(
        type="stage_started",
        actor="kernel",
        stage="admission",
        invocation=inv,
        attempt=1,
        payload=ev.Empty(),
    )
    if admitted:
        return [
            started,
            ev.EventDraft(
                type="question_admitted",
                actor=MODULE,
                stage="admission",
                invocation=inv,
                payload=ev.QuestionAdmittedPayload(checks=("usable",)),
            ),
            ev.EventDraft(
                type="stage_completed",
                actor="kernel",
                stage="admission",
                invocation=inv,
                payload=ev.StageCompletedPayload(via="auto"),
            ),
        ]
    return [
        started,
        ev.EventDraft(
            type="question_refused",
            actor=MODULE,
            stage="admission",
            invocation=inv,
            payload=ev.QuestionRefusedPayload(code="too_short", reason="no"),
        ),
        ev.EventDraft(
            type="stage_failed",
            actor=MODULE,
            stage="admission",
            invocation=inv,
            payload=ev.FailurePayload(code="refused:too_short", message="no"),
        ),
    ]


def closing(reason: str = "refused 3 times") -> ev.EventDraft:
    return ev.EventDraft(
        type="session_abandoned", actor="kernel", payload=ev.SessionAbandonedPayload(reason=reason)
    )


# --------------------------------------------------------------------------- the kernel API


def test_a_refused_question_rephrased_and_admitted_moves_the_session_on() -> None:
    k = kernel()
    session = refused_session(k)
    before = k.load(session).state
    assert before.blocked and before.question_attempt == 1 and attempts_left(before) == 2
    applied = k.rephrase(session, "  How many visits in 2023?  ", ADMITTED, actor="human:ann")
    assert types(applied.events) == [
        "question_rephrased",
        "stage_started",
        "question_admitted",
        "stage_completed",
    ]
    first = applied.events[0]
    assert first.actor == "human:ann" and first.stage == "admission"
    assert first.invocation is None and first.subject is None
    assert isinstance(first, ev.QuestionRephrased)
    assert first.payload == ev.QuestionRephrasedPayload(
        question="How many visits in 2023?", attempt=2
    )
    assert [e.batch_left for e in applied.events] == [3, 2, 1, 0]  # one command, one batch
    assert {e.invocation for e in applied.events[1:]} == {"admission#2"}
    assert {e.actor for e in applied.events[2:]} == {MODULE, "kernel"}
    state = applied.state
    assert state.question == "How many visits in 2023?"
    assert state.question_attempt == 2 and not state.blocked
    assert state.current_stage == "disambiguation"
    view = state.stage("admission")
    assert view is not None and view.state == "completed" and view.epoch == 2
    # the old refusal stays in the history, no longer effective
    refusals = [d for d in state.decisions if d.type == "question_refused"]
    assert [d.status for d in refusals] == ["stale"]
    assert [d.type for d in state.effective_decisions()] == ["question_admitted"]
    assert k.verify(session).ok
    assert k.load(session).state == state


def test_the_refusal_of_the_last_allowed_question_closes_the_session() -> None:
    k = kernel()
    session = refused_session(k)
    second = k.rephrase(session, "still nothing", REFUSED, actor="agent")
    assert types(second.events)[-1] == "stage_failed"
    assert second.state.lifecycle == "active" and attempts_left(second.state) == 1
    third = k.rephrase(session, "nothing again", REFUSED, actor="agent")
    assert types(third.events) == [
        "question_rephrased",
        "stage_started",
        "question_refused",
        "stage_failed",
        "session_abandoned",
    ]
    closing_event = third.events[-1]
    assert isinstance(closing_event, ev.SessionAbandoned)
    assert closing_event.actor == "kernel" and closing_event.batch_left == 0
    assert closing_event.payload.reason == "refused 3 times"
    assert closing_event.stage is None and closing_event.invocation is None
    state = third.state
    assert state.lifecycle == "abandoned" and state.question_attempt == 3
    assert attempts_left(state) == 0
    assert k.verify(session).ok
    with pytest.raises(PolicyError, match="no attempts left"):
        k.rephrase(session, "one more?", ADMITTED, actor="agent")
    # immutable like any abandoned session; derive starts again from its question
    with pytest.raises(PolicyError, match="abandoned"):
        k.apply_outcome(session, "admission", ADMITTED, actor=MODULE)
    derived = k.derive(session, actor="human:ann", reason="again")
    assert derived.state.derived_from == session
    assert derived.state.question == "nothing again"
    assert derived.state.question_attempt == 1


def test_a_limit_of_one_closes_the_session_with_its_first_refusal() -> None:
    k = kernel()
    session = refused_session(k, attempts=1)
    state = k.load(session).state
    assert state.admission_attempts == 1 and state.lifecycle == "abandoned"
    assert types(events_of(k, session))[-2:] == ["stage_failed", "session_abandoned"]
    assert events_of(k, session)[-1].payload == ev.SessionAbandonedPayload(reason="refused 1 time")
    assert k.verify(session).ok


def test_the_limit_is_recorded_in_the_session_only_when_it_is_not_the_default() -> None:
    k = kernel()
    default = k.create_session("q one", actor="agent", admission_attempts=3)
    custom = k.create_session("q two", actor="agent", admission_attempts=5)
    assert b"admission_attempts" not in lines(k, default.session)[0]
    assert b'"admission_attempts":5' in lines(k, custom.session)[0]
    assert default.state.admission_attempts == 3 and custom.state.admission_attempts == 5
    for bad in (0, 11, -1):
        with pytest.raises(UsageError, match="1 to 10"):
            k.create_session("q", actor="agent", admission_attempts=bad)
    assert check_attempts(None) is msgspec.UNSET and check_attempts(10) == 10


def test_rephrasing_an_admitted_question_is_refused_and_writes_nothing() -> None:
    k = kernel()
    created = k.create_session("How many visits?", actor="agent")
    k.apply_outcome(created.session, "admission", ADMITTED, actor=MODULE)
    before = lines(k, created.session)
    with pytest.raises(PolicyError, match="the question was admitted; nothing to rephrase"):
        k.rephrase(created.session, "other words", ADMITTED, actor="agent")
    assert lines(k, created.session) == before


def test_bad_rephrases_are_refused_before_anything_is_written() -> None:
    k = kernel()
    session = refused_session(k)
    before = lines(k, session)
    cases: list[tuple[type[Exception], str, dict[str, object]]] = [
        (UsageError, "empty", {"question": "   "}),
        (UsageError, "limit is 4000", {"question": "x" * 4001}),
        (PolicyError, "cannot rephrase", {"actor": "module:disambiguation"}),
        (PolicyError, "cannot rephrase", {"actor": "kernel"}),
        (UsageError, "verdict", {"outcome": ModuleOutcome(status="applied")}),
        (NotFoundError, "no_such", {"stage": "no_such"}),
        (PolicyError, "not the admission preflight", {"stage": "disambiguation"}),
    ]
    for error, message, override in cases:
        args: dict[str, object] = {
            "question": "ok words",
            "outcome": ADMITTED,
            "actor": "agent",
            "stage": "admission",
        }
        args.update(override)
        with pytest.raises(error, match=message):
            k.rephrase(
                session,
                args["question"],  # type: ignore[arg-type]
                args["outcome"],  # type: ignore[arg-type]
                actor=args["actor"],  # type: ignore[arg-type]
                stage=args["stage"],  # type: ignore[arg-type]
            )
        assert lines(k, session) == before, override
    k.pause(session, actor="human:ann")
    with pytest.raises(PolicyError, match="paused"):
        k.rephrase(session, "ok words", ADMITTED, actor="agent")


def test_an_admission_outcome_that_is_not_the_owner_modules_is_refused() -> None:
    k = kernel()
    session = refused_session(k)
    with pytest.raises(PolicyError, match="module:disambiguation only"):
        k.apply_outcome(session, "admission", ADMITTED, actor="agent")


# --------------------------------------------------------------------------- fold and replay


def test_the_fold_restarts_admission_as_a_new_invocation() -> None:
    k = kernel()
    session = refused_session(k)
    events = events_of(k, session)
    after = fold(WF, forge(events, rephrased(2), *outcome_drafts(2, admitted=False)))
    view = after.stage("admission")
    assert view is not None and view.state == "failed" and view.epoch == 2 and view.attempt == 1
    assert after.question == "Quante visite?" and after.question_attempt == 2
    # mid-batch (only the rephrase folded): admission is ready again, unblocked
    middle = fold(WF, forge(events, rephrased(2), *outcome_drafts(2, admitted=False))[:-3])
    mid = middle.stage("admission")
    assert mid is not None and mid.state == "ready" and mid.invocation is None
    assert not middle.blocked and middle.replay is not None


def test_incremental_folds_equal_the_full_fold_at_every_split() -> None:
    k = kernel()
    session = refused_session(k)
    k.rephrase(session, "again", REFUSED, actor="agent")
    k.rephrase(session, "and again", REFUSED, actor="human:ann")
    events = events_of(k, session)
    full = fold(WF, events)
    assert full.integrity == () and full.lifecycle == "abandoned"
    for cut in range(len(events) + 1):
        assert fold_from(WF, fold(WF, events[:cut]), events[cut:]) == full, cut
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(full), type=SessionState)
    assert decoded == full  # the status cache holds it


def test_a_forged_rephrase_after_an_admitted_question_is_an_integrity_issue() -> None:
    k = kernel()
    created = k.create_session("How many visits?", actor="agent")
    k.apply_outcome(created.session, "admission", ADMITTED, actor=MODULE)
    events = forge(events_of(k, created.session), rephrased(2), *outcome_drafts(2, admitted=True))
    assert (5, "rephrase") in rules(events)


def test_a_forged_rephrase_beyond_the_limit_is_an_integrity_issue() -> None:
    k = kernel()
    session = refused_session(k, attempts=2)
    k.rephrase(session, "again", ADMITTED, actor="agent")
    k2 = kernel()
    s2 = refused_session(k2, attempts=2)
    events = events_of(k2, s2)
    # question 2 refused without the closing abandon, then a question 3 the session never allows
    forged = forge(events, rephrased(2), *outcome_drafts(2, admitted=False))
    forged = forge(forged, rephrased(3), *outcome_drafts(3, admitted=True))
    found = rules(forged)
    assert (len(events) + 4, "attempts") in found  # the refusal of question 2 must close
    assert (len(events) + 5, "attempts") in found  # question 3 of 2


def test_a_rephrase_must_name_the_next_attempt() -> None:
    k = kernel()
    session = refused_session(k)
    events = events_of(k, session)
    assert rules(forge(events, rephrased(2), *outcome_drafts(2, admitted=True))) == []
    skipped = forge(events, rephrased(3), *outcome_drafts(2, admitted=True))
    assert (len(events) + 1, "attempts") in rules(skipped)


@pytest.mark.parametrize(
    ("drafts", "rule"),
    [
        # alone: admission never runs again (a dead session)
        (lambda: [rephrased(2)], "rephrase"),
        # admission's verdict without its stage_started
        (lambda: [rephrased(2), *outcome_drafts(2, admitted=True)[1:]], "rephrase"),
        # no verdict at all
        (lambda: [rephrased(2), *outcome_drafts(2, admitted=True)[:1]], "rephrase_incomplete"),
        # a module rephrasing, the kernel rephrasing
        (
            lambda: [rephrased(2, actor=MODULE), *outcome_drafts(2, admitted=True)],
            "actor",
        ),
        (
            lambda: [rephrased(2, actor="kernel"), *outcome_drafts(2, admitted=True)],
            "actor",
        ),
        # an empty question
        (lambda: [rephrased(2, question=""), *outcome_drafts(2, admitted=True)], "rephrase"),
        # the kernel closing a session that still had attempts left
        (lambda: [rephrased(2), *outcome_drafts(2, admitted=False), closing()], "attempts"),
    ],
)
def test_forged_rephrase_batches_are_integrity_issues(drafts, rule: str) -> None:  # type: ignore[no-untyped-def]
    k = kernel()
    session = refused_session(k)
    events = events_of(k, session)
    found = rules(forge(events, *drafts()))
    assert rule in {r for _, r in found}, found


def test_a_rephrase_inside_another_command_is_an_integrity_issue() -> None:
    k = kernel()
    session = refused_session(k)
    events = events_of(k, session)
    retry = ev.EventDraft(  # a legal retry of the refused admission, still open…
        type="stage_started",
        actor="kernel",
        stage="admission",
        invocation="admission#1",
        attempt=2,
        payload=ev.Empty(),
    )
    receipt = ev.EventDraft(
        type="evidence_consulted",
        actor=MODULE,
        stage="admission",
        invocation="admission#1",
        payload=ev.EvidenceConsultedPayload(purpose="disambiguation", generation="g1"),
    )
    # …with a rephrase slipped into its batch
    found = rules(forge(events, retry, receipt, rephrased(2), *outcome_drafts(2, admitted=True)))
    assert (len(events) + 3, "batch") in found


def test_a_forged_kernel_abandon_is_an_integrity_issue() -> None:
    k = kernel()
    created = k.create_session("How many visits?", actor="agent")
    k.apply_outcome(created.session, "admission", ADMITTED, actor=MODULE)
    events = events_of(k, created.session)
    assert (len(events) + 1, "attempts") in rules(forge(events, closing()))
    # a refusal's batch with the kernel abandon tacked on, with attempts left
    k2 = kernel()
    s2 = refused_session(k2)
    refused = events_of(k2, s2)
    stripped = refused[:-3]  # drop the first refusal's outcome; re-forge it with an abandon
    found = rules(forge(stripped, *outcome_drafts(1, admitted=False), closing()))
    assert (len(refused) + 1, "attempts") in found


def test_the_closing_abandon_must_be_the_policys_own() -> None:
    k = kernel()
    session = refused_session(k)
    k.rephrase(session, "again", REFUSED, actor="agent")
    events = events_of(k, session)
    legal = forge(events, rephrased(3), *outcome_drafts(3, admitted=False), closing())
    assert rules(legal) == []
    wrong_reason = forge(events, rephrased(3), *outcome_drafts(3, admitted=False), closing("bye"))
    assert (len(events) + 5, "attempts") in rules(wrong_reason)
    human = ev.EventDraft(
        type="session_abandoned",
        actor="human:ann",
        payload=ev.SessionAbandonedPayload(reason="refused 3 times"),
    )
    by_human = forge(events, rephrased(3), *outcome_drafts(3, admitted=False), human)
    assert (len(events) + 5, "batch") in rules(by_human)  # a human's abandon is its own command
    missing = forge(events, rephrased(3), *outcome_drafts(3, admitted=False))
    assert (len(events) + 4, "attempts") in rules(missing)
    after = forge(legal, rephrased(4), *outcome_drafts(4, admitted=True))
    assert (len(legal) + 1, "after_abandon") in rules(after)


def test_a_recorded_limit_is_the_sessions_rule_whatever_the_payload_bounds() -> None:
    bad = (
        b'{"question":"q","workflow":{"name":"w","version":1,"sha256":"x"},"admission_attempts":11}'
    )
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(bad, type=ev.SessionCreatedPayload)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"question": "q", "attempt": 1}, ev.QuestionRephrasedPayload)


# --------------------------------------------------------------------------- workspace.yaml


def test_the_workspace_setting_is_validated_with_file_and_field(tmp_path: Path) -> None:
    from kernel.workspace import init_workspace, load_settings

    workspace, _ = init_workspace(tmp_path / "w")
    assert workspace.settings().admission.attempts == 3
    path = workspace.settings_file
    text = path.read_text()
    assert "admission:\n  attempts: 3\n" in text
    for value in ("0", "11", "many"):
        path.write_text(text.replace("attempts: 3", f"attempts: {value}"))
        with pytest.raises(UsageError) as raised:
            load_settings(path)
        assert "workspace.yaml" in raised.value.message
        assert "admission.attempts" in raised.value.message
    path.write_text(text.replace("attempts: 3", "attempts: 7"))
    assert load_settings(path).admission.attempts == 7


def test_the_admission_view_names_its_models_fields() -> None:
    from kernel import workspace_settings as wss

    model = wss._models().model_fields["admission"].annotation
    views = {name for name, v in vars(wss.AdmissionSettingsView).items() if isinstance(v, property)}
    assert views == set(model.model_fields)  # type: ignore[union-attr]


# --------------------------------------------------------------------------- golden sessions

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sessions"


def _golden_types(name: str) -> list[str]:
    data = (GOLDEN / name / "ledger.jsonl").read_bytes()
    return [ev.info_of(e).type for e in ev.decode_lines(data)]


def test_the_golden_rephrase_sessions_show_what_they_are_about() -> None:
    import json

    admitted = json.loads((GOLDEN / "rephrase_admitted" / "status.json").read_text())
    assert admitted["current_stage"] == "disambiguation" and not admitted["blocked"]
    assert _golden_types("rephrase_admitted")[4:] == [
        "question_rephrased",
        "stage_started",
        "question_admitted",
        "stage_completed",
    ]
    closed = json.loads((GOLDEN / "refused_closed" / "status.json").read_text())
    assert closed["lifecycle"] == "abandoned"
    kinds = _golden_types("refused_closed")
    assert kinds.count("question_rephrased") == 2 and kinds.count("question_refused") == 3
    assert kinds[-2:] == ["stage_failed", "session_abandoned"]
