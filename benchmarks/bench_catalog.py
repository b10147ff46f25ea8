"""Metadata Catalog benchmarks (``python -m benchmarks catalog``), ratios against baselines
measured in the same run (issue 11, "Performance"):

- a first Catalog Sync Run of a generated 1,000-table × 20-column SQLite database (reachability,
  structure version, introspection, the content-addressed snapshot, the fold, relationship
  generation, the ledger append, the fold cache) vs bare SQLAlchemy introspection of the same
  database (``inspect`` + ``get_multi_*`` for columns, keys, foreign keys, indexes; target ≤ 1.5);
- a resync with nothing changed (a fresh ``Catalog``, as a new process: the fold cache read from
  disk, the structure version compared, introspection skipped) vs that first sync (target ≤ 0.2).

The schema index (schema linking's projection, rebuilt after each sync by the CLI) is measured by
``benchmarks/bench_schema_link.py``; these figures are the catalog's own work.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.synthetic_db import make_sqlite_db
from kernel.clock import SystemClock, SystemIds
from kernel.store.fs import FileSystemStore
from modules.catalog import Catalog, CatalogCapabilities, DatabaseAccess, run_sync
from modules.catalog.generation import name_words, table_forms
from modules.catalog.sync_lock import sync_lock

TABLES = 1000
COLUMNS = 20


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _report(name: str, measured: float, baseline: float, target: float, what: str) -> None:
    ratio = measured / baseline
    verdict = "ok" if ratio <= target else "MISSED"
    sys.stdout.write(
        f"{name}: {measured * 1000:.0f} ms vs {what} {baseline * 1000:.0f} ms: "
        f"ratio {ratio:.2f} (target ≤ {target}) {verdict}\n"
    )
    sys.stdout.flush()


def _bare_introspection(db: Path) -> None:
    import sqlalchemy as sa
    from sqlalchemy.engine.reflection import ObjectKind

    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            names = inspector.get_table_names()
            inspector.get_multi_columns(kind=ObjectKind.ANY)
            inspector.get_multi_pk_constraint()
            inspector.get_multi_foreign_keys()
            inspector.get_multi_indexes()
            assert len(names) == TABLES
    finally:
        engine.dispose()


def _catalog(root: Path, db: Path) -> Catalog:
    from kernel import database

    binding = database.binding_from_url(root, f"sqlite:///{db}")
    store = FileSystemStore(root / "sessions", root / ".tht" / "cache", root)
    access = DatabaseAccess(
        display=binding.display,
        dialect=binding.dialect,
        check_reachable=lambda: database.check_reachable(binding),
        structure_version=lambda: database.structure_version(binding),
        introspect=lambda scope, progress: database.introspect(
            binding, scope=scope, progress=progress
        ),
    )
    return Catalog(
        CatalogCapabilities(
            ledger=store.workspace_ledger("catalog"),
            put_object=lambda data: store.put_workspace_object("catalog", data),
            get_object=lambda sha: store.get_workspace_object("catalog", sha),
            read_cache=lambda: store.read_workspace_cache("catalog"),
            write_cache=lambda data: store.write_workspace_cache("catalog", data),
            clock=SystemClock(),
            ids=SystemIds(),
            database=access,
            sync_lock=lambda: sync_lock(root / "catalog" / "sync.lock"),
        )
    )


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tht-bench-catalog-"))
    try:
        db = make_sqlite_db(folder / "db.sqlite", TABLES, COLUMNS, seed=0)
        _bare_introspection(db)  # warm: imports, the OS cache
        bare = _best(lambda: _bare_introspection(db), 3)
        runs = iter(range(100))

        def first_sync() -> None:
            root = folder / f"ws{next(runs)}"
            name_words.cache_clear()  # as in a new process: nothing memoized yet
            table_forms.cache_clear()
            report = run_sync(_catalog(root, db))
            assert report.run.status == "completed" and not report.run.unchanged
            assert len(report.state.tables) == TABLES

        first_sync()  # warm
        first = _best(first_sync, 3)
        synced = folder / "ws0"

        def resync() -> None:
            report = run_sync(_catalog(synced, db))
            assert report.run.unchanged

        resync()  # warm
        again = _best(resync, 5)
        from kernel import database

        binding = database.binding_from_url(folder, f"sqlite:///{db}")
        observe = _best(lambda: database.introspect(binding), 3)
        _report(
            f"first sync ({TABLES}×{COLUMNS})", first, bare, 1.5, "bare SQLAlchemy introspection"
        )
        sys.stdout.write(
            f"  of which kernel.database.introspect: {observe * 1000:.0f} ms "
            f"({observe / bare:.2f}× bare); the catalog's own work: "
            f"{(first - observe) * 1000:.0f} ms ({(first - observe) / bare:.2f}× bare)\n"
        )
        _report("unchanged resync", again, first, 0.2, "first sync")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
