"""The session display: what ``status`` and the reviewer web UI show of a session, and what it is
folded from (:meth:`kernel.workflow_kernel.WorkflowKernel.load_for_display`). Display only —
nothing decides on it.

Whether a display must rest on the verified ledger is a trust decision
(:func:`shown_verified`): a reviewer reads it before deciding, and anyone with the user's account
can write the status cache. Only an unsigned session in an unsigned workspace is shown from that
cache (:func:`unsigned_display`), checked cheaply.
"""

from collections.abc import Callable

from kernel import events as ev
from kernel.errors import NotFoundError
from kernel.fold import SessionState, fold, fold_from
from kernel.ledger import Problem, TornTail
from kernel.session_signatures import session_check
from kernel.status_cache import read_cache, write_cache
from kernel.store.base import LedgerPort, SessionStore
from kernel.trust import Trust
from kernel.workflow import WorkflowSpec

__all__ = ["shown_verified", "unsigned_display"]


def shown_verified(first: ev.Event | None, trust: Callable[[], Trust]) -> bool:
    """Whether a display of the session that ``first`` opens must rest on the verified
    ledger: the session was created signed, or the workspace is in signed mode now (``trust``
    is asked for only then)."""
    if isinstance(first, ev.SessionCreated) and first.payload.human_decisions == "signed":
        return True
    return trust().signed


def unsigned_display(
    store: SessionStore, ledger: LedgerPort, session: str, workflow: WorkflowSpec, trust: Trust
) -> tuple[SessionState, str, TornTail | None, list[Problem]]:
    """An unsigned session's display: the cached fold plus new events when the cache still
    matches the ledger's tail, else a full fold; the problems are those of the cheap checks
    (torn tail, anchor) and the ones the fold recorded. The state, head, torn tail, problems."""
    tail_problems: list[Problem] = []
    cache = read_cache(store, session, workflow)
    if cache is not None:
        read = ledger.read_after(cache.last_seq, cache.hint)
        state = fold_from(workflow, cache.state, read.events) if read.events else cache.state
        head = read.head if read.events else cache.head
    else:
        read = ledger.read()
        state = fold(workflow, read.events, human_check=session_check(trust, read.events))
        head = read.head
    if not state.session:
        raise NotFoundError(f"session {session} has no events yet")
    if read.events:
        write_cache(store, session, workflow, state, ledger.tail())
    if read.torn is not None:
        tail_problems.append(Problem("torn_tail", "an interrupted write", repairable=True))
    anchor = ledger.read_anchor()
    if anchor is None or anchor != (state.last_seq, head):
        tail_problems.append(Problem("head_anchor", "the ledger disagrees with its head anchor"))
    issues = [Problem(i.rule, i.message, seq=i.seq) for i in state.integrity]
    return state, head, read.torn, tail_problems + issues
