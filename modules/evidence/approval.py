"""A reviewer's approval of an Evidence generation, and what every search checks against it.

The glossary's *Published Evidence*: "human approval precedes activation". In a signed workspace
(ARCHITECTURE §3.9) an agent can edit ``evidence/units/*.md`` and, before this, could run
``tht evidence publish`` itself: its text became what F1's glossary options, F3 and F4 read.
Now, in signed mode, a generation is activated only with a reviewer's signature over its record,
and a search uses the active generation only when that signature verifies:

- the **digest table** (:class:`DigestTable`, ``.tht/evidence/digests/<generation>.bin``):
  every fragment point's SHA-256 (:func:`point_digest`, the canonical JSON of its payload), in
  every mode. The record holds the table's own SHA-256 and row count (``digests``), so the
  record says what the index must hold: a point rewritten in the vector store (its text, title,
  purposes) is caught by the search that returns it (:func:`check_points`), not shown. A table
  file, not a map inside the record: a search reads 48 bytes per fragment and looks up only the
  points it returned (10,000 fragments: ~0.5 ms, where decoding a map in ``generations.json``
  cost ~3 ms), and the signed record stays small;
- :func:`approval_message` — the bytes a reviewer signs: who and when, and the whole record but
  its approval (id, fingerprint, encoders, fusion, evaluation, the digest table's SHA-256);
- :func:`check_approval` — the active record's approval, verified with the reviewer registry's
  check (a key valid at ``approved_at``; a key revoked as compromised never is). Unsigned
  workspaces require none (documented: there the agent is the user).

A record edited by hand (another digest, another fusion) no longer matches its signature; a
record copied from an older approved generation is a rollback (docs/security.md): its points
were deleted when the newer one was activated, so the search finds it ``stale``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from modules.evidence.generations import GenerationRecord

__all__ = [
    "APPROVAL_CONTEXT",
    "DIGESTS_DIR",
    "ApprovalProblem",
    "DigestTable",
    "GenerationApproval",
    "SignatureCheck",
    "approval_message",
    "check_approval",
    "check_points",
    "digests_path",
    "load_digests",
    "point_digest",
    "prune_digests",
    "write_digests",
]

#: the domain separation of the signed bytes (never valid as a ledger line or a checkpoint)
APPROVAL_CONTEXT = b"tht evidence generation approval v1\n"
DIGESTS_DIR = "digests"
_KEY = 16  # the first 16 bytes of SHA-256(fragment id): the row's key
_ROW = _KEY + 32  # key, then the point's SHA-256

#: (reviewer, data, sig, ts) → True when ``sig`` is by a key of ``reviewer`` valid at ``ts``
SignatureCheck = Callable[[str, bytes, str, str], bool]


class GenerationApproval(msgspec.Struct, frozen=True, kw_only=True):
    """A reviewer's signature over a generation's record (:func:`approval_message`)."""

    reviewer: str  # human:<id>
    approved_at: str  # ISO-8601 UTC, the instant the reviewer's tht signed
    sig: str

    def to_json(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


class ApprovalProblem(Exception):
    """The active generation cannot be used: ``reason`` ``unapproved`` (no valid approval in a
    signed workspace) or ``tampered`` (the index holds a point its record does not, or the
    digest table is not the recorded one)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _canonical(value: object) -> bytes:
    """JSON with every key sorted (msgspec's, several times faster than ``json.dumps``)."""
    return msgspec.json.encode(value, order="sorted")


def point_digest(payload: Mapping[str, object]) -> str:
    """SHA-256 of a fragment point's payload, canonical JSON (key order never matters); the
    ``kind`` the vector store adds to every point (its filter, ``evidence``) is not part of it."""
    return hashlib.sha256(_canonical({k: v for k, v in payload.items() if k != "kind"})).hexdigest()


def _key(fragment_id: str) -> bytes:
    return hashlib.sha256(fragment_id.encode("utf-8")).digest()[:_KEY]


class DigestTable:
    """Fixed 48-byte rows sorted by key: ``get`` is a binary search, nothing is parsed."""

    def __init__(self, data: bytes) -> None:
        if len(data) % _ROW:
            raise ValueError("not a digest table (its size is not a whole number of rows)")
        self._data = data
        self.rows = len(data) // _ROW

    @classmethod
    def build(cls, digests: Mapping[str, str]) -> DigestTable:
        rows = sorted(_key(fid) + bytes.fromhex(digest) for fid, digest in digests.items())
        return cls(b"".join(rows))

    @property
    def data(self) -> bytes:
        return self._data

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self._data).hexdigest()

    def get(self, fragment_id: str) -> str | None:
        key, data = _key(fragment_id), self._data
        lo, hi = 0, self.rows
        while lo < hi:
            mid = (lo + hi) // 2
            found = data[mid * _ROW : mid * _ROW + _KEY]
            if found == key:
                return data[mid * _ROW + _KEY : (mid + 1) * _ROW].hex()
            if found < key:
                lo = mid + 1
            else:
                hi = mid
        return None


def digests_path(state_dir: Path, generation: str) -> Path:
    return state_dir / DIGESTS_DIR / f"{generation}.bin"


def write_digests(state_dir: Path, generation: str, table: DigestTable) -> dict[str, object]:
    """Write ``generation``'s table atomically; what its record holds of it."""
    from kernel.atomic import atomic_write

    atomic_write(digests_path(state_dir, generation), table.data, durable=True)
    return {"fragments": table.rows, "sha256": table.sha256}


def load_digests(state_dir: Path, record: GenerationRecord) -> DigestTable | None:
    """``record``'s digest table exactly as recorded; None for a record written before tables
    were (nothing to check). :class:`ApprovalProblem` (``tampered``) when the file is missing,
    unreadable, a symbolic link or another table than the record's."""
    recorded = record.digests
    if recorded is None:
        return None
    path = digests_path(state_dir, record.id)
    problem = f"the digest table of the active generation {record.id} ({path.name})"
    fix = "run `tht evidence publish` to rebuild it"
    try:
        if path.is_symlink():
            raise OSError("a symbolic link")
        data = path.read_bytes()
    except OSError as err:
        raise ApprovalProblem("tampered", f"{problem} cannot be read ({err}): {fix}") from None
    if hashlib.sha256(data).hexdigest() != recorded.get("sha256") or len(data) % _ROW:
        raise ApprovalProblem("tampered", f"{problem} is not the recorded one: {fix}")
    return DigestTable(data)


def prune_digests(state_dir: Path, *, keep: str) -> None:
    """Delete every table but ``keep``'s (a crashed or failed publish's too)."""
    folder = state_dir / DIGESTS_DIR
    if not folder.is_dir():
        return
    for path in folder.glob("*.bin"):
        if path.stem != keep:
            path.unlink(missing_ok=True)


def approval_message(record: GenerationRecord, reviewer: str, approved_at: str) -> bytes:
    """What a reviewer signs: who approves and when, then the record without its approval,
    canonical JSON."""
    body = msgspec.structs.replace(record, approval=None)
    return APPROVAL_CONTEXT + _canonical([reviewer, approved_at, body])


def check_approval(record: GenerationRecord, check: SignatureCheck | None) -> None:
    """:class:`ApprovalProblem` (``unapproved``) unless ``record`` carries an approval whose
    signature ``check`` accepts. ``check`` None: the workspace has no registry that verifies,
    so nothing can be approved."""
    where = f"the active evidence generation {record.id}"
    fix = "a reviewer publishes it: `tht evidence publish --as human:<id>`"
    approval = record.approval
    if approval is None or record.digests is None:
        raise ApprovalProblem(
            "unapproved", f"{where} has no reviewer's approval (signed mode): {fix}"
        )
    message = approval_message(record, approval.reviewer, approval.approved_at)
    if check is None or not check(approval.reviewer, message, approval.sig, approval.approved_at):
        raise ApprovalProblem(
            "unapproved",
            f"{where}: its approval by {approval.reviewer} does not verify (the record or the "
            f"signature was changed, or the key is not trusted): {fix}",
        )


def check_points(
    record: GenerationRecord, table: DigestTable | None, payloads: Iterable[Mapping[str, object]]
) -> None:
    """:class:`ApprovalProblem` (``tampered``) when a returned point is not one ``table`` lists
    with that digest. No table (a record written before tables were): nothing is checked."""
    if table is None:
        return
    for payload in payloads:
        fid = str(payload.get("fragment_id", ""))
        if table.get(fid) != point_digest(payload):
            shown = fid or "a point without a fragment id"
            raise ApprovalProblem(
                "tampered",
                f"the evidence index holds {shown} other than the active generation "
                f"{record.id} recorded (changed in the vector store): run `tht evidence "
                "publish` to rebuild it",
            )
