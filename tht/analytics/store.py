"""The analytics store: one SQLite file (WAL), migrated on open, with its HMAC id factory.

Where it lives: ``--db PATH``, else ``$THT_ANALYTICS_DB``, else ``analytics.sqlite`` in the user's
tht data folder (``tht.paths.user_data_dir()``). The HMAC key sits beside it
(:func:`tht.analytics.ids.key_file_for`). The routing hook never opens this file: it appends JSONL
and ``tht analytics scan`` imports it.

The connection runs in autocommit mode (``isolation_level=None``): every transaction in this
package is explicit (``BEGIN IMMEDIATE`` … ``COMMIT``), so what is atomic is visible in the code.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel.errors import NotFoundError, UnavailableError
from tht.analytics.ids import KeyedIds, key_file_for, load_or_create_key
from tht.analytics.migrations import migrate
from tht.paths import user_data_dir

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = [
    "DB_ENV",
    "DEFAULT_DB_NAME",
    "RETENTION_KEY",
    "AnalyticsStore",
    "open_store",
    "resolve_db_path",
]

DB_ENV = "THT_ANALYTICS_DB"
DEFAULT_DB_NAME = "analytics.sqlite"
# analytics_meta key: events before this time were pruned and are never imported again.
RETENTION_KEY = "retention.pruned_before"


def resolve_db_path(explicit: Path | None = None) -> Path:
    """``--db``, else ``$THT_ANALYTICS_DB``, else the default file in the user data folder."""
    if explicit is not None:
        return explicit.expanduser()
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    return user_data_dir() / DEFAULT_DB_NAME


@dataclass
class AnalyticsStore:
    """An open analytics database: the sqlite-utils handle, its path and its id factory."""

    path: Path
    db: Database
    ids: KeyedIds

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM analytics_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def retention_cutoff(self) -> str:
        """Events older than this were pruned (``""``: nothing was): importers skip them."""
        return self.meta(RETENTION_KEY) or ""

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> AnalyticsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(
    path: Path, *, now: str, create: bool = True, target_version: int | None = None
) -> AnalyticsStore:
    """Open (creating if allowed) and migrate the store at ``path``.

    ``create=False`` is for read-only commands: a missing database is "not found" (exit 3) rather
    than a fresh empty file at a mistyped path. ``target_version`` stops migrations early (tests).
    """
    from sqlite_utils import Database

    if not path.exists():
        if not create:
            raise NotFoundError(
                f"{path}: no analytics database; run `tht analytics scan` first "
                "(or pass --db / set THT_ANALYTICS_DB)"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
    key = load_or_create_key(key_file_for(path))
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=10.0)
        conn.execute("PRAGMA foreign_keys = ON")
        db = Database(conn)
        db.enable_wal()
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn, now=now, target=target_version, where=str(path))
    except sqlite3.DatabaseError as err:
        raise UnavailableError(f"{path}: cannot open the analytics database: {err}") from err
    return AnalyticsStore(path=path, db=db, ids=KeyedIds(key))
