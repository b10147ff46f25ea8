"""Signed checkpoints: the verified fold of a session's prefix, signed by a reviewer, so a policy
decision folds only what came after it (ARCHITECTURE §3.9 rule 4, "a checkpoint you can verify").

A cache file is never trusted because anyone with the user's account can write it. A checkpoint
is different: it is written by tht right after a signed human command — when the reviewer's key
is unlocked and the kernel has just folded the whole verified ledger — and it is signed with that
key over ``(session, seq, head, workflow, SHA-256 of the folded state)``. Reading it back costs
one Ed25519 verification and one line hash:

- the line at ``seq`` must hash to ``head``: by the hash chain, the whole prefix is then exactly
  the history the reviewer's tht verified (an edit anywhere before it changes that line's
  ``prev``, hence its hash);
- the stored state must hash to the signed digest;
- what follows must continue the chain from ``head``, gapless, in whole batches, ending exactly
  at the head anchor.

Anything else (no checkpoint, another key, a revoked one, a changed line, an odd tail) simply
falls back to the full verified fold, which then reports the problem. An agent can delete a
checkpoint or put back an older genuine one: both only cost time.

This module is the format and its pure checks; the kernel's side — writing one, loading from it,
the rollback it gives away — is :mod:`kernel.session_checkpoints`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import msgspec

from kernel import events as ev
from kernel.ledger_verify import line_hash

__all__ = [
    "Checkpoint",
    "SignatureCheck",
    "checkpoint_message",
    "continue_chain",
    "decode_checkpoint",
    "encode_checkpoint",
]

#: (reviewer, data, sig, ts) → True when ``sig`` is by a key of ``reviewer`` valid at ``ts``
SignatureCheck = Callable[[str, bytes, str, str], bool]

_VERSION = 1


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    version: int = _VERSION
    session: str
    seq: int
    head: str
    hint: int  # the store's opaque position of line ``seq`` (checked against ``head``)
    workflow: str  # the compiled workflow's source SHA-256 the state was folded with
    state_sha256: str
    signer: str
    ts: str  # the signed event's timestamp (the key must be valid then)
    sig: str


class _File(msgspec.Struct, frozen=True, kw_only=True):
    checkpoint: Checkpoint
    state: bytes  # msgpack of the SessionState


_ENC = msgspec.msgpack.Encoder()
_DEC = msgspec.msgpack.Decoder(_File)


def checkpoint_message(
    session: str, seq: int, head: str, workflow: str, state_sha256: str
) -> bytes:
    return f"tht-checkpoint:v{_VERSION}:{session}:{seq}:{head}:{workflow}:{state_sha256}".encode()


def encode_checkpoint(
    *,
    session: str,
    seq: int,
    head: str,
    hint: int,
    workflow: str,
    state: bytes,
    signer: str,
    ts: str,
    sign: Callable[[bytes], str],
) -> bytes:
    digest = hashlib.sha256(state).hexdigest()
    checkpoint = Checkpoint(
        session=session,
        seq=seq,
        head=head,
        hint=hint,
        workflow=workflow,
        state_sha256=digest,
        signer=signer,
        ts=ts,
        sig=sign(checkpoint_message(session, seq, head, workflow, digest)),
    )
    return _ENC.encode(_File(checkpoint=checkpoint, state=state))


def decode_checkpoint(
    data: bytes, session: str, workflow: str, check: SignatureCheck
) -> tuple[Checkpoint, bytes] | None:
    """The checkpoint and its state bytes, or None unless every check passes."""
    try:
        found = _DEC.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    cp = found.checkpoint
    if cp.version != _VERSION or cp.session != session or cp.workflow != workflow:
        return None
    if hashlib.sha256(found.state).hexdigest() != cp.state_sha256:
        return None
    message = checkpoint_message(cp.session, cp.seq, cp.head, cp.workflow, cp.state_sha256)
    if not check(cp.signer, message, cp.sig, cp.ts):
        return None
    return cp, found.state


def continue_chain(
    line: bytes, following: list[bytes], cp: Checkpoint, anchor: tuple[int, str] | None
) -> tuple[list[ev.Event], str] | None:
    """The events after the checkpoint when the ledger continues it exactly (pure), else None.

    ``line`` is the checkpoint's line as the store holds it now, ``following`` every committed
    line after it (the store returns None instead when its ledger ends torn).
    """
    if line_hash(line) != cp.head:
        return None
    tail = b"".join(raw + b"\n" for raw in following)
    try:
        events = list(ev.decode_lines(tail)) if tail else []
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    prev = cp.head
    seq = cp.seq
    pending = 0
    batch_ts = ""
    for event, raw in zip(events, following, strict=True):
        seq += 1
        if event.seq != seq or event.prev != prev or event.v != ev.info_of(event).version:
            return None
        if pending and (event.batch_left != pending - 1 or event.ts != batch_ts):
            return None
        pending = event.batch_left
        batch_ts = event.ts
        prev = line_hash(raw)
    if pending:
        return None  # a batch cut short
    if anchor != (seq, prev):
        return None
    return events, prev
