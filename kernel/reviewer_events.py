"""The reviewer registry's entries (ARCHITECTURE §3.9): who may sign human decisions.

The reviewer registry is a workspace-level ledger (``store.workspace_ledger("reviewers")``,
§3.5): the same envelope, hash chain and store as a session, never valid in one. Its entries:

- ``reviewer_added``: a reviewer's public key, with its proof of possession; the registry's
  first one also records where signed mode began in each workspace-level ledger
  (``signed_from``);
- ``reviewer_revoked``: a key that may no longer sign;
- ``workflow_approved``: a custom workflow file a reviewer approved for signed sessions.

They are registered with every other type in :mod:`kernel.events`, which re-exports them.
"""

import msgspec

from kernel.event_base import Event, Payload

__all__ = [
    "LedgerStart",
    "ReviewerAdded",
    "ReviewerAddedPayload",
    "ReviewerRevoked",
    "ReviewerRevokedPayload",
    "WorkflowApproved",
    "WorkflowApprovedPayload",
]


class LedgerStart(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where signed mode began in one workspace-level ledger: its last human entry when the
    registry's first reviewer added themselves (``seq`` 0 when it had none) and that line's
    hash, so the root's signature also witnesses the unsigned human entries up to it (a
    rollback below it and a rewrite are told apart from the original history)."""

    seq: int
    head: str


class ReviewerAddedPayload(Payload, frozen=True, kw_only=True, omit_defaults=True):
    """A reviewer's public key. ``proof`` is the new key's own signature of
    ``tht-reviewer-key:<reviewer>:<key_id>`` (proof of possession); the line itself is signed by
    the new key for the registry's first reviewer, by an existing reviewer afterwards.

    ``signed_from`` (the registry's first entry only): where signed mode began in each
    workspace-level ledger (``catalog``, ``memory``): a human entry after it must be signed,
    whatever the workspace looks like when it is read (kernel/replay.signature_problems).
    Omitted when None, so entries written before the field existed encode, and verify, as they
    were signed — which is also why ``added_by`` has no default: those lines always carry it,
    ``null`` included, and an omitted default would change their bytes."""

    reviewer: str
    key_id: str
    public_key: str  # base64 of the raw 32-byte Ed25519 public key
    proof: str
    added_by: str | None
    signed_from: dict[str, LedgerStart] | None = None


class ReviewerRevokedPayload(Payload, frozen=True, kw_only=True, omit_defaults=True):
    """A key that may no longer sign. ``compromised``: someone else may hold it, so the
    revocation is retroactive — its signatures count only where a later signature of a trusted
    key witnesses them (an event's ``ts`` is what its signer wrote: a leaked key can sign as of
    any instant before an ordinary revocation). Omitted when false, so lines written before the
    field existed encode, and verify, as they were signed."""

    reviewer: str
    key_id: str
    reason: str
    compromised: bool = False


class WorkflowApprovedPayload(Payload, frozen=True, kw_only=True):
    """A reviewer approved a custom workflow file (by the SHA-256 of its bytes) for signed
    sessions: without it, an agent-written ``workflow.yaml`` could make every stage automatic."""

    sha256: str
    name: str
    version: int
    reason: str = ""


class ReviewerAdded(Event, tag="reviewer_added", frozen=True, kw_only=True):
    payload: ReviewerAddedPayload


class ReviewerRevoked(Event, tag="reviewer_revoked", frozen=True, kw_only=True):
    payload: ReviewerRevokedPayload


class WorkflowApproved(Event, tag="workflow_approved", frozen=True, kw_only=True):
    payload: WorkflowApprovedPayload
