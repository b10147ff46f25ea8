"""Session ledgers as a second source: ``tht analytics scan --sessions WORKSPACE``.

Each ``sessions/<id>/ledger.jsonl`` of the workspace is read with the kernel's own ledger reader
(``kernel.ledger.Ledger.read``: read-only, torn tail excluded) from the stored byte offset. Each new
event becomes a ``runtime_events`` row (``event_type='ledger'``, ``event_origin='session_ledger'``,
``event_name`` = the ledger event type) whose metadata keeps only what analytics needs: the session
as an HMAC key, ``seq``, ``v``, the actor's kind, stage, invocation, attempt, causation, retracts,
and a few closed codes (review kind, completion ``via``, failure code, artifact size). Questions,
subjects, prompts, labels, rationales, reasons, messages and payload contents are never stored.

After the insert, the session's ``stage_runs`` / ``stage_reviews`` are derived again from all its
imported events and its workflow snapshot's step order (:mod:`tht.analytics.stage_runs`), in the
same transaction as the rows and the offset. A ledger the kernel reader rejects (a line that is
not a valid event) is reported as ``invalid`` and left untouched: ``tht ledger verify`` says why.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from kernel import events as ev
from kernel.errors import IntegrityError
from kernel.ledger import Ledger
from tht.analytics.events import is_identifier, normalize_timestamp
from tht.analytics.sources import (
    HEAD_BYTES,
    FileView,
    SourceScan,
    SourceState,
    head_hash,
    load_source,
    plan_read,
    source_id,
    source_transaction,
)
from tht.analytics.stage_runs import LedgerFact, derive_stage_runs
from tht.analytics.store import AnalyticsStore

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
    """Import what is new in every session ledger of a workspace (exit 3 if not a workspace)."""
    from kernel.store.fs import FileSystemStore
    from kernel.workspace import open_workspace

    workspace = open_workspace(workspace_root)
    sessions = FileSystemStore(workspace.sessions_dir, workspace.cache_dir)
    orders: dict[bytes, tuple[str, ...]] = {}  # sessions mostly share one workflow: parse it once

    def order_of(session_id: str) -> tuple[str, ...]:
        raw = sessions.workflow_bytes(session_id)
        if raw not in orders:
            orders[raw] = workflow_order(raw, f"sessions/{session_id}/workflow.yaml")
        return orders[raw]

    return [
        scan_ledger(store, sessions.ledger(sid), now=now, order=functools.partial(order_of, sid))
        for sid in sessions.session_ids()
    ]


def workflow_order(raw: bytes, source: str) -> tuple[str, ...]:
    """The step ids of a session's workflow snapshot, in order (read-only: no cache written)."""
    from kernel.workflow import load_workflow_bytes

    return tuple(step.id for step in load_workflow_bytes(raw, source).steps)


def scan_ledger(
    store: AnalyticsStore,
    ledger: Ledger,
    *,
    now: str,
    order: Callable[[], Sequence[str]] = tuple,
) -> SourceScan:
    """Import the new complete events of one ledger and re-derive its session's stage rows.

    ``order()`` gives the session's workflow step order; it is called only when there is
    something new to project.
    """
    report = SourceScan(path=str(ledger.path), kind=KIND, action="missing")
    try:
        fh = ledger.path.open("rb")
    except FileNotFoundError:
        return report
    with fh:
        view = FileView.of(os.fstat(fh.fileno()))
        sid = source_id(store.ids, KIND, str(ledger.path.resolve()))
        previous = load_source(store.conn, sid)
        action, start = plan_read(previous, view, lambda n: head_hash(store.ids, fh, n))
        report.action = action
        if action == "unchanged":
            report.torn_tail = previous is not None and previous.offset < previous.size
            return report
        try:
            read = ledger.read(start=start)
        except IntegrityError:
            report.action = "invalid"
            report.invalid_lines = 1
            return report
        report.torn_tail = read.torn is not None
        report.lines_read = len(read.events)
        head_len = min(read.size, HEAD_BYTES)
        rescan = action in ("rotated", "truncated", "replaced")
        kept_lines = 0 if previous is None or rescan else previous.lines_read
        state = SourceState(
            id=sid,
            inode=view.inode,
            size=view.size,
            mtime_ns=view.mtime_ns,
            offset=read.size,
            head_len=head_len,
            head_hash=head_hash(store.ids, fh, head_len) if head_len else None,
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
