"""Composition root of Memory (ARCHITECTURE §4.3): the registry, its index, F2 and F8.

The only place that builds what ``modules/memory`` is given: the workspace-level ledger
``memory`` from the store port (its fold cache beside it), the composition root's clock, the
reviewer's signer in signed mode, and the index's vector store, embedder and BM25 encoder from the
workspace's one collection (``tht.evidence_runtime``; kinds ``memory`` and ``solved_question``).

What tht runs itself (``tht stage run``, and by itself when the stage before closes):

- :func:`run_recall` — F2: search the registry's index for the question, the rewritten question
  and the subjects clarified in F1; only memories still *backed* by the session they came from
  (the human's ``memory_promoted`` is in that session's verified ledger) are shown, so an entry
  written straight into the registry file is never recalled;
- :func:`run_promotion` — F8's ``memory_promotion``: the candidates computed from the ledger;
- :func:`before_answer` — when the reviewer answers the promotion review, the chosen memories
  are written to the registry and the index *before* the kernel records ``memory_promoted``
  (spec 003 §12); a re-run after a crash between the two saves nothing twice;
- :func:`solved_question_task` — after finalize (outbox, best effort): the solved question.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from kernel.fold import SessionState
    from kernel.outbox import OutboxItem
    from kernel.workflow_kernel import Applied, LoadedSession
    from modules.memory import LoadedRegistry, MemoryRegistry
    from modules.memory.candidates import PromotionCandidate
    from modules.memory.index_capabilities import MemoryIndexCapabilities
    from modules.memory.records import MemoryState
    from tht.composition import App
    from tht.evidence_runtime import EvidenceRuntime

__all__ = [
    "PROMOTION_STAGE",
    "RECALL_STAGE",
    "SOLVED_TASK",
    "backed_ids",
    "backing",
    "before_answer",
    "open_registry",
    "promotion_preview",
    "reindex_memory",
    "run_promotion",
    "run_recall",
    "search_memory",
    "solved_question_task",
]

RECALL_STAGE: Final = "memory_recall"
PROMOTION_STAGE: Final = "memory_promotion"
#: the outbox task that records a finalized session's solved question
SOLVED_TASK: Final = "memory:solved_question"
_ACTOR: Final = "module:memory"
#: candidates ``tht memory search --explain`` shows at least, recalled or not
_EXPLAINED: Final = 10
#: hits asked of the index per searched text (before the floor)
_PER_TEXT: Final = 10


# ---------------------------------------------------------------------------- the registry


def open_registry(app: App) -> MemoryRegistry:
    from modules.memory import MemoryCapabilities, MemoryRegistry
    from tht.witness_runtime import witnessed_ledger
    from tht.workspace_signing import human_check, signer_for

    store = app.kernel.store
    return MemoryRegistry(
        MemoryCapabilities(
            ledger=witnessed_ledger(app, "memory"),
            clock=app.clock,
            read_cache=lambda: store.read_workspace_cache("memory"),
            write_cache=lambda data: store.write_workspace_cache("memory", data),
            signer_for=signer_for(app),
            human_check=human_check(app),
        )
    )


def _language(app: App) -> str:
    languages = tuple(getattr(app.settings, "languages", ()) or ())
    return str(languages[0]) if languages else ""


# ---------------------------------------------------------------------------- the index


def _index_caps(
    app: App, runtime: EvidenceRuntime, progress: Callable[[str, int, int], None] | None = None
) -> MemoryIndexCapabilities:
    from modules.memory.index_capabilities import MemoryIndexCapabilities

    extra: dict[str, Any] = {}
    if os.environ.get("THT_CLOCK") or os.environ.get("THT_SEED"):
        seeded = hashlib.sha256(f"memory:{os.environ.get('THT_SEED', '')}".encode()).hexdigest()
        extra["nonce"] = lambda: seeded
    return MemoryIndexCapabilities(
        state_dir=app.workspace.state_dir / "memory_index",
        vector_store=runtime.vector_store,
        embedder=runtime.embedder,
        bm25=runtime.bm25,
        progress=progress,
        **extra,
    )


def reindex_memory(
    app: App,
    *,
    loaded: LoadedRegistry | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, object]:
    """Bring the index to the verified registry: ``{"memories", "solved", "embedded",
    "deleted", "kept", "rebuilt", …}``; exit 6 when the vector store or the embedder fails
    (the previous index then stays, and is reported stale)."""
    from modules.memory.index import reindex
    from tht.evidence_runtime import open_evidence

    current = loaded if loaded is not None else open_registry(app).load_for_write()
    runtime = open_evidence(app.workspace.root, trust=lambda: app.kernel.trust)
    try:
        report = reindex(
            _index_caps(app, runtime, progress), current.state, registry_head=current.head
        )
    finally:
        runtime.close()
    return report.to_json()


def search_memory(
    app: App, text: str, *, limit: int, mode: str = "hybrid", explain: bool = False
) -> dict[str, Any]:
    """``tht memory search --json`` (ARCHITECTURE §6): ``{"status": "available", "results":
    […]}`` — results above the relevance floor, each with its provenance; exit 6 (``status``
    unavailable in the error's details) when the index is missing or stale: fail-closed.

    ``explain``: the body adds ``"explain"`` (:func:`_explain`): the index's first
    ``max(limit, 10)`` candidates, recalled or not, each with its signals and why."""
    from kernel.errors import UsageError

    if not text.strip():
        raise UsageError("QUERY is empty")
    if limit < 1:
        raise UsageError(f"--limit {limit}: must be at least 1")
    loaded = open_registry(app).load()
    state = loaded.state
    if not state.live() and not state.solved:
        body: dict[str, Any] = {"status": "available", "results": []}
        if explain:
            body["explain"] = _explain(state, [], set(), lambda _: True, limit=_EXPLAINED)
        return body
    raw: list[Any] = []
    hits = _search(
        app, state, loaded.head, [text], limit=max(limit, _PER_TEXT), mode=mode, raw=raw
    )[0]
    backed = backing(app, state)  # an entry written into the registry file by hand: never shown
    results = []
    for hit in [h for h in hits if backed(h.id)][:limit]:
        results.append(_result_json(state, hit.id, hit.kind, hit.score))
    body = {"status": "available", "results": results}
    if explain:
        shown = {r["id"] for r in results}
        body["explain"] = _explain(state, raw, shown, backed, limit=max(limit, _EXPLAINED))
    return body


def _explain(
    state: MemoryState,
    raw: Sequence[Any],
    shown: set[str],
    backed: Callable[[str], bool],
    *,
    limit: int,
) -> dict[str, Any]:
    """Why each of the index's first ``limit`` candidates (and every recalled one) was or was
    not recalled: its signals (the question names its subject; the mention, cosine and BM25
    scores), its relevance against its kind's floor, and ``why``
    (``modules.memory.search.explain_relevance``, plus ``beyond-limit``: relevant, but
    ``--limit`` results came first). An entry that no
    reviewer's promotion backs (written into the registry file by hand) is never shown, not
    even here: it is only counted (``hidden``)."""
    from modules.memory.search import (
        DEFAULT_FLOOR,
        MENTION_OFFSET,
        RECALLED_BECAUSE,
        explain_relevance,
    )

    candidates: list[dict[str, Any]] = []
    hidden = 0
    for hit in raw:
        if not backed(hit.id):
            hidden += 1
            continue
        recalled = hit.id in shown
        if len(candidates) >= limit and not recalled:
            continue  # a recalled one is always explained (a named one may come last)
        signal, floor, why = explain_relevance(hit)
        if why in RECALLED_BECAUSE and not recalled:
            why = "beyond-limit"
        if hit.kind == "memory":
            subject = state.memories[hit.id].subject if hit.id in state.memories else ""
        else:
            subject = state.solved[hit.id].question if hit.id in state.solved else ""
        candidates.append(
            {
                "id": hit.id,
                "kind": hit.kind,
                "subject": subject,
                "recalled": recalled,
                "why": why,
                "relevance": _rounded(signal),
                "floor": floor,
                "signals": {
                    "named": hit.named,
                    "mention": _rounded(hit.mention),
                    "cosine": _rounded(hit.dense),
                    "bm25": _rounded(hit.lexical),
                },
            }
        )
    return {
        "floor": dict(DEFAULT_FLOOR),
        "mention_offset": MENTION_OFFSET,
        "candidates": candidates,
        "hidden": hidden,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def _result_json(state: MemoryState, item: str, kind: str, score: float) -> dict[str, Any]:
    if kind == "memory":
        record = state.memories[item]
        return {
            "id": item,
            "kind": kind,
            "subject": record.subject,
            "meaning": record.meaning,
            "target": record.target,
            "score": round(score, 6),
            "source": {"session": record.source_session, "seq": record.source_seq},
            "reviewer": record.reviewer,
        }
    solved = state.solved[item]
    return {
        "id": item,
        "kind": kind,
        "subject": solved.question,
        "meaning": solved.sql,
        "target": None,
        "score": round(score, 6),
        "source": {"session": solved.source_session, "seq": solved.source_seq},
    }


def _search(
    app: App,
    state: MemoryState,
    head: str,
    texts: Sequence[str],
    *,
    limit: int,
    mode: str = "hybrid",
    raw: list[Any] | None = None,
) -> tuple[list[Any], int]:
    """The relevant hits for ``texts`` (best score per item, best first), only of items the
    registry holds live, and how many distinct items the index returned before the floor.
    ``raw``: when given, receives the first text's hits as the index ranked them, before the
    floor (``tht memory search --explain``)."""
    from modules.memory.mention import LiveSubjects
    from modules.memory.search import check_index, relevant, search
    from modules.memory.terms import live_terms
    from tht.evidence_runtime import open_evidence

    runtime = open_evidence(app.workspace.root, trust=lambda: app.kernel.trust)
    try:
        caps = _index_caps(app, runtime)
        header = check_index(caps, last_seq=state.last_seq, head=head)
        subjects = LiveSubjects(state)  # the mention signal's
        terms = live_terms(state)  # the term signal's
        best: dict[str, Any] = {}
        seen: set[str] = set()
        for text in texts:
            found = search(
                caps,
                header,
                text,
                limit=limit,
                mode=mode,  # type: ignore[arg-type]
                subjects=subjects,
                terms=terms,
            )
            if raw is not None and not raw:
                raw.extend(found)
            seen.update(h.id for h in found)
            for hit in relevant(found):
                if hit.id in best and best[hit.id].score >= hit.score:
                    continue
                best[hit.id] = hit
    finally:
        runtime.close()
    live = {r.memory_id for r in state.live()}
    kept = [h for h in best.values() if h.id in live or h.id in state.solved]
    kept.sort(key=lambda h: (-h.score, h.kind, h.id))
    return kept, len(seen)


# ---------------------------------------------------------------------------- provenance


def backing(app: App, state: MemoryState) -> Callable[[str], bool]:
    """Whether an id (memory, solved question) is still backed by its source session: a
    memory's session records the reviewer's effective ``memory_promoted`` of it (its id is its
    content's), a solved question is exactly what its finalized session solved
    (``solved_matches``). Each source session is loaded verified, once."""
    from kernel.errors import ThtError
    from modules.memory.promotion import solved_matches

    sessions: dict[str, SessionState | None] = {}
    answers: dict[str, bool] = {}

    def session(sid: str) -> SessionState | None:
        if sid not in sessions:
            try:
                exists = app.kernel.store.exists(sid)
                sessions[sid] = app.kernel.load(sid).state if exists else None
            except ThtError:
                sessions[sid] = None  # a session that does not verify backs nothing
        return sessions[sid]

    def check(item: str) -> bool:
        if item in answers:
            return answers[item]
        found = False
        if item in state.memories:
            source = session(state.memories[item].source_session)
            found = source is not None and _promoted(source, item)
        elif item in state.solved:
            solved = state.solved[item]
            source = session(solved.source_session)
            found = source is not None and solved_matches(solved, source)
        answers[item] = found
        return found

    return check


def backed_ids(app: App, state: MemoryState, ids: Iterable[str]) -> set[str]:
    """The ids of ``ids`` still backed by their source session (:func:`backing`)."""
    check = backing(app, state)
    return {item for item in ids if check(item)}


def _promoted(state: SessionState, memory_id: str) -> bool:
    from kernel.events import MemoryPromoted

    return any(
        isinstance(d.event, MemoryPromoted) and d.event.payload.memory_id == memory_id
        for d in state.effective_decisions()
    )


# ---------------------------------------------------------------------------- F2


def run_recall(app: App, loaded: LoadedSession, stage: str) -> Applied:
    """F2: a closing decide of the recalled memories and solved questions, or the stage
    completed with ``memory_nothing_recalled`` (an empty memory needs no index)."""
    from modules.memory.recall import plan_recall, recall_texts
    from modules.memory.search import DEFAULT_FLOOR

    registry = open_registry(app).load_for_write()
    state = registry.state
    texts = recall_texts(loaded.state)
    hits: list[Any] = []
    considered = 0
    if state.live() or state.solved:
        hits, considered = _search(app, state, registry.head, texts, limit=_PER_TEXT)
    outcome = plan_recall(
        loaded.state,
        state,
        hits,
        considered=considered,
        floor=min(DEFAULT_FLOOR.values()),
        searched=len(texts),
        backed=backing(app, state),
    )
    return app.kernel.apply_outcome(loaded.session, stage, outcome, actor=_ACTOR, loaded=loaded)


# ---------------------------------------------------------------------------- F8 promotion


def promotion_preview(app: App, session: str) -> dict[str, Any]:
    """``tht memory promote [SESSION] --preview``: the candidates computed from the ledger."""
    from modules.memory.candidates import promotion_candidates

    loaded = app.kernel.load(session)
    memory = open_registry(app).load_for_write().state
    report = promotion_candidates(loaded.state, memory, language=_language(app))
    return {
        "session": session,
        "candidates": [
            {
                "seq": c.seq,
                "subject": c.subject,
                "meaning": c.meaning,
                "target": c.target,
                "memory_id": c.memory_id,
            }
            for c in report.candidates
        ],
        "excluded": dict(sorted(report.excluded.items())),
    }


def run_promotion(app: App, loaded: LoadedSession, stage: str) -> Applied:
    """F8's memory promotion: the pre-selected checklist of candidates, or the contribution
    completed with ``memory_nothing_to_promote`` and its reason."""
    from kernel.outcomes import ModuleOutcome
    from modules.memory.candidates import (
        nothing_to_promote,
        promotion_candidates,
        promotion_review,
    )

    memory = open_registry(app).load_for_write().state
    report = promotion_candidates(loaded.state, memory, language=_language(app))
    if report.candidates:
        outcome = ModuleOutcome(status="awaiting_review", review=promotion_review(report))
    else:
        outcome = nothing_to_promote(report)
    return app.kernel.apply_outcome(loaded.session, stage, outcome, actor=_ACTOR, loaded=loaded)


def _chosen_candidates(
    state: SessionState, options: Sequence[Any], chosen: Sequence[str], language: str
) -> list[PromotionCandidate]:
    """The candidates the reviewer chose, rebuilt from the session's own clarifications: an
    option whose ``memory_promoted`` does not match an effective clarification of this session
    (a review written into the ledger by hand) saves nothing (exit 7)."""
    from kernel.errors import IntegrityError
    from kernel.memory_events import MEMORY_CONTRACT
    from modules.memory.candidates import PromotionCandidate
    from modules.memory.keys import memory_id

    out: list[PromotionCandidate] = []
    for option in options:
        if option.id not in chosen:
            continue
        for proposed in option.events:
            if proposed.type != "memory_promoted":
                continue
            source = proposed.payload.get("source_seq")
            record = state.decision(source) if isinstance(source, int) else None
            if (
                record is None
                or record.status != "effective"
                or record.type not in MEMORY_CONTRACT.reusable
            ):
                raise IntegrityError(
                    f"option {option.id} promotes seq {source}, which is not an effective "
                    "clarification of this session; nothing was saved"
                )
            payload: Any = record.event.payload
            subject = record.subject or ""
            target = payload.target or None
            mid = memory_id(subject, target, payload.meaning)
            if proposed.payload.get("memory_id") != mid:
                raise IntegrityError(
                    f"option {option.id} names memory {proposed.payload.get('memory_id')}, "
                    f"not the clarification at seq {source} ({mid}); nothing was saved"
                )
            out.append(
                PromotionCandidate(
                    seq=record.seq,
                    subject=subject,
                    meaning=payload.meaning,
                    target=target,
                    memory_id=mid,
                    language=language,
                )
            )
    return out


def before_answer(
    app: App,
    session: str,
    seq: int,
    chosen: Sequence[str],
    *,
    actor: str,
    rationale: str = "",
    approve: bool = False,
    reject: bool = False,
) -> dict[str, Any] | None:
    """Before the kernel records the answer to the memory promotion review: write the chosen
    memories to the registry, then the index. None for any other review. Raises exit 6 when
    the index cannot follow (the registry keeps what was saved; answering again saves nothing
    twice and records the promotion)."""
    from kernel.errors import UnavailableError, UsageError
    from kernel.transitions import plan_answer
    from modules.memory.candidates import NONE_OPTION
    from modules.memory.promotion import plan_saves

    loaded = app.kernel.load(session)
    review = next((r for r in loaded.state.open_reviews if r.seq == seq), None)
    if review is None or review.stage not in (PROMOTION_STAGE, RECALL_STAGE) or not review.closes:
        return None
    # the answer the kernel will plan, checked first (a paused session, an unknown option,
    # --approve on a decide…): a refused answer saves nothing
    plan_answer(
        loaded.workflow,
        loaded.state,
        seq,
        actor=actor,
        choose=tuple(chosen),
        approve=approve,
        reject=reject,
        rationale=rationale,
    )
    if NONE_OPTION in chosen and len(chosen) > 1:
        raise UsageError(
            f"option {NONE_OPTION!r} means none of them: choose it alone, or only the others"
        )
    if review.stage != PROMOTION_STAGE:
        return None
    candidates = _chosen_candidates(loaded.state, review.options, chosen, _language(app))
    registry = open_registry(app)
    current = registry.load_for_write()
    plan = plan_saves(
        current.state, candidates, session=session, reviewer=actor, rationale=rationale
    )
    if plan.replaced:
        raise UsageError(
            "these options clarify the same subject and target with different meanings, so one "
            f"would only supersede the other: choose one of them ({', '.join(plan.replaced)} "
            "is replaced by a later one)"
        )
    if plan.drafts:
        current = registry.append(current, plan.drafts)
    try:
        reindex_memory(app, loaded=current)
    except UnavailableError as err:
        saved = ", ".join(plan.saved) or "nothing new"
        raise UnavailableError(
            f"the workspace memory saved {saved}, but its index could not follow "
            f"({err.message}); nothing was recorded in session {session}: run `tht memory "
            f"reindex`, then answer review {seq} again (nothing is saved twice)",
            details={"saved": list(plan.saved), "already": list(plan.already)},
        ) from err
    return {"saved": list(plan.saved), "already": list(plan.already)}


# ---------------------------------------------------------------------------- solved questions


def solved_question_task(app: App) -> Callable[[OutboxItem], None]:
    """The outbox handler that records a finalized session's solved question and indexes it
    (idempotent: an item run twice saves it once)."""

    def run(item: OutboxItem) -> None:
        from kernel.errors import PolicyError
        from modules.memory.keys import solved_id
        from modules.memory.promotion import plan_solved, solved_facts, solved_matches

        loaded = app.kernel.load(item.session)
        state = loaded.state
        if state.lifecycle != "finalized" or state.finalized_seq is None:
            return
        if state.effective_artifact("sql_final.sql") is None:
            return  # no final SQL: nothing was solved
        sql = app.kernel.artifact(item.session, "sql_final.sql", loaded=loaded).decode("utf-8")
        facts = solved_facts(state)
        registry = open_registry(app)
        current = registry.load_for_write()
        held = current.state.solved.get(solved_id(item.session))
        if held is not None and not solved_matches(held, state):
            # written into the registry by someone else for this session: never recalled
            # (backing), and the genuine one cannot be saved beside it; say so in the outbox
            raise PolicyError(
                f"the memory registry holds a solved question for session {item.session} that "
                "is not what the session solved (written outside tht): it is never recalled, "
                "and this session's own solved question cannot be saved beside it"
            )
        drafts = plan_solved(
            current.state,
            session=item.session,
            seq=state.finalized_seq,
            question=state.question,
            sql=sql,
            language=_language(app),
            **facts,
        )
        if drafts:
            current = registry.append(current, drafts)
        reindex_memory(app, loaded=current)

    return run
