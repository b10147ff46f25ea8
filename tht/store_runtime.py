"""Which session store a workspace uses, and moving a workspace between stores.

Selection (``store:`` in workspace.yaml, docs/operations.md): ``kind: fs`` (the default) is the
workspace folder; ``kind: postgres`` is a PostgreSQL server whose URL is read from the
environment variable ``store.url_env`` names (default ``THT_STORE_URL``; ``dsn_env`` is its
deprecated name), every row namespaced by ``store.workspace`` (default: the workspace's
``name``, so every machine sharing workspace.yaml sees the same sessions). The URL is never
written anywhere nor echoed in an error: a missing variable is exit 2 naming the variable, an
unreachable server exit 6 (``kernel.store.postgres.connect_store`` says so without the URL).

Migration (``tht store migrate``, :func:`migrate`): every source ledger is verified first
(exit 7, nothing copied, when one does not); then each ledger — every session, then the
workspace ledgers ``catalog`` and ``memory`` — is copied with its objects, byte for byte,
continuing from the target's tail (so a re-run after an interruption skips what is complete
and continues what is partial; a target that does not end on a prefix of the source is exit
4); then every copy must verify on the target with the source's head, and the source must not
have moved meanwhile, before the caller switches workspace.yaml (:mod:`tht.store_switch`).
The after-finalize outbox's pending items are copied last (:func:`outbox_of`: the files under
``.tht/outbox/`` on the fs store, the ``tht_outbox`` table on postgres), by item id: a re-run adds
none twice; the source's items stay where they were, like its ledgers.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.errors import ConflictError, IntegrityError, UsageError
from kernel.outbox import Outbox, OutboxFolder, OutboxPort
from kernel.store.fs import FileSystemStore
from kernel.workspace import DEFAULT_STORE_URL_ENV, Workspace, check_store

if TYPE_CHECKING:
    from kernel.store.base import LedgerPort, SessionStore, WorkspaceLedgerName

__all__ = [
    "CHUNK_LINES",
    "Migration",
    "StoreChoice",
    "choice_from_settings",
    "close_store",
    "fs_store",
    "migrate",
    "namespace_of",
    "open_store",
    "outbox_of",
    "store_choice",
    "store_url",
]

#: lines per ``append_lines`` call (always cut at a batch boundary): an interrupted copy loses
#: at most one chunk of work, and a chunk is one transaction on the server
CHUNK_LINES = 1000
_WORKSPACE_LEDGERS: tuple[WorkspaceLedgerName, ...] = ("catalog", "memory")


@dataclass(frozen=True)
class StoreChoice:
    """What ``store:`` selects: the kind and, for postgres, the variable and the namespace."""

    kind: str
    url_env: str = DEFAULT_STORE_URL_ENV
    namespace: str = ""


def store_choice(
    workspace: Workspace, kind: str | None = None, *, url_env: str | None = None
) -> StoreChoice:
    """The workspace's store (``kind`` overrides ``store.kind``: the target of a migration).
    The fs store is decided on the text of workspace.yaml alone (no pydantic on the hot path),
    and so is the workspace's own postgres store when ``store:`` has a plain shape
    (:mod:`kernel.store.postgres_selection`; anything else is validated in full)."""
    own = kind is None
    kind = check_store(workspace) if kind is None else kind
    if kind == "fs":
        return StoreChoice("fs")
    if own and kind == "postgres" and url_env is None:
        quick = _quick_postgres_choice(workspace)
        if quick is not None:
            return quick
    return choice_from_settings(workspace.settings(), kind, url_env=url_env)


def _quick_postgres_choice(workspace: Workspace) -> StoreChoice | None:
    from kernel.store.postgres_selection import read_postgres_selection

    try:
        text = workspace.settings_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # the full validation reports the file's own problem
    found = read_postgres_selection(text)
    if found is None:
        return None
    namespace = found.workspace or namespace_of(found.name or "")
    return StoreChoice("postgres", found.url_env or DEFAULT_STORE_URL_ENV, namespace)


def choice_from_settings(settings: Any, kind: str, *, url_env: str | None = None) -> StoreChoice:
    """The store ``kind`` as the (validated) settings configure it."""
    if kind == "fs":
        return StoreChoice("fs")
    store = settings.store
    variable = url_env or store.url_env or store.dsn_env or DEFAULT_STORE_URL_ENV
    return StoreChoice(kind, variable, store.workspace or namespace_of(settings.name))


def namespace_of(name: str) -> str:
    """The default ``store.workspace``: the workspace's name as a store id (letters, digits,
    ``.``, ``_``, ``-``; every other run of characters becomes ``-``; at most 64)."""
    slug = re.sub(r"[^0-9A-Za-z._-]+", "-", name).strip("-._")[:64].rstrip("-._")
    return slug or "workspace"


def store_url(
    workspace: Workspace,
    choice: StoreChoice,
    environ: Mapping[str, str] | None = None,
    *,
    purpose: str = "",
) -> str:
    """The server URL from the environment; exit 2 naming the variable (never a value).
    ``purpose`` says who wants it (default: ``store.kind: postgres``)."""
    value = (os.environ if environ is None else environ).get(choice.url_env, "").strip()
    if not value:
        who = purpose or f"{workspace.settings_file}: store.kind: {choice.kind}"
        raise UsageError(
            f"{who} reads the server URL from the environment variable {choice.url_env} "
            f"(store.url_env), which is not set: export {choice.url_env}=<the store's "
            "PostgreSQL URL>; the URL is never written in workspace.yaml",
            details={"variable": choice.url_env},
        )
    return value


def fs_store(workspace: Workspace) -> FileSystemStore:
    return FileSystemStore(workspace.sessions_dir, workspace.cache_dir, workspace.root)


def open_store(
    workspace: Workspace,
    choice: StoreChoice | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> SessionStore:
    """The selected store, connected (postgres: exit 6 when the server is unreachable)."""
    choice = store_choice(workspace) if choice is None else choice
    if choice.kind == "fs":
        return fs_store(workspace)
    url = store_url(workspace, choice, environ)
    from kernel.store.postgres import connect_store

    return connect_store(url, workspace=choice.namespace)


def outbox_of(workspace: Workspace, store: SessionStore) -> Outbox:
    """The workspace's after-finalize outbox, beside its store: the PostgreSQL store's
    ``tht_outbox`` table (shared by every machine of the workspace), else ``.tht/outbox/``."""
    port = _outbox_port(store, workspace.state_dir)
    if port is None or isinstance(port, OutboxFolder):
        return Outbox(workspace.state_dir / "outbox")
    return Outbox(port=port)


def _outbox_port(store: SessionStore, state_dir: Path | None) -> OutboxPort | None:
    """Where ``store``'s outbox items live; None for a store without one (in memory)."""
    if isinstance(store, FileSystemStore):
        return OutboxFolder((state_dir or store.workspace_root / ".tht") / "outbox")
    if type(store).__name__ != "PostgresStore":  # no import (libpq's module) for the others
        return None
    from kernel.store.postgres import PostgresStore
    from kernel.store.postgres_outbox import PostgresOutbox

    assert isinstance(store, PostgresStore)
    return PostgresOutbox.of(store)


def close_store(store: object) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


# --------------------------------------------------------------------------- migration


@dataclass
class Migration:
    """What a migration covered (``--json``): totals that now match the source on the
    target, and how much of it this run copied."""

    source: str
    target: str
    dry_run: bool = False
    sessions: int = 0
    events: int = 0
    objects: int = 0
    workspace_ledgers: int = 0
    copied_events: int = 0
    copied_objects: int = 0
    skipped_ledgers: int = 0
    outbox_items: int = 0
    switched: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "sessions": self.sessions,
            "events": self.events,
            "objects": self.objects,
            "workspace_ledgers": self.workspace_ledgers,
            "switched": self.switched,
            "dry_run": self.dry_run,
            "copied": {"events": self.copied_events, "objects": self.copied_objects},
            "skipped_ledgers": self.skipped_ledgers,
            "outbox_items": self.outbox_items,
        }


@dataclass(frozen=True)
class _Mark:
    """A source ledger as it verified: what the copy must end at."""

    label: str
    session: str | None  # None for a workspace ledger
    name: WorkspaceLedgerName | None  # None for a session
    last_seq: int
    head: str


class _BatchLeft(msgspec.Struct):
    batch_left: int = 0


_BATCH_LEFT = msgspec.json.Decoder(_BatchLeft)


def migrate(
    source: SessionStore,
    target: SessionStore,
    *,
    names: tuple[str, str],
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Migration:
    """Copy every ledger, object and artifact from ``source`` to ``target`` and prove the copy
    (see the module docstring); ``names`` = (from, to) kinds for the summary. Switching the
    workspace is the caller's, after this returns."""
    summary = Migration(source=names[0], target=names[1], dry_run=dry_run)
    marks = _survey(source)
    for mark in marks:
        _copy(source, target, mark, summary, dry_run=dry_run)
        if progress is not None:
            progress(mark.label)
    if not dry_run:
        for mark in marks:
            _prove(source, target, mark)
    summary.outbox_items = _copy_outbox(source, target, dry_run=dry_run)
    return summary


def _copy_outbox(source: SessionStore, target: SessionStore, *, dry_run: bool) -> int:
    """The source's pending outbox items, added to the target's outbox (by id: never twice);
    how many are pending on the source."""
    from_port = _outbox_port(source, None)
    to_port = None if dry_run else _outbox_port(target, None)
    pending = [i for i in (from_port.items() if from_port else []) if i.status == "pending"]
    if to_port is not None:
        for item in pending:
            to_port.add(item)
    return len(pending)


def _ledgers(store: SessionStore, mark: _Mark) -> LedgerPort:
    if mark.name is not None:
        return store.workspace_ledger(mark.name)
    assert mark.session is not None
    return store.ledger(mark.session)


def _survey(source: SessionStore) -> list[_Mark]:
    """Every source ledger, verified (exit 7 before anything is copied)."""
    marks = [_Mark(f"session {sid}", sid, None, 0, "") for sid in source.session_ids()]
    for name in _WORKSPACE_LEDGERS:
        if source.workspace_ledger(name).exists():
            marks.append(_Mark(f"the {name} ledger", None, name, 0, ""))
    verified = []
    for mark in marks:
        report = _ledgers(source, mark).verify()
        if not report.ok:
            codes = ", ".join(sorted({p.code for p in report.problems}))
            raise IntegrityError(
                f"{mark.label} does not verify on the source store ({codes}); nothing was "
                "copied or switched: `tht ledger verify` it (a human repairs) and migrate again"
            )
        verified.append(_Mark(mark.label, mark.session, mark.name, report.events, report.head))
    return verified


def _source_lines(source: SessionStore, mark: _Mark) -> list[bytes]:
    lines = _ledgers(source, mark).lines_after(0, 0)
    if lines is None or len(lines) < mark.last_seq:
        raise ConflictError(f"{mark.label} changed on the source during the migration; re-run")
    lines = lines[: mark.last_seq]
    if lines and _hash(lines[-1]) != mark.head:
        raise ConflictError(f"{mark.label} changed on the source during the migration; re-run")
    return lines


def _copy(
    source: SessionStore, target: SessionStore, mark: _Mark, summary: Migration, *, dry_run: bool
) -> None:
    sid = mark.session
    present = target.exists(sid) if sid is not None else True
    if sid is not None:
        summary.sessions += 1
        workflow = source.workflow_bytes(sid)
        if present and target.workflow_bytes(sid) != workflow:
            raise _diverges(mark, "its workflow snapshot differs")
        if not present and not dry_run:
            target.create_session(sid, workflow)
            present = True
    else:
        summary.workspace_ledgers += 1
    lines = _source_lines(source, mark)
    summary.events += len(lines)
    done = _ledgers(target, mark).tail() if present else None
    start = 0 if done is None else done.last_seq
    if start > len(lines) or (done is not None and start and _hash(lines[start - 1]) != done.head):
        raise _diverges(mark, f"the target holds {start} event(s) that are not the source's")
    # objects before the lines that name them (as the kernel writes them)
    _copy_objects(source, target, mark, summary, present=present, dry_run=dry_run)
    if start == len(lines):
        summary.skipped_ledgers += 1
    if dry_run:
        summary.copied_events += len(lines) - start
        return
    ledger = _ledgers(target, mark)
    for chunk in _chunks(lines[start:]):
        ledger.append_lines(chunk, expected_last_seq=start)
        start += len(chunk)
        summary.copied_events += len(chunk)
    if sid is not None:
        _materialize(source, target, sid, lines)


def _diverges(mark: _Mark, why: str) -> ConflictError:
    return ConflictError(
        f"{mark.label} diverges between the stores: {why}; nothing was switched (the target "
        "must be empty or a prefix of the source)"
    )


def _copy_objects(
    source: SessionStore,
    target: SessionStore,
    mark: _Mark,
    summary: Migration,
    *,
    present: bool,
    dry_run: bool,
) -> None:
    sid, name = mark.session, mark.name
    if name is not None:
        ids = source.workspace_object_ids(name)
        have = set(target.workspace_object_ids(name))
    else:
        assert sid is not None
        ids = source.object_ids(sid)
        have = set(target.object_ids(sid)) if present else set()
    summary.objects += len(ids)
    for oid in ids:
        if oid in have:
            continue
        summary.copied_objects += 1
        if dry_run:
            continue
        if name is not None:  # get_*object verifies the hash: exit 7 for altered content
            target.put_workspace_object(name, source.get_workspace_object(name, oid))
        else:
            assert sid is not None
            target.put_object(sid, source.get_object(sid, oid))


def _chunks(lines: Sequence[bytes]) -> Iterator[list[bytes]]:
    """``lines`` in chunks of about :data:`CHUNK_LINES`, each ending where a batch ends (a
    chunk never leaves half a batch on the target: a reader would call it torn)."""
    chunk: list[bytes] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= CHUNK_LINES and _BATCH_LEFT.decode(line).batch_left == 0:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _materialize(source: SessionStore, target: SessionStore, sid: str, lines: list[bytes]) -> None:
    """The materialized artifacts, as the source has them (each a copied object)."""
    from kernel.events import ArtifactWritten, decode_event

    names = {
        event.payload.name
        for line in lines
        if b'"type":"artifact_written"' in line
        and isinstance(event := decode_event(line), ArtifactWritten)
    }
    for name in sorted(names):
        data = source.read_artifact(sid, name)
        if data is None or target.read_artifact(sid, name) == data:
            continue
        # the object is on the target (copied above); a materialized file is rebuildable, so
        # one whose bytes are no object (altered by hand) is left for `artifact show` to restore
        digest = hashlib.sha256(data).hexdigest()
        if digest in set(target.object_ids(sid)):
            target.materialize(sid, name, digest)


def _prove(source: SessionStore, target: SessionStore, mark: _Mark) -> None:
    """The copy verifies on the target and ends at the source's head; the source has not
    moved since it was verified (a writer during the migration): else nothing is switched."""
    report = _ledgers(target, mark).verify()
    if not report.ok or report.events != mark.last_seq or report.head != mark.head:
        codes = ", ".join(sorted({p.code for p in report.problems})) or "a different head"
        raise IntegrityError(
            f"the copy of {mark.label} does not verify on the target ({codes}); nothing was "
            "switched"
        )
    tail = _ledgers(source, mark).tail()
    if (tail.last_seq, tail.head) != (mark.last_seq, mark.head):
        raise ConflictError(
            f"{mark.label} changed on the source during the migration; nothing was switched: "
            "stop every writer and migrate again (it continues where it stopped)"
        )


def _hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()
