"""The fold on arbitrary ledgers: any sequence of well-typed events, not only those the kernel
writes (a hand-edited or foreign ledger still folds). ARCHITECTURE §3.3: the fold is pure,
total and incremental, and the status cache holds any state it produces."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import catalog_events as cev
from kernel import events as ev
from kernel import memory_events as mev
from kernel import reviewer_events as rev
from kernel.fold import SessionState, empty_state, fold, fold_from
from kernel.status_cache import StatusCache
from kernel.workflow import load_workflow
from tests.property.strategies import PAYLOADS, words

WORKFLOW = load_workflow()
STAGES = st.sampled_from([*WORKFLOW.ids, "ghost_stage"]) | st.none()
SHA = "ab" * 32

_KERNEL_PAYLOADS: dict[str, st.SearchStrategy[ev.Payload]] = {
    "session_created": st.builds(
        ev.SessionCreatedPayload,
        question=words,
        workflow=st.just(ev.WorkflowRef(name="w", version=1, sha256=SHA)),
        derived_from=st.none() | words,
        admission_attempts=st.just(msgspec.UNSET) | st.integers(1, 10),
    ),
    "question_rephrased": st.builds(
        ev.QuestionRephrasedPayload, question=words, attempt=st.integers(2, 10)
    ),
    "stage_started": st.just(ev.Empty()),
    "review_requested": st.builds(
        ev.ReviewRequestedPayload,
        kind=st.sampled_from(["select", "decide", "confirm"]),
        prompt=words,
        options=st.lists(
            st.builds(
                ev.ReviewOptionPayload,
                id=words,
                label=words,
                # events an option would record, valid or not (a hand-written ledger's may not
                # even be a registered type): folding and replaying them must never raise
                events=st.lists(
                    st.builds(
                        ev.ProposedEvent,
                        type=st.sampled_from([*sorted(ev.EVENT_TYPES), "no_such_type"]),
                        subject=st.none() | words,
                        payload=st.dictionaries(words, words | st.integers(), max_size=2),
                    ),
                    max_size=2,
                ).map(tuple),
            ),
            max_size=2,
        ).map(tuple),
        artifacts=st.lists(words, max_size=2).map(tuple),
    ),
    "review_answered": st.builds(
        ev.ReviewAnsweredPayload,
        choice=st.lists(words, max_size=2).map(tuple),
        approved=st.none() | st.booleans(),
    ),
    "stage_completed": st.builds(
        ev.StageCompletedPayload, via=st.sampled_from(["auto", "review", "kernel"])
    ),
    "stage_skipped": st.builds(ev.ReasonPayload, reason=words),
    "stage_failed": st.builds(ev.FailurePayload, code=words, message=words),
    "revision_requested": st.builds(
        ev.RevisionRequestedPayload, target=st.sampled_from(WORKFLOW.ids), reason=words
    ),
    "stage_reopened": st.builds(ev.ReasonPayload, reason=words),
    "session_abandoned": st.builds(ev.SessionAbandonedPayload, reason=words),
    "decision_retracted": st.builds(ev.ReasonPayload, reason=words),
    "artifact_written": st.builds(
        ev.ArtifactWrittenPayload,
        name=st.sampled_from(["question.md", "cte/1.sql", "report.md"]),
        sha256=st.just(SHA),
        size=st.integers(0, 10),
    ),
    "session_paused": st.just(ev.OptionalReasonPayload()),
    "session_resumed": st.just(ev.OptionalReasonPayload()),
    "session_finalized": st.builds(
        ev.SessionFinalizedPayload, effective_decisions=st.integers(0, 9)
    ),
    "session_derived": st.builds(ev.SessionDerivedPayload, from_session=words, from_head=words),
    "contribution_failed": st.builds(
        ev.ContributionFailedPayload,
        code=words,
        message=words,
        policy=st.sampled_from(["required", "best_effort"]),
    ),
    "ledger_repaired": st.builds(ev.LedgerRepairedPayload, reason=words),
    "reviewer_added": st.builds(
        rev.ReviewerAddedPayload, reviewer=words, key_id=words, public_key=words, proof=words
    ),
    "reviewer_revoked": st.builds(
        rev.ReviewerRevokedPayload, reviewer=words, key_id=words, reason=words
    ),
    "workflow_approved": st.builds(
        rev.WorkflowApprovedPayload, sha256=st.just(SHA), name=words, version=st.integers(1, 3)
    ),
    # Metadata Catalog entries (a workspace-level ledger's): never in a session, ignored by it
    "catalog_sync_started": st.builds(
        cev.CatalogSyncStartedPayload, run=words, binding=words, dialect=st.just("sqlite")
    ),
    "catalog_sync_completed": st.builds(
        cev.CatalogSyncCompletedPayload,
        run=words,
        snapshot=st.just(SHA),
        version=words,
        tables=st.integers(0, 3),
        columns=st.integers(0, 3),
        relationships=st.integers(0, 3),
    ),
    "catalog_sync_failed": st.builds(
        cev.CatalogSyncFailedPayload, run=words, code=words, reason=words
    ),
    "relationship_generated": st.builds(
        cev.RelationshipGeneratedPayload,
        id=words,
        from_table=words,
        from_columns=st.just(("a",)),
        to_table=words,
        to_columns=st.just(("b",)),
        rule=words,
    ),
    "relationship_added": st.builds(
        cev.RelationshipAddedPayload,
        id=words,
        from_table=words,
        from_columns=st.just(("a",)),
        to_table=words,
        to_columns=st.just(("b",)),
    ),
    "relationship_deleted": st.builds(
        cev.RelationshipDeletedPayload,
        id=words,
        mode=st.sampled_from(["logical", "permanent"]),
        reason=words,
    ),
    "relationship_restored": st.builds(cev.RelationshipRestoredPayload, id=words),
    "relationships_reconstructed": st.builds(
        cev.RelationshipsReconstructedPayload, generated=st.integers(0, 2)
    ),
    "catalog_cleaned": st.builds(cev.CatalogCleanedPayload, reason=words),
    "sensitive_flag_set": st.builds(
        cev.SensitiveFlagSetPayload,
        table=words,
        column=words,
        sensitive=st.booleans(),
        reason=words,
    ),
    "sensitive_suggestion_run": st.builds(
        cev.SensitiveSuggestionRunPayload,
        run=words,
        mode=st.just("offline"),
        considered=st.integers(0, 9),
        proposed=st.integers(0, 9),
    ),
    "description_set": st.builds(cev.DescriptionSetPayload, target=words, text=words, reason=words),
    "description_generated": st.builds(
        cev.DescriptionGeneratedPayload,
        target=words,
        text=words,
        language=st.sampled_from(["it", "en"]),
        source=st.sampled_from(["agent", "model:local"]),
        run=st.none() | words,
        non_generatable=st.booleans(),
    ),
    "descriptions_consolidated": st.builds(
        cev.DescriptionsConsolidatedPayload,
        targets=st.lists(
            st.builds(cev.ConsolidatedTargetPayload, target=words, generated_seq=st.integers(1, 9)),
            max_size=2,
        ).map(tuple),
        reason=words,
    ),
    "description_generation_started": st.builds(
        cev.DescriptionGenerationStartedPayload,
        run=words,
        profile=words,
        model=words,
        requested=st.integers(0, 9),
        language=st.sampled_from(["it", "en"]),
    ),
    "description_generation_finished": st.builds(
        cev.DescriptionGenerationFinishedPayload,
        run=words,
        status=st.sampled_from(["completed", "interrupted", "failed"]),
        requested=st.integers(0, 9),
        generated=st.integers(0, 9),
        non_generatable=st.integers(0, 9),
        failed=st.integers(0, 9),
        skipped=st.integers(0, 9),
    ),
    # Memory registry entries (a workspace-level ledger's): never in a session either
    "memory_saved": st.builds(
        mev.MemorySavedPayload,
        memory_id=words,
        subject=words,
        meaning=words,
        source=st.builds(mev.MemorySource, session=words, seq=st.integers(1, 9)),
        reviewer=st.just("human:ann"),
    ),
    "memory_superseded": st.builds(mev.MemorySupersededPayload, memory_id=words, by=words),
    "memory_forgotten": st.builds(mev.MemoryForgottenPayload, memory_id=words, reason=words),
    "solved_question_saved": st.builds(
        mev.SolvedQuestionSavedPayload,
        solved_id=words,
        question=words,
        sql=words,
        sql_sha256=st.just(SHA),
        source=st.builds(mev.MemorySource, session=words, seq=st.integers(1, 9)),
    ),
}


def test_every_event_type_has_a_payload_strategy() -> None:
    assert set(_KERNEL_PAYLOADS) | set(PAYLOADS) == set(ev.EVENT_TYPES)


@st.composite
def ledgers(draw: st.DrawFn) -> list[ev.Event]:
    """A well-typed event list with seqs 1..n, in any order of types, stages and references."""
    count = draw(st.integers(0, 40))
    events: list[ev.Event] = []
    # mostly a session that starts like a session; sometimes not even that
    types = sorted(ev.EVENT_TYPES)
    for seq in range(1, count + 1):
        etype = (
            "session_created"
            if seq == 1 and draw(st.integers(0, 9))
            else draw(st.sampled_from(types))
        )
        if etype in _KERNEL_PAYLOADS:
            payload: Any = draw(_KERNEL_PAYLOADS[etype])
        else:
            payload = ev.payload_from_builtins(etype, draw(PAYLOADS[etype]))
        draft = ev.EventDraft(
            type=etype,
            actor=draw(st.sampled_from(["agent", "kernel", "human:ana"])),
            stage=draw(STAGES),
            subject=draw(st.none() | words),
            retracts=draw(st.none() | st.integers(0, count + 1)),
            causation=draw(st.none() | st.integers(0, count + 1)),
            payload=payload,
        )
        events.append(ev.stamp(draft, seq=seq, ts="2026-01-01T00:00:00.000Z", prev=SHA))
    return events


_CACHE = msgspec.msgpack.Decoder(StatusCache)


@settings(max_examples=max(50, settings.default.max_examples))
@given(events=ledgers(), data=st.data())
def test_the_fold_is_total_deterministic_and_incremental(
    events: list[ev.Event], data: st.DataObject
) -> None:
    full = fold(WORKFLOW, events)  # total: never raises on well-typed events
    assert fold(WORKFLOW, list(events)) == full
    again = ev.decode_lines(b"".join(ev.encode_event(e) + b"\n" for e in events))
    assert fold(WORKFLOW, again) == full, "folding the decoded ledger differs"
    split = data.draw(st.integers(0, len(events)), label="split")
    assert fold_from(WORKFLOW, fold(WORKFLOW, events[:split]), events[split:]) == full
    state: SessionState = empty_state(WORKFLOW)
    for event in events:
        state = fold_from(WORKFLOW, state, [event])
    assert state == full, "event-by-event fold differs"
    cache = StatusCache(workflow="w", hint=0, last_seq=0, head="", state=full)
    try:
        encoded = msgspec.msgpack.encode(cache)
    except OverflowError:  # a payload integer beyond 64 bits: the kernel keeps no cache then
        encoded = None
    if encoded is not None:
        assert _CACHE.decode(encoded).state == full, "the cache loses state"
    effective = full.effective_decisions()
    assert all(d.status == "effective" for d in effective)
    names = [a.name for a in full.artifacts if a.status == "effective"]
    assert len(names) == len(set(names)), "two effective versions of one artifact"
