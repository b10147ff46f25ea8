"""One active Catalog Sync Run per Workspace Database: an exclusive, non-blocking OS lock held
for the whole run (``catalog/sync.lock``).

A second ``tht catalog sync`` fails at once with :class:`ConflictError` (exit 4), having changed
nothing. The lock dies with its process, so a run a crash left ``active`` in the ledger is found
by the next run holding the lock free — which records it failed (``interrupted``). The file is
never deleted (two holders could then lock two different files); it holds the holder's pid.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from kernel.process_lock import process_lock

__all__ = ["sync_lock"]


@contextlib.contextmanager
def sync_lock(path: Path) -> Iterator[None]:
    with process_lock(
        path,
        what="sync lock",
        busy="another Catalog Sync Run is active (pid {pid}); one run at a time per database, "
        "nothing was changed",
    ):
        yield
