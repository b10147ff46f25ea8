"""The filesystem store: ``<workspace>/sessions/<id>/`` (ARCHITECTURE §3.5).

Per session::

    workflow.yaml            the workflow snapshot the session was created with
    ledger.jsonl             the hash-chained ledger (+ .lock, ledger.head, quarantine)
    objects/ab/<sha256>      content-addressed artifact versions (written before the ledger)
    artifacts/<name>         the current version of each artifact (materialized after it)

Workspace-level ledgers (ARCHITECTURE §3.5), one folder each under the workspace root::

    catalog/ledger.jsonl     the Metadata Catalog's ledger (+ .lock, ledger.head)
    catalog/objects/<sha256> its content-addressed objects (the introspection snapshots)
    memory/…                 the Memory registry, likewise

Caches (rebuildable) live under ``<workspace>/.tht/cache/``.

A store the operating system will not let tht write (permission denied, an immutable folder, a
read-only file system, a full disk or quota) is an unavailable dependency, as a PostgreSQL server
that cannot be used is: :func:`~kernel.errors.unwritable_error` (exit 6, naming the path and the
OS reason) with nothing left half-written — a session folder whose first batch was refused is
removed again, a refused append is cut back (:meth:`~kernel.ledger.Ledger.append`). What is
rebuilt on demand stays silent: caches, checkpoints, and ``artifacts/`` (restored from
``objects/`` when read, so a committed append never reports "nothing was changed").

Reading is the same: a store folder or file that exists but that the operating system will not
let tht read (permission denied, an I/O error, a folder where a file belongs) is
:func:`~kernel.errors.unreadable_error` (exit 6, naming the path — for a folder that cannot be
searched, that folder — and the OS reason), never a bug (exit 1), and nothing is written. What is
*missing* keeps its meaning: a session without ``workflow.yaml`` does not exist (exit 3), a
missing ledger or anchor is an integrity problem (``Ledger.verify``). Unreadable caches and
artifact copies are rebuilt, as unwritable ones are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from kernel.atomic import atomic_write as _atomic_write
from kernel.clock import Clock
from kernel.errors import (
    ConflictError,
    IntegrityError,
    NotFoundError,
    UnavailableError,
    UsageError,
    unreadable_error,
    unwritable_error,
)
from kernel.events import EventDraft
from kernel.ledger import AppendResult, Ledger, Signer
from kernel.log import get_logger
from kernel.store.base import SESSION_ID, WorkspaceLedgerName, workspace_ledger_spec

__all__ = ["FileSystemStore", "atomic_write"]

_SESSION_ID = SESSION_ID
logger = get_logger(__name__)


def atomic_write(path: Path, data: bytes, *, durable: bool = True, mode: int = 0o600) -> None:
    """:func:`kernel.atomic.atomic_write` for session files: they hold questions and SQL in
    clear, so private to the user (0600 files, 0700 folders)."""
    _atomic_write(path, data, durable=durable, mode=mode, dir_mode=0o700)


class FileSystemStore:
    #: ledgers kept open (with their writer's descriptors) for a long-lived process
    OPEN_LEDGERS = 32

    def __init__(
        self, sessions_dir: Path, cache_dir: Path, workspace_root: Path | None = None
    ) -> None:
        self.sessions_dir = sessions_dir
        self.cache_dir = cache_dir
        #: where the workspace-level ledgers' folders live (default: beside ``sessions/``)
        self.workspace_root = sessions_dir.parent if workspace_root is None else workspace_root
        self._ledgers: OrderedDict[str, Ledger] = OrderedDict()
        self._workspace_ledgers: dict[str, Ledger] = {}
        #: sessions this object created whose ledger it has not handed out yet
        self._new_sessions: set[str] = set()

    def _dir(self, session_id: str) -> Path:
        if not _SESSION_ID.match(session_id):
            raise NotFoundError(f"session {session_id!r} does not exist (not a session id)")
        return self.sessions_dir / session_id

    def _existing(self, session_id: str) -> Path:
        folder = self._dir(session_id)
        if not _is_file(folder / "workflow.yaml"):
            raise NotFoundError(f"session {session_id} does not exist")
        return folder

    def create_session(self, session_id: str, workflow_bytes: bytes) -> None:
        folder = self._dir(session_id)
        try:
            self.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as err:
            raise unwritable_error(self.sessions_dir, err, "create") from err
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError as err:
            raise ConflictError(f"session {session_id} already exists") from err
        except OSError as err:
            raise unwritable_error(folder, err, "create session folder") from err
        try:
            atomic_write(folder / "workflow.yaml", workflow_bytes)
        except OSError as err:
            with contextlib.suppress(OSError):
                folder.rmdir()
            raise unwritable_error(folder / "workflow.yaml", err, "write") from err
        self._new_sessions.add(session_id)

    def session_ids(self) -> list[str]:
        try:
            names = os.listdir(self.sessions_dir)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as err:
            raise unreadable_error(_unsearchable(self.sessions_dir, err), err, "list") from err
        return sorted(
            name
            for name in names
            if _SESSION_ID.match(name) and _is_file(self.sessions_dir / name / "workflow.yaml")
        )

    def exists(self, session_id: str) -> bool:
        return _SESSION_ID.match(session_id) is not None and _is_file(
            self.sessions_dir / session_id / "workflow.yaml"
        )

    def ledger(self, session_id: str) -> Ledger:
        folder = self._existing(session_id)
        ledger = self._ledgers.get(session_id)
        if ledger is None:
            if session_id in self._new_sessions:
                self._new_sessions.discard(session_id)
                ledger = _NewSessionLedger(folder / "ledger.jsonl", session_id)
            else:
                ledger = Ledger(folder / "ledger.jsonl", session_id)
            self._ledgers[session_id] = ledger
            if len(self._ledgers) > self.OPEN_LEDGERS:
                self._ledgers.popitem(last=False)[1].close()
        else:
            self._ledgers.move_to_end(session_id)
        return ledger

    def workflow_bytes(self, session_id: str) -> bytes:
        path = self._existing(session_id) / "workflow.yaml"
        try:
            return path.read_bytes()
        except FileNotFoundError as err:  # removed since it was seen
            raise NotFoundError(f"session {session_id} does not exist") from err
        except OSError as err:
            raise unreadable_error(path, err) from err

    def _object_path(self, session_id: str, sha256: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256")
        return self._existing(session_id) / "objects" / sha256[:2] / sha256

    def put_object(self, session_id: str, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        _put(self._object_path(session_id, digest), data)
        return digest

    def get_object(self, session_id: str, sha256: str) -> bytes:
        path = self._object_path(session_id, sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError as err:
            raise NotFoundError(
                f"content {sha256[:12]}… is missing from session {session_id}"
            ) from err
        except OSError as err:
            raise unreadable_error(_unsearchable(path, err), err) from err
        if hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(
                f"stored content {sha256[:12]}… of session {session_id} was altered"
            )
        return data

    def object_ids(self, session_id: str) -> list[str]:
        """The SHA-256 of every object the session holds, sorted (to copy it elsewhere)."""
        return _object_ids(self._existing(session_id) / "objects", nested=True)

    def _artifact_path(self, session_id: str, name: str) -> Path:
        return self._existing(session_id) / "artifacts" / name

    def materialize(self, session_id: str, name: str, sha256: str) -> None:
        data = self.get_object(session_id, sha256)
        try:
            atomic_write(self._artifact_path(session_id, name), data, durable=False)
        except OSError as err:
            # runs after the append that recorded the artifact (so never "nothing was
            # changed"); a reader checks the copy against the ledger's hash and restores it
            # from objects/ (WorkflowKernel.artifact)
            logger.debug("artifact %s of %s not materialized: %s", name, session_id, err)

    def read_artifact(self, session_id: str, name: str) -> bytes | None:
        path = self._artifact_path(session_id, name)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:  # a copy only: the reader restores it from objects/
            logger.debug("artifact %s of %s unreadable: %s", name, session_id, err)
            return None

    def _cache_path(self, session_id: str) -> Path:
        return self.cache_dir / "status" / f"{session_id}.msgpack"

    def read_cache(self, session_id: str) -> bytes | None:
        try:
            return self._cache_path(session_id).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            logger.debug("status cache of %s unreadable: %s", session_id, err)
            return None

    def write_cache(self, session_id: str, data: bytes) -> None:
        try:
            atomic_write(self._cache_path(session_id), data, durable=False)
        except OSError as err:  # a cache is an optimisation only
            logger.debug("status cache of %s not written: %s", session_id, err)

    def _checkpoint_path(self, session_id: str) -> Path:
        self._dir(session_id)  # a session id, never a path
        return self.cache_dir / "checkpoint" / f"{session_id}.msgpack"

    def read_checkpoint(self, session_id: str) -> bytes | None:
        try:
            return self._checkpoint_path(session_id).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            logger.debug("checkpoint of %s unreadable: %s", session_id, err)
            return None

    def write_checkpoint(self, session_id: str, data: bytes) -> None:
        try:
            atomic_write(self._checkpoint_path(session_id), data, durable=False)
        except OSError as err:  # verified on every read; losing one costs time only
            logger.debug("checkpoint of %s not written: %s", session_id, err)

    # ------------------------------------------------------------------ workspace-level ledgers

    def workspace_dir(self, name: WorkspaceLedgerName) -> Path:
        """The folder of a workspace-level ledger (``<workspace>/catalog``, …)."""
        return self.workspace_root / workspace_ledger_spec(name).name

    def workspace_ledger(self, name: WorkspaceLedgerName) -> Ledger:
        spec = workspace_ledger_spec(name)
        ledger = self._workspace_ledgers.get(spec.name)
        if ledger is None:
            ledger = Ledger(self.workspace_dir(name) / "ledger.jsonl", spec.ledger_id)
            ledger.ledger_name = spec.name
            ledger.first_type = spec.first_type
            self._workspace_ledgers[spec.name] = ledger
        return ledger

    def _workspace_object_path(self, name: WorkspaceLedgerName, sha256: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256")
        return self.workspace_dir(name) / "objects" / sha256

    def put_workspace_object(self, name: WorkspaceLedgerName, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        _put(self._workspace_object_path(name, digest), data)
        return digest

    def get_workspace_object(self, name: WorkspaceLedgerName, sha256: str) -> bytes:
        path = self._workspace_object_path(name, sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError as err:
            raise NotFoundError(f"content {sha256[:12]}… is missing from {name}/objects") from err
        except OSError as err:
            raise unreadable_error(_unsearchable(path, err), err) from err
        if hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(f"stored content {sha256[:12]}… of {name}/objects was altered")
        return data

    def workspace_object_ids(self, name: WorkspaceLedgerName) -> list[str]:
        return _object_ids(self.workspace_dir(name) / "objects", nested=False)

    def _workspace_cache_path(self, name: WorkspaceLedgerName) -> Path:
        return self.cache_dir / "workspace" / f"{workspace_ledger_spec(name).name}.msgpack"

    def read_workspace_cache(self, name: WorkspaceLedgerName) -> bytes | None:
        try:
            return self._workspace_cache_path(name).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            logger.debug("fold cache of %s unreadable: %s", name, err)
            return None

    def write_workspace_cache(self, name: WorkspaceLedgerName, data: bytes) -> None:
        try:
            atomic_write(self._workspace_cache_path(name), data, durable=False)
        except OSError as err:  # a cache is an optimisation only
            logger.debug("fold cache of %s not written: %s", name, err)


class _NewSessionLedger(Ledger):
    """The ledger of a session this store has just created. When the store refuses to write
    its first batch (``UnavailableError``: the ledger is empty again), the session folder is
    removed again: a session without events would be left behind otherwise, and every
    ``session list`` would stop at it. Any other refusal leaves the empty session as created
    (the store contract: ``create_session`` makes an empty session)."""

    def append(
        self,
        drafts: Sequence[EventDraft],
        *,
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None = None,
    ) -> AppendResult:
        try:
            return super().append(
                drafts, expected_last_seq=expected_last_seq, clock=clock, signer=signer
            )
        except UnavailableError:
            self._discard_if_unborn()
            raise

    def append_lines(self, lines: Sequence[bytes], *, expected_last_seq: int) -> AppendResult:
        try:
            return super().append_lines(lines, expected_last_seq=expected_last_seq)
        except UnavailableError:
            self._discard_if_unborn()
            raise

    def _discard_if_unborn(self) -> None:
        try:
            if self.path.stat().st_size:
                return  # it has lines: a session, whatever failed now
        except FileNotFoundError:
            pass
        except OSError:
            return
        self.close()
        folder = self.path.parent
        # workflow.yaml first: without it the folder is no longer a session (session_ids)
        for path in (folder / "workflow.yaml", self.path, self.head_path, self.lock_path):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()


def _put(path: Path, data: bytes) -> None:
    """Store a content-addressed object (written before the ledger line that names it)."""
    try:
        if path.exists():
            return
    except OSError as err:  # a folder on the way that cannot be searched
        raise unreadable_error(_unsearchable(path, err), err) from err
    try:
        atomic_write(path, data)
    except OSError as err:
        raise unwritable_error(path, err, "write") from err


def _object_ids(folder: Path, *, nested: bool) -> list[str]:
    """The object names under ``folder`` (``ab/<sha256>`` when ``nested``), sorted; anything
    that is not a SHA-256 named file is not an object. A folder that cannot be listed is
    reported: ``glob`` would skip it, and a copy of the session would silently miss objects."""
    if nested:
        paths = [
            folder / prefix / name
            for prefix in _listdir(folder)
            if re.fullmatch(r"[0-9a-f]{2}", prefix)
            for name in _listdir(folder / prefix)
            if name[:2] == prefix
        ]
    else:
        paths = [folder / name for name in _listdir(folder)]
    return sorted(p.name for p in paths if re.fullmatch(r"[0-9a-f]{64}", p.name) and _is_file(p))


def _listdir(folder: Path) -> list[str]:
    """The names in ``folder``; none when it is missing or not a folder."""
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as err:
        raise unreadable_error(_unsearchable(folder, err), err, "list") from err


def _is_file(path: Path) -> bool:
    """``path.is_file()``, except that a folder on the way that cannot be searched (or an I/O
    error) is reported, not taken for "no such file"."""
    try:
        return path.is_file()
    except OSError as err:
        raise unreadable_error(_unsearchable(path, err), err) from err


def _unsearchable(path: Path, err: OSError) -> Path:
    """The path to name for ``err`` (raised reaching ``path``): for a permission denied, the
    nearest folder on the way that cannot be entered, when one can be found — the file itself
    may be perfectly readable — else ``path``."""
    if err.errno != errno.EACCES:
        return path
    for step in (*reversed(path.parents), path):
        try:
            os.stat(step)
        except PermissionError:
            return step.parent
        except OSError:
            return path
    return path
