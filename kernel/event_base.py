"""The ledger envelope and the payload base (ARCHITECTURE §3.1), apart from the registry of
event types (:mod:`kernel.events`) so that event families defined in their own files (the
workspace ledgers': :mod:`kernel.reviewer_events`, :mod:`kernel.catalog_events`,
:mod:`kernel.memory_events`) share them without an import cycle."""

from __future__ import annotations

import msgspec

__all__ = ["Event", "Payload"]


class Payload(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, gc=False):
    """Base of every payload: strict (unknown fields are an error)."""


class Event(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True, gc=False):
    """The envelope; ``payload`` is declared by each subclass, so it encodes last.

    Every field but ``sig`` is required: every line carries the whole envelope, and events are
    only ever constructed by the ledger's stamping (from an :class:`EventDraft`) or by decoding.
    ``batch_left`` counts the lines of the same append batch that follow this one (0 ends a
    batch): a reader treats a batch whose last line is missing as never written.

    ``sig`` is the reviewer's signature of a human decision (ARCHITECTURE §3.9, signed mode):
    ``ed25519:<key id>:<base64 signature>`` over the line's *canonical bytes* — the same event
    encoded without ``sig`` (absent fields are omitted, so those bytes are exactly the line an
    unsigned event has). The signed bytes include ``prev``, so a signature also witnesses the
    whole history before it.
    """

    seq: int
    ts: str
    v: int
    actor: str
    stage: str | None
    invocation: str | None
    attempt: int | None
    subject: str | None
    retracts: int | None
    causation: int | None
    batch_left: int
    prev: str
    sig: str | None = None
