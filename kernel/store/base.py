"""The store port (ARCHITECTURE §3.5): ``SessionStore`` and the backend-neutral ``LedgerPort``
it hands out. Every backend (filesystem, in-memory, PostgreSQL) passes the contract suite in
``tests/contract/test_session_store.py``; nothing above this module sees a file, a row or a list.

A position in a ledger is always ``(seq, head)`` — logical identity — plus an opaque ``hint``
the backend gave out with it (``LedgerTail.hint``: a byte offset on disk, a line count in
memory) so it can continue from there without scanning; a hint is only ever used after the
line at ``seq`` was checked against ``head`` (:meth:`LedgerPort.line_at`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from kernel.clock import Clock
from kernel.events import Event, EventDraft
from kernel.ledger_records import AppendResult, LedgerRead, LedgerTail, Repair, Signer
from kernel.ledger_verify import VerifyReport

__all__ = [
    "SESSION_ID",
    "WORKSPACE_LEDGERS",
    "LedgerPort",
    "SessionStore",
    "WorkspaceLedgerName",
    "WorkspaceLedgerSpec",
    "workspace_ledger_spec",
]

#: what a session id looks like in every backend (never a path)
SESSION_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$")

#: the workspace-level ledgers (ARCHITECTURE §3.5): same envelope, chain and store as sessions
WorkspaceLedgerName = Literal["catalog", "memory"]


@dataclass(frozen=True)
class WorkspaceLedgerSpec:
    """What a workspace-level ledger is: its ledger id (which seeds the genesis hash, so its
    lines can never pass for a session's) and the type its first line must have."""

    name: str
    ledger_id: str
    first_type: str | tuple[str, ...]


WORKSPACE_LEDGERS: dict[str, WorkspaceLedgerSpec] = {
    # the Metadata Catalog (modules/catalog): every history starts with a Catalog Sync Run
    "catalog": WorkspaceLedgerSpec("catalog", "workspace-catalog", "catalog_sync_started"),
    # the Memory registry (§4.3): its event types arrive with the Memory registry itself
    "memory": WorkspaceLedgerSpec(
        "memory", "workspace-memory", ("memory_saved", "solved_question_saved")
    ),
}


def workspace_ledger_spec(name: str) -> WorkspaceLedgerSpec:
    """The spec of a workspace-level ledger; ``UsageError`` for a name that is not one."""
    spec = WORKSPACE_LEDGERS.get(name)
    if spec is None:
        from kernel.errors import UsageError

        raise UsageError(
            f"{name!r} is not a workspace-level ledger (known: {', '.join(WORKSPACE_LEDGERS)})"
        )
    return spec


class LedgerPort(Protocol):
    """One ledger: append-only, hash-chained, anchored (ARCHITECTURE §3.1)."""

    @property
    def session_id(self) -> str: ...

    def exists(self) -> bool: ...

    def read(self, *, upto: int | None = None) -> LedgerRead:
        """Every committed event (a torn tail is reported, never decoded)."""
        ...

    def read_after(self, seq: int, hint: int) -> LedgerRead:
        """The committed events after ``seq``."""
        ...

    def tail(self) -> LedgerTail:
        """The last committed event's seq and hash (what an append chains onto)."""
        ...

    def line_at(self, seq: int, hint: int) -> bytes | None:
        """The bytes of line ``seq`` when ``hint`` is where it ends, else None."""
        ...

    def lines_after(self, seq: int, hint: int) -> list[bytes] | None:
        """The committed lines after ``seq``, or None when the ledger ends torn."""
        ...

    def first_event(self) -> Event | None: ...

    def read_anchor(self) -> tuple[int, str] | None:
        """The last acknowledged ``(seq, head)``; None when there is none; ``(-1, "")`` when
        unreadable."""
        ...

    def append(
        self,
        drafts: Sequence[EventDraft],
        *,
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None = None,
    ) -> AppendResult:
        """One batch, durable, or ``ConflictError`` (stale) / ``IntegrityError`` (a damaged
        ledger: never repaired by an append) and nothing written."""
        ...

    def append_lines(self, lines: Sequence[bytes], *, expected_last_seq: int) -> AppendResult:
        """Append already-encoded, already-chained committed lines verbatim (a ledger copied
        between stores, ``tht store migrate``): each must decode, continue the seqs and chain
        its ``prev`` onto the tail, the last must end a batch; ``ConflictError`` (stale) /
        ``IntegrityError`` (a bad chain or a damaged ledger) and nothing written otherwise."""
        ...

    def verify(self) -> VerifyReport: ...

    def repair(self, *, cut_seq: int | None = None) -> Repair:
        """The explicit repair: quarantine from ``cut_seq`` (and any torn tail), re-anchor."""
        ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """Persistence of sessions: ledgers, content-addressed artifacts, the workflow snapshot."""

    def create_session(self, session_id: str, workflow_bytes: bytes) -> None:
        """Create an empty session; ``ConflictError`` if the id exists."""
        ...

    def session_ids(self) -> list[str]:
        """Every session id, sorted (ids are time-sortable)."""
        ...

    def exists(self, session_id: str) -> bool: ...

    def ledger(self, session_id: str) -> LedgerPort:
        """The session's ledger; ``NotFoundError`` for an unknown session."""
        ...

    def workflow_bytes(self, session_id: str) -> bytes:
        """The workflow file the session was created with (its own snapshot)."""
        ...

    def put_object(self, session_id: str, data: bytes) -> str:
        """Store content durably under its SHA-256; returns the hash."""
        ...

    def get_object(self, session_id: str, sha256: str) -> bytes:
        """Content by hash, verified; ``NotFoundError`` / ``IntegrityError``."""
        ...

    def object_ids(self, session_id: str) -> list[str]:
        """The SHA-256 of every object the session holds, sorted; ``NotFoundError`` for an
        unknown session."""
        ...

    def materialize(self, session_id: str, name: str, sha256: str) -> None:
        """Make ``artifacts/<name>`` hold the object ``sha256``."""
        ...

    def read_artifact(self, session_id: str, name: str) -> bytes | None:
        """The materialized artifact bytes, or None if absent."""
        ...

    def read_cache(self, session_id: str) -> bytes | None: ...

    def write_cache(self, session_id: str, data: bytes) -> None: ...

    def read_checkpoint(self, session_id: str) -> bytes | None:
        """The session's signed checkpoint (kernel/checkpoint.py), or None."""
        ...

    def write_checkpoint(self, session_id: str, data: bytes) -> None: ...

    # ------------------------------------------------------------------ workspace-level ledgers

    def workspace_ledger(self, name: WorkspaceLedgerName) -> LedgerPort:
        """A workspace-level ledger (``catalog``, ``memory``): created on its first append;
        ``exists()`` is False until then."""
        ...

    def put_workspace_object(self, name: WorkspaceLedgerName, data: bytes) -> str:
        """Store content durably beside a workspace-level ledger under its SHA-256."""
        ...

    def get_workspace_object(self, name: WorkspaceLedgerName, sha256: str) -> bytes:
        """Content by hash, verified; ``NotFoundError`` / ``IntegrityError``."""
        ...

    def workspace_object_ids(self, name: WorkspaceLedgerName) -> list[str]:
        """The SHA-256 of every object beside a workspace-level ledger, sorted."""
        ...

    def read_workspace_cache(self, name: WorkspaceLedgerName) -> bytes | None:
        """The rebuildable fold cache of a workspace-level ledger, or None."""
        ...

    def write_workspace_cache(self, name: WorkspaceLedgerName, data: bytes) -> None: ...
