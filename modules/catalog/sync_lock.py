"""One active Catalog Sync Run per Workspace Database: an exclusive, non-blocking OS lock held
for the whole run (``catalog/sync.lock``).

A second ``tht catalog sync`` fails at once with :class:`ConflictError` (exit 4), having changed
nothing. The lock dies with its process, so a run a crash left ``active`` in the ledger is found
by the next run holding the lock free — which records it failed (``interrupted``). The file is
never deleted (two holders could then lock two different files); it holds the holder's pid.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from kernel.errors import ConflictError, UsageError

__all__ = ["sync_lock"]


@contextlib.contextmanager
def sync_lock(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as err:
        raise UsageError(f"{path}: cannot open the sync lock: {err.strerror}") from err
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise UsageError(f"{path}: cannot lock: {err.strerror}") from err
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise ConflictError(
                f"another Catalog Sync Run is active (pid {holder}); one run at a time per "
                "database, nothing was changed",
                details={"pid": int(holder) if holder.isdigit() else None},
            ) from err
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
