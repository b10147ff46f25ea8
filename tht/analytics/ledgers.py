"""Session ledgers as a second source: ``tht analytics scan --sessions WORKSPACE``.

Each session ledger of the workspace is read through the store port (``LedgerPort``: the store
``workspace.yaml`` selects, filesystem or PostgreSQL; read-only, torn tail excluded) from the
stored position — ``(seq, head)`` plus the backend's opaque hint, checked with ``line_at`` before
it is used, as the kernel's own caches are. Each new event becomes a ``runtime_events`` row
(``event_type='ledger'``, ``event_origin='session_ledger'``, ``event_name`` = the ledger event
type) whose metadata keeps only what analytics needs: the session as an HMAC key, ``seq``, ``v``,
the actor's kind, stage, invocation, attempt, causation, retracts, and a few closed codes (review
kind, completion ``via``, failure code, artifact size). Questions, subjects, prompts, labels,
rationales, reasons, messages and payload contents are never stored.

After the insert, the session's ``stage_runs`` / ``stage_reviews`` are derived again from all its
imported events and its workflow snapshot's step order (:mod:`tht.analytics.stage_runs`), in the
same transaction as the rows and the position. A ledger's ``source_files`` row keeps that
position in the columns a file uses for its own: ``size`` the last seq imported, ``offset`` the
hint, ``head_hash`` the keyed hash of the head, ``head_len`` the size of a torn tail then seen
(no inode, no mtime). A ledger the kernel reader rejects (a line that is not a valid event) is
reported as ``invalid`` and left untouched: ``tht ledger verify`` says why.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kernel import events as ev
from kernel.errors import IntegrityError
from kernel.ledger_verify import line_hash
from tht.analytics.events import is_identifier, normalize_timestamp
from tht.analytics.sources import (
    ReadAction,
    SourceScan,
    SourceState,
    load_source,
    source_id,
    source_transaction,
)
from tht.analytics.stage_runs import LedgerFact, derive_stage_runs
from tht.analytics.store import AnalyticsStore

if TYPE_CHECKING:
    from kernel.ledger_records import LedgerRead, LedgerTail
    from kernel.store.base import LedgerPort

__all__ = ["KIND", "scan_ledger", "scan_sessions"]

KIND = "session_ledger"
_INVOCATION = re.compile(r"[A-Za-z0-9_.:-]{1,64}#[0-9]{1,9}")
_INSERT_EVENT = (
    "INSERT OR IGNORE INTO runtime_events (id, source_file_id, event_type, event_origin, "
    "event_name, hook_name, hook_event, occurred_at, metadata_json) "
    "VALUES (?, ?, 'ledger', 'session_ledger', ?, NULL, NULL, ?, ?)"
)
_INSERT_RUN = (
    "INSERT INTO stage_runs (id, source_file_id, session_key, stage, stage_index, first_seq, "
    "started_at, ended_at, outcome, runs, attempts, duration_ms, reviews, answered_reviews, "
    "review_wait_ms, reopen_count, last_event_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_REVIEW = (
    "INSERT INTO stage_reviews (id, stage_run_id, session_key, stage, kind, requested_at, "
    "answered_at, wait_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def scan_sessions(store: AnalyticsStore, workspace_root: Path, *, now: str) -> list[SourceScan]:
    """Import what is new in every session ledger of a workspace, from the store its
    workspace.yaml selects (exit 3 if not a workspace; 2/6 for a postgres store whose URL
    variable is unset or whose server is unreachable)."""
    from kernel.workspace import open_workspace
    from tht.store_runtime import close_store, open_store

    workspace = open_workspace(workspace_root)
    sessions = open_store(workspace)
    orders: dict[bytes, tuple[str, ...]] = {}  # sessions mostly share one workflow: parse it once

    def order_of(session_id: str) -> tuple[str, ...]:
        raw = sessions.workflow_bytes(session_id)
        if raw not in orders:
            orders[raw] = workflow_order(raw, f"sessions/{session_id}/workflow.yaml")
        return orders[raw]

    try:
        return [
            scan_ledger(
                store,
                sessions.ledger(sid),
                now=now,
                order=functools.partial(order_of, sid),
                where=str(workspace.root),
            )
            for sid in sessions.session_ids()
        ]
    finally:
        close_store(sessions)


def workflow_order(raw: bytes, source: str) -> tuple[str, ...]:
    """The step ids of a session's workflow snapshot, in order (read-only: no cache written)."""
    from kernel.workflow import load_workflow_bytes

    return tuple(step.id for step in load_workflow_bytes(raw, source).steps)


def scan_ledger(
    store: AnalyticsStore,
    ledger: LedgerPort,
    *,
    now: str,
    order: Callable[[], Sequence[str]] = tuple,
    where: str = "",
) -> SourceScan:
    """Import the new complete events of one ledger and re-derive its session's stage rows.

    ``order()`` gives the session's workflow step order; it is called only when there is
    something new to project. ``where`` (the workspace folder) tells apart two workspaces
    holding the same session id; it is part of a keyed id, never stored itself.
    """
    report = SourceScan(path=_label(ledger), kind=KIND, action="missing")
    if not ledger.exists():
        return report
    tail = ledger.tail()
    sid = source_id(store.ids, KIND, f"{where}\x00session\x00{ledger.session_id}")
    previous = load_source(store.conn, sid)
    action = _plan(store, ledger, previous, tail)
    report.action = action
    torn = 0 if tail.torn is None else len(tail.torn.data)
    if action == "unchanged":
        report.torn_tail = torn > 0
        return report
    try:
        if action == "append" and previous is not None:
            read = ledger.read_after(previous.size, previous.offset)
        else:
            read = ledger.read()
    except IntegrityError:
        report.action = "invalid"
        report.invalid_lines = 1
        return report
    report.torn_tail = read.torn is not None
    report.lines_read = len(read.events)
    rescan = action in ("truncated", "replaced")
    kept_lines = 0 if previous is None or rescan else previous.lines_read
    last_seq = read.events[-1].seq if read.events else (previous.size if previous else 0)
    state = SourceState(
        id=sid,
        inode=None,
        size=last_seq,
        mtime_ns=None,
        offset=_hint_after(ledger, read, tail, last_seq),
        head_len=torn,
        head_hash=_keyed_head(store, read.head),
        lines_read=kept_lines + len(read.events),
        rescans=(0 if previous is None else previous.rescans) + int(rescan),
    )
    session_key = store.ids.derive(f"session\x00{ledger.session_id}")
    cutoff = store.retention_cutoff()
    rows = []
    for event in read.events:
        occurred_at = normalize_timestamp(event.ts)
        if occurred_at is None:
            report.invalid_lines += 1
            continue
        if occurred_at < cutoff:
            report.older_than_retention += 1
            continue
        event_id = store.ids.derive(
            f"runtime_event\x00{KIND}\x00{ledger.session_id}\x00{event.seq}\x00{event.prev}"
        )
        meta = ledger_metadata(event, session_key)
        rows.append((event_id, sid, ev.info_of(event).type, occurred_at, json.dumps(meta)))
    conn = store.conn
    steps = tuple(order()) if rows else ()
    with source_transaction(conn, KIND, previous, state, now=now, label=report.path):
        if rows:
            inserted = conn.executemany(_INSERT_EVENT, rows).rowcount
            report.imported += inserted
            report.duplicates += len(rows) - inserted
            _project(store, conn, sid, session_key, steps)
    return report


def _label(ledger: LedgerPort) -> str:
    path = getattr(ledger, "path", None)  # the fs store's file; a server's ledger has none
    return str(path) if path is not None else f"session {ledger.session_id}"


def _keyed_head(store: AnalyticsStore, head: str) -> str:
    return store.ids.derive(f"head\x00{head}")


def _plan(
    store: AnalyticsStore, ledger: LedgerPort, previous: SourceState | None, tail: LedgerTail
) -> ReadAction:
    """``new``, ``unchanged`` (same seq, head and torn tail), ``append`` (the stored position
    is still a line of this ledger: read after it), or ``truncated`` / ``replaced`` (read it
    all again: ids derive from content, nothing is duplicated)."""
    if previous is None:
        return "new"
    torn = 0 if tail.torn is None else len(tail.torn.data)
    same_head = _keyed_head(store, tail.head) == previous.head_hash
    if tail.last_seq == previous.size and same_head:
        return "unchanged" if torn == previous.head_len else "append"
    if tail.last_seq < previous.size:
        return "truncated"
    line = ledger.line_at(previous.size, previous.offset) if previous.size else None
    if previous.size and (
        line is None or _keyed_head(store, line_hash(line)) != previous.head_hash
    ):
        return "replaced"
    return "append"


def _hint_after(ledger: LedgerPort, read: LedgerRead, tail: LedgerTail, last_seq: int) -> int:
    """The backend's hint for ``last_seq``: the tail's when the read reached it (the usual
    case), else none (0: the next scan reads the ledger from its start)."""
    return tail.hint if tail.last_seq == last_seq else 0


def ledger_metadata(event: ev.Event, session_key: str) -> dict[str, Any]:
    """The analytics-safe fields of one ledger event (never subject, payload text or actor id)."""
    actor = event.actor
    meta: dict[str, Any] = {
        "session": session_key,
        "seq": event.seq,
        "v": event.v,
        "actor": actor.split(":", 1)[0] if actor.startswith("human:") else _safe(actor),
        "stage": _safe(event.stage),
        "invocation": event.invocation if _valid_invocation(event.invocation) else None,
        "attempt": event.attempt,
        "causation": event.causation,
        "retracts": event.retracts,
    }
    if isinstance(event, ev.ReviewRequested):
        meta["kind"] = event.payload.kind
    elif isinstance(event, ev.RevisionRequested):
        meta["kind"] = "revision"
    elif isinstance(event, ev.StageCompleted):
        meta["via"] = event.payload.via
    elif isinstance(event, ev.StageFailed):
        meta["code"] = _safe(event.payload.code)
    elif isinstance(event, ev.ContributionFailed):
        meta["code"] = _safe(event.payload.code)
        meta["policy"] = event.payload.policy
    elif isinstance(event, ev.ArtifactWritten):
        meta["size"] = event.payload.size
    elif isinstance(event, ev.SessionFinalized):
        meta["effective_decisions"] = event.payload.effective_decisions
    return meta


def _project(
    store: AnalyticsStore,
    conn: sqlite3.Connection,
    sid: str,
    session_key: str,
    steps: Sequence[str],
) -> None:
    """Replace the session's stage rows with ones derived from all its imported events (from
    every file they came from: a moved workspace's ledger is the same session)."""
    facts = []
    for name, occurred_at, metadata in conn.execute(
        "SELECT event_name, occurred_at, metadata_json FROM runtime_events "
        "WHERE json_extract(metadata_json, '$.session') = ? AND event_origin = 'session_ledger' "
        "ORDER BY json_extract(metadata_json, '$.seq')",
        (session_key,),
    ):
        meta = msgspec.json.decode(metadata)
        facts.append(
            LedgerFact(
                seq=meta["seq"],
                type=name,
                ts=occurred_at,
                stage=meta.get("stage"),
                invocation=meta.get("invocation"),
                causation=meta.get("causation"),
                kind=meta.get("kind"),
            )
        )
    conn.execute("DELETE FROM stage_runs WHERE session_key = ?", (session_key,))
    index = {stage: i for i, stage in enumerate(steps)}
    runs, reviews = [], []
    for run in derive_stage_runs(facts, steps):
        run_id = store.ids.derive(f"stage_run\x00{session_key}\x00{run.stage}")
        runs.append(
            (
                run_id,
                sid,
                session_key,
                run.stage,
                index.get(run.stage),
                run.first_seq,
                run.started_at,
                run.ended_at,
                run.outcome,
                run.runs,
                run.attempts,
                run.duration_ms,
                len(run.reviews),
                run.answered_reviews,
                run.review_wait_ms,
                run.reopen_count,
                run.last_event_at,
            )
        )
        for review in run.reviews:
            reviews.append(
                (
                    store.ids.derive(f"stage_review\x00{session_key}\x00{review.request_seq}"),
                    run_id,
                    session_key,
                    run.stage,
                    review.kind,
                    review.requested_at,
                    review.answered_at,
                    review.wait_ms,
                )
            )
    conn.executemany(_INSERT_RUN, runs)
    conn.executemany(_INSERT_REVIEW, reviews)


def _safe(value: str | None) -> str | None:
    return value if value is not None and is_identifier(value) else None


def _valid_invocation(value: str | None) -> bool:
    return value is not None and _INVOCATION.fullmatch(value) is not None
