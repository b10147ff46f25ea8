"""What a ledger writer keeps open between appends — the lock, ledger and anchor descriptors,
the tail it last wrote — and the head anchor ``ledger.head``: one fixed-size record rewritten in
place, checked under the lock before every append."""

from __future__ import annotations

import contextlib
import json
import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kernel.errors import IntegrityError
from kernel.ledger_records import LedgerTail

if TYPE_CHECKING:
    from kernel.ledger import Ledger

__all__ = ["ANCHOR_SIZE", "WriterHandles", "fsync_dir", "write_all", "write_anchor_fd"]

ANCHOR_SIZE = 128  # bytes of ledger.head: {"seq": N, "head": "<64 hex>"} padded, plus newline


class WriterHandles:
    """Descriptors a writer keeps open between appends, and the tail it last wrote."""

    def __init__(self, lock_fd: int, ledger_fd: int, anchor_fd: int, anchor_path: Path) -> None:
        self.pid = os.getpid()
        self.lock_fd = lock_fd
        self.ledger_fd = ledger_fd
        self.anchor_fd = anchor_fd
        self.anchor_path = anchor_path
        self.tail: LedgerTail | None = None
        self.size = -1
        self.anchor_map: mmap.mmap | None = None
        self.closed = False

    def check_anchor(self, tail: LedgerTail, ledger: Ledger) -> None:
        """Under the lock, before writing: the ledger must end exactly where its anchor says
        (no line removed, edited or appended behind tht's back), else nothing is appended."""
        try:
            st = os.stat(self.anchor_path)
        except FileNotFoundError:
            st = None
        if st is None or st.st_ino != os.fstat(self.anchor_fd).st_ino:
            if tail.size == 0 and st is None:
                return  # a new ledger: its anchor is written with its first line
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id}: {self.anchor_path.name} is missing "
                "or was replaced; run `tht ledger verify`"
            )
        raw = os.pread(self.anchor_fd, ANCHOR_SIZE, 0)
        try:
            data = json.loads(raw)
            seq, head = int(data["seq"]), str(data["head"])
        except (ValueError, KeyError, TypeError):
            if tail.size == 0 and not raw:
                return
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id}: {self.anchor_path.name} is "
                "unreadable; run `tht ledger verify`"
            ) from None
        if seq != tail.last_seq or head != tail.head:
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id} disagrees with its anchor "
                f"(acknowledged seq {seq}, the file ends at seq {tail.last_seq}); nothing is "
                "appended until a human repairs it (`tht ledger verify --repair --as human:<id>`)"
            )

    def write_anchor(self, seq: int, head: str) -> None:
        """The first write sizes the file (one ``pwrite``); later ones are stores into a shared
        mapping of its page: no syscall, and no inode update for the ledger's next fsync to
        commit. Either way the page reaches the disk by writeback, after the ledger's fsync."""
        if self.anchor_map is None or os.fstat(self.anchor_fd).st_size != ANCHOR_SIZE:
            write_anchor_fd(self.anchor_fd, seq, head)  # (re)sizes a new or rewritten file
            if self.anchor_map is None:
                self.anchor_map = mmap.mmap(self.anchor_fd, ANCHOR_SIZE)
        else:
            self.anchor_map[:] = _anchor_record(seq, head)

    def undo(self, tail: LedgerTail, ledger: Ledger, err: OSError, *, anchor: bool) -> None:
        """Under the lock, after a write that failed (disk full, a quota or size limit, an I/O
        error): cut the ledger back to ``tail`` (where it ended before) and the anchor back to
        what :meth:`check_anchor` found (``anchor``: its write was attempted), so the refused
        batch leaves no torn tail and no unanchored line. If even that fails the ledger may be
        damaged: ``IntegrityError``."""
        self.tail, self.size = None, -1  # re-read on the next append
        try:
            os.ftruncate(self.ledger_fd, tail.size)
            os.fsync(self.ledger_fd)
            if anchor and tail.size:
                write_anchor_fd(self.anchor_fd, tail.last_seq, tail.head)
            elif anchor:  # a new ledger: its anchor is written with its first line
                os.ftruncate(self.anchor_fd, 0)
        except OSError as undo_err:
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id}: a write failed ({err}) and the "
                f"ledger could not be cut back to seq {tail.last_seq} ({undo_err}); run "
                "`tht ledger verify`"
            ) from err

    def close(self) -> None:
        if self.closed or self.pid != os.getpid():
            return
        self.closed = True
        if self.anchor_map is not None:
            with contextlib.suppress(OSError, ValueError, BufferError):
                self.anchor_map.close()
        for fd in (self.lock_fd, self.ledger_fd, self.anchor_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def forget(self) -> None:
        """A forked child drops (without closing) what it inherited from its parent."""
        self.closed = True


def _anchor_record(seq: int, head: str) -> bytes:
    record = b'{"seq": %d, "head": "%s"}' % (seq, head.encode("ascii"))
    return record.ljust(ANCHOR_SIZE - 1) + b"\n"


def write_anchor_fd(fd: int, seq: int, head: str) -> None:
    """One fixed-size record rewritten in place. A rename per append made ext4 flush the new
    file's data on every append (``auto_da_alloc``): slower than the ledger's own fsync."""
    data = _anchor_record(seq, head)
    os.pwrite(fd, data, 0)
    if os.fstat(fd).st_size > len(data):  # an older, longer anchor file
        os.ftruncate(fd, len(data))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
