"""A generated SQLite Workspace Database for benchmarks (``make_sqlite_db``).

``tables`` tables named ``t0000``, ``t0001``, … with ``columns`` columns each: ``id`` (the
primary key), then a mix of ``INTEGER``, ``TEXT``, ``REAL``, ``NUMERIC(12,2)`` and ``DATE``
columns, some ``NOT NULL``. Every fifth table (from the second on) declares a foreign key
``parent_id`` to an earlier table, every tenth a composite unique index, so introspection has
relationships and indexes to report. No rows: the benchmarks measure structure, not data.
Deterministic for a given ``seed`` (same arguments, same file content).
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

__all__ = ["make_sqlite_db"]

_TYPES = ("INTEGER", "TEXT", "REAL", "NUMERIC(12,2)", "DATE")
_WORDS = ("amount", "code", "name", "created", "status", "region", "price", "count", "note", "rate")


def _table(index: int, columns: int, rng: random.Random) -> tuple[str, list[str]]:
    name = f"t{index:04d}"
    parts = ["id INTEGER PRIMARY KEY"]
    fk = index > 0 and index % 5 == 0
    if fk:
        parts.append("parent_id INTEGER NOT NULL")
    while len(parts) < columns:
        word = _WORDS[rng.randrange(len(_WORDS))]
        kind = _TYPES[rng.randrange(len(_TYPES))]
        null = " NOT NULL" if rng.random() < 0.3 else ""
        parts.append(f"c{len(parts):02d}_{word} {kind}{null}")
    if fk:
        parent = f"t{rng.randrange(index):04d}"
        parts.append(f"CONSTRAINT fk_{name}_parent FOREIGN KEY (parent_id) REFERENCES {parent}(id)")
    extra = []
    if index % 10 == 3 and columns >= 3:
        cols = [p.split()[0] for p in parts[1:3]]
        extra.append(f"CREATE UNIQUE INDEX ux_{name} ON {name} ({', '.join(cols)})")
    return f"CREATE TABLE {name} ({', '.join(parts)})", extra


def make_sqlite_db(path: Path, tables: int = 1000, columns: int = 20, seed: int = 0) -> Path:
    """Create (or replace) the database at ``path``; returns ``path``."""
    path = Path(path)
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("BEGIN")
        for index in range(tables):
            create, extra = _table(index, columns, rng)
            conn.execute(create)
            for statement in extra:
                conn.execute(statement)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path
