"""The status cache: a session's folded state after ``(last_seq, head)``, so that the display of
an unsigned session folds only what was appended since (ARCHITECTURE §3.9 rule 4: caches serve
display only — anyone with the user's account can write one, so no policy decision reads it, and
a signed session is never shown from it).

It is keyed by logical identity: it is used only while the ledger's line ``last_seq`` still
hashes to ``head`` (a repair or an edit under it means a fold afresh) and the workflow is the one
it was folded with; ``hint``, the store's opaque position of that line, only finds it.
"""

import msgspec

from kernel.fold import SessionState
from kernel.ledger import LedgerTail, line_hash
from kernel.store.base import SessionStore
from kernel.workflow import WorkflowSpec

__all__ = ["StatusCache", "read_cache", "write_cache"]


class StatusCache(msgspec.Struct, frozen=True, kw_only=True):
    """The folded state after ``(last_seq, head)`` (logical identity; ``hint`` is the store's
    opaque position of that line, used only once the line there hashes to ``head``)."""

    version: int = 2
    workflow: str
    hint: int
    last_seq: int
    head: str
    state: SessionState


_CACHE_ENC = msgspec.msgpack.Encoder()
_CACHE_DEC = msgspec.msgpack.Decoder(StatusCache)


def read_cache(store: SessionStore, session: str, workflow: WorkflowSpec) -> StatusCache | None:
    raw = store.read_cache(session)
    if raw is None:
        return None
    try:
        cache = _CACHE_DEC.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if cache.workflow != workflow.sha256:
        return None
    line = store.ledger(session).line_at(cache.last_seq, cache.hint)
    if line is None or line_hash(line) != cache.head:
        return None  # the ledger changed under the cache (repair, tampering): fold afresh
    return cache


def write_cache(
    store: SessionStore,
    session: str,
    workflow: WorkflowSpec,
    state: SessionState,
    tail: LedgerTail,
) -> None:
    if tail.last_seq != state.last_seq:
        return  # someone appended meanwhile; the next load refreshes
    cache = StatusCache(
        workflow=workflow.sha256,
        hint=tail.hint,
        last_seq=tail.last_seq,
        head=tail.head,
        state=state,
    )
    try:
        data = _CACHE_ENC.encode(cache)
    except OverflowError:
        # A payload integer beyond 64 bits: the JSON ledger holds it, msgpack cannot. The
        # cache is an optimisation only; without it the next load folds the whole ledger.
        return
    store.write_cache(session, data)
