"""Source files and where their incremental import stands (the ``source_files`` table).

An append-only JSONL file is imported incrementally: only the bytes after the stored offset are
read. :func:`plan_read` decides, from the stored state and the file as it is now, whether to skip
it, read on from the offset, or read it again from 0 because it was rotated (new inode), truncated
(shorter than the offset) or replaced in place (its first bytes changed). Reading from 0 again
never duplicates rows: ids derive from content and inserts are ``INSERT OR IGNORE``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

from kernel.errors import ConflictError
from tht.analytics.ids import KeyedIds

__all__ = [
    "HEAD_BYTES",
    "FileView",
    "ReadAction",
    "SourceScan",
    "SourceState",
    "head_hash",
    "load_source",
    "plan_read",
    "save_source",
    "source_id",
    "source_transaction",
]

HEAD_BYTES = 4096

ReadAction = Literal["new", "unchanged", "append", "rotated", "truncated", "replaced"]


@dataclass
class SourceScan:
    """What one scan did to one file (for the command's output; nothing here is stored)."""

    path: str
    kind: str
    action: ReadAction | Literal["missing", "invalid"]
    lines_read: int = 0
    imported: int = 0
    duplicates: int = 0
    invalid_lines: int = 0
    ignored_events: int = 0
    older_than_retention: int = 0
    torn_tail: bool = False
    warnings: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "action": self.action,
            "lines_read": self.lines_read,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "invalid_lines": self.invalid_lines,
            "ignored_events": self.ignored_events,
            "older_than_retention": self.older_than_retention,
            "torn_tail": self.torn_tail,
            "warnings": dict(sorted(self.warnings.items())),
        }


@dataclass(frozen=True)
class SourceState:
    """What the store remembers about one file."""

    id: str
    inode: int | None
    size: int
    mtime_ns: int | None
    offset: int
    head_len: int
    head_hash: str | None
    lines_read: int
    rescans: int


@dataclass(frozen=True)
class FileView:
    """The file as it is now (from ``os.stat``)."""

    inode: int
    size: int
    mtime_ns: int

    @staticmethod
    def of(stat: os.stat_result) -> FileView:
        return FileView(inode=stat.st_ino, size=stat.st_size, mtime_ns=stat.st_mtime_ns)


def source_id(ids: KeyedIds, kind: str, resolved_path: str) -> str:
    """The keyed id of a file: its path is never stored."""
    return ids.derive(f"source_file\x00{kind}\x00{resolved_path}")


def plan_read(
    state: SourceState | None, now: FileView, head_now: Callable[[int], str]
) -> tuple[ReadAction, int]:
    """Where to start reading: ``(action, offset)``.

    ``head_now(n)`` hashes the file's first ``n`` bytes; it is called only when the file grew, so
    a file that did not change costs one ``stat`` and no read.
    """
    if state is None:
        return "new", 0
    if state.inode is not None and now.inode != state.inode:
        return "rotated", 0
    if now.size < state.offset:
        return "truncated", 0
    if now.size == state.size and now.mtime_ns == state.mtime_ns:
        return "unchanged", state.offset
    if state.head_len and head_now(state.head_len) != state.head_hash:
        return "replaced", 0
    return "append", state.offset


def head_hash(ids: KeyedIds, fh: BinaryIO, length: int) -> str:
    """Keyed hash of the first ``length`` bytes of an open file; the file position is kept."""
    position = fh.tell()
    fh.seek(0)
    data = fh.read(length)
    fh.seek(position)
    return ids.derive(b"head\x00" + data)


def load_source(conn: sqlite3.Connection, sid: str) -> SourceState | None:
    row = conn.execute(
        "SELECT id, inode, size, mtime_ns, offset, head_len, head_hash, lines_read, rescans "
        "FROM source_files WHERE id = ?",
        (sid,),
    ).fetchone()
    return None if row is None else SourceState(*row)


def save_source(conn: sqlite3.Connection, kind: str, state: SourceState, *, now: str) -> None:
    """Insert or update the row of ``state`` (inside the caller's transaction)."""
    conn.execute(
        "INSERT INTO source_files (id, kind, inode, size, mtime_ns, offset, head_len, head_hash, "
        "lines_read, rescans, first_scanned_at, last_scanned_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET inode = excluded.inode, size = excluded.size, "
        "mtime_ns = excluded.mtime_ns, offset = excluded.offset, head_len = excluded.head_len, "
        "head_hash = excluded.head_hash, lines_read = excluded.lines_read, "
        "rescans = excluded.rescans, last_scanned_at = excluded.last_scanned_at",
        (
            state.id,
            kind,
            state.inode,
            state.size,
            state.mtime_ns,
            state.offset,
            state.head_len,
            state.head_hash,
            state.lines_read,
            state.rescans,
            now,
            now,
        ),
    )


@contextlib.contextmanager
def source_transaction(
    conn: sqlite3.Connection,
    kind: str,
    expected: SourceState | None,
    new: SourceState,
    *,
    now: str,
    label: str,
) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` around the rows of one read and the file's new state.

    Optimistic: if the stored state is no longer ``expected`` (another scan of the same file
    committed meanwhile), nothing is written and :class:`ConflictError` is raised. The caller's
    inserts run inside the ``with`` block; any error rolls everything back, offset included.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        if load_source(conn, new.id) != expected:
            raise ConflictError(f"{label}: another scan imported this file meanwhile; scan again")
        save_source(conn, kind, new, now=now)
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
