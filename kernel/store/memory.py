"""The in-memory store: the same contract as the filesystem one, for fast tests (ARCHITECTURE
§3.5) — and the proof that nothing above the port depends on files.

Lines are kept as the exact bytes every backend writes (:func:`kernel.ledger.stamp_batch`), so
``verify`` is the same pure function of them and of the anchor, and a ledger copied from here
to disk is byte-identical. Thread-safe (one lock per ledger); nothing survives the process.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from kernel.clock import Clock, format_ts
from kernel.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from kernel.events import Event, EventDraft, decode_event, decode_lines
from kernel.ledger_records import (
    AppendResult,
    LedgerRead,
    LedgerTail,
    Repair,
    Signer,
    chain_lines,
    conflict_error,
    stamp_batch,
)
from kernel.ledger_verify import (
    Problem,
    VerifyReport,
    genesis_hash,
    line_hash,
    verify_ledger_bytes,
)
from kernel.store.base import SESSION_ID, WorkspaceLedgerName, workspace_ledger_spec

__all__ = ["MemoryLedger", "MemoryStore"]


class MemoryLedger:
    """One ledger as a list of line bytes plus its anchor."""

    ledger_name = "session"
    first_type: str | tuple[str, ...] = "session_created"

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self.lines: list[bytes] = []  # exposed for tests that damage a ledger on purpose
        self.anchor: tuple[int, str] | None = None
        self.quarantine: list[bytes] = []
        self._lock = threading.Lock()

    @property
    def session_id(self) -> str:
        return self._session_id

    def exists(self) -> bool:
        return bool(self.lines)

    # ------------------------------------------------------------------ reading

    def _head(self, count: int) -> str:
        return line_hash(self.lines[count - 1]) if count else genesis_hash(self._session_id)

    def _decode(self, lines: list[bytes]) -> list[Event]:
        if not lines:
            return []
        try:
            return list(decode_lines(b"\n".join(lines) + b"\n"))
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            raise IntegrityError(
                f"session {self._session_id}: a ledger line is not a valid event ({err}); "
                "run `tht ledger verify`"
            ) from err

    def _committed(self) -> int:
        """Lines of whole batches (a damaged final batch is never events)."""
        count = len(self.lines)
        while count:
            try:
                if not decode_event(self.lines[count - 1]).batch_left:
                    break
            except (msgspec.ValidationError, msgspec.DecodeError):
                break
            count -= 1
        return count

    def read(self, *, upto: int | None = None) -> LedgerRead:
        with self._lock:
            count = self._committed()
            events = self._decode(self.lines[:count])
            head = self._head(count)
        if upto is not None:
            events = [e for e in events if e.seq <= upto]
        return LedgerRead(events=events, head=head, size=count, torn=None)

    def read_after(self, seq: int, hint: int) -> LedgerRead:
        with self._lock:
            count = self._committed()
            events = self._decode(self.lines[seq:count])
            head = self._head(count)
        return LedgerRead(events=events, head=head, size=count, torn=None)

    def tail(self) -> LedgerTail:
        with self._lock:
            count = self._committed()
            return LedgerTail(count, self._head(count), count, None, max(0, count - 1))

    def line_at(self, seq: int, hint: int) -> bytes | None:
        with self._lock:
            if 1 <= seq <= len(self.lines) and hint == seq:
                return self.lines[seq - 1]
        return None

    def lines_after(self, seq: int, hint: int) -> list[bytes] | None:
        with self._lock:
            return list(self.lines[seq:]) if 0 <= seq <= len(self.lines) else None

    def first_event(self) -> Event | None:
        with self._lock:
            first = self.lines[0] if self.lines else None
        if first is None:
            return None
        try:
            return decode_event(first)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    def read_anchor(self) -> tuple[int, str] | None:
        return self.anchor

    # ------------------------------------------------------------------ writing

    def append(
        self,
        drafts: Sequence[EventDraft],
        *,
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None = None,
    ) -> AppendResult:
        def stamped(last_seq: int, prev: str) -> tuple[list[Event], list[bytes], str]:
            ts = format_ts(clock.now())
            return stamp_batch(drafts, last_seq=last_seq, prev=prev, ts=ts, signer=signer)

        return self._append(stamped, expected_last_seq, empty=not drafts)

    def append_lines(self, lines: Sequence[bytes], *, expected_last_seq: int) -> AppendResult:
        """Already-encoded, already-chained lines verbatim (:func:`chain_lines`)."""

        def checked(last_seq: int, prev: str) -> tuple[list[Event], list[bytes], str]:
            events, head = chain_lines(
                lines,
                last_seq=last_seq,
                prev=prev,
                ledger=f"{self.ledger_name} {self._session_id}",
                first_type=self.first_type,
            )
            return events, [bytes(line) for line in lines], head

        return self._append(checked, expected_last_seq, empty=not lines)

    def _append(
        self,
        build: Callable[[int, str], tuple[list[Event], list[bytes], str]],
        expected_last_seq: int,
        *,
        empty: bool,
    ) -> AppendResult:
        with self._lock:
            count = self._committed()
            if count != expected_last_seq:
                raise conflict_error(self._session_id, expected_last_seq, count)
            head = self._head(count)
            if empty:
                return AppendResult(events=[], head=head)
            if count != len(self.lines):
                raise IntegrityError(
                    f"session {self._session_id} ends with an unfinished batch; nothing is "
                    "appended until a human repairs it"
                )
            if count and self.anchor != (count, head):
                raise IntegrityError(
                    f"session {self._session_id} disagrees with its anchor; nothing is "
                    "appended until a human repairs it"
                )
            events, lines, new_head = build(count, head)
            self.lines.extend(lines)
            self.anchor = (events[-1].seq, new_head)
        return AppendResult(events=events, head=new_head)

    def verify(self) -> VerifyReport:
        with self._lock:
            if not self.lines:
                missing = Problem("empty", "the ledger has no events (emptied or never written)")
                return VerifyReport(
                    ok=False, events=0, head=genesis_hash(self._session_id), problems=[missing]
                )
            data = b"".join(line + b"\n" for line in self.lines)
            anchor = self.anchor
        return verify_ledger_bytes(self._session_id, data, anchor, first_type=self.first_type)

    def repair(self, *, cut_seq: int | None = None) -> Repair:
        with self._lock:
            old_seq = self.anchor[0] if self.anchor is not None else 0
            keep = len(self.lines) if cut_seq is None else max(0, min(cut_seq - 1, len(self.lines)))
            while keep:  # back to the end of a whole, decodable batch
                try:
                    if not decode_event(self.lines[keep - 1]).batch_left:
                        break
                except (msgspec.ValidationError, msgspec.DecodeError):
                    pass
                keep -= 1
            moved = b"".join(line + b"\n" for line in self.lines[keep:])
            if moved:
                self.quarantine.append(moved)
            del self.lines[keep:]
            last = keep
            self.anchor = (last, self._head(last))
        accepted = (old_seq + 1, last) if 0 <= old_seq < last else None
        missing = (last + 1, old_seq) if old_seq > last else None
        return Repair(moved=moved, last_seq=last, accepted=accepted, missing=missing)

    def close(self) -> None:
        pass


@dataclass
class _Session:
    workflow: bytes
    ledger: MemoryLedger
    objects: dict[str, bytes] = field(default_factory=dict)
    artifacts: dict[str, bytes] = field(default_factory=dict)


class MemoryStore:
    """Sessions in a dictionary: ``SessionStore`` without a disk."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._workspace: dict[str, _Session] = {}  # workspace-level ledgers by name
        self._workspace_caches: dict[str, bytes] = {}
        self._caches: dict[str, bytes] = {}
        self._checkpoints: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def _get(self, session_id: str) -> _Session:
        if not SESSION_ID.match(session_id):
            raise NotFoundError(f"session {session_id!r} does not exist (not a session id)")
        found = self._sessions.get(session_id)
        if found is None:
            raise NotFoundError(f"session {session_id} does not exist")
        return found

    def create_session(self, session_id: str, workflow_bytes: bytes) -> None:
        if not SESSION_ID.match(session_id):
            raise NotFoundError(f"session {session_id!r} does not exist (not a session id)")
        with self._lock:
            if session_id in self._sessions:
                raise ConflictError(f"session {session_id} already exists")
            self._sessions[session_id] = _Session(bytes(workflow_bytes), MemoryLedger(session_id))

    def session_ids(self) -> list[str]:
        return sorted(self._sessions)

    def exists(self, session_id: str) -> bool:
        return session_id in self._sessions

    def ledger(self, session_id: str) -> MemoryLedger:
        return self._get(session_id).ledger

    def workflow_bytes(self, session_id: str) -> bytes:
        return self._get(session_id).workflow

    def put_object(self, session_id: str, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self._get(session_id).objects.setdefault(digest, bytes(data))
        return digest

    def get_object(self, session_id: str, sha256: str) -> bytes:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256")
        data = self._get(session_id).objects.get(sha256)
        if data is None:
            raise NotFoundError(f"content {sha256[:12]}… is missing from session {session_id}")
        if hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(
                f"stored content {sha256[:12]}… of session {session_id} was altered"
            )
        return data

    def object_ids(self, session_id: str) -> list[str]:
        return sorted(self._get(session_id).objects)

    def materialize(self, session_id: str, name: str, sha256: str) -> None:
        self._get(session_id).artifacts[name] = self.get_object(session_id, sha256)

    def read_artifact(self, session_id: str, name: str) -> bytes | None:
        return self._get(session_id).artifacts.get(name)

    def read_cache(self, session_id: str) -> bytes | None:
        return self._caches.get(session_id)

    def write_cache(self, session_id: str, data: bytes) -> None:
        self._caches[session_id] = bytes(data)

    def read_checkpoint(self, session_id: str) -> bytes | None:
        return self._checkpoints.get(session_id)

    def write_checkpoint(self, session_id: str, data: bytes) -> None:
        self._checkpoints[session_id] = bytes(data)

    # ------------------------------------------------------------------ workspace-level ledgers

    def _workspace_entry(self, name: WorkspaceLedgerName) -> _Session:
        spec = workspace_ledger_spec(name)
        with self._lock:
            found = self._workspace.get(spec.name)
            if found is None:
                ledger = MemoryLedger(spec.ledger_id)
                ledger.ledger_name = spec.name
                ledger.first_type = spec.first_type
                found = self._workspace[spec.name] = _Session(b"", ledger)
        return found

    def workspace_ledger(self, name: WorkspaceLedgerName) -> MemoryLedger:
        return self._workspace_entry(name).ledger

    def put_workspace_object(self, name: WorkspaceLedgerName, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self._workspace_entry(name).objects.setdefault(digest, bytes(data))
        return digest

    def get_workspace_object(self, name: WorkspaceLedgerName, sha256: str) -> bytes:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256")
        data = self._workspace_entry(name).objects.get(sha256)
        if data is None:
            raise NotFoundError(f"content {sha256[:12]}… is missing from {name}/objects")
        if hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(f"stored content {sha256[:12]}… of {name}/objects was altered")
        return data

    def workspace_object_ids(self, name: WorkspaceLedgerName) -> list[str]:
        return sorted(self._workspace_entry(name).objects)

    def read_workspace_cache(self, name: WorkspaceLedgerName) -> bytes | None:
        return self._workspace_caches.get(workspace_ledger_spec(name).name)

    def write_workspace_cache(self, name: WorkspaceLedgerName, data: bytes) -> None:
        self._workspace_caches[workspace_ledger_spec(name).name] = bytes(data)

    # ------------------------------------------------------------------ for tests

    def damage_object(self, session_id: str, sha256: str) -> None:
        """Alter stored content behind the store's back (the contract suite's tamper hook)."""
        self._get(session_id).objects[sha256] = b"altered"

    def damage_workspace_object(self, name: WorkspaceLedgerName, sha256: str) -> None:
        self._workspace_entry(name).objects[sha256] = b"altered"
