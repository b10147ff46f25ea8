"""Workspace Database benchmarks (``python -m benchmarks database``), each a ratio against a
baseline measured in the same run (issue 11, "Performance"):

- ``introspect`` of a generated 1,000-table × 20-column SQLite database (benchmarks/synthetic_db.py)
  vs bare SQLAlchemy introspection of the same file (``inspect(engine)`` and the four
  ``get_multi_*`` calls). The catalog sync's target is ≤ 1.5× that baseline, so introspection
  itself must leave the catalog most of the margin;
- ``structure_version`` vs ``introspect`` on the same database: what a resync with nothing
  changed costs (the catalog compares versions and skips introspection; target ≤ 0.2);
- ``run_read_only`` of a ~100 ms query vs a bare ``sqlite3`` connect + execute + fetch of the
  same query (target ≤ 1.2): the read-only connection, authorizer, progress handler, row
  conversion and result hash together;
- many small queries on the 1,000-table database (one ``SELECT DISTINCT`` per table, what a value
  index rebuild runs): through one ``read_only_session`` and through ``run_read_only`` (a
  connection each, which on a wide schema costs more than the query: SQLite reads the whole
  schema on every new connection) vs the same queries on one bare ``sqlite3`` connection.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_kernel import _best, _report
from benchmarks.synthetic_db import make_sqlite_db
from kernel.database import (
    binding_from_url,
    introspect,
    read_only_session,
    run_read_only,
    structure_version,
)

REPEAT = 7


def _paired(baseline: Callable[[], object], measured: Callable[[], object]) -> tuple[float, float]:
    """Best times of the two, run alternately, so load on the machine hits both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(REPEAT):
        for index, call in enumerate((baseline, measured)):
            start = time.perf_counter()
            call()
            times[index].append(time.perf_counter() - start)
    return min(times[0]), min(times[1])


def _bare_sqlalchemy(path: Path) -> int:
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    engine = sa.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            columns = inspector.get_multi_columns()
            inspector.get_multi_pk_constraint()
            inspector.get_multi_foreign_keys()
            inspector.get_multi_indexes()
    finally:
        engine.dispose()
    return len(columns)


def bench_introspection(root: Path) -> None:
    path = make_sqlite_db(root / "synthetic.db", tables=1000, columns=20, seed=0)
    binding = binding_from_url(root, "sqlite:///synthetic.db")
    found = introspect(binding)  # warm: imports, page cache
    assert len(found.tables) == 1000 and sum(len(t.columns) for t in found.tables) == 20_000
    assert _bare_sqlalchemy(path) == 1000
    bare, ours = _paired(lambda: _bare_sqlalchemy(path), lambda: introspect(binding))
    _report(
        "introspect 1000x20 sqlite",
        f"{ours * 1000:.0f} ms",
        f"bare SQLAlchemy {bare * 1000:.0f} ms",
        ours / bare,
        "target <= 1.5 for the whole sync",
        ours / bare <= 1.5,
    )
    version = _best(lambda: structure_version(binding), REPEAT)
    _report(
        "unchanged resync (structure_version)",
        f"{version * 1000:.1f} ms",
        f"introspect {ours * 1000:.0f} ms",
        version / ours,
        "target <= 0.2",
        version / ours <= 0.2,
    )


#: a CPU-bound query; its bound is tuned so the bare run takes ~100 ms
_SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) "
    "SELECT count(*), sum(x % 7) FROM c"
)


def _bare_sqlite(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def bench_executor(root: Path) -> None:
    path = root / "exec.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    conn.close()
    binding = binding_from_url(root, "sqlite:///exec.db")
    n = 100_000
    sql = _SLOW.format(n=n)
    while _best(lambda: _bare_sqlite(path, sql), 1) < 0.1 and n < 10**8:  # noqa: B023
        n *= 2
        sql = _SLOW.format(n=n)
    expected = _bare_sqlite(path, sql)
    assert list(run_read_only(binding, sql, limit=10, timeout_ms=60_000).rows) == expected
    bare, ours = _paired(
        lambda: _bare_sqlite(path, sql),
        lambda: run_read_only(binding, sql, limit=10, timeout_ms=60_000),
    )
    _report(
        "run_read_only ~100 ms sqlite query",
        f"{ours * 1000:.1f} ms",
        f"bare sqlite3 {bare * 1000:.1f} ms",
        ours / bare,
        "target <= 1.2",
        ours / bare <= 1.2,
    )


def bench_many_queries(root: Path) -> None:
    path = root / "synthetic.db"
    if not path.exists():
        make_sqlite_db(path, tables=1000, columns=20, seed=0)
    binding = binding_from_url(root, "sqlite:///synthetic.db")
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    queries = [f'SELECT DISTINCT rowid FROM "{t}" LIMIT 51' for t in tables[:300]]

    def bare() -> None:
        conn = sqlite3.connect(path)
        try:
            for sql in queries:
                conn.execute(sql).fetchall()
        finally:
            conn.close()

    def session() -> None:
        with read_only_session(binding, timeout_ms=10_000) as database:
            for sql in queries:
                database.run(sql, limit=51)

    def each() -> None:
        for sql in queries:
            run_read_only(binding, sql, limit=51, timeout_ms=10_000)

    base, ours = _paired(bare, session)
    _, apart = _paired(bare, each)
    _report(
        f"{len(queries)} small queries on a {len(tables):,}-table sqlite database",
        f"read_only_session {ours * 1000:.0f} ms (a connection per query, run_read_only: "
        f"{apart * 1000:.0f} ms = {apart / base:.1f}x)",
        f"one bare sqlite3 connection {base * 1000:.0f} ms",
        ours / base,
        "no target (the value index rebuild's cost)",
        True,
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tht-bench-db-") as folder:
        root = Path(folder)
        bench_introspection(root)
        bench_executor(root)
        bench_many_queries(root)


if __name__ == "__main__":
    main()
