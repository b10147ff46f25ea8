"""The reviewer registry: who may sign human decisions in this workspace (ARCHITECTURE §3.9).

A workspace-level ledger, ``reviewers/ledger.jsonl`` (+ ``ledger.head``), with the same format,
hash chain and append discipline as a session ledger (:class:`kernel.ledger.Ledger`) and only
registry events (``reviewer_added``, ``reviewer_revoked``, ``workflow_approved``).

Why every entry is signed: the agent can write this file like any other. A chain of hashes only
proves the lines were not edited *after* the fact; the signatures prove *who* wrote them. The
first entry is a self-signed root (the first reviewer adds themselves); every later entry must be
signed by an active key of a reviewer already in the registry. An agent can append a properly
chained ``reviewer_added`` for its own key, but it cannot sign it with a member's key, so
:func:`fold_registry` reports it as a problem and ignores it — its key never becomes a member.

What the registry cannot detect by itself: an agent that deletes the whole registry and writes a
new one with its own root. Only the root's key id, which the first reviewer noted when they
added themselves, tells the two apart.

:func:`fold_registry` is pure and total (every entry is either applied or reported); the writers
of :class:`ReviewerRegistry` refuse exactly what the fold would reject, by checking the signed
entry against the folded state under the ledger's lock before it is written.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec

from kernel.clock import Clock
from kernel.errors import ConflictError, IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.events import (
    REGISTRY_TYPES,
    Event,
    EventDraft,
    Payload,
    ReviewerAdded,
    ReviewerAddedPayload,
    ReviewerRevoked,
    ReviewerRevokedPayload,
    WorkflowApproved,
    WorkflowApprovedPayload,
    canonical_bytes,
    decode_event,
    info_of,
)
from kernel.ledger import Ledger
from kernel.ledger_verify import Problem, VerifyReport, verify_ledger_bytes
from kernel.signing import (
    SigningKey,
    key_id_of,
    proof_message,
    sig_key_id,
    verify_signature,
)
from kernel.transitions import check_human

__all__ = [
    "REGISTRY_LEDGER_ID",
    "RegistryState",
    "ReviewerKeyRecord",
    "ReviewerRegistry",
    "check_entry",
    "fold_registry",
]

#: the registry ledger's id: it seeds the genesis hash of its first line
REGISTRY_LEDGER_ID = "workspace-reviewers"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # kernel.clock.format_ts
_VERIFY_ATTEMPTS = 5


@dataclass(frozen=True)
class ReviewerKeyRecord:
    """One key of one reviewer, as the registry knows it."""

    reviewer: str
    key_id: str
    public_key: str
    added_seq: int
    added_ts: str
    revoked_seq: int | None = None
    revoked_ts: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_seq is None


@dataclass(frozen=True)
class RegistryState:
    """The folded registry: every key ever accepted, approved workflows, and what was ignored."""

    keys: dict[str, ReviewerKeyRecord] = field(default_factory=dict)
    approved_workflows: frozenset[str] = frozenset()
    last_seq: int = 0
    problems: tuple[Problem, ...] = ()

    def key(self, key_id: str) -> ReviewerKeyRecord | None:
        return self.keys.get(key_id)

    def reviewers(self) -> list[str]:
        """Reviewers with at least one active key, sorted."""
        return sorted({r.reviewer for r in self.keys.values() if r.active})

    @property
    def signed(self) -> bool:
        """True once a reviewer was ever added: from then on human decisions must be signed."""
        return bool(self.keys)

    def check_human_event(self, event: Event) -> str | None:
        """None when ``event`` carries a valid signature by its actor's key, else why not.

        A key revoked *after* the event still vouches for it: revocation is not retroactive
        (decisions signed while the key was trusted stay valid)."""
        if event.sig is None:
            return "unsigned human decision"
        return self.check_signed(event.actor, canonical_bytes(event), event.sig, event.ts)

    def check_signed(self, reviewer: str, data: bytes, sig: str, ts: str) -> str | None:
        """None when ``sig`` over ``data`` is by a key of ``reviewer`` valid at ``ts``."""
        key_id = sig_key_id(sig)
        if key_id is None:
            return "malformed signature"
        record = self.keys.get(key_id)
        if record is None:
            return f"signed by unknown key {key_id} (not in the reviewer registry)"
        if record.reviewer != reviewer:
            return f"key {key_id} belongs to {record.reviewer}, not {reviewer}"
        if not verify_signature(record.public_key, data, sig):
            return "signature does not verify"
        if record.revoked_ts is not None and not (_TS.match(ts) and ts < record.revoked_ts):
            return f"key {key_id} was revoked at {record.revoked_ts}"
        return None

    def signature_valid(self, reviewer: str, data: bytes, sig: str, ts: str) -> bool:
        return self.check_signed(reviewer, data, sig, ts) is None


# --------------------------------------------------------------------------- fold


def fold_registry(events: Iterable[Event]) -> RegistryState:
    """Fold registry entries into a :class:`RegistryState`; a rule-breaking entry becomes a
    Problem (``registry_signature`` or ``registry_rule``) and is otherwise ignored."""
    state = RegistryState()
    for event in events:
        state = _apply(state, event)
    return state


def _apply(state: RegistryState, event: Event) -> RegistryState:
    problem = check_entry(state, event)
    last_seq = max(state.last_seq, event.seq)
    if problem is not None:
        return RegistryState(
            keys=state.keys,
            approved_workflows=state.approved_workflows,
            last_seq=last_seq,
            problems=(*state.problems, problem),
        )
    keys = dict(state.keys)
    approved = state.approved_workflows
    if isinstance(event, ReviewerAdded):
        p = event.payload
        keys[p.key_id] = ReviewerKeyRecord(p.reviewer, p.key_id, p.public_key, event.seq, event.ts)
    elif isinstance(event, ReviewerRevoked):
        old = keys[event.payload.key_id]
        keys[old.key_id] = replace(old, revoked_seq=event.seq, revoked_ts=event.ts)
    elif isinstance(event, WorkflowApproved):
        approved = approved | {event.payload.sha256}
    return RegistryState(keys, approved, last_seq, state.problems)


def check_entry(state: RegistryState, event: Event) -> Problem | None:
    """Why ``event`` may not follow ``state`` in the registry (None when it may)."""

    def rule(message: str) -> Problem:
        return Problem("registry_rule", message, event.seq, event.seq)

    def signature(message: str) -> Problem:
        return Problem("registry_signature", message, event.seq, event.seq)

    if info_of(event).type not in REGISTRY_TYPES:
        return rule(f"{info_of(event).type} is not a registry entry")
    root = state.last_seq == 0
    if isinstance(event, ReviewerAdded):
        wrong = _check_addition(state, event.payload, event.actor, root)
        if wrong is not None:
            return Problem(wrong[0], wrong[1], event.seq, event.seq)
        if root:
            if event.sig is None or not verify_signature(
                event.payload.public_key, canonical_bytes(event), event.sig
            ):
                return signature("the first reviewer's entry is not signed by their own new key")
            return None
    elif root:
        return rule("the registry must start with the first reviewer adding themselves")
    signer = _check_signer(state, event)
    if signer is not None:
        return signature(signer)
    if isinstance(event, ReviewerRevoked):
        p = event.payload
        record = state.keys.get(p.key_id)
        if record is None or record.reviewer != p.reviewer:
            return rule(f"revokes key {p.key_id}, which is not a key of {p.reviewer}")
        if not record.active:
            return rule(f"key {p.key_id} was already revoked at seq {record.revoked_seq}")
    elif isinstance(event, WorkflowApproved) and not _SHA256.match(event.payload.sha256):
        return rule("workflow_approved.sha256 is not a SHA-256 in hex")
    return None


def _check_addition(
    state: RegistryState, p: ReviewerAddedPayload, actor: str, root: bool
) -> tuple[str, str] | None:
    """(problem code, message) when a ``reviewer_added`` payload breaks a rule."""
    try:
        check_human(p.reviewer)
    except (UsageError, PolicyError):
        return "registry_rule", f"reviewer {p.reviewer!r} is not human:<id>"
    try:
        expected = key_id_of(p.public_key)
    except UsageError:
        return "registry_rule", "public_key is not an Ed25519 public key"
    if p.key_id != expected:
        return "registry_rule", f"key_id {p.key_id} is not the id of its public key ({expected})"
    if p.key_id in state.keys:
        return "registry_rule", f"key {p.key_id} is already in the registry"
    if not verify_signature(p.public_key, proof_message(p.reviewer, p.key_id), p.proof):
        return "registry_signature", "proof of possession does not verify with the new key"
    if root:
        if p.added_by is not None or actor != p.reviewer:
            return (
                "registry_rule",
                "the first reviewer must add themselves (actor = reviewer, no added_by)",
            )
    elif p.added_by != actor:
        return "registry_rule", f"added_by {p.added_by} differs from the entry's actor {actor}"
    return None


def _check_signer(state: RegistryState, event: Event) -> str | None:
    """A non-root entry must be signed by an active key of its actor, a member already."""
    if event.sig is None:
        return "unsigned registry entry"
    key_id = sig_key_id(event.sig)
    record = state.keys.get(key_id) if key_id else None
    if record is None:
        return f"signed by key {key_id}, which is not a member of the registry"
    if not record.active:
        return f"signed by key {key_id}, revoked at seq {record.revoked_seq}"
    if record.reviewer != event.actor:
        return f"signed by a key of {record.reviewer}, but the entry's actor is {event.actor}"
    if not verify_signature(record.public_key, canonical_bytes(event), event.sig):
        return "signature does not verify (the entry was altered or forged)"
    return None


# --------------------------------------------------------------------------- files


class ReviewerRegistry:
    """The registry ledger in ``folder`` (a workspace's ``reviewers/``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ledger = Ledger(folder / "ledger.jsonl", REGISTRY_LEDGER_ID)

    def exists(self) -> bool:
        """Whether the registry has any entry (an empty file left by a refused first append
        is not a registry)."""
        try:
            return self.ledger.path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def state(self) -> RegistryState:
        """The folded registry (empty when there is none). A line that does not decode raises
        :class:`~kernel.errors.IntegrityError`: nothing may be decided on a damaged registry."""
        return fold_registry(self.ledger.read().events)

    def verify(self) -> VerifyReport:
        """Chain, seq, batches, head anchor (as ``tht ledger verify``) plus every entry the fold
        rejected; ``ok`` is False if there is any problem."""
        if not self.exists():
            raise NotFoundError(
                f"{self.folder}: no reviewer registry; the first reviewer creates it with "
                "`tht reviewer add human:<id>`"
            )
        data, anchor = self._snapshot()
        report = verify_ledger_bytes(
            REGISTRY_LEDGER_ID,
            data,
            anchor,
            anchor_name=self.ledger.head_path.name,
            first_type="reviewer_added",
        )
        problems = list(report.problems)  # a missing anchor is one of them
        problems.extend(fold_registry(_decodable(data)).problems)
        problems.sort(key=lambda p: p.line or 0)
        return VerifyReport(
            ok=not problems, events=report.events, head=report.head, problems=problems
        )

    def _snapshot(self) -> tuple[bytes, tuple[int, str] | None]:
        # the anchor never runs ahead of the ledger: read it before and after the lines
        anchor = self.ledger.read_anchor()
        data = self.ledger.read_bytes()
        for _ in range(_VERIFY_ATTEMPTS):
            again = self.ledger.read_anchor()
            if again == anchor:
                break
            anchor, data = again, self.ledger.read_bytes()
        return data, anchor

    # ------------------------------------------------------------------ writers

    def add_reviewer(self, new: SigningKey, *, by: SigningKey | None, clock: Clock) -> Event:
        """Append ``reviewer_added`` for ``new``: self-signed when the registry is empty (then
        ``by`` must be None or ``new``), else signed by ``by``, an active member."""
        state = self._writable_state()
        if state.last_seq == 0:
            if by is not None and by.key_id != new.key_id:
                raise PolicyError(
                    "the registry is empty: its first reviewer adds themselves (drop --by)"
                )
            signer = new
        else:
            if by is None:
                raise PolicyError(
                    f"the registry already has reviewers ({', '.join(state.reviewers())}); "
                    "an existing reviewer must add the new one: pass --by human:<id>"
                )
            signer = by
        if new.key_id in state.keys:
            raise PolicyError(f"key {new.key_id} of {new.reviewer} is already in the registry")
        payload = ReviewerAddedPayload(
            reviewer=new.reviewer,
            key_id=new.key_id,
            public_key=new.public_key,
            proof=new.sign(proof_message(new.reviewer, new.key_id)),
            added_by=None if state.last_seq == 0 else signer.reviewer,
        )
        return self._append(state, "reviewer_added", payload, new.reviewer, signer, clock)

    def revoke(
        self, reviewer: str, key_id: str, reason: str, *, by: SigningKey, clock: Clock
    ) -> Event:
        """Append ``reviewer_revoked``; refused when it would leave no active key at all
        (nobody could ever sign the registry again)."""
        state = self._writable_state()
        if not reason.strip():
            raise UsageError("a revocation needs a reason: pass --reason TEXT")
        record = state.keys.get(key_id)
        if record is None or record.reviewer != reviewer:
            mine = [r.key_id for r in state.keys.values() if r.reviewer == reviewer]
            raise NotFoundError(
                f"{reviewer} has no key {key_id} in the registry"
                + (f" (their keys: {', '.join(mine)})" if mine else "")
            )
        if not record.active:
            raise PolicyError(f"key {key_id} was already revoked at {record.revoked_ts}")
        if not any(r.active for r in state.keys.values() if r.key_id != key_id):
            raise PolicyError(
                f"key {key_id} is the registry's last active key; add another reviewer first"
            )
        payload = ReviewerRevokedPayload(reviewer=reviewer, key_id=key_id, reason=reason)
        return self._append(state, "reviewer_revoked", payload, reviewer, by, clock)

    def approve_workflow(
        self, sha256: str, name: str, version: int, reason: str, *, by: SigningKey, clock: Clock
    ) -> Event:
        """Append ``workflow_approved`` for a workflow file's SHA-256."""
        state = self._writable_state()
        if not _SHA256.match(sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256 in lowercase hex")
        payload = WorkflowApprovedPayload(sha256=sha256, name=name, version=version, reason=reason)
        return self._append(state, "workflow_approved", payload, sha256, by, clock)

    def _writable_state(self) -> RegistryState:
        """The state a write follows: refused on a registry that fails verification."""
        if self.exists():
            report = self.verify()
            if not report.ok:
                first = report.problems[0]
                raise IntegrityError(
                    f"the reviewer registry failed verification ({first.code}: "
                    f"{first.message}); nothing was written. Run `tht reviewer verify`"
                )
        return self.state()

    def _append(
        self,
        state: RegistryState,
        event_type: str,
        payload: Payload,
        subject: str,
        by: SigningKey,
        clock: Clock,
    ) -> Event:
        if state.last_seq:
            self._check_member(state, by)
        draft = EventDraft(type=event_type, actor=by.reviewer, payload=payload, subject=subject)
        self._prepare_files()
        try:
            result = self.ledger.append(
                [draft],
                expected_last_seq=state.last_seq,
                clock=clock,
                signer=_checked_signer(state, by),
            )
        except ConflictError as err:
            raise ConflictError(
                "the reviewer registry changed while this command ran; run it again",
                details=err.details,
            ) from err
        finally:
            self.ledger.close()
        with contextlib.suppress(OSError):
            os.chmod(self.ledger.head_path, 0o600)
        return result.events[0]

    @staticmethod
    def _check_member(state: RegistryState, by: SigningKey) -> None:
        record = state.keys.get(by.key_id)
        if record is None or record.public_key != by.public_key or record.reviewer != by.reviewer:
            raise PolicyError(
                f"{by.reviewer}'s key {by.key_id} is not in this workspace's reviewer registry; "
                "an existing reviewer must add it (`tht reviewer add ... --by human:<id>`)"
            )
        if not record.active:
            raise PolicyError(
                f"{by.reviewer}'s key {by.key_id} was revoked at {record.revoked_ts}; "
                "it can no longer sign"
            )

    def _prepare_files(self) -> None:
        """The folder 0700 and the files 0600 before the ledger first opens them (its own
        ``os.open`` would create them 0644)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in (self.ledger.path, self.ledger.lock_path):
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _checked_signer(state: RegistryState, key: SigningKey) -> Callable[[Event], str | None]:
    """Sign the stamped entry, then refuse it (nothing written) if the fold would reject it."""

    def sign(event: Event) -> str | None:
        sig = key.sign_event(event)
        problem = check_entry(state, msgspec.structs.replace(event, sig=sig))
        if problem is not None:
            raise PolicyError(f"refused: {problem.message}; nothing was written")
        return sig

    return sign


def _decodable(data: bytes) -> list[Event]:
    """Every complete line that decodes (the others are already verification problems)."""
    events = []
    for line in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        try:
            events.append(decode_event(line))
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
    return events
