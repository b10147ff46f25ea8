"""``tht evidence publish``: build a Candidate Evidence Generation, evaluate it, activate it.

1. reconcile units, sources and manifest (the reconciled manifest is recorded); blocked units —
   any review item — are not published, and are listed;
2. if nothing changed since the active generation (same fingerprint, same fusion) and, in
   signed mode, a reviewer's approval of it verifies, nothing is built;
3. stage: ensure the collection (creating it, or adding the ``bm25`` vector to a dense-only one
   without losing its data: the Additive BM25 upgrade), then write every fragment as a point of a
   new generation id — invisible to searches, which filter on the active id;
4. evaluate the candidate on ``evidence/eval.yaml`` (none: publish with a warning);
   the last point written is the generation's completion marker;
5. activate only if it passes: the generation's digest table (every fragment point's SHA-256)
   is written and its SHA-256 recorded, and in signed mode the record carries the approving
   reviewer's signature over the rest of it (checked against the
   reviewer registry before activation: modules/evidence/approval.py; without a reviewer, a
   signed workspace refuses to publish before anything is read); it is replaced atomically,
   then the points of every other generation are deleted. A failing candidate is deleted and
   nothing changes.

The whole run holds an exclusive, non-blocking ``flock`` on ``.tht/evidence/publish.lock``
(:func:`publish_lock`): a second concurrent publish fails at once with exit 4 and changes
nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel.errors import PolicyError
from kernel.process_lock import process_lock
from modules.evidence.approval import (
    ApprovalProblem,
    GenerationApproval,
    approval_message,
    check_approval,
    check_points,
    digests_path,
    load_digests,
    prune_digests,
    write_digests,
)
from modules.evidence.capabilities import EvidenceCapabilities
from modules.evidence.catalog import load_evidence
from modules.evidence.eval_set import EvalCase, load_eval_set
from modules.evidence.evaluation import EvaluationReport, evaluate
from modules.evidence.generations import (
    GenerationRecord,
    GenerationState,
    GenerationStateError,
    load_generation_state,
    new_generation_id,
    save_generation_state,
)
from modules.evidence.index import (
    collection_spec,
    fingerprint,
    fragment_digests,
    fragments_of,
    write_completion_marker,
    write_generation,
)
from modules.evidence.manifest import render_manifest
from modules.evidence.retrieval import (
    Mode,
    QueryVectors,
    RankedUnit,
    embed_query,
    evidence_filter,
    rank_units,
)
from modules.evidence.staging import apply_atomically
from modules.evidence.translation import corpus_languages

if TYPE_CHECKING:  # the vocabulary module needs numpy: imported only when a table is built or read
    from modules.evidence.vocabulary import VocabularyTable

__all__ = ["PUBLISH_LOCK", "PublishReport", "publish", "publish_lock"]

PUBLISH_LOCK = "publish.lock"


@dataclass(frozen=True)
class PublishReport:
    status: str  # activated | unchanged
    generation: GenerationRecord
    blocked: tuple[str, ...]
    warnings: tuple[str, ...]
    evaluation: EvaluationReport | None

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "generation": self.generation.to_json(),
            "blocked": list(self.blocked),
            "warnings": list(self.warnings),
            "evaluation": self.evaluation.to_json() if self.evaluation else None,
        }


@contextlib.contextmanager
def publish_lock(state_dir: Path) -> Iterator[None]:
    """Hold the workspace's exclusive publish lock, ``.tht/evidence/publish.lock``.

    Non-blocking: when another process holds it, :class:`ConflictError` (exit 4) naming its pid
    is raised before anything is read or written. The lock file is never deleted (deleting it
    would let two holders lock two different files); it holds the holder's pid.
    """
    with process_lock(
        state_dir / PUBLISH_LOCK,
        what="publish lock",
        busy="another `tht evidence publish` is running (pid {pid}); nothing was changed",
        mode=0o644,
        dir_mode=0o777,
    ):
        yield


def publish(caps: EvidenceCapabilities, *, lock: bool = True) -> PublishReport:
    """Publish (see the module docstring) under :func:`publish_lock`; ``lock=False`` when the
    caller already holds it (the CLI holds it across opening and closing the vector store)."""
    if not lock:
        return _publish(caps)
    with publish_lock(caps.paths.state_dir):
        return _publish(caps)


def _publish(caps: EvidenceCapabilities) -> PublishReport:
    from kernel.vectors import VectorFilter

    if caps.approval_required and caps.approver is None:
        raise PolicyError(
            "signed mode: a generation goes live only with a reviewer's approval; a reviewer "
            "publishes it (`tht evidence publish --as human:<id>`); nothing was changed"
        )
    paths, settings = caps.paths, caps.settings
    loaded = load_evidence(paths, max_chunk_chars=settings.max_chunk_chars)
    state = loaded.state
    eval_set = load_eval_set(paths.eval_file)
    warnings: list[str] = []
    if eval_set is None:
        warnings.append("no evaluation set (evidence/eval.yaml): published without evaluation")
    blocked = tuple(s.unit.id for s in state.blocked)
    if blocked:
        warnings.append(f"{len(blocked)} unit(s) with review items are not published")

    manifest_rel = paths.rel(paths.manifest_file)
    if state.reconciled != state.manifest:
        apply_atomically(
            paths.root,
            {manifest_rel: render_manifest(state.reconciled)},
            staging_root=paths.staging_dir,
            expect={manifest_rel: loaded.raw.get(manifest_rel)},
        )

    try:
        previous = load_generation_state(paths.state_dir)
    except GenerationStateError as err:
        warnings.append(f"unreadable generation state was replaced ({err})")
        previous = GenerationState()
    units = state.publishable
    items = fragments_of(units, settings.max_chunk_chars)
    caps.report("loading the encoders", 0, len(items))  # the bar knows its total from the start
    embedder, bm25 = caps.embedder(), caps.bm25()
    print_ = fingerprint(
        units,
        max_chunk_chars=settings.max_chunk_chars,
        embedder=embedder.identity,
        bm25=bm25.identity,
    )
    store = caps.vector_store()
    active = previous.active
    fusion = caps.settings.fusion.to_json()  # another fusion: a new generation, evaluated with it
    if (
        active is not None
        and active.fingerprint == print_
        and active.fusion == fusion
        and _approved(caps, active)
        and _intact(caps, active)
    ):
        return PublishReport("unchanged", active, blocked, tuple(warnings), None)

    metadata_keys = sorted({k for u in units for k in u.front.metadata})
    store.ensure_collection(collection_spec(embedder.dimension, metadata_keys))
    number = previous.last_number + 1
    created_at = caps.clock().isoformat().replace("+00:00", "Z")  # one reading, id and record
    generation = new_generation_id(
        number, fingerprint=print_, created_at=created_at, nonce=caps.nonce()
    )
    written = write_generation(store, embedder, bm25, items, generation, progress=caps.progress)
    languages = corpus_languages((i.fragment.text for i in items), caps.settings.fusion.languages)
    vocabulary = _write_vocabulary(caps, generation, [i.fragment.text for i in items])
    write_completion_marker(store, generation, embedder.dimension, written)

    report: EvaluationReport | None = None
    if eval_set is not None:
        table = None if vocabulary is None else vocabulary[0]
        report = evaluate_generation(caps, generation, eval_set.cases, languages, table)
        if not report.passed:
            store.delete(VectorFilter(kind="evidence", match={"generation": generation}))
            if vocabulary is not None:
                from modules.evidence.vocabulary import vocabulary_path

                vocabulary_path(paths.state_dir, generation).unlink(missing_ok=True)
            save_generation_state(
                paths.state_dir, GenerationState(last_number=number, active=previous.active)
            )
            failures = [c for c in report.cases if not c.passed]
            shown = "; ".join(f"{c.question!r} (fused rank {c.fused})" for c in failures[:5])
            raise PolicyError(
                f"candidate generation {generation} failed the evaluation set "
                f"({len(failures)} of {len(report.cases)} cases without an expected unit in the "
                f"top 10: {shown}); the active generation is unchanged",
                details={"evaluation": report.to_json(), "generation": generation},
            )
    digests = write_digests(paths.state_dir, generation, fragment_digests(items, generation))
    record = GenerationRecord(
        id=generation,
        number=number,
        created_at=created_at,
        fingerprint=print_,
        embedder=embedder.identity,
        dense_size=embedder.dimension,
        bm25=bm25.identity,
        units=len(units),
        fragments=written,
        evaluation=_summary(report),
        fusion=fusion,
        languages=languages,
        vocabulary=None if vocabulary is None else vocabulary[1],
        digests=digests,
    )
    if caps.approver is not None:
        try:
            record = _approve(caps, record)
        except PolicyError:
            store.delete(VectorFilter(kind="evidence", match={"generation": generation}))
            digests_path(paths.state_dir, generation).unlink(missing_ok=True)
            raise
    save_generation_state(paths.state_dir, GenerationState(last_number=number, active=record))
    store.delete(VectorFilter(kind="evidence", exclude={"generation": generation}))
    from modules.evidence.vocabulary import prune_vocabularies

    prune_vocabularies(paths.state_dir, keep=generation)  # a crashed publish's table too
    prune_digests(paths.state_dir, keep=generation)
    return PublishReport("activated", record, blocked, tuple(warnings), report)


def _write_vocabulary(
    caps: EvidenceCapabilities, generation: str, texts: list[str]
) -> tuple[VocabularyTable, dict[str, object]] | None:
    """The candidate generation's vocabulary table, written beside its record (None when
    vocabulary alignment is off): the table and what the record holds of it."""
    if not caps.settings.fusion.align_vocabulary:
        return None
    from modules.evidence.vocabulary import build_vocabulary, write_vocabulary

    table = build_vocabulary(
        texts,
        caps.embedder(),
        progress=lambda done, total: caps.report("embedding the vocabulary", done, total),
    )
    digest = write_vocabulary(caps.paths.state_dir, generation, table)
    return table, {"words": len(table.words), "sha256": digest}


def _approved(caps: EvidenceCapabilities, active: GenerationRecord) -> bool:
    """Whether ``active`` may stay as it is: unsigned mode, or an approval that verifies."""
    if not caps.approval_required:
        return True
    try:
        check_approval(active, caps.check_signature)
    except ApprovalProblem:
        return False
    return True


def _approve(caps: EvidenceCapabilities, record: GenerationRecord) -> GenerationRecord:
    """``record`` signed by the approving reviewer, checked as every search will check it: a
    key the registry does not trust (revoked, unknown) is refused here, before activation."""
    import msgspec

    approver = caps.approver
    assert approver is not None
    approved_at = caps.clock().isoformat().replace("+00:00", "Z")
    sig = approver.sign(approval_message(record, approver.reviewer, approved_at))
    approval = GenerationApproval(reviewer=approver.reviewer, approved_at=approved_at, sig=sig)
    signed = msgspec.structs.replace(record, approval=approval)
    if caps.approval_required:
        try:
            check_approval(signed, caps.check_signature)
        except ApprovalProblem as err:
            raise PolicyError(
                f"{approver.reviewer}'s key cannot approve evidence: the reviewer registry does "
                f"not trust it now ({err.message}); the active generation is unchanged"
            ) from None
    return signed


def _intact(caps: EvidenceCapabilities, active: GenerationRecord) -> bool:
    from kernel.errors import UnavailableError
    from kernel.vectors import VectorFilter

    try:
        found = caps.vector_store().count(
            VectorFilter(kind="evidence", match={"generation": active.id})
        )
    except UnavailableError:
        return False
    if found != active.fragments + 1:  # the fragments and the completion marker
        return False
    if not _points_recorded(caps, active):
        return False
    if active.vocabulary is None:
        return True
    from modules.evidence.vocabulary import recorded_vocabulary

    return recorded_vocabulary(caps.paths.state_dir, active) is not None


def _points_recorded(caps: EvidenceCapabilities, active: GenerationRecord) -> bool:
    """Whether every fragment point of ``active`` is the one its digest table lists (a point
    rewritten in the vector store makes a republish rebuild, not answer ``unchanged``); a
    record without a table (written before tables were) is rebuilt once, which records one."""
    from kernel.errors import UnavailableError
    from kernel.vectors import VectorFilter

    try:
        table = load_digests(caps.paths.state_dir, active)
    except ApprovalProblem:
        return False
    if table is None or table.rows != active.fragments:
        return False
    probe = [1.0] + [0.0] * (active.dense_size - 1)  # any vector: every point is returned
    try:
        hits = caps.vector_store().query_dense(
            dense=probe,
            where=VectorFilter(kind="evidence", match={"generation": active.id}),
            limit=active.fragments + 1,
        )
    except UnavailableError:
        return False
    payloads = [h.payload for h in hits if "marker" not in h.payload]
    ids = {str(p.get("fragment_id", "")) for p in payloads}
    if len(payloads) != active.fragments or len(ids) != active.fragments:
        return False
    try:
        check_points(active, table, payloads)
    except ApprovalProblem:
        return False
    return True


def _summary(report: EvaluationReport | None) -> dict[str, object] | None:
    if report is None:
        return None
    body = report.to_json()
    return {k: body[k] for k in ("passed", "cases", "hit_at_10", "hit_at_5", "results")}


def evaluate_generation(
    caps: EvidenceCapabilities,
    generation: str,
    cases: list[EvalCase],
    languages: tuple[str, ...] | None = None,
    vocabulary: VocabularyTable | None = None,
) -> EvaluationReport:
    """Evaluate ``generation`` (candidate or active) on ``cases``; ``languages``: its fragments'
    (the BM25 query translation's targets, as a search of it would use them); ``vocabulary``:
    its vocabulary table (the words a cross-lingual query is aligned with)."""
    from modules.evidence.eval_set import EvalSet

    embedder, bm25, store = caps.embedder(), caps.bm25(), caps.vector_store()

    def rank(vectors: QueryVectors, where: object, mode: Mode, limit: int) -> list[RankedUnit]:
        from kernel.vectors import VectorFilter

        assert isinstance(where, VectorFilter)
        return rank_units(
            store,
            vectors,
            where,
            generation=generation,
            limit=limit,
            mode=mode,
            rrf_k=caps.settings.rrf_k,
            prefetch_limit=caps.settings.prefetch_limit,
            fusion=caps.settings.fusion,
        )

    return evaluate(
        EvalSet.model_construct(cases=cases),
        embed=lambda text: embed_query(
            embedder, bm25, text, caps.settings.fusion, languages, vocabulary
        ),
        where_of=lambda case: evidence_filter(generation, case.purpose, case.kind, case.where),
        rank=rank,
    )
