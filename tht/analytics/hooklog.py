"""Incremental, idempotent import of the routing hook's JSONL log (spec 000 §22.2–22.7).

For each complete line after the stored offset: decode, keep only ``RoutingEvaluator`` events,
normalise them (:mod:`tht.analytics.normalize`), derive their ids with the HMAC key, and insert the
canonical ``runtime_events`` row and its ``routing_evaluations`` projection with ``INSERT OR
IGNORE``. Rows and the new offset are committed in one transaction per chunk, so an interrupted
scan resumes exactly where its last commit left off. A final line without a newline (a write in
progress, or a crash mid-write) is left for the next scan.

Event ids are the HMAC of the line's bytes: the same line imported twice (a duplicate in the log,
a rotated file scanned again, two copies of a log) is one row.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from tht.analytics.events import EVENT_NAME
from tht.analytics.normalize import normalize_routing_event
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
from tht.analytics.store import AnalyticsStore

__all__ = ["KIND", "scan_hook_log"]

KIND = "hook_log"
CHUNK_BYTES = 8 << 20

_INSERT_EVENT = (
    "INSERT OR IGNORE INTO runtime_events (id, source_file_id, event_type, event_origin, "
    "event_name, hook_name, hook_event, occurred_at, metadata_json) "
    "VALUES (?, ?, 'hook', 'hook_hint', 'routing_evaluator', ?, 'RoutingEvaluator', ?, ?)"
)
_PROJECTION_COLUMNS = (
    "id, runtime_event_id, source_file_id, request_id, mode, activation, ambiguity_detected, "
    "evaluator_status, provider_profile, provider_family, provider_location, model, model_family, "
    "model_parameter_class, model_variant, model_quantization, evaluator_profile_version, "
    "prompt_contract_version, response_format, latency_ms, input_tokens, output_tokens, "
    "candidate_count, candidate_ids_json, ambiguity_reasons_json, deterministic_top, "
    "evaluator_top, final_top, decision, confidence_bucket, changed_top, applied, "
    "fallback_reason, cache_hit, sensitive_skip, occurred_at"
)
_INSERT_PROJECTION = (
    f"INSERT OR IGNORE INTO routing_evaluations ({_PROJECTION_COLUMNS}) "
    f"VALUES ({', '.join('?' * 36)})"
)


def scan_hook_log(
    store: AnalyticsStore, path: Path, *, now: str, chunk_bytes: int = CHUNK_BYTES
) -> SourceScan:
    """Import what is new in one hook log. A missing file is reported, not an error."""
    report = SourceScan(path=str(path), kind=KIND, action="missing")
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return report
    with fh:
        view = FileView.of(os.fstat(fh.fileno()))
        sid = source_id(store.ids, KIND, str(path.resolve()))
        state = load_source(store.conn, sid)
        action, start = plan_read(state, view, lambda n: head_hash(store.ids, fh, n))
        report.action = action
        if action == "unchanged":
            report.torn_tail = state is not None and state.offset < state.size
            return report
        _Importer(store, report, sid, state, view, now).run(fh, start, chunk_bytes)
    return report


class _Importer:
    """One pass over one file, from ``start`` to the size it had when the scan began."""

    def __init__(
        self,
        store: AnalyticsStore,
        report: SourceScan,
        sid: str,
        previous: SourceState | None,
        view: FileView,
        now: str,
    ) -> None:
        self.store = store
        self.report = report
        self.sid = sid
        self.expected = previous  # what the row must still say when we commit (optimistic)
        self.view = view
        self.now = now
        self.rescan = report.action in ("rotated", "truncated", "replaced")
        self.lines_total = 0 if previous is None or self.rescan else previous.lines_read
        self.rescans = 0 if previous is None else previous.rescans + int(self.rescan)
        self.watermark = store.retention_cutoff()
        self.decoder = msgspec.json.Decoder()
        self.encoder = msgspec.json.Encoder()

    def run(self, fh: BinaryIO, start: int, chunk_bytes: int) -> None:
        fh.seek(start)
        offset = start  # file position of the first byte of ``carry``
        remaining = self.view.size - start
        carry = b""
        committed = False
        while remaining > 0:
            block = fh.read(min(chunk_bytes, remaining))
            if not block:
                break
            remaining -= len(block)
            buf = carry + block if carry else block
            cut = buf.rfind(b"\n")
            if cut < 0:
                carry = buf
                continue
            carry = buf[cut + 1 :]
            offset = self._commit(fh, buf[: cut + 1], offset + cut + 1)
            committed = True
        self.report.torn_tail = bool(carry.strip())
        if not committed:
            # no complete line: still record size, inode and (after a rescan) the reset offset
            self._commit(fh, b"", offset)

    def _commit(self, fh: BinaryIO, data: bytes, offset: int) -> int:
        events, projections = self._rows(data)
        head_len = min(offset, HEAD_BYTES)
        head = head_hash(self.store.ids, fh, head_len) if head_len else None
        state = SourceState(
            id=self.sid,
            inode=self.view.inode,
            size=self.view.size,
            mtime_ns=self.view.mtime_ns,
            offset=offset,
            head_len=head_len,
            head_hash=head,
            lines_read=self.lines_total,
            rescans=self.rescans,
        )
        conn = self.store.conn
        with source_transaction(
            conn, KIND, self.expected, state, now=self.now, label=self.report.path
        ):
            if events:
                inserted = conn.executemany(_INSERT_EVENT, events).rowcount
                conn.executemany(_INSERT_PROJECTION, projections)
                self.report.imported += inserted
                self.report.duplicates += len(events) - inserted
        self.expected = state
        return offset

    def _rows(self, data: bytes) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        report, warnings, derive = self.report, self.report.warnings, self.store.ids.derive
        decode, encode, sid, watermark = (
            self.decoder.decode,
            self.encoder.encode,
            self.sid,
            self.watermark,
        )
        events: list[tuple[Any, ...]] = []
        projections: list[tuple[Any, ...]] = []
        for raw_line in data.split(b"\n"):
            line = raw_line.strip()
            if not line:
                continue
            report.lines_read += 1
            self.lines_total += 1
            try:
                raw = decode(line)
            except (msgspec.DecodeError, UnicodeDecodeError):
                report.invalid_lines += 1
                continue
            if not isinstance(raw, dict):
                report.invalid_lines += 1
                continue
            event = normalize_routing_event(raw, warnings)
            if event is None:
                if raw.get("event") == EVENT_NAME:
                    report.invalid_lines += 1
                else:
                    report.ignored_events += 1
                continue
            if event.occurred_at < watermark:
                report.older_than_retention += 1
                continue
            event_id = derive(b"runtime_event\x00hook_log\x00" + line)
            meta = event.metadata
            events.append(
                (event_id, sid, event.hook_name, event.occurred_at, encode(meta).decode())
            )
            projections.append(
                (
                    derive(event_id + ":routing_evaluation"),
                    event_id,
                    sid,
                    event.request_id,
                    meta["mode"],
                    meta["activation"],
                    int(meta["ambiguity_detected"]),
                    meta["evaluator_status"],
                    meta["provider_profile"],
                    meta["provider_family"],
                    meta["provider_location"],
                    meta["model"],
                    meta["model_family"],
                    meta["model_parameter_class"],
                    meta["model_variant"],
                    meta["model_quantization"],
                    meta["evaluator_profile_version"],
                    meta["prompt_contract_version"],
                    meta["response_format"],
                    meta["latency_ms"],
                    meta["input_tokens"],
                    meta["output_tokens"],
                    meta["candidate_count"],
                    encode(meta["candidate_ids"]).decode(),
                    encode(meta["ambiguity_reasons"]).decode(),
                    meta["deterministic_top"],
                    meta["evaluator_top"],
                    meta["final_top"],
                    meta["decision"],
                    meta["confidence_bucket"],
                    int(meta["changed_top"]),
                    int(meta["applied"]),
                    meta["fallback_reason"],
                    int(meta["cache_hit"]),
                    int(meta["sensitive_skip"]),
                    event.occurred_at,
                )
            )
        return events, projections
