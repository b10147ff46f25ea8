"""Staged, atomic application of a set of file changes (units, manifest) to a workspace.

Preparation, resolution and import write several files that must change together. Everything is
first written to a staging folder under ``.tht/evidence/staging/`` on the same file system; only
when every output exists does a journal (the commit point) list the operations, and the files are
then moved into place with ``os.replace``. A failure while moving rolls back from the backups kept
in the staging folder; a crash leaves the journal behind and :func:`recover` (run first by every
command that writes evidence) restores the backups. Either every file changes or none does.

Applications are serialized by an exclusive lock on ``staging_root/lock``; a caller passes the
content each file had when it planned its change (``expect``), and a file changed meanwhile by
someone else turns the application into a conflict (exit 4) with nothing written.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from kernel.atomic import atomic_write
from kernel.errors import ConflictError

__all__ = ["apply_atomically", "recover"]

_JOURNAL = "journal.json"


def _replace(src: Path, dst: Path) -> None:
    """One move into place (a seam: tests inject a failure here)."""
    src.replace(dst)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync_file(path)


@contextlib.contextmanager
def _locked(staging_root: Path) -> Iterator[None]:
    import fcntl

    staging_root.mkdir(parents=True, exist_ok=True)
    with (staging_root / "lock").open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def apply_atomically(
    root: Path,
    writes: Mapping[str, bytes],
    deletes: Iterable[str] = (),
    *,
    staging_root: Path,
    expect: Mapping[str, bytes | None] | None = None,
) -> None:
    """Write ``writes`` (workspace-relative POSIX path → bytes) and delete ``deletes``, all or none.

    ``expect`` maps paths to the content they had when the change was planned (None: absent).
    """
    deletes = [d for d in deletes if d not in writes]
    if not writes and not deletes:
        return
    with _locked(staging_root):
        _recover_unlocked(root, staging_root)
        for rel, before in (expect or {}).items():
            if _read(root / rel) != before:
                raise ConflictError(
                    f"{rel} changed while the change was being prepared; nothing was written, "
                    "run the command again",
                    details={"path": rel},
                )
        _apply(root, writes, deletes, staging_root)


def _apply(root: Path, writes: Mapping[str, bytes], deletes: list[str], staging_root: Path) -> None:
    stage = staging_root / uuid.uuid4().hex
    new_dir, old_dir = stage / "new", stage / "old"
    ops: list[dict[str, object]] = []
    try:
        for rel, data in sorted(writes.items()):
            target = new_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            _fsync_file(target)
            ops.append({"path": rel, "action": "write", "had_old": (root / rel).exists()})
        for rel in sorted(deletes):
            if (root / rel).exists():
                ops.append({"path": rel, "action": "delete", "had_old": True})
        for op in ops:
            if op["had_old"]:
                rel = str(op["path"])
                backup = old_dir / rel
                backup.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / rel, backup)
                _fsync_file(backup)
        journal = json.dumps({"ops": ops}).encode("utf-8")
        atomic_write(stage / _JOURNAL, journal, durable=True)  # the commit point
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    try:
        for op in ops:
            rel = str(op["path"])
            target = root / rel
            if op["action"] == "write":
                target.parent.mkdir(parents=True, exist_ok=True)
                _replace(new_dir / rel, target)
            else:
                target.unlink(missing_ok=True)
            _fsync_dir(target.parent)
    except BaseException:
        _roll_back(root, stage)
        raise
    (stage / _JOURNAL).unlink()
    shutil.rmtree(stage, ignore_errors=True)


def _roll_back(root: Path, stage: Path) -> None:
    journal = json.loads((stage / _JOURNAL).read_text(encoding="utf-8"))
    for op in journal["ops"]:
        rel = str(op["path"])
        target = root / rel
        if op["had_old"]:
            backup = stage / "old" / rel
            if backup.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(backup, target)
        else:
            target.unlink(missing_ok=True)
    (stage / _JOURNAL).unlink()
    shutil.rmtree(stage, ignore_errors=True)


def recover(root: Path, *, staging_root: Path) -> list[str]:
    """Undo any application a crash interrupted; drop staging folders that never committed."""
    if not staging_root.is_dir():
        return []
    with _locked(staging_root):
        return _recover_unlocked(root, staging_root)


def _recover_unlocked(root: Path, staging_root: Path) -> list[str]:
    undone = []
    for stage in sorted(p for p in staging_root.iterdir() if p.is_dir()):
        if (stage / _JOURNAL).is_file():
            _roll_back(root, stage)
            undone.append(stage.name)
        else:
            shutil.rmtree(stage, ignore_errors=True)
    return undone
