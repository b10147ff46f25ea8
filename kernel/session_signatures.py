"""The signatures of a session's human decisions, as the kernel applies them in signed mode
(the rules themselves: :mod:`kernel.signature_rules`; what the workspace trusts:
:mod:`kernel.trust`):

- which signatures a session's fold checks (:func:`session_check`): a signed human event
  witnesses the whole history before it, so only the last one that verifies and the human events
  after it are checked, and a key revoked as compromised counts only before such a witness;
- the reviewer key that signs a command's human events (:func:`reviewer_key`), refused before
  anything is written when its signatures would not verify.
"""

from collections.abc import Callable, Sequence

from kernel import events as ev
from kernel.errors import PolicyError, UsageError
from kernel.signature_rules import HumanCheck, is_human_actor
from kernel.trust import ReviewerSigner, Trust

__all__ = ["reviewer_key", "session_check"]

#: the instant a key is checked at before it signs: an active key is valid then, a revoked one
#: never (whatever its revocation's ``ts``)
_AFTER_ANY_REVOCATION = "9999-12-31T23:59:59.999Z"


def session_check(
    trust: Trust, events: Sequence[ev.Event], *, full: bool = False
) -> HumanCheck | None:
    """The signature check for a session's fold.

    A signed human event witnesses everything before it: its signature covers ``prev``,
    the hash of the whole history, and the tht that appended it had verified all of that
    history (every signature included) first — policy never appends to a ledger that does
    not verify. So, unless ``full`` (an audit), only the last signed human event and the
    human events after it are checked: one Ed25519 verification for a whole history
    instead of one per decision. A last signature that does not verify checks them all.

    A key revoked as compromised vouches for nothing by itself, whatever instant its event
    claims (``ts`` is what the signer wrote): its signature counts only before a later
    signature of a trusted key in the same ledger, which witnesses it.
    """
    created = events[0] if events else None
    signed = isinstance(created, ev.SessionCreated) and created.payload.human_decisions == "signed"
    check = trust.check_for(signed)
    if check is None:
        return check
    witness = 0
    if not full or trust.compromised is not None:
        for event in reversed(events):
            if event.sig is not None and is_human_actor(event.actor):
                witness = event.seq if check(event) is None else 0
                break
    if trust.compromised is not None:
        check = _witnessed(check, trust.compromised, witness or _last_trusted(events, check))
    if full or not witness:
        return check
    inner = check

    def after_witness(event: ev.Event) -> str | None:
        return None if event.seq <= witness else inner(event)

    return after_witness


def reviewer_key(
    drafts: Sequence[ev.EventDraft], trust: Callable[[], Trust]
) -> ReviewerSigner | None:
    """In signed mode, the reviewer's key (unlocked before the ledger is locked) that signs
    every human event of the batch. ``trust`` is asked for only when the batch holds a human
    event (the kernel builds it on first use: reading the reviewer registry costs a signature
    check)."""
    humans = {d.actor for d in drafts if is_human_actor(d.actor)}
    if not humans:
        return None
    trusted = trust()
    if not trusted.signed:
        return None
    if len(humans) > 1:
        raise UsageError("one command records the decisions of one reviewer")
    if trusted.unlock is None:
        raise PolicyError("signed mode: no way to unlock a reviewer key here")
    actor = humans.pop()
    key = trusted.unlock(actor)
    if key.reviewer != actor:
        raise PolicyError(f"the key unlocked is {key.reviewer}'s, not {actor}'s")
    check = trusted.check_signature
    probe = f"tht-can-sign:{actor}".encode()
    # as of an instant after every revocation (reading the clock would move a fixed one)
    if check is not None and not check(actor, probe, key.sign(probe), _AFTER_ANY_REVOCATION):
        # refused before anything is written: appended, its events would fail verification
        # and block the session until a human repairs it
        raise PolicyError(
            f"{actor}'s key cannot sign in this workspace now: it is revoked, or not in its "
            "reviewer registry (`tht reviewer list`)"
        )
    return key


def _last_trusted(events: Sequence[ev.Event], check: HumanCheck) -> int:
    """The seq of the last signed human event whose signature verifies (0: none)."""
    for event in reversed(events):
        if event.sig is not None and is_human_actor(event.actor) and check(event) is None:
            return event.seq
    return 0


def _witnessed(
    check: HumanCheck, compromised: Callable[[ev.Event], bool], witness: int
) -> HumanCheck:
    """``check``, except that a genuine signature by a key revoked as compromised counts before
    ``witness`` (a later trusted signature, which covers the whole history before it)."""

    def witnessed(event: ev.Event) -> str | None:
        problem = check(event)
        if problem is not None and event.seq < witness and compromised(event):
            return None
        return problem

    return witnessed
