"""A Catalog Sync Run (glossary): the durable execution of a Schema Synchronization. I/O shell.

1. No binding → exit 2; the database unreachable → exit 6 — both before anything is written
   (not even ``catalog_sync_started``).
2. The run holds the sync lock (:mod:`modules.catalog.sync_lock`) throughout: a second run gets
   exit 4. A run the ledger still shows ``active`` is one whose process died (it held the lock):
   it is recorded ``catalog_sync_failed`` with code ``interrupted`` first.
3. The structure version is read; when an earlier completed run at that version covers the
   scope (:func:`~modules.catalog.sync_plan.reusable_run`) introspection is skipped and the run
   records ``started`` + ``completed`` (``unchanged: true``) in one batch.
4. Otherwise ``catalog_sync_started`` is recorded, the database introspected (progress reported
   and logged), the snapshot stored content-addressed, and ``catalog_sync_completed`` with the
   relationships generated for newly observed columns recorded as one batch. Any failure after
   ``started`` records ``catalog_sync_failed`` (``unavailable`` | ``interrupted`` | ``error``)
   and the error goes on to the caller.

Every run writes its log through ``CatalogCapabilities.run_log`` (``catalog/runs/<run>.log``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernel import events as ev
from kernel.database.types import CAPABILITY_CATEGORIES, Capability, Introspection
from kernel.errors import ConflictError, NotFoundError, ThtError, UnavailableError, UsageError
from modules.catalog.capabilities import Progress
from modules.catalog.catalog import Catalog, LoadedCatalog
from modules.catalog.records import CatalogState, CatalogSyncRun
from modules.catalog.relationship_map import relationship_map
from modules.catalog.snapshots import encode_introspection
from modules.catalog.sync_plan import (
    plan_sync_completed,
    plan_sync_failed,
    plan_sync_started,
    plan_sync_unchanged,
    reusable_run,
)

__all__ = ["NO_BINDING", "SyncReport", "run_sync"]

logger = logging.getLogger(__name__)

NO_BINDING = "no database bound in workspace.yaml: add database: {url: ...}"
_ATTEMPTS = 5  # a curation command may append while a run introspects: re-plan and retry


@dataclass(frozen=True)
class SyncReport:
    run: CatalogSyncRun
    state: CatalogState
    head: str
    interrupted: tuple[str, ...] = ()  # runs found active and recorded interrupted

    def to_json(self) -> dict[str, Any]:
        """``tht catalog sync --json`` (ARCHITECTURE §6): the catalog after the run."""
        state = self.state
        return {
            "run": self.run.id,
            "status": self.run.status,
            "tables": len(state.tables),
            "columns": sum(len(t.columns) for t in state.tables.values()),
            "relationships": len(relationship_map(state)),
            "capabilities": _ordered(self.run.capabilities),
        }


def _ordered(capabilities: dict[str, str]) -> dict[str, str]:
    """Capabilities in :data:`CAPABILITY_CATEGORIES` order (then any other, sorted)."""
    known = [c for c in CAPABILITY_CATEGORIES if c in capabilities]
    rest = sorted(set(capabilities) - set(known))
    return {c: capabilities[c] for c in [*known, *rest]}


def _scope(state: CatalogState, scope: Sequence[str] | None) -> tuple[str, ...] | None:
    """The tables asked for, in the catalog's spelling where it knows them (deduplicated)."""
    if scope is None:
        return None
    names = []
    for name in scope:
        if not name.strip():
            raise UsageError("--scope takes table names")
        known = state.table(name.strip())
        names.append(known.name if known is not None else name.strip())
    if not names:
        raise UsageError("--scope takes table names")
    return tuple(dict.fromkeys(names))


def _safe(text: str) -> str:
    """No credentials in a recorded reason, whatever an exception said."""
    return re.sub(r"://[^\s/@]*@", "://***@", text)[:500]


def _failure(err: BaseException) -> tuple[str, str]:
    if isinstance(err, KeyboardInterrupt):
        return "interrupted", "interrupted (SIGINT)"
    if isinstance(err, UnavailableError):
        return "unavailable", _safe(err.message)
    if isinstance(err, ThtError):
        return "error", _safe(err.message)
    return "error", _safe(f"{type(err).__name__}: {err}")


def run_sync(
    catalog: Catalog, *, scope: Sequence[str] | None = None, progress: Progress | None = None
) -> SyncReport:
    caps = catalog.caps
    db = caps.database
    if db is None:
        raise UsageError(NO_BINDING)
    db.check_reachable()
    with caps.sync_lock():
        loaded, interrupted = _recover(catalog, catalog.load_for_write())
        wanted = _scope(loaded.state, scope)
        version = db.structure_version()
        run = caps.ids.session_id(caps.clock.now())
        started = plan_sync_started(run, scope=wanted, binding=db.display, dialect=db.dialect)
        what = "Synchronize All" if wanted is None else f"scope {', '.join(wanted)}"
        reuse = reusable_run(loaded.state, version, wanted)
        if reuse is not None:
            caps.run_log(run, f"started: {what} on {db.display}")
            caps.run_log(run, f"structure version {version} unchanged: introspection skipped")
            loaded = _unchanged(catalog, loaded, started, reuse, run, wanted, version)
        else:
            loaded = catalog.append(loaded, [started])
            caps.run_log(run, f"started: {what} on {db.display}")
            loaded = _observe(catalog, loaded, run, wanted, version, progress)
        record = loaded.state.runs[run]
        caps.run_log(
            run,
            f"completed: {record.tables} table(s), {record.columns} column(s), "
            f"{record.relationships} foreign key(s) observed; "
            f"{_generated(loaded.state, run)} relationship(s) generated",
        )
        return SyncReport(record, loaded.state, loaded.head, interrupted)


def _recover(catalog: Catalog, loaded: LoadedCatalog) -> tuple[LoadedCatalog, tuple[str, ...]]:
    """A run still active in the ledger while we hold the lock: its process is gone."""
    active = loaded.state.active_run
    if active is None:
        return loaded, ()
    reason = "its process ended before the run completed"
    loaded = catalog.append(loaded, [plan_sync_failed(active, code="interrupted", reason=reason)])
    catalog.caps.run_log(active, f"failed: interrupted ({reason}; recorded by a later run)")
    return loaded, (active,)


def _unchanged(
    catalog: Catalog,
    loaded: LoadedCatalog,
    started: ev.EventDraft,
    reuse: CatalogSyncRun,
    run: str,
    scope: tuple[str, ...] | None,
    version: str,
) -> LoadedCatalog:
    """Complete from an earlier snapshot (started and completed in one batch)."""
    assert reuse.snapshot is not None
    fast = plan_sync_unchanged(loaded.state, reuse, run=run, scope=scope)
    if fast is not None:
        try:
            return catalog.append(loaded, [started, *fast])
        except ConflictError:  # a curation landed meanwhile: the general path
            loaded = catalog.load_for_write()
    snapshot = catalog.load_snapshot(reuse.snapshot)
    return _complete(
        catalog, loaded, [started], snapshot, reuse.snapshot, run, scope, version, True
    )


def _observe(
    catalog: Catalog,
    loaded: LoadedCatalog,
    run: str,
    scope: tuple[str, ...] | None,
    version: str,
    progress: Progress | None,
) -> LoadedCatalog:
    """Introspect, store the snapshot, complete; any failure is recorded, then raised."""
    caps = catalog.caps
    try:
        report = _logged_progress(progress, caps.run_log, run)
        snapshot = _introspect(catalog, loaded.state, scope, report, version)
        sha = caps.put_object(encode_introspection(snapshot))
        catalog.remember_snapshot(sha, snapshot)
        caps.run_log(run, f"observed {len(snapshot.tables)} table(s): snapshot {sha}")
        return _complete(
            catalog, loaded, [], snapshot, sha, run, scope, snapshot.version or version
        )
    except BaseException as err:
        code, reason = _failure(err)
        _record_failure(catalog, run, code, reason)
        caps.run_log(run, f"failed: {code}: {reason}")
        raise


def _introspect(
    catalog: Catalog,
    state: CatalogState,
    scope: tuple[str, ...] | None,
    progress: Progress,
    version: str,
) -> Introspection:
    """Introspect the scope. A scoped table the database no longer has but the catalog does is
    simply not observed (so the run removes it); a name neither knows is an error (exit 3)."""
    db = catalog.caps.database
    assert db is not None
    try:
        return db.introspect(scope, progress)
    except NotFoundError as err:
        unknown = err.details.get("unknown")
        if scope is None or not isinstance(unknown, list) or not unknown:
            raise
        if any(state.table(str(name)) is None for name in unknown):
            raise
        rest = [name for name in scope if name not in unknown]
        if rest:
            return db.introspect(rest, progress)
        observed: dict[str, Capability] = dict.fromkeys(CAPABILITY_CATEGORIES, "observed")
        return Introspection(dialect=db.dialect, scope=(), capabilities=observed, version=version)


def _generated(state: CatalogState, run: str) -> int:
    seq = state.runs[run].ended_seq or 0
    return sum(
        1
        for r in state.logical.values()
        if r.origin == "generated" and r.seq > seq and r.state == "active"
    )


def _complete(
    catalog: Catalog,
    loaded: LoadedCatalog,
    prefix: list[ev.EventDraft],
    snapshot: Introspection,
    sha: str,
    run: str,
    scope: tuple[str, ...] | None,
    version: str,
    unchanged: bool = False,
) -> LoadedCatalog:
    for attempt in range(_ATTEMPTS):
        drafts = plan_sync_completed(
            loaded.state,
            snapshot,
            sha256=sha,
            run=run,
            scope=scope,
            version=version,
            unchanged=unchanged,
        )
        try:
            return catalog.append(loaded, [*prefix, *drafts])
        except ConflictError:
            if attempt == _ATTEMPTS - 1:
                raise
            loaded = catalog.load_for_write()  # a curation landed meanwhile: plan again
    raise AssertionError("unreachable")


def _record_failure(catalog: Catalog, run: str, code: str, reason: str) -> None:
    """Best effort: the run's own failure is what the caller hears about."""
    for _ in range(_ATTEMPTS):
        try:
            loaded = catalog.load_for_write()
            if loaded.state.active_run != run:
                return
            catalog.append(loaded, [plan_sync_failed(run, code=code, reason=reason)])
            return
        except ConflictError:
            continue
        except Exception as err:  # never hide the run's own error behind this one
            logger.debug("run %s: its failure was not recorded: %s", run, err)
            return


def _logged_progress(progress: Progress | None, log: Any, run: str) -> Progress:
    marks: set[int] = set()

    def report(done: int, total: int, table: str) -> None:
        if progress is not None:
            progress(done, total, table)
        tenth = (10 * done) // total if total else 10
        if tenth not in marks:
            marks.add(tenth)
            log(run, f"introspected {done}/{total} table(s)")

    return report
