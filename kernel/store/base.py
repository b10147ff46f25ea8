"""The ``SessionStore`` contract."""

from __future__ import annotations

from typing import Protocol

from kernel.ledger import Ledger

__all__ = ["SessionStore"]


class SessionStore(Protocol):
    """Persistence of sessions: ledgers, content-addressed artifacts, the workflow snapshot."""

    def create_session(self, session_id: str, workflow_bytes: bytes) -> None:
        """Create an empty session; ``ConflictError`` if the id exists."""
        ...

    def session_ids(self) -> list[str]:
        """Every session id, sorted (ids are time-sortable)."""
        ...

    def exists(self, session_id: str) -> bool: ...

    def ledger(self, session_id: str) -> Ledger:
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
