"""One bounded, non-blocking read of a file a user (or an agent) named (standard library only:
the hooks use it too). Opened by fd with ``O_NONBLOCK`` — a FIFO or a device planted where a
file is expected never hangs the reader —, refused unless ``fstat`` says it is a regular file,
and read to at most ``limit`` bytes, so ``/dev/zero`` or a sparse huge file never exhausts
memory. Callers turn :class:`FileRefused` into their own error (exit 2, or "no hint").
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing itself is not imported: the routing hook reads through this
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal

    Reason = Literal["missing", "symlink", "not_regular", "too_large", "unreadable"]

__all__ = ["FileRefused", "read_regular"]


class FileRefused(Exception):
    """Why a file was not read; ``detail`` is the operating system's words, when it spoke."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason: Reason = reason
        self.detail = detail


def read_regular(path: Path | str, *, limit: int, follow_symlinks: bool = True) -> bytes:
    """The whole content of ``path`` when it is a regular file of at most ``limit`` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as err:
        raise FileRefused("missing", err.strerror or "") from err
    except OSError as err:
        if err.errno == errno.ELOOP and not follow_symlinks:
            raise FileRefused("symlink") from err
        raise FileRefused("unreadable", err.strerror or str(err)) from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("not_regular")
        if info.st_size > limit:
            raise FileRefused("too_large")
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, limit + 1 - total)
            except BlockingIOError as err:
                raise FileRefused("not_regular", "would block") from err
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew while being read
                raise FileRefused("too_large")
        return b"".join(chunks)
    except OSError as err:
        raise FileRefused("unreadable", err.strerror or str(err)) from err
    finally:
        os.close(fd)
