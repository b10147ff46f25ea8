"""The pure side of a Catalog Sync Run: the events it records, decided from the folded state.

When relationships are generated (documented in docs/catalog.md): a completed sync generates
candidates only for the **newly observed columns** (those the catalog did not hold before the
run — a first sync's are all new), never for columns it already knew. So a Permanent
Relationship Deletion sticks until an explicit Relationship Reconstruction — also when one of
its columns disappears and comes back: the human's decision is remembered for the
relationship's identity (modules/catalog/relationship_decisions.py) and the sync leaves it out;
a Logical Relationship Deletion keeps its id in the catalog, so a candidate with that id is not
generated while both columns exist, and one generated after a column came back is recorded as
the exclusion it was (the fold's rule).

Skipping an unchanged resync: when the binding's structure version equals that of an earlier
completed run whose snapshot covers the requested scope (a Synchronize All covers any scope;
a scoped one covers its own tables), introspection is skipped and the run completes with
``unchanged: true`` and that earlier snapshot — which the fold applies like any other, so a run
after a Catalog Metadata Cleanup still restores what the cleanup removed.
"""

from __future__ import annotations

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.database.types import Introspection
from modules.catalog.generation import generate_candidates
from modules.catalog.records import CatalogState, CatalogSyncRun
from modules.catalog.relationship_decisions import RelationshipDecisions
from modules.catalog.synchronization import (
    CatalogContent,
    apply_snapshot,
    resolve_scope,
    table_changes,
)

__all__ = [
    "SYNC_ACTOR",
    "generated_drafts",
    "plan_sync_completed",
    "plan_sync_failed",
    "plan_sync_started",
    "plan_sync_unchanged",
    "reusable_run",
]

#: who records a run's results (whoever asked for the run)
SYNC_ACTOR = "module:catalog"


def plan_sync_started(
    run: str, *, scope: tuple[str, ...] | None, binding: str, dialect: str
) -> ev.EventDraft:
    return ev.EventDraft(
        type="catalog_sync_started",
        actor=SYNC_ACTOR,
        subject=run,
        payload=cev.CatalogSyncStartedPayload(
            run=run, scope=scope, binding=binding, dialect=dialect
        ),
    )


def plan_sync_failed(run: str, *, code: str, reason: str) -> ev.EventDraft:
    return ev.EventDraft(
        type="catalog_sync_failed",
        actor=SYNC_ACTOR,
        subject=run,
        payload=cev.CatalogSyncFailedPayload(run=run, code=code, reason=reason),
    )


def reusable_run(
    state: CatalogState, version: str, scope: tuple[str, ...] | None
) -> CatalogSyncRun | None:
    """The latest completed run observed at ``version`` whose snapshot covers ``scope``."""
    if not version:
        return None
    for run in reversed(list(state.runs.values())):
        if run.status != "completed" or run.version != version or run.snapshot is None:
            continue
        if run.scope is None or (scope is not None and set(scope) <= set(run.scope)):
            return run
    return None


def _in_scope(
    snapshot: Introspection, scope: tuple[str, ...] | None, known: dict[str, object]
) -> tuple[int, int, int]:
    wanted = None if scope is None else resolve_scope(scope, snapshot, known)
    tables = [t for t in snapshot.tables if wanted is None or t.name in wanted]
    names = {t.name for t in tables}
    fks = [r for r in snapshot.relationships if r.from_table in names]
    return len(tables), sum(len(t.columns) for t in tables), len(fks)


def generated_drafts(
    content: CatalogContent, only: frozenset[tuple[str, str]] | None, actor: str
) -> list[ev.EventDraft]:
    """``relationship_generated`` for every candidate whose id the catalog does not hold
    (active, or deleted logically: an exclusion)."""
    drafts = []
    for candidate in generate_candidates(
        content.tables, content.physical.values(), only_columns=only
    ):
        rid = candidate.id
        if rid in content.logical:
            continue
        drafts.append(
            ev.EventDraft(
                type="relationship_generated",
                actor=actor,
                subject=rid,
                payload=cev.RelationshipGeneratedPayload(
                    id=rid,
                    from_table=candidate.from_table,
                    from_columns=(candidate.from_column,),
                    to_table=candidate.to_table,
                    to_columns=(candidate.to_column,),
                    rule=candidate.rule,
                ),
            )
        )
    return drafts


def plan_sync_completed(
    state: CatalogState,
    snapshot: Introspection,
    *,
    sha256: str,
    run: str,
    scope: tuple[str, ...] | None,
    version: str,
    unchanged: bool = False,
) -> list[ev.EventDraft]:
    """``catalog_sync_completed`` and the relationships generated for newly observed columns."""
    content = CatalogContent(
        tables=dict(state.tables), physical=dict(state.physical), logical=dict(state.logical)
    )
    _, added = apply_snapshot(content, snapshot, scope=scope, version=version)
    decisions = RelationshipDecisions(state.relationship_decisions)
    # the Manual Relationships the fold puts back: no candidate is generated in their place
    content.logical.update(decisions.manual(content.tables, content.logical, added))
    changes = table_changes(state.tables, content.tables)
    tables, columns, relationships = _in_scope(snapshot, scope, dict(state.tables))
    completed = ev.EventDraft(
        type="catalog_sync_completed",
        actor=SYNC_ACTOR,
        subject=run,
        payload=cev.CatalogSyncCompletedPayload(
            run=run,
            snapshot=sha256,
            version=version,
            tables=tables,
            columns=columns,
            relationships=relationships,
            capabilities=dict(snapshot.capabilities),
            changes=cev.CatalogChangesPayload(
                added=changes.added, removed=changes.removed, changed=changes.changed
            ),
            unchanged=unchanged,
        ),
    )
    new_columns = frozenset(added)
    generated = generated_drafts(content, new_columns, SYNC_ACTOR) if new_columns else []
    kept = [d for d in generated if _state_of(decisions, d) != "permanent"]
    return [completed, *kept]


def _state_of(decisions: RelationshipDecisions, draft: ev.EventDraft) -> str | None:
    """The last human decision about a generated draft's relationship (its state)."""
    p = draft.payload
    assert isinstance(p, cev.RelationshipGeneratedPayload)
    return decisions.state_of(p.from_table, p.from_columns, p.to_table, p.to_columns)


def plan_sync_unchanged(
    state: CatalogState, reuse: CatalogSyncRun, *, run: str, scope: tuple[str, ...] | None
) -> list[ev.EventDraft] | None:
    """The fast path of an unchanged Synchronize All: when the catalog still follows the
    reused snapshot exactly (:attr:`CatalogState.follows`), applying it again changes nothing,
    so the completion is known without reading the snapshot; None otherwise."""
    if scope is not None or reuse.snapshot is None or reuse.version is None:
        return None
    if state.follows != (reuse.snapshot, reuse.version):
        return None
    return [
        ev.EventDraft(
            type="catalog_sync_completed",
            actor=SYNC_ACTOR,
            subject=run,
            payload=cev.CatalogSyncCompletedPayload(
                run=run,
                snapshot=reuse.snapshot,
                version=reuse.version,
                tables=reuse.tables,
                columns=reuse.columns,
                relationships=reuse.relationships,
                capabilities=dict(reuse.capabilities),
                unchanged=True,
            ),
        )
    ]
