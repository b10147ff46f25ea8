"""Evidence search: the typed, fail-closed Evidence Search Outcome over the active generation.

Glossary: an ``available`` search may legitimately find nothing; ``unavailable`` (index missing,
corrupt, incompatible or stale) returns no results and an explicit warning, and the calling stage
cannot advance until a retry succeeds. Never an older generation, never another workspace's: the
query is filtered by the active generation's unique id, and before querying the index is checked
against the active generation's record (embedder, BM25 encoder, dense size) and must hold that
generation's completion marker. In signed mode the record must carry a reviewer's approval that
verifies (``unapproved`` otherwise) and the index must hold exactly the record's points, and in
every mode each point a query returns must be in the generation's digest table with that digest
(``tampered`` otherwise): modules/evidence/approval.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kernel.errors import UnavailableError
from modules.evidence.approval import (
    ApprovalProblem,
    check_approval,
    check_points,
    load_digests,
)
from modules.evidence.capabilities import EvidenceCapabilities
from modules.evidence.generations import (
    GenerationRecord,
    GenerationStateError,
    load_generation_state,
)
from modules.evidence.index import COMPLETE_MARKER
from modules.evidence.retrieval import (
    Mode,
    RankedUnit,
    embed_query,
    evidence_filter,
    rank_units,
)

if TYPE_CHECKING:
    from modules.evidence.vocabulary import VocabularyTable

__all__ = ["SearchOutcome", "check_active_generation", "search_evidence"]


@dataclass(frozen=True)
class SearchOutcome:
    status: Literal["available", "unavailable"]
    generation: str | None
    results: tuple[RankedUnit, ...] = ()
    warning: str | None = None
    # unavailable: missing | corrupt | incompatible | stale | unapproved | tampered | error
    reason: str | None = None
    query: str = ""
    purpose: str = ""
    where: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "status": self.status,
            "generation": self.generation,
            "results": [r.to_json() for r in self.results],
        }
        if self.warning is not None:
            body["warning"] = self.warning
            body["reason"] = self.reason
        return body


class _Unavailable(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def check_active_generation(caps: EvidenceCapabilities) -> GenerationRecord:
    """The active generation, or :class:`_Unavailable` saying why it cannot be used."""
    try:
        state = load_generation_state(caps.paths.state_dir)
    except GenerationStateError as err:
        raise _Unavailable("corrupt", f"evidence index state is unreadable: {err}") from err
    if state.active is None:
        raise _Unavailable(
            "missing", "no published evidence generation: run `tht evidence publish`"
        )
    return state.active


def _verify(caps: EvidenceCapabilities, active: GenerationRecord) -> None:
    from kernel.vectors import CollectionMissingError, VectorFilter

    embedder = caps.embedder()
    bm25 = caps.bm25()
    if embedder.identity != active.embedder or embedder.dimension != active.dense_size:
        raise _Unavailable(
            "incompatible",
            f"the active generation {active.id} was built with embedder {active.embedder}; the "
            f"workspace now uses {embedder.identity}: run `tht evidence publish`",
        )
    if bm25.identity != active.bm25:
        raise _Unavailable(
            "incompatible",
            f"the active generation {active.id} was built with {active.bm25}; the workspace now "
            f"uses {bm25.identity}: run `tht evidence publish`",
        )
    store = caps.vector_store()
    try:
        info = store.describe()
    except CollectionMissingError as err:
        raise _Unavailable("missing", f"the evidence index is missing ({err.message})") from err
    if info.dense_size != active.dense_size or not info.bm25:
        raise _Unavailable(
            "incompatible",
            f"the vector collection ({info.dense_size} dims, bm25={info.bm25}) does not match "
            f"the active generation {active.id}: run `tht evidence publish`",
        )
    marker = {"generation": active.id, "marker": COMPLETE_MARKER}
    if store.count(VectorFilter(kind="evidence", match=marker)) != 1:
        raise _Unavailable(
            "stale",
            f"the evidence index does not hold the active generation {active.id} (an older, "
            "partial or foreign index): run `tht evidence publish`",
        )
    if caps.approval_required:  # signed mode: every point the reviewer approved is there
        # (a full count: ~4 ms at 10,000 fragments, so not in unsigned mode, where the agent
        # could as well publish without the unit)
        found = store.count(VectorFilter(kind="evidence", match={"generation": active.id}))
        if found != active.fragments + 1:
            raise _Unavailable(
                "tampered",
                f"the evidence index holds {found - 1} fragment point(s) of the active "
                f"generation {active.id}; its record lists {active.fragments} (points were "
                "deleted or added in the vector store): run `tht evidence publish` to rebuild it",
            )


def _vocabulary(
    caps: EvidenceCapabilities, active: GenerationRecord, query_text: str
) -> VocabularyTable | None:
    """The active generation's vocabulary table when the workspace aligns vocabulary, the
    generation records one and the query is in another language than its corpus (only then is
    it read); a recorded table that is missing or altered is a stale index."""
    from modules.evidence.vocabulary import query_language_to_align, recorded_vocabulary

    if not caps.settings.fusion.align_vocabulary or active.vocabulary is None:
        return None
    if query_language_to_align(query_text, active.languages) is None:
        return None
    table = recorded_vocabulary(caps.paths.state_dir, active)
    if table is None:
        raise _Unavailable(
            "stale",
            f"the vocabulary table of the active generation {active.id} is missing or does not "
            "match its record: run `tht evidence publish`",
        )
    return table


def search_evidence(
    caps: EvidenceCapabilities,
    query_text: str,
    *,
    purpose: str,
    kinds: Sequence[str] = (),
    where: Mapping[str, object] | None = None,
    limit: int = 10,
    mode: Mode = "hybrid",
) -> SearchOutcome:
    """Search the active generation; any technical failure is an ``unavailable`` outcome."""
    where = dict(where or {})
    generation: str | None = None
    try:
        active = check_active_generation(caps)
        generation = active.id
        if caps.approval_required:
            check_approval(active, caps.check_signature)
        _verify(caps, active)
        table = load_digests(caps.paths.state_dir, active)
        vectors = embed_query(
            caps.embedder(),
            caps.bm25(),
            query_text,
            caps.settings.fusion,
            active.languages,
            _vocabulary(caps, active, query_text),
        )
        units = rank_units(
            caps.vector_store(),
            vectors,
            evidence_filter(active.id, purpose, kinds, where),
            generation=active.id,
            limit=limit,
            mode=mode,
            rrf_k=caps.settings.rrf_k,
            prefetch_limit=caps.settings.prefetch_limit,
            fusion=caps.settings.fusion,
            check_points=lambda payloads: check_points(active, table, payloads),
        )
    except (_Unavailable, ApprovalProblem) as err:
        return SearchOutcome(
            status="unavailable",
            generation=generation,
            warning=err.message,
            reason=err.reason,
            query=query_text,
            purpose=purpose,
            where=where,
        )
    except UnavailableError as err:  # vector store or embedder failures (exit 6 family)
        return SearchOutcome(
            status="unavailable",
            generation=generation,
            warning=f"evidence index unavailable: {err.message}",
            reason="error",
            query=query_text,
            purpose=purpose,
            where=where,
        )
    return SearchOutcome(
        status="available",
        generation=active.id,
        results=tuple(units),
        query=query_text,
        purpose=purpose,
        where=where,
    )
