"""One exclusive, non-blocking OS lock held for a whole operation: the one mechanism behind "one
at a time" (a Catalog Sync Run per database, one evidence publish per workspace).

A second holder fails at once with :class:`ConflictError` (exit 4) naming the holder's pid,
having changed nothing. The lock dies with its process (``flock``), so work a crash left
unfinished is found by the next holder. The file is never deleted (two holders could then lock
two different files); while held it contains the holder's pid.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from kernel.errors import ConflictError, UsageError

__all__ = ["process_lock"]


@contextlib.contextmanager
def process_lock(
    path: Path, *, busy: str, what: str = "lock", mode: int = 0o600, dir_mode: int = 0o700
) -> Iterator[None]:
    """Hold ``path`` exclusively; ``busy`` is the refusal's message (``{pid}`` is replaced)."""
    import fcntl

    path.parent.mkdir(mode=dir_mode, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), mode)
    except OSError as err:
        raise UsageError(f"{path}: cannot open the {what}: {err.strerror}") from err
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise UsageError(f"{path}: cannot lock: {err.strerror}") from err
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise ConflictError(
                busy.format(pid=holder),
                details={"pid": int(holder) if holder.isdigit() else None, "lock": str(path)},
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
