"""A session's signed checkpoints at work (their format and the checks that make one usable:
:mod:`kernel.checkpoint`): the kernel writes one right after each signed human command, starts a
policy load from the session's checkpoint when it verifies and the ledger continues it, and
reads a rollback from one that records a line the ledger no longer has — a tripwire, not a
boundary (docs/security.md).
"""

import msgspec

from kernel.checkpoint import SignatureCheck, continue_chain, decode_checkpoint, encode_checkpoint
from kernel.fold import SessionState, fold_from
from kernel.ledger import LedgerTail, Problem, line_hash
from kernel.log import get_logger
from kernel.session_signatures import session_check
from kernel.store.base import SessionStore
from kernel.trust import ReviewerSigner, Trust
from kernel.workflow import WorkflowSpec

logger = get_logger(__name__)

__all__ = ["checkpoint_state", "rolled_back", "write_checkpoint"]

_STATE_ENC = msgspec.msgpack.Encoder()
_STATE_DEC = msgspec.msgpack.Decoder(SessionState)


def write_checkpoint(
    store: SessionStore,
    session: str,
    workflow: WorkflowSpec,
    state: SessionState,
    tail: LedgerTail,
    key: ReviewerSigner,
) -> None:
    """A signed checkpoint of the state just folded from the verified ledger
    (kernel/checkpoint.py): the next policy load folds only what follows it."""
    if tail.last_seq != state.last_seq or state.integrity or state.last_ts is None:
        return
    try:
        data = _STATE_ENC.encode(state)
    except OverflowError:  # an integer beyond msgpack's range: no checkpoint, full folds
        return
    blob = encode_checkpoint(
        session=session,
        seq=tail.last_seq,
        head=tail.head,
        hint=tail.hint,
        workflow=workflow.sha256,
        state=data,
        signer=key.reviewer,
        ts=state.last_ts,
        sign=key.sign,
    )
    store.write_checkpoint(session, blob)


def checkpoint_state(
    store: SessionStore, trust: Trust, session: str, workflow: WorkflowSpec
) -> tuple[SessionState, str] | None:
    """The state from the session's signed checkpoint plus the events after it (replayed: the
    caller refuses its integrity issues) and the head, or None (then the whole ledger is
    verified and folded)."""
    check = trust.check_signature
    if check is None:
        return None
    raw = store.read_checkpoint(session)
    if raw is None:
        return None
    found = decode_checkpoint(raw, session, workflow.sha256, check)
    if found is None:
        logger.debug("checkpoint of %s not trusted (signature, session or state)", session)
        return None
    cp, state_bytes = found
    ledger = store.ledger(session)
    anchor = ledger.read_anchor()
    line = ledger.line_at(cp.seq, cp.hint)
    after = ledger.lines_after(cp.seq, cp.hint) if line is not None else None
    if line is None or after is None:
        logger.debug("checkpoint of %s: line %d is not where it was", session, cp.seq)
        return None
    following = continue_chain(line, after, cp, anchor)
    if following is None:
        logger.debug("checkpoint of %s: the ledger does not continue it", session)
        return None
    events, head = following
    try:
        state = _STATE_DEC.decode(state_bytes)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if state.last_seq != cp.seq or state.session != session or state.integrity:
        return None
    first = ledger.first_event()
    human_check = session_check(trust, [first, *events] if first is not None else [], full=True)
    if events:
        state = fold_from(workflow, state, events, human_check=human_check)
    return state, head


def rolled_back(
    store: SessionStore,
    check: SignatureCheck | None,
    session: str,
    workflow: WorkflowSpec,
    last_seq: int,
) -> Problem | None:
    """A rollback the session's signed checkpoint gives away: it records a line this ledger
    no longer has — the ledger ends before it, or holds another line there. A prefix of a
    valid ledger verifies by itself (docs/security.md), so this is a tripwire only: an agent
    that also removes the checkpoint, or puts back an older genuine one, is not seen.
    ``check``: the trusted reviewers' signature check (None: no checkpoint is trusted)."""
    if check is None:
        return None
    raw = store.read_checkpoint(session)
    found = decode_checkpoint(raw, session, workflow.sha256, check) if raw else None
    if found is None:
        return None
    cp = found[0]
    if cp.seq > last_seq:
        what = f"the ledger ends at seq {last_seq}"
    else:
        line = store.ledger(session).line_at(cp.seq, cp.hint)
        if line is not None and line_hash(line) == cp.head:
            return None
        what = f"its line {cp.seq} is another one"
    return Problem(
        "rolled_back",
        f"{what}, but {cp.signer} signed a checkpoint of it at seq {cp.seq}: lines were "
        "removed from its end (a rollback); restore them from a backup, or record the "
        "loss with `tht ledger verify --repair --reason T --as human:<id>`",
    )
