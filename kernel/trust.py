"""What the kernel trusts (ARCHITECTURE §3.9), handed to it by the composition root.

- ``signed``: the workspace is in signed mode (``human_decisions: signed`` in ``workspace.yaml``
  or a reviewer registry with reviewers): new sessions record ``human_decisions: signed`` and
  every human event a command appends is signed with the reviewer's key.
- ``human_check``: the reviewer registry's signature check; applied by the fold to every human
  event of a session recorded as signed (and to any human event that carries a ``sig``).
- ``approved_workflows``: SHA-256 of the custom workflow files a reviewer approved; a signed
  session may only be created with the packaged workflow or an approved one.
- ``unlock``: turns ``human:<id>`` into a signer, asking the reviewer for their passphrase at the
  controlling terminal (or, in the web UI, using the key unlocked for that browser session).
- ``check_signature``: the registry's check of a reviewer's signature over raw bytes, for the
  signed checkpoints policy folds start from.
- ``compromised``: whether a human event is signed by a key revoked as compromised (the fold
  accepts it only before a later trusted signature, its witness).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kernel.checkpoint import SignatureCheck
from kernel.events import Event
from kernel.signature_rules import HumanCheck

__all__ = ["ReviewerSigner", "Trust", "no_registry_check"]


class ReviewerSigner(Protocol):
    """A reviewer's unlocked key (kernel.signing.SigningKey is one)."""

    @property
    def reviewer(self) -> str: ...

    def sign(self, data: bytes) -> str: ...

    def sign_event(self, event: Event) -> str: ...


def no_registry_check(event: Event) -> str | None:
    """The check of a signed session whose workspace has no reviewer registry: nothing
    verifies."""
    return "no reviewer registry: no human signature can be verified"


@dataclass(frozen=True)
class Trust:
    signed: bool = False
    human_check: HumanCheck | None = None
    approved_workflows: frozenset[str] = frozenset()
    unlock: Callable[[str], ReviewerSigner] | None = field(default=None, repr=False)
    #: verifies a reviewer's signature of raw bytes (signed checkpoints, kernel/checkpoint.py)
    check_signature: SignatureCheck | None = field(default=None, repr=False)
    #: whether a human event carries a genuine signature by a key revoked as compromised: valid
    #: only where a later signature of a trusted key witnesses it
    compromised: Callable[[Event], bool] | None = field(default=None, repr=False)

    def check_for(self, session_signed: bool) -> HumanCheck | None:
        """The signature check the fold applies to a session: every human event of a signed
        session; in an unsigned one, only events that carry a signature (never forged ones)."""
        if session_signed:
            return self.human_check or no_registry_check
        check = self.human_check
        if check is None:
            return None

        def signed_only(event: Event) -> str | None:
            return check(event) if event.sig is not None else None

        return signed_only
