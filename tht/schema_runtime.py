"""Composition root of schema linking (F4): the schema index's capabilities, reindex and link.

The schema index lives in the workspace's one vector collection beside the Evidence Index, so
its store, embedder and BM25 encoder come from the same factories (``tht.evidence_runtime``: one
open store per command — an embedded Qdrant Edge shard cannot be opened twice). Its own records
are under ``<workspace>/.tht/schema_index/``.

- :func:`reindex_schema` — after each completed Catalog Sync Run (``tht.catalog_runtime.sync``)
  and for ``tht catalog reindex``: bring the index to the catalog's SchemaView, embedding only
  what changed.
- :func:`link_schema` — ``tht schema link``: the SchemaView from the catalog, the index checked
  fail-closed, Evidence Hints from the workspace's published Evidence (purpose
  ``schema_linking``; ``modules/catalog`` never imports ``modules/evidence``: the hints travel as
  text), then the pure ``link``.
- :func:`schema_pack_section` — the ``schema`` section of ``tht search pack --stage
  schema_linking``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from kernel.capabilities import SessionView
    from kernel.schema_view import SchemaView
    from modules.catalog.linking_hints import EvidenceHint
    from modules.catalog.schema_capabilities import SchemaIndexCapabilities
    from tht.composition import App
    from tht.evidence_runtime import EvidenceRuntime

__all__ = [
    "HINT_LIMIT",
    "NOT_BOUND",
    "NOT_SYNCED",
    "evidence_hints",
    "hints_of",
    "link_schema",
    "reindex_schema",
    "schema_pack_section",
    "session_question",
]

NOT_BOUND: Final = (
    "no workspace database is bound: add `database:` to workspace.yaml "
    '(e.g. database: {url: "sqlite:///data/shop.db"}), then run `tht catalog sync`'
)
NOT_SYNCED: Final = "catalog not synced: run `tht catalog sync`"
#: Evidence results asked for as hints, and their weights by rank (best first)
HINT_LIMIT: Final = 5
_RANK_WEIGHTS: Final = (1.0, 0.8, 0.6, 0.5, 0.4)
#: Evidence kinds that name columns (a mapping, a formula); the others count less
_NAMING_KINDS: Final = frozenset({"mapping", "formula", "enum", "glossary", "normalization"})
_OTHER_KIND_FACTOR: Final = 0.6
#: hints whose weight reaches this also join the retrieval text
_RETRIEVAL_WEIGHT: Final = 0.8


def _capabilities(
    app: App, runtime: EvidenceRuntime, progress: Callable[[str, int, int], None] | None = None
) -> SchemaIndexCapabilities:
    from modules.catalog.schema_capabilities import SchemaIndexCapabilities

    extra: dict[str, Any] = {}
    if os.environ.get("THT_CLOCK") or os.environ.get("THT_SEED"):
        seeded = hashlib.sha256(f"seed:{os.environ.get('THT_SEED', '')}".encode()).hexdigest()
        extra["nonce"] = lambda: seeded
    return SchemaIndexCapabilities(
        state_dir=app.workspace.state_dir / "schema_index",
        vector_store=runtime.vector_store,
        embedder=runtime.embedder,
        bm25=runtime.bm25,
        progress=progress,
        **extra,
    )


def reindex_schema(
    app: App, view: SchemaView, *, progress: Callable[[str, int, int], None] | None = None
) -> dict[str, object]:
    """Bring the schema index to ``view``: ``{"tables", "columns", "embedded", "deleted",
    "kept", "rebuilt", "version"}``. Raises ``UnavailableError`` (exit 6) when the vector store
    or the embedder fails; the previous index then stays (and is reported stale)."""
    from modules.catalog.schema_index import reindex
    from tht.evidence_runtime import open_evidence

    runtime = open_evidence(app.workspace.root, trust=lambda: app.kernel.trust)
    try:
        return reindex(_capabilities(app, runtime, progress), view).to_json()
    finally:
        runtime.close()


def _view(app: App) -> SchemaView:
    from kernel.errors import UnavailableError, UsageError
    from tht.catalog_runtime import schema_view

    if getattr(app.settings, "database", None) is None:
        raise UsageError(NOT_BOUND)
    view = schema_view(app)
    if view is None:
        raise UnavailableError(NOT_SYNCED, details={"reason": "not_synced"})
    return view


def evidence_hints(runtime: EvidenceRuntime, question: str) -> list[EvidenceHint]:
    """The published Evidence for ``question`` (purpose ``schema_linking``) as hints; none when
    nothing was ever published. An index that is published but unusable is exit 6: a broken
    dependency is never taken for "no evidence"."""
    from kernel.errors import UnavailableError
    from modules.evidence.query_text import evidence_query_text
    from modules.evidence.search import search_evidence

    if runtime.active_generation() is None:
        return []
    outcome = search_evidence(
        runtime.capabilities(),
        evidence_query_text(question),
        purpose="schema_linking",
        limit=HINT_LIMIT,
    )
    if outcome.status == "unavailable":
        raise UnavailableError(
            f"evidence hints unavailable: {outcome.warning}", details={"reason": "evidence"}
        )
    return hints_of([(r.kind, r.title, r.excerpt) for r in outcome.results])


def hints_of(results: Sequence[tuple[str, str, str]]) -> list[EvidenceHint]:
    """``(kind, title, text)`` of ranked Evidence results → weighted hints (pure)."""
    from modules.catalog.linking_hints import EvidenceHint

    hints = []
    for rank, (kind, title, text) in enumerate(results[: len(_RANK_WEIGHTS)]):
        factor = 1.0 if kind in _NAMING_KINDS else _OTHER_KIND_FACTOR
        hints.append(EvidenceHint(text=f"{title}\n{text}", weight=_RANK_WEIGHTS[rank] * factor))
    return hints


def link_schema(
    app: App,
    question: str,
    *,
    limit: int,
    hints: Sequence[EvidenceHint] | None = None,
) -> dict[str, Any]:
    """``tht schema link --json``: ``{"tables", "columns", "joins"}`` (ARCHITECTURE §6).

    ``hints`` None: searched in the workspace's Evidence. Exit 2 when no database is bound, 6
    when the catalog was never synced or the schema index is missing or stale.
    """
    from kernel.errors import UsageError
    from modules.catalog.linking import link
    from modules.catalog.schema_search import check_index, embed_query, search_index
    from tht.evidence_runtime import open_evidence

    if not question.strip():
        raise UsageError("QUESTION is empty")
    if limit < 1:
        raise UsageError(f"--limit {limit}: must be at least 1")
    view = _view(app)
    runtime = open_evidence(app.workspace.root, trust=lambda: app.kernel.trust)
    try:
        caps = _capabilities(app, runtime)
        header = check_index(caps, view)
        found = list(evidence_hints(runtime, question) if hints is None else hints)
        text = "\n".join([question, *(h.text for h in found if h.weight >= _RETRIEVAL_WEIGHT)])
        table_hits, column_hits = search_index(caps, header, embed_query(caps, text))
        result = link(
            question,
            view,
            table_hits,
            column_hits,
            found,
            stem=caps.bm25().tokens,
            limit=limit,
        )
    finally:
        runtime.close()
    return result.to_json()


def session_question(view: SessionView) -> str:
    """The session's question: the latest effective ``question_rewritten``, else the original."""
    from kernel.events import QuestionRewritten

    rewritten = [
        (r.seq, r.event.payload.question)
        for r in view.effective_decisions
        if isinstance(r.event, QuestionRewritten) and r.event.payload.question.strip()
    ]
    if rewritten:
        return max(rewritten)[1]
    return view.question


def schema_pack_section(
    app: App, question: str, results: Sequence[tuple[str, str, str]], *, limit: int = 10
) -> dict[str, Any]:
    """The linked schema for an evidence pack: ``{"status": "available", "question", "tables",
    "columns", "joins"}``, or ``{"status": "unavailable", "reason", "warning"}`` (``reason``:
    ``no_database``, ``not_synced``, the index's ``missing``/``stale``/…, or ``error``). The
    pack's own Evidence results are the hints (no second Evidence search)."""
    from kernel.errors import ThtError, UsageError

    try:
        linked = link_schema(app, question, limit=limit, hints=hints_of(results))
    except UsageError as err:
        reason = "no_database" if err.message == NOT_BOUND else "usage"
        return {"status": "unavailable", "reason": reason, "warning": err.message}
    except ThtError as err:
        reason = str(err.details.get("reason") or "error")
        return {"status": "unavailable", "reason": reason, "warning": err.message}
    return {"status": "available", "question": question, **linked}
