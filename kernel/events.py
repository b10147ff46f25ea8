"""Ledger events: the envelope of ARCHITECTURE §3.1 and every registered event type.

Every ledger line is one :class:`Event` subclass, a frozen ``msgspec.Struct`` tagged on ``type``.
The set of types is a core contract (``DecisionType`` for the domain decisions): kernel types are
owned by the kernel, domain decision types by the module named in :data:`EVENT_TYPES`, but all are
registered here so the kernel can validate every outcome. ``ledger_schemas/`` is generated from
these classes (``tht schemas export``) and a test fails when the two drift.

The entries of the workspace-level ledgers are declared in their own files, one per ledger —
:mod:`kernel.reviewer_events`, :mod:`kernel.catalog_events`, :mod:`kernel.memory_events` — and
registered here; code that builds or reads them imports them from there.

Line format (deterministic): the msgspec JSON encoding of the struct, fields in declaration order
(``type`` first, ``payload`` last), compact, UTF-8, one line per event.

Schema evolution follows msgspec's rules: a new field gets a default, a field never changes type,
and a breaking change is a new version ``v`` of the type.
"""

import builtins
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal

import msgspec

from kernel.catalog_events import (
    CatalogCleaned,
    CatalogSyncCompleted,
    CatalogSyncFailed,
    CatalogSyncStarted,
    DescriptionGenerated,
    DescriptionGenerationFinished,
    DescriptionGenerationStarted,
    DescriptionsConsolidated,
    DescriptionSet,
    RelationshipAdded,
    RelationshipDeleted,
    RelationshipGenerated,
    RelationshipRestored,
    RelationshipsReconstructed,
    SensitiveFlagSet,
    SensitiveSuggestionRun,
)
from kernel.event_base import Event, Payload
from kernel.memory_events import (
    MemoryForgotten,
    MemorySaved,
    MemorySuperseded,
    SolvedQuestionSaved,
)
from kernel.reviewer_events import (
    ReviewerAdded,
    ReviewerRevoked,
    WorkflowApproved,
)

__all__ = [
    "CATALOG_TYPES",
    "DECISION_TYPES",
    "DEFAULT_ADMISSION_ATTEMPTS",
    "EVENT_TYPES",
    "HUMAN_DECISION_TYPES",
    "KERNEL_TYPES",
    "MAX_ADMISSION_ATTEMPTS",
    "MEMORY_REGISTRY_TYPES",
    "MODULE_DECISION_TYPES",
    "RECEIPT_TYPES",
    "REGISTRY_TYPES",
    "WORKSPACE_CATEGORIES",
    "AnyEvent",
    "DecisionType",
    "Event",
    "EventDraft",
    "EventTypeInfo",
    "Payload",
    "ProposedEvent",
    "ReviewOptionPayload",
    "admission_closed_reason",
    "canonical_bytes",
    "completes_stage",
    "decode_event",
    "decode_lines",
    "encode_event",
    "info_of",
    "payload_from_builtins",
    "stamp",
]


# --------------------------------------------------------------------------- kernel payloads


class WorkflowRef(Payload, frozen=True, kw_only=True):
    """The session's workflow snapshot: the SHA-256 of its source bytes and of its compiled
    form (so a command can trust the compiled cache only when it matches; absent in sessions
    created before it was recorded, which then compile from the source)."""

    name: str
    version: int
    sha256: str
    compiled: str | None = None


#: Question Admission's attempts policy (spec 003 §17): a refused question may be rephrased in
#: the same session until this many questions were asked (``admission: {attempts: N}`` in
#: workspace.yaml, 1–10); the refusal of the last one closes the session
DEFAULT_ADMISSION_ATTEMPTS = 3
MAX_ADMISSION_ATTEMPTS = 10
_AdmissionAttempts = Annotated[int, msgspec.Meta(ge=1, le=MAX_ADMISSION_ATTEMPTS)]


def admission_closed_reason(attempts: int) -> str:
    """The reason of the kernel's ``session_abandoned`` after the last allowed refusal (the
    replay accepts that one text only)."""
    return f"refused {attempts} time{'' if attempts == 1 else 's'}"


class SessionCreatedPayload(Payload, frozen=True, kw_only=True):
    question: str
    workflow: WorkflowRef
    derived_from: str | None = None
    #: ``signed``: every human event of this session must carry a valid reviewer signature
    #: (ARCHITECTURE §3.9); recorded at creation so a later change of settings cannot relax it
    human_decisions: Literal["signed", "unsigned"] = "unsigned"
    #: the questions Question Admission may judge in this session (the first and its
    #: rephrasings), recorded at creation like ``human_decisions``; absent: the default, 3
    #: (written only when the workspace sets another number, so older lines keep their bytes)
    admission_attempts: _AdmissionAttempts | msgspec.UnsetType = msgspec.UNSET


class Empty(Payload, frozen=True, kw_only=True):
    pass


class ProposedEvent(Payload, frozen=True, kw_only=True):
    """A domain event inside a review option: applied only if a human chooses the option."""

    type: str
    subject: str | None = None
    payload: dict[str, Any] = msgspec.field(default_factory=dict)


class ReviewOptionPayload(Payload, frozen=True, kw_only=True):
    id: str
    label: str
    events: tuple[ProposedEvent, ...] = ()
    #: a ``decide`` review that closes its stage: the events recorded when this option is *not*
    #: chosen (e.g. ``memory_rejected``); only in reviews of the step's own module
    unchosen: tuple[ProposedEvent, ...] | msgspec.UnsetType = msgspec.UNSET
    #: pre-selected in the reviewer's checklist (display: the answer still names every choice)
    selected: bool | msgspec.UnsetType = msgspec.UNSET


class ReviewRequestedPayload(Payload, frozen=True, kw_only=True):
    kind: Literal["select", "decide", "confirm"]
    prompt: str
    options: tuple[ReviewOptionPayload, ...] = ()
    artifacts: tuple[str, ...] = ()
    #: answering this ``select``/``decide`` completes the stage (the chosen options are its
    #: decision): requested only by the step's own module (``module:<owner>``)
    closes: bool | msgspec.UnsetType = msgspec.UNSET


class ReviewAnsweredPayload(Payload, frozen=True, kw_only=True):
    choice: tuple[str, ...] = ()
    approved: bool | None = None
    rationale: str = ""


class StageCompletedPayload(Payload, frozen=True, kw_only=True):
    via: Literal["auto", "review", "kernel"]


class ReasonPayload(Payload, frozen=True, kw_only=True):
    reason: str


class OptionalReasonPayload(Payload, frozen=True, kw_only=True):
    reason: str = ""


class FailurePayload(Payload, frozen=True, kw_only=True):
    code: str
    message: str


class RevisionRequestedPayload(Payload, frozen=True, kw_only=True):
    target: str
    reason: str


class ArtifactWrittenPayload(Payload, frozen=True, kw_only=True):
    name: str
    sha256: str
    size: int


class SessionFinalizedPayload(Payload, frozen=True, kw_only=True):
    effective_decisions: int
    artifacts: tuple[str, ...] = ()


class SessionAbandonedPayload(Payload, frozen=True, kw_only=True):
    reason: str


class QuestionRephrasedPayload(Payload, frozen=True, kw_only=True):
    """A refused question asked again in other words (``tht session rephrase``): the new text,
    already through the SecurityGate (masked when refused), and which question of the session
    it is (2, 3, …, at most the session's ``admission_attempts``)."""

    question: str
    attempt: Annotated[int, msgspec.Meta(ge=2, le=MAX_ADMISSION_ATTEMPTS)]


class SessionDerivedPayload(Payload, frozen=True, kw_only=True):
    from_session: str
    from_head: str
    reason: str = ""


class ContributionFailedPayload(Payload, frozen=True, kw_only=True):
    code: str
    message: str
    policy: Literal["required", "best_effort"]


class LedgerRepairedPayload(Payload, frozen=True, kw_only=True):
    """An explicit, human-only repair (``tht ledger verify --repair``): what it quarantined and
    which unanchored lines it accepted. Nothing is ever repaired implicitly by an append."""

    reason: str
    quarantined_bytes: int = 0
    quarantined_sha256: str | None = None
    accepted_from: int | None = None  # first seq past the old anchor the reviewer accepted
    accepted_to: int | None = None
    missing_from: int | None = None  # seqs the old anchor acknowledged that were gone
    missing_to: int | None = None
    problems: tuple[str, ...] = ()  # what verify reported before the repair


# --------------------------------------------------------------------------- domain payloads


class QuestionAdmittedPayload(Payload, frozen=True, kw_only=True):
    checks: tuple[str, ...] = ()


class MaskedSpanPayload(Payload, frozen=True, kw_only=True):
    """Where the SecurityGate's placeholder (``[competitor]``…) lies in the session's masked
    question: ``start``/``end`` are code point offsets, end exclusive."""

    kind: Literal["competitor", "out_of_scope", "restricted"]
    start: int
    end: int


class QuestionRefusedPayload(Payload, frozen=True, kw_only=True):
    code: str
    reason: str
    #: a SecurityGate refusal: the masked spans of the session's question (never the refused
    #: text) and what the person can ask instead; absent on every other refusal
    masked_spans: tuple[MaskedSpanPayload, ...] | msgspec.UnsetType = msgspec.UNSET
    narrowing: str | msgspec.UnsetType = msgspec.UNSET


class ConceptClarifiedPayload(Payload, frozen=True, kw_only=True):
    meaning: str
    target: str | None = None
    alternatives: tuple[str, ...] = ()


class AmbiguityOpenPayload(Payload, frozen=True, kw_only=True):
    question: str
    options: tuple[str, ...] = ()
    unanswerable: bool = False


class ValueGroundedPayload(Payload, frozen=True, kw_only=True):
    value: str
    column: str
    meaning: str = ""


class MemoryAppliedPayload(Payload, frozen=True, kw_only=True):
    """A recalled memory (or solved question) the reviewer applied in F2; the later stages see a
    ``memory`` one as an effective clarification of ``subject`` (``meaning``, ``target``)."""

    memory_id: str
    content: str = ""
    kind: Literal["memory", "solved_question"] | msgspec.UnsetType = msgspec.UNSET
    subject: str | msgspec.UnsetType = msgspec.UNSET
    meaning: str | msgspec.UnsetType = msgspec.UNSET
    target: str | msgspec.UnsetType | None = msgspec.UNSET
    #: provenance: the session and seq the memory came from
    source_session: str | msgspec.UnsetType = msgspec.UNSET
    source_seq: int | msgspec.UnsetType = msgspec.UNSET


class MemoryRejectedPayload(Payload, frozen=True, kw_only=True):
    memory_id: str
    reason: str = ""


class QuestionRewrittenPayload(Payload, frozen=True, kw_only=True):
    question: str
    assumptions: tuple[str, ...] = ()


class SchemaLinkedPayload(Payload, frozen=True, kw_only=True):
    tables: tuple[str, ...]
    columns: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    notes: str = ""


class EvidenceDecisionPayload(Payload, frozen=True, kw_only=True):
    evidence_id: str
    reason: str = ""


class ConceptFormulaPayload(Payload, frozen=True, kw_only=True):
    formula: str
    evidence_id: str | None = None
    inputs: tuple[str, ...] = ()
    reason: str = ""


class EvidenceConsultedPayload(Payload, frozen=True, kw_only=True):
    purpose: Literal["disambiguation", "rewriting", "schema_linking", "sql_generation"]
    generation: str
    returned: tuple[str, ...] = ()


class CteApprovedPayload(Payload, frozen=True, kw_only=True):
    name: str
    artifact: str


class SqlApprovedPayload(Payload, frozen=True, kw_only=True):
    artifact: str = "sql_final.sql"
    dialect: str = "postgresql"


class ResultVerifiedPayload(Payload, frozen=True, kw_only=True):
    """F7's verification, recorded by tht's own run of the approved SQL (``module:core``):
    ``ok`` with the row count, the elapsed time and the result hash; or ``ok: false`` with the
    reason (an error, a timeout), which fails the stage."""

    rows: int
    checks: tuple[str, ...] = ()
    ok: bool = True
    #: SHA-256 of the SQL that ran (the effective ``sql_final.sql``)
    sql_sha256: str = ""
    #: SHA-256 of the canonical result (kernel/database/types.py ``QueryResult.sha256``)
    result_sha256: str = ""
    elapsed_ms: float = 0.0
    truncated: bool = False
    reason: str = ""
    #: the redacted display of the Database Binding it ran against ("" in lines written before
    #: it was recorded)
    database: str = ""


class DatamartDefinedPayload(Payload, frozen=True, kw_only=True):
    name: str
    artifact: str = "datamart.sql"


class MemoryPromotedPayload(Payload, frozen=True, kw_only=True):
    source_seq: int
    memory_id: str = ""
    content: str = ""
    subject: str | msgspec.UnsetType = msgspec.UNSET
    meaning: str | msgspec.UnsetType = msgspec.UNSET
    target: str | msgspec.UnsetType | None = msgspec.UNSET


class MemoryNothingRecalledPayload(Payload, frozen=True, kw_only=True):
    """F2 found nothing to show (``module:memory``): the stage completes with this reason."""

    reason: str
    #: the texts searched (question, rewritten question, clarified subjects)
    searched: int = 0
    #: hits considered before the relevance floor and the session's own decisions
    considered: int = 0
    floor: float = 0.0


class MemoryNothingToPromotePayload(Payload, frozen=True, kw_only=True):
    """F8's promotion found no candidate (``module:memory``): the contribution completes with
    this reason; ``excluded`` counts the clarifications left out, by why."""

    reason: str
    excluded: dict[str, int] = msgspec.field(default_factory=dict)


class MemoryPromotionDeclinedPayload(Payload, frozen=True, kw_only=True):
    source_seq: int
    reason: str = ""


# --------------------------------------------------------------------------- event types
# Kernel-owned.


class SessionCreated(Event, tag="session_created", frozen=True, kw_only=True):
    payload: SessionCreatedPayload


class StageStarted(Event, tag="stage_started", frozen=True, kw_only=True):
    payload: Empty


class ReviewRequested(Event, tag="review_requested", frozen=True, kw_only=True):
    payload: ReviewRequestedPayload


class ReviewAnswered(Event, tag="review_answered", frozen=True, kw_only=True):
    payload: ReviewAnsweredPayload


class StageCompleted(Event, tag="stage_completed", frozen=True, kw_only=True):
    payload: StageCompletedPayload


class StageSkipped(Event, tag="stage_skipped", frozen=True, kw_only=True):
    payload: ReasonPayload


class StageFailed(Event, tag="stage_failed", frozen=True, kw_only=True):
    payload: FailurePayload


class RevisionRequested(Event, tag="revision_requested", frozen=True, kw_only=True):
    payload: RevisionRequestedPayload


class StageReopened(Event, tag="stage_reopened", frozen=True, kw_only=True):
    payload: ReasonPayload


class DecisionRetracted(Event, tag="decision_retracted", frozen=True, kw_only=True):
    payload: ReasonPayload


class ArtifactWritten(Event, tag="artifact_written", frozen=True, kw_only=True):
    payload: ArtifactWrittenPayload


class SessionPaused(Event, tag="session_paused", frozen=True, kw_only=True):
    payload: OptionalReasonPayload


class SessionResumed(Event, tag="session_resumed", frozen=True, kw_only=True):
    payload: OptionalReasonPayload


class SessionFinalized(Event, tag="session_finalized", frozen=True, kw_only=True):
    payload: SessionFinalizedPayload


class SessionAbandoned(Event, tag="session_abandoned", frozen=True, kw_only=True):
    payload: SessionAbandonedPayload


class SessionDerived(Event, tag="session_derived", frozen=True, kw_only=True):
    payload: SessionDerivedPayload


class QuestionRephrased(Event, tag="question_rephrased", frozen=True, kw_only=True):
    payload: QuestionRephrasedPayload


class ContributionFailed(Event, tag="contribution_failed", frozen=True, kw_only=True):
    payload: ContributionFailedPayload


class LedgerRepaired(Event, tag="ledger_repaired", frozen=True, kw_only=True):
    payload: LedgerRepairedPayload


# Domain decisions (owned by their modules, registered centrally).


class QuestionAdmitted(Event, tag="question_admitted", frozen=True, kw_only=True):
    payload: QuestionAdmittedPayload


class QuestionRefused(Event, tag="question_refused", frozen=True, kw_only=True):
    payload: QuestionRefusedPayload


class ConceptClarified(Event, tag="concept_clarified", frozen=True, kw_only=True):
    payload: ConceptClarifiedPayload


class AmbiguityOpen(Event, tag="ambiguity_open", frozen=True, kw_only=True):
    payload: AmbiguityOpenPayload


class ValueGrounded(Event, tag="value_grounded", frozen=True, kw_only=True):
    payload: ValueGroundedPayload


class MemoryApplied(Event, tag="memory_applied", frozen=True, kw_only=True):
    payload: MemoryAppliedPayload


class MemoryRejected(Event, tag="memory_rejected", frozen=True, kw_only=True):
    payload: MemoryRejectedPayload


class QuestionRewritten(Event, tag="question_rewritten", frozen=True, kw_only=True):
    payload: QuestionRewrittenPayload


class SchemaLinked(Event, tag="schema_linked", frozen=True, kw_only=True):
    payload: SchemaLinkedPayload


class EvidenceAccepted(Event, tag="evidence_accepted", frozen=True, kw_only=True):
    payload: EvidenceDecisionPayload


class EvidenceRejected(Event, tag="evidence_rejected", frozen=True, kw_only=True):
    payload: EvidenceDecisionPayload


class ConceptFormulaApproved(Event, tag="concept_formula_approved", frozen=True, kw_only=True):
    payload: ConceptFormulaPayload


class ConceptFormulaRejected(Event, tag="concept_formula_rejected", frozen=True, kw_only=True):
    payload: ConceptFormulaPayload


class EvidenceConsulted(Event, tag="evidence_consulted", frozen=True, kw_only=True):
    payload: EvidenceConsultedPayload


class CteApproved(Event, tag="cte_approved", frozen=True, kw_only=True):
    payload: CteApprovedPayload


class SqlApproved(Event, tag="sql_approved", frozen=True, kw_only=True):
    payload: SqlApprovedPayload


class ResultVerified(Event, tag="result_verified", frozen=True, kw_only=True):
    payload: ResultVerifiedPayload


class DatamartDefined(Event, tag="datamart_defined", frozen=True, kw_only=True):
    payload: DatamartDefinedPayload


class DatamartSkipped(Event, tag="datamart_skipped", frozen=True, kw_only=True):
    payload: ReasonPayload


class MemoryPromoted(Event, tag="memory_promoted", frozen=True, kw_only=True):
    payload: MemoryPromotedPayload


class MemoryPromotionDeclined(Event, tag="memory_promotion_declined", frozen=True, kw_only=True):
    payload: MemoryPromotionDeclinedPayload


class MemoryNothingRecalled(Event, tag="memory_nothing_recalled", frozen=True, kw_only=True):
    payload: MemoryNothingRecalledPayload


class MemoryNothingToPromote(Event, tag="memory_nothing_to_promote", frozen=True, kw_only=True):
    payload: MemoryNothingToPromotePayload


# --------------------------------------------------------------------------- registry


class EventTypeInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What the kernel knows about one event type."""

    type: str
    version: int
    owner: str
    category: Literal["kernel", "decision", "receipt", "registry", "catalog", "memory_registry"]
    cls: builtins.type[Event]
    payload: builtins.type[Payload]
    description: str


def _info(
    cls: type[Event],
    owner: str,
    category: Literal["kernel", "decision", "receipt", "registry", "catalog", "memory_registry"],
    doc: str,
) -> EventTypeInfo:
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str)
    resolved = cls.__annotations__["payload"]  # a class: this module defers no annotation
    assert isinstance(resolved, type) and issubclass(resolved, Payload)
    return EventTypeInfo(
        type=tag,
        version=1,
        owner=owner,
        category=category,
        cls=cls,
        payload=resolved,
        description=doc,
    )


_K = "kernel"
_C = "catalog"
_M = "memory"
EVENT_TYPES: dict[str, EventTypeInfo] = {
    info.type: info
    for info in (
        _info(SessionCreated, _K, "kernel", "A session was created for a question."),
        _info(StageStarted, _K, "kernel", "A module invocation started (or retried) a step."),
        _info(
            ReviewRequested, _K, "kernel", "A human review was requested (select/decide/confirm)."
        ),
        _info(ReviewAnswered, _K, "kernel", "A human answered a review or revision request."),
        _info(StageCompleted, _K, "kernel", "A step completed (automatically or by approval)."),
        _info(StageSkipped, _K, "kernel", "A human skipped a step where its policy allows."),
        _info(StageFailed, _K, "kernel", "A step failed; a required step blocks the workflow."),
        _info(RevisionRequested, _K, "kernel", "A module asked to re-run this or an earlier step."),
        _info(StageReopened, _K, "kernel", "A step was reopened; it and later results are stale."),
        _info(DecisionRetracted, _K, "kernel", "A human withdrew one decision."),
        _info(ArtifactWritten, _K, "kernel", "An artifact was written; its SHA-256 is recorded."),
        _info(SessionPaused, _K, "kernel", "The session was paused (stop and save)."),
        _info(SessionResumed, _K, "kernel", "A paused session was resumed."),
        _info(SessionFinalized, _K, "kernel", "The session was finalized; it is now immutable."),
        _info(
            SessionAbandoned,
            _K,
            "kernel",
            "A human abandoned the session, or the kernel closed it after the last allowed "
            "refusal; it is now immutable.",
        ),
        _info(SessionDerived, _K, "kernel", "This session derives from a finalized one."),
        _info(
            QuestionRephrased, _K, "kernel", "A refused question was rephrased; admission reruns."
        ),
        _info(ContributionFailed, _K, "kernel", "A contribution to an extension point failed."),
        _info(LedgerRepaired, _K, "kernel", "A human repaired the ledger (quarantine, re-anchor)."),
        _info(ReviewerAdded, _K, "registry", "A reviewer's public key joined the registry."),
        _info(ReviewerRevoked, _K, "registry", "A reviewer's key was revoked."),
        _info(WorkflowApproved, _K, "registry", "A reviewer approved a custom workflow file."),
        _info(CatalogSyncStarted, _C, "catalog", "A Catalog Sync Run started."),
        _info(
            CatalogSyncCompleted, _C, "catalog", "A Catalog Sync Run completed (snapshot recorded)."
        ),
        _info(CatalogSyncFailed, _C, "catalog", "A Catalog Sync Run failed or was interrupted."),
        _info(RelationshipGenerated, _C, "catalog", "A Generated Relationship was inferred."),
        _info(RelationshipAdded, _C, "catalog", "A human added a Manual Relationship."),
        _info(RelationshipDeleted, _C, "catalog", "A Logical Relationship was deleted."),
        _info(RelationshipRestored, _C, "catalog", "A deleted relationship was restored."),
        _info(
            RelationshipsReconstructed, _C, "catalog", "A human ran Relationship Reconstruction."
        ),
        _info(CatalogCleaned, _C, "catalog", "A human ran Catalog Metadata Cleanup."),
        _info(SensitiveFlagSet, _C, "catalog", "A human set or cleared a Sensitive Data Flag."),
        _info(
            SensitiveSuggestionRun, _C, "catalog", "A Sensitive Data Suggestion Run (counts only)."
        ),
        _info(DescriptionSet, _C, "catalog", "A human wrote or edited a Description."),
        _info(
            DescriptionGenerated,
            _C,
            "catalog",
            "A Generated Description was proposed (a proposal).",
        ),
        _info(
            DescriptionsConsolidated,
            _C,
            "catalog",
            "A human consolidated Generated Descriptions into Descriptions.",
        ),
        _info(DescriptionGenerationStarted, _C, "catalog", "A Description Generation Run started."),
        _info(
            DescriptionGenerationFinished,
            _C,
            "catalog",
            "A Description Generation Run ended: status and counts only.",
        ),
        _info(MemorySaved, _M, "memory_registry", "A promoted clarification joined the memory."),
        _info(MemorySuperseded, _M, "memory_registry", "A newer memory replaced an older one."),
        _info(MemoryForgotten, _M, "memory_registry", "A human forgot a memory."),
        _info(SolvedQuestionSaved, _M, "memory_registry", "A finalized session's question."),
        _info(QuestionAdmitted, "disambiguation", "decision", "Admission accepted the question."),
        _info(QuestionRefused, "disambiguation", "decision", "Admission refused the question."),
        _info(ConceptClarified, "disambiguation", "decision", "A concept's meaning was chosen."),
        _info(AmbiguityOpen, "disambiguation", "decision", "An ambiguity was left open."),
        _info(ValueGrounded, "disambiguation", "decision", "A value was grounded to a column."),
        _info(MemoryApplied, "memory", "decision", "A recalled memory was applied."),
        _info(MemoryRejected, "memory", "decision", "A recalled memory was rejected."),
        _info(QuestionRewritten, "disambiguation", "decision", "The question was rewritten."),
        _info(SchemaLinked, "core", "decision", "Tables and columns were linked."),
        _info(EvidenceAccepted, "evidence", "decision", "An evidence unit was accepted."),
        _info(EvidenceRejected, "evidence", "decision", "An evidence unit was rejected."),
        _info(ConceptFormulaApproved, "evidence", "decision", "A concept formula was approved."),
        _info(ConceptFormulaRejected, "evidence", "decision", "A concept formula was rejected."),
        _info(EvidenceConsulted, "evidence", "receipt", "Evidence was consulted (ids only)."),
        _info(CteApproved, "core", "decision", "A CTE was approved."),
        _info(SqlApproved, "core", "decision", "The final SQL was approved."),
        _info(ResultVerified, "core", "decision", "The result was verified."),
        _info(DatamartDefined, "datamart", "decision", "A datamart was defined."),
        _info(DatamartSkipped, "datamart", "decision", "The datamart was not needed."),
        _info(MemoryPromoted, "memory", "decision", "A clarification was promoted to memory."),
        _info(MemoryPromotionDeclined, "memory", "decision", "A promotion was declined."),
        _info(MemoryNothingRecalled, "memory", "decision", "F2 recall found nothing relevant."),
        _info(MemoryNothingToPromote, "memory", "decision", "F8 promotion found no candidate."),
    )
}

KERNEL_TYPES: frozenset[str] = frozenset(
    name for name, info in EVENT_TYPES.items() if info.category == "kernel"
)
DECISION_TYPES: frozenset[str] = frozenset(
    name for name, info in EVENT_TYPES.items() if info.category == "decision"
)
RECEIPT_TYPES: frozenset[str] = frozenset(
    name for name, info in EVENT_TYPES.items() if info.category == "receipt"
)
#: decisions only a human's choice may record (ARCHITECTURE §3.9): never applied directly by an
#: agent or a module, whatever a workflow file says — a workflow whose ``automatic`` step emits
#: one is refused, and the replay rejects one that is not the option a human chose
HUMAN_DECISION_TYPES: frozenset[str] = frozenset(
    {
        "concept_clarified",
        "value_grounded",
        "memory_applied",
        "memory_rejected",
        "question_rewritten",
        "schema_linked",
        "evidence_accepted",
        "evidence_rejected",
        "concept_formula_approved",
        "concept_formula_rejected",
        "cte_approved",
        "sql_approved",
        "datamart_defined",
        "memory_promoted",
        "memory_promotion_declined",
    }
)
#: decisions only the named module's own invocation records (``tht stage run``), never an agent's
#: proposal: a step that emits one completes automatically only in an outcome of that module
#: which records it, with ``ok`` true (kernel/outcomes.py plans it, kernel/replay.py re-checks it)
MODULE_DECISION_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "result_verified": "module:core",
        "memory_nothing_recalled": "module:memory",
        "memory_nothing_to_promote": "module:memory",
    }
)


def completes_stage(event_type: str, payload: Payload) -> bool:
    """Whether a module decision lets its stage complete (a failed verification never does)."""
    return getattr(payload, "ok", True) is not False


#: entries of the workspace's reviewer registry; never valid in a session ledger
REGISTRY_TYPES: frozenset[str] = frozenset(
    name for name, info in EVENT_TYPES.items() if info.category == "registry"
)
#: entries of the workspace's Metadata Catalog ledger; never valid in a session ledger
CATALOG_TYPES: frozenset[str] = frozenset(
    name for name, info in EVENT_TYPES.items() if info.category == "catalog"
)
#: entries of the workspace's Memory registry; never valid in a session ledger
MEMORY_REGISTRY_TYPES: frozenset[str] = frozenset(
    name for name, info in EVENT_TYPES.items() if info.category == "memory_registry"
)
#: the categories of workspace-level ledgers' entries (never in a session, never proposed)
WORKSPACE_CATEGORIES: frozenset[str] = frozenset({"registry", "catalog", "memory_registry"})

DecisionType = Literal[
    "question_admitted",
    "question_refused",
    "concept_clarified",
    "ambiguity_open",
    "value_grounded",
    "memory_applied",
    "memory_rejected",
    "question_rewritten",
    "schema_linked",
    "evidence_accepted",
    "evidence_rejected",
    "concept_formula_approved",
    "concept_formula_rejected",
    "cte_approved",
    "sql_approved",
    "result_verified",
    "datamart_defined",
    "datamart_skipped",
    "memory_promoted",
    "memory_promotion_declined",
    "memory_nothing_recalled",
    "memory_nothing_to_promote",
]

AnyEvent = (
    SessionCreated
    | StageStarted
    | ReviewRequested
    | ReviewAnswered
    | StageCompleted
    | StageSkipped
    | StageFailed
    | RevisionRequested
    | StageReopened
    | DecisionRetracted
    | ArtifactWritten
    | SessionPaused
    | SessionResumed
    | SessionFinalized
    | SessionAbandoned
    | SessionDerived
    | QuestionRephrased
    | ContributionFailed
    | LedgerRepaired
    | ReviewerAdded
    | ReviewerRevoked
    | WorkflowApproved
    | CatalogSyncStarted
    | CatalogSyncCompleted
    | CatalogSyncFailed
    | RelationshipGenerated
    | RelationshipAdded
    | RelationshipDeleted
    | RelationshipRestored
    | RelationshipsReconstructed
    | CatalogCleaned
    | SensitiveFlagSet
    | SensitiveSuggestionRun
    | DescriptionSet
    | DescriptionGenerated
    | DescriptionsConsolidated
    | DescriptionGenerationStarted
    | DescriptionGenerationFinished
    | MemorySaved
    | MemorySuperseded
    | MemoryForgotten
    | SolvedQuestionSaved
    | QuestionAdmitted
    | QuestionRefused
    | ConceptClarified
    | AmbiguityOpen
    | ValueGrounded
    | MemoryApplied
    | MemoryRejected
    | QuestionRewritten
    | SchemaLinked
    | EvidenceAccepted
    | EvidenceRejected
    | ConceptFormulaApproved
    | ConceptFormulaRejected
    | EvidenceConsulted
    | CteApproved
    | SqlApproved
    | ResultVerified
    | DatamartDefined
    | DatamartSkipped
    | MemoryPromoted
    | MemoryPromotionDeclined
    | MemoryNothingRecalled
    | MemoryNothingToPromote
)


class EventDraft(msgspec.Struct, frozen=True, kw_only=True):
    """An event before the ledger stamps it with ``seq``, ``ts`` and ``prev``."""

    type: str
    actor: str
    payload: Payload
    stage: str | None = None
    invocation: str | None = None
    attempt: int | None = None
    subject: str | None = None
    retracts: int | None = None
    causation: int | None = None


_ENCODER = msgspec.json.Encoder(order="deterministic")
_DECODER: msgspec.json.Decoder[AnyEvent] = msgspec.json.Decoder(AnyEvent)


def encode_event(event: Event) -> bytes:
    """The deterministic line bytes of one event (no trailing newline)."""
    return _ENCODER.encode(event)


def decode_event(line: bytes) -> Event:
    """Decode and validate one line; raises ``msgspec.ValidationError`` / ``DecodeError``."""
    return _DECODER.decode(line)


def decode_lines(data: bytes) -> list[Event]:
    """Decode newline-delimited events (every line complete and valid)."""
    return list(_DECODER.decode_lines(data))


def payload_from_builtins(event_type: str, payload: Any) -> Payload:
    """Validate a JSON payload against its type's schema (raises ``msgspec.ValidationError``)."""
    info = EVENT_TYPES[event_type]
    return msgspec.convert(payload, info.payload, strict=True)


def stamp(
    draft: EventDraft, *, seq: int, ts: str, prev: str, batch_left: int = 0, sig: str | None = None
) -> Event:
    """Turn a draft into the event the ledger writes (the only place events are built)."""
    info = EVENT_TYPES[draft.type]
    if not isinstance(draft.payload, info.payload):
        raise TypeError(f"{draft.type}: payload must be {info.payload.__name__}")
    return info.cls(  # type: ignore[call-arg]  # every subclass declares ``payload``
        seq=seq,
        ts=ts,
        v=info.version,
        actor=draft.actor,
        stage=draft.stage,
        invocation=draft.invocation,
        attempt=draft.attempt,
        subject=draft.subject,
        retracts=draft.retracts,
        causation=draft.causation,
        batch_left=batch_left,
        prev=prev,
        sig=sig,
        payload=draft.payload,
    )


def canonical_bytes(event: Event) -> bytes:
    """The bytes a signature covers: the line without ``sig`` (ARCHITECTURE §3.9)."""
    if event.sig is None:
        return _ENCODER.encode(event)
    return _ENCODER.encode(msgspec.structs.replace(event, sig=None))


_INFO_BY_CLASS: dict[builtins.type[Event], EventTypeInfo] = {
    info.cls: info for info in EVENT_TYPES.values()
}


def info_of(event: Event) -> EventTypeInfo:
    """The registry entry of a decoded event."""
    return _INFO_BY_CLASS[type(event)]
