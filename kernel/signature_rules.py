"""The signature rules (ARCHITECTURE §3.9 rule 1, docs/security.md): who is a human actor, what
a check of a human event's signature is (:data:`HumanCheck`: the reviewer registry's), and which
human entries of a workspace-level ledger (the Metadata Catalog, the Memory registry) must be
signed — every one after where the reviewer registry recorded that signed mode began
(:class:`SigningStart`, :func:`ledger_start`), and in any case every one after the ledger's first
signed entry.

A session's fold applies the check in its replay (:mod:`kernel.replay`); which of a session's
signatures it checks is :mod:`kernel.session_signatures`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from kernel import events as ev
from kernel.ledger_verify import line_hash
from kernel.reviewer_events import LedgerStart

__all__ = ["HumanCheck", "SigningStart", "is_human_actor", "ledger_start", "signature_problems"]

#: in signed mode: None when a human event's signature is valid, else the reason
HumanCheck = Callable[[ev.Event], "str | None"]

_HUMAN = re.compile(r"^human:[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


@runtime_checkable
class SigningStart(Protocol):
    """A :data:`HumanCheck` that also knows where signed mode began in each workspace-level
    ledger (the reviewer registry's, :class:`kernel.reviewers.HumanEventCheck`)."""

    def __call__(self, event: ev.Event) -> str | None: ...

    def signed_from(self, ledger: str) -> LedgerStart | None: ...


def is_human_actor(actor: str) -> bool:
    return _HUMAN.match(actor) is not None


def signature_problems(
    events: Sequence[ev.Event], check: HumanCheck | None, *, ledger: str | None = None
) -> list[tuple[int, str]]:
    """The signature rule of a workspace-level ledger (the Metadata Catalog, the Memory
    registry; ``ledger`` names it): every human entry's signature must verify (``check``: the
    reviewer registry's; None — no registry — verifies none), and once a human entry is signed
    every later one must be (signing, once begun, cannot be dropped by an unsigned forgery).

    Where the registry's root recorded where signed mode began in this ledger
    (:func:`ledger_start`: its last human entry then), every human entry after that one must be
    signed too, even with no signed one before it: whether the workspace is signed is the
    registry's word, signed by its root — not something an agent decides by moving
    ``reviewers/`` aside while it writes "human" entries. The unsigned human entries up to it
    stand while the ledger's line there still hashes to the recorded ``head``, so the root's
    signature witnesses them: an agent that rolls the ledger back below it cannot write others
    in their place. A check that records no start (a registry started before tht recorded it,
    no registry) keeps the rule of the first paragraph. ``(seq, reason)`` pairs."""
    start = _start_of(check, ledger)
    witnessed = start is None or _witnessed(events, start)
    problems: list[tuple[int, str]] = []
    signing = False
    for event in events:
        if not is_human_actor(event.actor):
            continue
        if event.sig is None:
            if signing:
                problems.append((event.seq, "an unsigned human entry after signed ones"))
            elif start is not None and (event.seq > start.seq or not witnessed):
                assert ledger is not None
                problems.append((event.seq, _unsigned_reason(check, event, ledger, start)))
            continue
        signing = True
        reason = (
            check(event)
            if check is not None
            else "no reviewer registry: the signature cannot be verified"
        )
        if reason is not None:
            problems.append((event.seq, reason))
    return problems


def ledger_start(events: Sequence[ev.Event], head: str) -> LedgerStart:
    """Where signed mode begins in a workspace-level ledger whose lines are ``events`` (what
    ``tht reviewer add`` records for the registry's first reviewer): its last human entry and
    the hash of that line as tht writes it (the event's deterministic encoding — the bytes its
    signature would cover, with ``sig``); seq 0 and the ledger's ``head`` when it has none."""
    for event in reversed(events):
        if is_human_actor(event.actor):
            return LedgerStart(seq=event.seq, head=line_hash(ev.encode_event(event)))
    return LedgerStart(seq=0, head=head)


def _start_of(check: HumanCheck | None, ledger: str | None) -> LedgerStart | None:
    if ledger is None or not isinstance(check, SigningStart):
        return None
    return check.signed_from(ledger)


def _witnessed(events: Sequence[ev.Event], start: LedgerStart) -> bool:
    """Whether the ledger's entry ``start.seq`` is still the one recorded: the same line, as
    tht writes it. Its ``prev`` is in those bytes, so the history before it is the same too
    (the hash chain is the ledger's own check). A human entry re-encodes byte for byte, or its
    signature could not verify either."""
    if start.seq == 0:
        return True
    at = next((e for e in events if e.seq == start.seq), None)
    return at is not None and line_hash(ev.encode_event(at)) == start.head


def _unsigned_reason(
    check: HumanCheck | None, event: ev.Event, ledger: str, start: LedgerStart
) -> str:
    if event.seq <= start.seq:
        return (
            f"an unsigned human entry from before signed mode began, but line {start.seq} of "
            f"the {ledger} ledger is not the one the reviewer registry recorded then (rolled "
            "back or rewritten): nothing witnesses it"
        )
    found = (check(event) if check is not None else None) or "unsigned human entry"
    after = f" after seq {start.seq}" if start.seq else ""
    return f"{found}: every human entry of the {ledger} ledger{after} must be signed"
