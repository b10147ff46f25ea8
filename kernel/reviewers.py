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

The root entry also records where signed mode began in each workspace-level ledger
(``signed_from``: the seq and hash of its last human entry then): a human entry of the catalog or
the memory registry after that one must be signed, even when no signed human entry precedes it —
signed mode is a fact of the registry, which the agent cannot rewrite, not of files it can move
aside (:meth:`HumanEventCheck.signed_from`, :func:`kernel.signature_rules.signature_problems`).

:func:`fold_registry` is pure and total (every entry is either applied or reported); the writers
of :class:`kernel.reviewer_registry.ReviewerRegistry` (the file side) refuse exactly what the fold
would reject, by checking the signed entry against the folded state under the ledger's lock
before it is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kernel.errors import PolicyError, UsageError
from kernel.events import REGISTRY_TYPES, Event, canonical_bytes, info_of
from kernel.ledger_verify import Problem
from kernel.reviewer_events import (
    LedgerStart,
    ReviewerAdded,
    ReviewerAddedPayload,
    ReviewerRevoked,
    WorkflowApproved,
)
from kernel.signing import (
    key_id_of,
    proof_message,
    sig_key_id,
    verify_signature,
)
from kernel.transitions import check_human

__all__ = [
    "REGISTRY_LEDGER_ID",
    "HumanEventCheck",
    "RegistryState",
    "ReviewerKeyRecord",
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
    #: revoked as compromised: its signatures count only where a later trusted one witnesses
    compromised: bool = False

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
    #: where signed mode began in each workspace-level ledger (the root entry's record); None
    #: for a registry started before tht recorded it (those ledgers keep the older rule)
    signed_from: Mapping[str, LedgerStart] | None = None

    def key(self, key_id: str) -> ReviewerKeyRecord | None:
        return self.keys.get(key_id)

    def reviewers(self) -> list[str]:
        """Reviewers with at least one active key, sorted."""
        return sorted({r.reviewer for r in self.keys.values() if r.active})

    @property
    def signed(self) -> bool:
        """True once a reviewer was ever added: from then on human decisions must be signed."""
        return bool(self.keys)

    @property
    def check_human_event(self) -> HumanEventCheck:
        """The check of a human event that the composition root hands the kernel
        (``Trust.human_check``): called on an event, None when it carries a valid signature by
        its actor's key, else why not (:meth:`human_event_problem`). A property so that the
        check handed out also says where signed mode began in each workspace-level ledger."""
        return HumanEventCheck(self)

    def human_event_problem(self, event: Event) -> str | None:
        """None when ``event`` carries a valid signature by its actor's key, else why not.

        A key revoked *after* the event still vouches for it: revocation is not retroactive
        (decisions signed while the key was trusted stay valid) — unless the key was revoked as
        compromised: then it vouches for nothing by itself (:meth:`compromised_signature`)."""
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
        if record.compromised:
            return (
                f"key {key_id} was revoked as compromised at {record.revoked_ts}: its signatures "
                "count only where a later signature of a trusted key witnesses them"
            )
        if record.revoked_ts is not None and not (_TS.match(ts) and ts < record.revoked_ts):
            return f"key {key_id} was revoked at {record.revoked_ts}"
        return None

    def compromised_signature(self, event: Event) -> bool:
        """Whether ``event`` carries a genuine signature of its actor by a key revoked as
        compromised: valid only where a later signature of a trusted key witnesses it (that
        signature covers ``prev``, the whole history, and its tht verified all of it first)."""
        key_id = sig_key_id(event.sig) if event.sig is not None else None
        record = self.keys.get(key_id) if key_id is not None else None
        if record is None or not record.compromised or record.reviewer != event.actor:
            return False
        assert event.sig is not None
        return verify_signature(record.public_key, canonical_bytes(event), event.sig)

    def signature_valid(self, reviewer: str, data: bytes, sig: str, ts: str) -> bool:
        return self.check_signed(reviewer, data, sig, ts) is None


@dataclass(frozen=True)
class HumanEventCheck:
    """A :data:`~kernel.signature_rules.HumanCheck` by the registry ``state`` that also knows
    where signed mode began in each workspace-level ledger
    (:class:`kernel.signature_rules.SigningStart`)."""

    state: RegistryState

    def __call__(self, event: Event) -> str | None:
        return self.state.human_event_problem(event)

    def signed_from(self, ledger: str) -> LedgerStart | None:
        """Where signed mode began in ``ledger`` (``catalog``, ``memory``); None when the
        registry's root did not record it (a registry started before tht did)."""
        found = self.state.signed_from
        return None if found is None else found.get(ledger)


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
        return replace(state, last_seq=last_seq, problems=(*state.problems, problem))
    keys = dict(state.keys)
    approved = state.approved_workflows
    signed_from = state.signed_from
    if isinstance(event, ReviewerAdded):
        p = event.payload
        keys[p.key_id] = ReviewerKeyRecord(p.reviewer, p.key_id, p.public_key, event.seq, event.ts)
        if state.last_seq == 0 and p.signed_from is not None:
            signed_from = dict(p.signed_from)
    elif isinstance(event, ReviewerRevoked):
        old = keys[event.payload.key_id]
        keys[old.key_id] = replace(
            old,
            revoked_seq=old.revoked_seq if old.revoked_seq is not None else event.seq,
            revoked_ts=old.revoked_ts if old.revoked_ts is not None else event.ts,
            compromised=old.compromised or event.payload.compromised,
        )
    elif isinstance(event, WorkflowApproved):
        approved = approved | {event.payload.sha256}
    return RegistryState(keys, approved, last_seq, state.problems, signed_from)


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
        wrong = _check_addition(state, event.payload, event.actor, root) or _check_signed_from(
            event.payload.signed_from, root
        )
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
        if not record.active and not (p.compromised and not record.compromised):
            # the one revocation of a revoked key: marking it compromised after all
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


def _check_signed_from(
    signed_from: Mapping[str, LedgerStart] | None, root: bool
) -> tuple[str, str] | None:
    """(problem code, message) when a ``reviewer_added``'s ``signed_from`` breaks a rule: only
    the root records it (a later entry cannot move where signed mode began), each as a seq and a
    SHA-256."""
    if signed_from is None:
        return None
    if not root:
        return "registry_rule", "only the registry's first entry records where signing began"
    for ledger, start in signed_from.items():
        if start.seq < 0 or not _SHA256.match(start.head):
            return "registry_rule", f"signed_from.{ledger} is not a seq and a SHA-256 in hex"
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
