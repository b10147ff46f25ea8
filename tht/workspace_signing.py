"""Signing for the workspace-level ledgers (the Metadata Catalog, the Memory registry): in
signed mode a human's entry is signed with their unlocked reviewer key, and every signature is
checked against the reviewer registry (ARCHITECTURE §3.9) — the same trust as a session's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.events import Event
    from kernel.ledger_records import Signer
    from kernel.reviewer_events import LedgerStart
    from tht.composition import App

__all__ = ["human_check", "signer_for"]


def signer_for(app: App) -> Any:
    def signer_for(actor: str) -> Signer | None:
        from kernel.errors import PolicyError

        trust = app.kernel.trust
        if not trust.signed:
            return None
        if trust.unlock is None:
            raise PolicyError("signed mode: no way to unlock a reviewer key here")
        key = trust.unlock(actor)
        if key.reviewer != actor:
            raise PolicyError(f"the key unlocked is {key.reviewer}'s, not {actor}'s")

        def sign(event: Event) -> str | None:
            return key.sign_event(event) if event.actor == actor else None

        return sign

    return signer_for


def human_check(app: App) -> Any:
    """The signature check of a workspace-level ledger: the reviewer registry's, read on first
    use, which also says where signed mode began in that ledger
    (:class:`kernel.signature_rules.SigningStart`)."""
    return _WorkspaceCheck(app)


class _WorkspaceCheck:
    def __init__(self, app: App) -> None:
        self._app = app

    def __call__(self, event: Event) -> str | None:
        found = self._app.kernel.trust.human_check
        if found is None:
            return "no reviewer registry: the signature cannot be verified"
        return found(event)

    def signed_from(self, ledger: str) -> LedgerStart | None:
        """Where the registry's root recorded that signed mode began in ``ledger``. No
        registry: nothing recorded (an unsigned workspace). A registry that does not verify
        trusts nobody (composition.trust_of): every human entry must be signed — and no
        signature verifies."""
        from kernel.reviewer_events import LedgerStart
        from kernel.signature_rules import SigningStart

        found = self._app.kernel.trust.human_check
        if found is None:
            return None
        if isinstance(found, SigningStart):
            return found.signed_from(ledger)
        return LedgerStart(seq=0, head="")
