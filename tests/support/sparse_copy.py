"""Copy files and folders without filling their holes (tests that copy prepared workspaces).

A Qdrant Edge shard (``.tht/qdrant/``) preallocates its files as sparse files: about 200 MB of
apparent size (WAL segments, page files, vector chunks) of which about 0.5 MB is on disk for a
small collection. ``shutil.copytree``'s default ``copy2`` goes through ``sendfile`` and writes the
holes as zeros, so every copy of such a workspace took ~220 MB of disk (a full test run left
~20 GB in the temporary folder). ``copy_sparse`` copies only the data: the file's data extents
(``SEEK_DATA`` / ``SEEK_HOLE`` where the platform has them, else the whole file as one extent),
and within them only the blocks that are not all zeros; the rest stays a hole (``truncate``).
The bytes read back are identical.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

__all__ = ["copy_sparse", "copytree_sparse"]

_BLOCK = 64 * 1024
_ZERO = bytes(_BLOCK)


def _extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each data extent of the open file ``fd``."""
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        yield 0, size
        return
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, seek_data)
        except OSError as err:
            if err.errno == errno.ENXIO:  # only a hole from here to the end
                return
            if position == 0 and err.errno == errno.EINVAL:  # the file system cannot tell
                yield 0, size
                return
            raise
        end = min(os.lseek(fd, start, seek_hole), size)
        yield start, end
        position = end


def copy_sparse(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    """``shutil.copy2`` that keeps holes (and all-zero blocks) as holes; returns ``dst``."""
    with open(src, "rb") as source, open(dst, "wb") as target:
        size = os.fstat(source.fileno()).st_size
        for start, end in _extents(source.fileno(), size):
            position = start
            while position < end:
                block = os.pread(source.fileno(), min(_BLOCK, end - position), position)
                if not block:
                    break
                if block != _ZERO[: len(block)]:
                    os.pwrite(target.fileno(), block, position)
                position += len(block)
        target.truncate(size)
    shutil.copystat(src, dst)
    return os.fspath(dst)


def copytree_sparse(src: Path, dst: Path) -> Path:
    """``shutil.copytree(src, dst, symlinks=True)`` with :func:`copy_sparse`."""
    shutil.copytree(src, dst, symlinks=True, copy_function=copy_sparse)
    return dst
