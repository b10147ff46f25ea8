"""Composition root of the Metadata Catalog: its capability object, built for one command.

The only place that builds what ``modules/catalog`` is given (ARCHITECTURE §3.4, spec 003 §11):
the workspace-level ledger ``catalog`` and its objects from the store port, the composition
root's clock and ids (``THT_CLOCK`` / ``THT_SEED`` make runs deterministic), the Workspace
Database from ``kernel.database`` behind :class:`~modules.catalog.DatabaseAccess` (only the
binding's redacted ``display`` ever reaches the module), the sync lock and run logs under
``catalog/``, and — in signed mode — the reviewer's signer and the registry's check, and the
mode itself (``app.kernel.trust.signed``): a signed workspace's catalog is displayed from the
verified ledger, never from the fold cache. The schema index is always rebuilt from the verified
ledger (a projection: what it embeds feeds schema linking).

Others use :func:`schema_view` (the SchemaView handed to Disambiguation, schema linking, SQL
validation) and :func:`open_catalog`; the commands use :func:`sync`, :func:`current_version` and
:func:`sample` (a Catalog Sample: read here, built by ``modules.catalog.sample``, never kept).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.database import DatabaseBinding
    from kernel.schema_view import SchemaView
    from modules.catalog import Catalog, CatalogCapabilities, DatabaseAccess, SyncReport
    from modules.catalog.capabilities import Progress
    from tht.composition import App

__all__ = [
    "catalog_capabilities",
    "catalog_dir",
    "current_version",
    "database_access",
    "open_catalog",
    "run_log_path",
    "sample",
    "schema_view",
    "sync",
]

from tht.workspace_signing import human_check, signer_for

logger = logging.getLogger(__name__)


def catalog_dir(app: App) -> Path:
    return app.workspace.root / "catalog"


def run_log_path(app: App, run: str) -> Path:
    return catalog_dir(app) / "runs" / f"{run}.log"


def binding(app: App) -> DatabaseBinding | None:
    """The Database Binding of ``workspace.yaml`` (None when it binds none; exit 2 when the
    settings are wrong, naming the file and field)."""
    from kernel.database import binding_from_settings

    ws = app.workspace
    return binding_from_settings(ws.root, ws.settings_file, app.settings.database, os.environ)


def database_access(app: App) -> DatabaseAccess | None:
    from modules.catalog import DatabaseAccess

    bound = binding(app)
    if bound is None:
        return None

    def check_reachable() -> None:
        from kernel.database import check_reachable as check

        check(bound)

    def structure_version() -> str:
        from kernel.database import structure_version as version

        return version(bound)

    def introspect(scope: Any, progress: Progress | None) -> Any:
        from kernel.database import introspect as observe

        return observe(bound, scope=scope, progress=progress)

    return DatabaseAccess(
        display=bound.display,
        dialect=bound.dialect,
        check_reachable=check_reachable,
        structure_version=structure_version,
        introspect=introspect,
    )


def _run_log(app: App) -> Any:
    def log(run: str, line: str) -> None:
        path = run_log_path(app, run)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"{stamp} {line}\n".encode())
            finally:
                os.close(fd)
        except OSError as err:  # a log is for people; the ledger is the record
            logger.debug("run log %s not written: %s", path, err)

    return log


def catalog_capabilities(app: App, *, with_database: bool = False) -> CatalogCapabilities:
    """The module's capabilities; the database only ``with_database`` (reads never need it)."""
    from modules.catalog import CatalogCapabilities
    from modules.catalog.sync_lock import sync_lock
    from tht.witness_runtime import witnessed_ledger

    store = app.kernel.store
    lock_path = catalog_dir(app) / "sync.lock"
    return CatalogCapabilities(
        ledger=witnessed_ledger(app, "catalog"),
        put_object=lambda data: store.put_workspace_object("catalog", data),
        get_object=lambda sha: store.get_workspace_object("catalog", sha),
        read_cache=lambda: store.read_workspace_cache("catalog"),
        write_cache=lambda data: store.write_workspace_cache("catalog", data),
        clock=app.clock,
        ids=app.kernel.ids,
        database=database_access(app) if with_database else None,
        sync_lock=lambda: sync_lock(lock_path),
        run_log=_run_log(app),
        signer_for=signer_for(app),
        human_check=human_check(app),
        signed=lambda: app.kernel.trust.signed,
    )


def open_catalog(app: App, *, with_database: bool = False) -> Catalog:
    from modules.catalog import Catalog

    return Catalog(catalog_capabilities(app, with_database=with_database))


def schema_view(app: App, *, verified: bool = False) -> SchemaView | None:
    """The catalog's SchemaView (active relationships only); None when never synced.
    ``verified``: folded from the verified catalog ledger, for a decision (never a cache)."""
    return open_catalog(app).schema_view(verified=verified)


def current_version(app: App) -> str | None:
    """The binding's current structure version, for Catalog Freshness; None when no database
    is bound or it cannot be reached (the catalog stays consultable, its freshness unknown)."""
    from kernel.errors import ThtError

    try:
        bound = binding(app)
        if bound is None:
            return None
        from kernel.database import structure_version

        return structure_version(bound)
    except ThtError as err:
        logger.debug("structure version unavailable: %s", err.message)
        return None


def sample(app: App, table: str) -> dict[str, Any]:
    """A Catalog Sample of ``table`` under the Sensitive Data Policy (``tht catalog sample``):
    its flags from the verified catalog ledger (a decision: never the cache), at most
    ``MAX_ROWS`` rows read read-only; the body printed once, nothing written, nothing logged."""
    from kernel.database import run_read_only
    from kernel.errors import NotFoundError, UsageError
    from modules.catalog.sample import MAX_ROWS, build_sample, sample_key, sample_sql

    state = open_catalog(app).load_for_write().state
    if not state.tables:
        raise NotFoundError("the catalog is empty: run `tht catalog sync` first")
    found = state.table(table)
    if found is None:
        raise NotFoundError(f"{table} is not a Catalog Table")
    bound = binding(app)
    if bound is None:
        raise UsageError(
            f"no database bound in {app.workspace.settings_file.name}: a Catalog Sample reads "
            "the workspace database"
        )
    # one row more than shown, so the executor can tell whether the table has more
    sql = sample_sql(found, limit=MAX_ROWS + 1)
    result = run_read_only(bound, sql, limit=MAX_ROWS, timeout_ms=bound.timeout_ms)
    built = build_sample(found, result.rows, key=sample_key(state), truncated=result.truncated)
    return built.to_json()


def sync(
    app: App,
    *,
    scope: list[str] | None,
    progress: Progress | None,
    index_progress: Callable[[str, int, int], None] | None = None,
) -> SyncReport:
    """A Catalog Sync Run; after a completed one, the schema index follows (best effort)."""
    from modules.catalog import run_sync

    catalog = open_catalog(app, with_database=True)
    report = run_sync(catalog, scope=scope, progress=progress)
    _reindex(app, report, index_progress)
    _revalue(app)
    return report


def _revalue(app: App) -> None:
    """The value index follows a sync (best effort: the sync stands without it)."""
    from kernel.errors import ThtError
    from tht.value_index_runtime import drop_value_index, rebuild_value_index

    try:
        rebuild_value_index(app)
    except ThtError as err:
        import sys

        drop_value_index(app)
        sys.stderr.write(
            f"warning: the value index was not built ({err.message}); the sync stands: run "
            "`tht catalog values rebuild` once the cause is fixed\n"
        )


def _reindex(
    app: App, report: SyncReport, progress: Callable[[str, int, int], None] | None
) -> None:
    """The schema index from the catalog the run just verified and wrote (never the cache)."""
    from modules.catalog import CatalogSchemaView
    from tht.schema_runtime import reindex_schema

    if not report.state.synced:
        return
    view = CatalogSchemaView(report.state, report.head)
    try:
        reindex_schema(app, view, progress=progress)
    except Exception as err:  # the sync stands; the index is a rebuildable projection
        import sys

        logger.debug("schema index not updated", exc_info=True)
        message = getattr(err, "message", None) or f"{type(err).__name__}: {err}"
        sys.stderr.write(
            f"warning: the schema index was not updated ({message}); the sync stands: "
            "run `tht catalog reindex` once the cause is fixed\n"
        )
