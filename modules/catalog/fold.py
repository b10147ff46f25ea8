"""The Metadata Catalog's fold: ledger events → :class:`CatalogState`. Pure and total.

``fold_catalog(events, load_snapshot)`` folds a whole ledger; ``fold_catalog_from(state, events,
load_snapshot)`` continues from a folded state, and ``fold_catalog(a + b) ==
fold_catalog_from(fold_catalog(a), b)`` (a property test holds it to that), so a cached state
(keyed by ``(last_seq, head)``) costs time proportional to the new events only.

``load_snapshot(sha256)`` returns the content-addressed Introspection a completed run recorded;
it may raise (a missing or altered object is an integrity error of the store, not of the fold).

It holds the driving (batches, human-only entries, problems) and the rules for Catalog Sync
Runs, cleanups, Sensitive Data Flags and suggestion runs; the rules for Logical Relationships
(modules/catalog/relationship_fold.py), Descriptions (descriptions.py) and Description Generation
Runs (generation_fold.py) live beside it, and it dispatches to them.

The fold never raises on a bad entry: it records a :class:`CatalogProblem` and ignores the
entry (``tht catalog verify`` reports them; no write is accepted on a catalog that has any):
a curation entry whose actor is not a human, a ``relationship_generated`` outside a sync or
reconstruction batch, endpoints that are not Catalog Columns, an id that is not the endpoints'
id, a deletion of what is not there, a run that is not the active one, a Sensitive Data Flag set
on what is not a Catalog Column or to the value it already has, a Description or Generated
Description of what is not a Catalog Table or Column, a Generated Description whose source and
actor disagree, a consolidation of what has no pending Generated Description; a Description
Generation Run started while another is active, a run's Generated Description or end when that
run is not the active one, an end whose counts disagree with the run's own entries or do not
add up to what it requested.

A Sensitive Data Flag lives on its Catalog Column (false by default, also for new columns): a
resync keeps it for the same name, as it keeps the Description. A human's curation is also
remembered for the identity it is about and outlives its object (modules/catalog/
curation_memory.py): a flag decision, on or off (``flag_decisions``), and a Description
(``description_decisions``) come back to a table or column a completed sync observes anew (after
it was dropped in the database, its table dropped or renamed, a Catalog Metadata Cleanup, a sync
against another database); a Logical or Permanent Relationship Deletion, or a Restore
(``relationship_decisions``, applied by relationship_fold.py), holds for a relationship generated
again — a logically deleted one comes back as its exclusion, a sync's line for a permanently
deleted one is moot. No sync, whoever runs it, undoes a human's decision; nothing extra is
recorded for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import msgspec

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.database.types import Introspection
from kernel.signature_rules import is_human_actor
from modules.catalog.description_decisions import DescriptionDecisions
from modules.catalog.descriptions import DescriptionRejected, apply_description
from modules.catalog.flag_decisions import FlagDecisions
from modules.catalog.generation_fold import run_finished, run_started, run_tallied
from modules.catalog.records import (
    CatalogProblem,
    CatalogState,
    CatalogSyncRun,
    FlagDecision,
    SensitiveSuggestionRun,
)
from modules.catalog.relationship_decisions import RelationshipDecisions
from modules.catalog.relationship_fold import (
    RelationshipRejected,
    relationship_added,
    relationship_deleted,
    relationship_generated,
    relationship_restored,
)
from modules.catalog.synchronization import CatalogContent, apply_snapshot, drop_endpoints

__all__ = ["SnapshotLoader", "fold_catalog", "fold_catalog_from"]

SnapshotLoader = Callable[[str], Introspection]
_R = TypeVar("_R", bound=msgspec.Struct)

#: entries only a human records (glossary: curation is an explicit administrative act)
_HUMAN_ONLY = frozenset(
    {
        "relationship_added",
        "relationship_deleted",
        "relationship_restored",
        "relationships_reconstructed",
        "catalog_cleaned",
        "ledger_repaired",
        "sensitive_flag_set",
        "description_set",
        "descriptions_consolidated",
    }
)


def fold_catalog(events: Iterable[ev.Event], load_snapshot: SnapshotLoader) -> CatalogState:
    return fold_catalog_from(CatalogState(), events, load_snapshot)


def fold_catalog_from(
    state: CatalogState, events: Iterable[ev.Event], load_snapshot: SnapshotLoader
) -> CatalogState:
    folder = _Folder(state, load_snapshot)
    for event in events:
        folder.apply(event)
    return folder.freeze()


class _Reject(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Folder:
    def __init__(self, state: CatalogState, load_snapshot: SnapshotLoader) -> None:
        self.load_snapshot = load_snapshot
        self.content = CatalogContent(
            tables=dict(state.tables), physical=dict(state.physical), logical=dict(state.logical)
        )
        self.runs = dict(state.runs)
        self.suggestion_runs = dict(state.suggestion_runs)
        self.generation_runs = dict(state.generation_runs)
        self.active_generation = state.active_generation
        self.active_run = state.active_run
        self.last_completed = state.last_completed
        self.follows = state.follows
        self.dialect = state.dialect
        self.last_seq = state.last_seq
        self.last_ts = state.last_ts
        self.signed_from = state.signed_from
        self.flag_decisions = FlagDecisions(state.flag_decisions)
        self.description_decisions = DescriptionDecisions(state.description_decisions)
        self.relationship_decisions = RelationshipDecisions(state.relationship_decisions)
        self.problems = list(state.problems)
        self.batch = state.batch
        self.batch_actor = state.batch_actor
        self.batch_expected = state.batch_expected
        self.open = state.batch is not None
        self.handlers: dict[type[ev.Event], Callable[[ev.Event], None]] = {
            cev.CatalogSyncStarted: self._started,
            cev.CatalogSyncCompleted: self._completed,
            cev.CatalogSyncFailed: self._failed,
            cev.RelationshipGenerated: self._generated,
            cev.RelationshipAdded: self._added,
            cev.RelationshipDeleted: self._deleted,
            cev.RelationshipRestored: self._restored,
            cev.RelationshipsReconstructed: self._reconstructed,
            cev.CatalogCleaned: self._cleaned,
            ev.LedgerRepaired: self._repaired,
            cev.SensitiveFlagSet: self._flag_set,
            cev.SensitiveSuggestionRun: self._suggestion_run,
            cev.DescriptionSet: self._described,
            cev.DescriptionGenerated: self._described,
            cev.DescriptionsConsolidated: self._described,
            cev.DescriptionGenerationStarted: self._generation_started,
            cev.DescriptionGenerationFinished: self._generation_finished,
        }

    # ------------------------------------------------------------------ driving

    def apply(self, event: ev.Event) -> None:
        if not self.open:
            self.batch, self.batch_actor, self.batch_expected = None, "", 0
        kind = ev.info_of(event).type
        self.last_seq, self.last_ts = event.seq, event.ts
        if is_human_actor(event.actor) and event.sig is not None and self.signed_from is None:
            self.signed_from = event.seq
        handler = self.handlers.get(type(event))
        try:
            if handler is None:
                raise _Reject("not_catalog", f"{kind} does not belong in the catalog ledger")
            if kind in _HUMAN_ONLY and not is_human_actor(event.actor):
                raise _Reject("actor", f"{kind} is human-only, recorded by {event.actor}")
            handler(event)
        except (_Reject, DescriptionRejected, RelationshipRejected) as rejected:
            self.problems.append(
                CatalogProblem(seq=event.seq, code=rejected.code, message=rejected.message)
            )
        self.open = event.batch_left > 0
        if not self.open and self.batch == "reconstruct" and self.batch_expected:
            self.problems.append(
                CatalogProblem(
                    seq=event.seq,
                    code="batch",
                    message=f"the reconstruction announced {self.batch_expected} more "
                    "generated relationship(s) than its batch holds",
                )
            )

    def freeze(self) -> CatalogState:
        open_batch = self.batch if self.open else None
        return CatalogState(
            last_seq=self.last_seq,
            last_ts=self.last_ts,
            dialect=self.dialect,
            tables=self.content.tables,
            physical=self.content.physical,
            logical=self.content.logical,
            runs=self.runs,
            suggestion_runs=self.suggestion_runs,
            generation_runs=self.generation_runs,
            active_generation=self.active_generation,
            active_run=self.active_run,
            last_completed=self.last_completed,
            follows=self.follows,
            signed_from=self.signed_from,
            flag_decisions=self.flag_decisions.freeze(),
            description_decisions=self.description_decisions.freeze(),
            relationship_decisions=self.relationship_decisions.freeze(),
            problems=tuple(self.problems),
            batch=open_batch,
            batch_actor=self.batch_actor if open_batch else "",
            batch_expected=self.batch_expected if open_batch else 0,
        )

    # ------------------------------------------------------------------ runs

    def _active(self, run: str) -> CatalogSyncRun:
        found = self.runs.get(run)
        if found is None or self.active_run != run:
            raise _Reject("run", f"run {run} is not the active Catalog Sync Run")
        return found

    def _started(self, event: ev.Event) -> None:
        assert isinstance(event, cev.CatalogSyncStarted)
        p = event.payload
        if self.active_run is not None:
            raise _Reject("run", f"run {self.active_run} is still active; {p.run} cannot start")
        if p.run in self.runs:
            raise _Reject("run", f"run {p.run} already exists")
        self.runs[p.run] = CatalogSyncRun(
            id=p.run,
            status="active",
            scope=p.scope,
            binding=p.binding,
            dialect=p.dialect,
            started_seq=event.seq,
            started_ts=event.ts,
        )
        self.active_run = p.run
        self.dialect = p.dialect

    def _completed(self, event: ev.Event) -> None:
        assert isinstance(event, cev.CatalogSyncCompleted)
        p = event.payload
        run = self._active(p.run)
        applied = (p.snapshot, p.version)
        if run.scope is not None or self.follows != applied:  # else: a no-op, skipped
            snapshot = self.load_snapshot(p.snapshot)
            before = set(self.content.tables)
            _, added = apply_snapshot(self.content, snapshot, scope=run.scope, version=p.version)
            # a table or column observed anew gets back the last human decisions about it
            tables = self.content.tables
            tables.update(self.flag_decisions.restore(tables, added))
            tables.update(self.description_decisions.restore(tables, set(tables) - before, added))
            logical = self.content.logical
            logical.update(self.relationship_decisions.manual(tables, logical, added))
            self.follows = applied if run.scope is None else None
        self.runs[p.run] = _replace(
            run,
            status="completed",
            ended_seq=event.seq,
            ended_ts=event.ts,
            snapshot=p.snapshot,
            version=p.version,
            unchanged=p.unchanged,
            tables=p.tables,
            columns=p.columns,
            relationships=p.relationships,
            capabilities=dict(p.capabilities),
        )
        self.active_run = None
        self.last_completed = p.run
        self.batch, self.batch_actor = "sync", event.actor

    def _failed(self, event: ev.Event) -> None:
        assert isinstance(event, cev.CatalogSyncFailed)
        p = event.payload
        run = self._active(p.run)
        self.runs[p.run] = _replace(
            run,
            status="failed",
            ended_seq=event.seq,
            ended_ts=event.ts,
            failure=p.code,
            reason=p.reason,
        )
        self.active_run = None

    # ------------------------------------------------------------------ relationships

    def _generated(self, event: ev.Event) -> None:
        assert isinstance(event, cev.RelationshipGenerated)
        if not self.open or self.batch not in ("sync", "reconstruct"):
            raise _Reject("batch", "a generated relationship outside a sync or reconstruction")
        if event.actor != self.batch_actor:
            raise _Reject("actor", f"{event.actor} is not who recorded the batch")
        reconstruction = self.batch == "reconstruct"
        if reconstruction:
            if self.batch_expected <= 0:
                raise _Reject("batch", "more generated relationships than announced")
            self.batch_expected -= 1
        relationship_generated(
            self.content, self.relationship_decisions, event, reconstruction=reconstruction
        )

    def _added(self, event: ev.Event) -> None:
        assert isinstance(event, cev.RelationshipAdded)
        relationship_added(self.content, self.relationship_decisions, event)

    def _deleted(self, event: ev.Event) -> None:
        assert isinstance(event, cev.RelationshipDeleted)
        relationship_deleted(self.content, self.relationship_decisions, event)

    def _restored(self, event: ev.Event) -> None:
        assert isinstance(event, cev.RelationshipRestored)
        relationship_restored(self.content, self.relationship_decisions, event)

    def _reconstructed(self, event: ev.Event) -> None:
        assert isinstance(event, cev.RelationshipsReconstructed)
        self.batch, self.batch_actor = "reconstruct", event.actor
        self.batch_expected = event.payload.generated
        if event.payload.generated and not event.batch_left:
            raise _Reject("batch", "the reconstruction announces relationships it does not hold")

    # ------------------------------------------------------------------ cleanup and repair

    def _repaired(self, event: ev.Event) -> None:
        """The explicit human repair (`tht catalog verify --repair`): it changes no catalog
        content; the lines it quarantined are no longer in the ledger."""
        if event.batch_left:
            raise _Reject("batch", "ledger_repaired is a command of its own")

    def _cleaned(self, event: ev.Event) -> None:
        assert isinstance(event, cev.CatalogCleaned)
        p = event.payload
        tables = self.content.tables
        missing = [t for t in p.tables if t not in tables]
        for ref in p.columns:
            table, _, column = ref.partition(".")
            if table not in tables or tables[table].column(column) is None:
                missing.append(ref)
        missing += [r for r in p.relationships if r not in self.content.physical]
        if missing:
            raise _Reject("cleanup", f"nothing to clean up at {', '.join(missing)}")
        removed: set[tuple[str, str]] = set()
        for name in p.tables:
            removed.update((name, c.name) for c in tables[name].columns)
            del tables[name]
        for ref in p.columns:
            table, _, column = ref.partition(".")
            if table in tables:
                kept = tuple(c for c in tables[table].columns if c.name != column)
                tables[table] = _replace(tables[table], columns=kept)
                removed.add((table, column))
        for rid in p.relationships:
            self.content.physical.pop(rid, None)
        drop_endpoints(self.content, removed)
        self.follows = None
        # the glossary: a cleanup of an endpoint removes the exclusions permanently
        self.relationship_decisions.cleaned(
            removed, reason=p.reason, seq=event.seq, actor=event.actor
        )

    # ------------------------------------------------------------------ sensitive data

    def _flag_set(self, event: ev.Event) -> None:
        assert isinstance(event, cev.SensitiveFlagSet)
        p = event.payload
        table = self.content.tables.get(p.table)
        column = table.column(p.column) if table is not None else None
        if table is None or column is None:
            raise _Reject("sensitive", f"{p.table}.{p.column} is not a Catalog Column")
        if column.sensitive == p.sensitive:
            state = "sensitive" if p.sensitive else "not sensitive"
            raise _Reject("sensitive", f"{p.table}.{p.column} is already {state}")
        flagged = _replace(column, sensitive=p.sensitive)
        columns = tuple(flagged if c.name == column.name else c for c in table.columns)
        self.content.tables[p.table] = _replace(table, columns=columns)
        decision = FlagDecision(
            table=p.table,
            column=p.column,
            sensitive=p.sensitive,
            seq=event.seq,
            actor=event.actor,
        )
        self.flag_decisions.remember(decision, self.content.tables)

    def _suggestion_run(self, event: ev.Event) -> None:
        assert isinstance(event, cev.SensitiveSuggestionRun)
        p = event.payload
        if p.run in self.suggestion_runs:
            raise _Reject("run", f"suggestion run {p.run} already exists")
        if p.mode == "model" and (
            not isinstance(p.profile, str)
            or _count(p.failed_batches) + _count(p.skipped_batches) > _count(p.batches)
        ):
            raise _Reject("run", f"suggestion run {p.run}: a model run's profile or counts")
        self.suggestion_runs[p.run] = SensitiveSuggestionRun(
            id=p.run,
            mode=p.mode,
            scope=p.scope,
            considered=p.considered,
            proposed=p.proposed,
            profile=p.profile if isinstance(p.profile, str) else "",
            batches=p.batches if isinstance(p.batches, int) else 0,
            failed_batches=_count(p.failed_batches) + _count(p.skipped_batches),
            seq=event.seq,
            ts=event.ts,
        )

    # ------------------------------------------------------------------ descriptions

    def _described(self, event: ev.Event) -> None:
        """Descriptions, Generated Descriptions, consolidations (modules/catalog/descriptions.py):
        checked whole first; a run's Generated Description is also counted by its run
        (modules/catalog/generation_fold.py); a human's Description is remembered."""
        if isinstance(event, cev.DescriptionSet) and self.description_decisions.restored(
            self.content.tables, event.payload.target, event.payload.text
        ):
            # written by a tht before Descriptions outlived their objects: a sync erased it and
            # the human wrote it again; it came back by itself now (a ledger that was legal then
            # must verify now)
            return
        changed = apply_description(self.content.tables, event)
        if isinstance(event, cev.DescriptionGenerated):
            p = event.payload
            run = run_tallied(
                self.generation_runs, self.active_generation, p.run, p.non_generatable
            )
            if run is not None:
                self.generation_runs[run.id] = run
        self.content.tables.update(changed)
        self.description_decisions.remember(event, self.content.tables)

    def _generation_started(self, event: ev.Event) -> None:
        assert isinstance(event, cev.DescriptionGenerationStarted)
        run = run_started(self.generation_runs, self.active_generation, event)
        self.generation_runs[run.id] = run
        self.active_generation = run.id

    def _generation_finished(self, event: ev.Event) -> None:
        assert isinstance(event, cev.DescriptionGenerationFinished)
        run = run_finished(self.generation_runs, self.active_generation, event)
        self.generation_runs[run.id] = run
        self.active_generation = None


def _count(value: int | msgspec.UnsetType) -> int:
    """An optional count of a payload (UNSET: 0)."""
    return value if isinstance(value, int) else 0


def _replace(record: _R, **changes: Any) -> _R:
    return msgspec.structs.replace(record, **changes)
