"""Evidence generations: the record of the active generation, written atomically.

A generation is a complete build of the Evidence Index (every fragment of the publishable units,
tagged ``generation: <id>`` in the workspace collection). ``.tht/evidence/generations.json`` holds
the active one — what sessions see — and the counter for the next. Generation ids are
``g<n>-<8 hex>``, the hex a digest of what the generation is built from (its fingerprint), its
number, the instant it was built and a nonce: unique, so points of another workspace sharing a
server collection, or of an older build, can never match the active generation's filter. The
nonce is random by default; under ``THT_CLOCK`` / ``THT_SEED`` (demos, goldens) the composition
root makes it the seed, so the same content at the same clock gives the same id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from kernel.atomic import atomic_write
from modules.evidence.approval import GenerationApproval

__all__ = [
    "GENERATIONS_FILE",
    "GenerationRecord",
    "GenerationState",
    "GenerationStateError",
    "load_generation_state",
    "new_generation_id",
    "save_generation_state",
]

GENERATIONS_FILE = "generations.json"


class GenerationRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    number: int
    created_at: str
    fingerprint: str  # what the generation was built from: units, settings, encoders
    embedder: str  # embedder identity
    dense_size: int
    bm25: str  # BM25 encoder identity
    units: int
    fragments: int
    evaluation: dict[str, Any] | None = None
    # the fusion search used when the generation was evaluated (modules/evidence/fusion.py:
    # method, k, weights); None in records written before fusions were recorded
    fusion: dict[str, Any] | None = None
    # the workspace languages its fragments are written in (modules/evidence/translation.py:
    # the BM25 query translation's targets); None in records written before they were recorded
    languages: tuple[str, ...] | None = None
    # its vocabulary table (modules/evidence/vocabulary.py): {"words": n, "sha256": hex} of the
    # file vocabulary/<id>.npz; None when vocabulary alignment was off or not yet recorded
    vocabulary: dict[str, Any] | None = None
    # its digest table (modules/evidence/approval.py): {"fragments": n, "sha256": hex} of the
    # file digests/<id>.bin, every point's SHA-256 — what the index must hold; None in records
    # written before digest tables were
    digests: dict[str, Any] | None = None
    # a reviewer's signature over the rest of the record: required in signed mode
    approval: GenerationApproval | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as commands show it (the approval only when there is one)."""
        body: dict[str, Any] = msgspec.to_builtins(self)
        if self.approval is None:
            body.pop("approval", None)
        return body


class GenerationState(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    last_number: int = 0
    active: GenerationRecord | None = None


class GenerationStateError(Exception):
    """The generations file exists but cannot be read: the index is treated as unavailable."""


def load_generation_state(state_dir: Path) -> GenerationState:
    path = state_dir / GENERATIONS_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return GenerationState()
    except OSError as err:
        raise GenerationStateError(f"{path.name}: cannot read: {err}") from err
    try:
        return msgspec.json.decode(raw, type=GenerationState)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise GenerationStateError(f"{path.name}: corrupt ({err})") from err


def save_generation_state(state_dir: Path, state: GenerationState) -> None:
    """Write the state atomically (temp file, fsync, rename)."""
    data = msgspec.json.format(msgspec.json.encode(state), indent=2) + b"\n"
    atomic_write(state_dir / GENERATIONS_FILE, data, durable=True)  # fsyncs the folder too


def new_generation_id(number: int, *, fingerprint: str, created_at: str, nonce: str) -> str:
    """``g<n>-<8 hex>``: a digest of the content, the number, the instant and the nonce."""
    import hashlib

    key = "\n".join((str(number), fingerprint, created_at, nonce)).encode("utf-8")
    return f"g{number}-{hashlib.sha256(key).hexdigest()[:8]}"
