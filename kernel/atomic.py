"""One atomic write for the whole project (standard library only, cheap to import: the hooks use
it too): write a temporary file beside the target, make it durable if asked, rename it over the
target. Readers see the old file or the new one, never half of either.

``durable=True`` fsyncs the file before the rename and its folder after it, so the new content
survives a machine crash once the call returns; ``durable=False`` is for what can be rebuilt
(caches, reports). ``mode`` is the new file's permission bits exactly (not subject to the umask);
None keeps the mode of the file it replaces (0644 for a new one).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(
    path: Path,
    data: bytes,
    *,
    durable: bool = True,
    mode: int | None = None,
    dir_mode: int = 0o777,
    exclusive: bool = False,
) -> None:
    """Replace ``path`` with ``data`` atomically; the temporary file never outlives a failure.
    ``exclusive``: never replace, raise ``FileExistsError`` when ``path`` exists (a hard link
    instead of a rename: it fails rather than overwrites, also against a concurrent writer)."""
    path = Path(path)
    path.parent.mkdir(mode=dir_mode, parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            os.link(tmp, path)
            tmp.unlink()
        else:
            tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        with contextlib.suppress(OSError):  # some filesystems refuse to fsync a folder
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
