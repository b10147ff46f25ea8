"""Incremental, idempotent import of the hook log: offsets, torn lines, rotation, privacy."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from kernel.errors import ConflictError
from tht.analytics import hooklog
from tht.analytics.hooklog import scan_hook_log
from tht.analytics.ids import key_file_for
from tht.analytics.sources import load_source, source_id
from tht.analytics.store import AnalyticsStore

from .conftest import NOW, SEEDED_SECRETS, counts, every_text_value

# The fixture: 1 spec example + 120 synthetic events + 4 kept hostile events + 1 exact duplicate;
# 1 event of another kind, 1 event without a timestamp, 1 line that is not JSON; a torn last line.
EXPECTED_EVENTS = 125


def _line(request_id: str, ts: str = "2026-07-20T08:00:00.000Z", **extra: object) -> str:
    event = {
        "ts": ts,
        "event": "RoutingEvaluator",
        "hook": "tht-route-hook",
        "schema_version": 1,
        "request_id": request_id,
        "mode": "shadow",
        "activation": "ambiguous-only",
        "evaluator_status": "not-ambiguous",
        **extra,
    }
    return json.dumps(event) + "\n"


def test_first_scan_imports_each_event_once_and_counts_what_it_skipped(
    store: AnalyticsStore, hook_log: Path
) -> None:
    report = scan_hook_log(store, hook_log, now=NOW)
    assert report.action == "new"
    assert report.imported == EXPECTED_EVENTS
    assert report.duplicates == 1
    assert report.invalid_lines == 2  # not JSON; no usable timestamp
    assert report.ignored_events == 1  # SkillHint
    assert report.torn_tail is True
    assert report.warnings["forbidden_fields"] >= 13
    assert report.warnings["unknown_enum_values"] >= 8
    assert report.warnings["clamped_numbers"] >= 2
    assert counts(store) == {
        "source_files": 1,
        "runtime_events": EXPECTED_EVENTS,
        "routing_evaluations": EXPECTED_EVENTS,
    }


def test_scanning_again_changes_nothing(store: AnalyticsStore, hook_log: Path) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    before = counts(store)
    again = scan_hook_log(store, hook_log, now=NOW)
    assert again.action == "unchanged"
    assert again.imported == again.lines_read == 0
    assert counts(store) == before


def test_a_torn_last_line_is_imported_once_the_writer_completes_it(
    store: AnalyticsStore, hook_log: Path
) -> None:
    first = scan_hook_log(store, hook_log, now=NOW)
    assert first.torn_tail is True
    assert scan_hook_log(store, hook_log, now=NOW).action == "unchanged"
    with hook_log.open("a", encoding="utf-8") as fh:  # the writer finishes its line
        fh.write('r","request_id":"routing-tail","mode":"shadow","activation":"ambiguous-only",')
        fh.write('"evaluator_status":"not-ambiguous"}\n')
    report = scan_hook_log(store, hook_log, now=NOW)
    assert (report.action, report.lines_read, report.imported) == ("append", 1, 1)
    assert report.torn_tail is False
    assert store.conn.execute(
        "SELECT occurred_at FROM routing_evaluations WHERE request_id = 'routing-tail'"
    ).fetchone() == ("2026-07-19T12:46:05.999Z",)


def test_only_the_lines_after_the_offset_are_read(store: AnalyticsStore, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(_line("routing-1") + _line("routing-2"), encoding="utf-8")
    assert scan_hook_log(store, log, now=NOW).lines_read == 2
    with log.open("a", encoding="utf-8") as fh:
        fh.write(_line("routing-3") + "not json\n" + _line("routing-4"))
    report = scan_hook_log(store, log, now=NOW)
    assert (report.lines_read, report.imported, report.invalid_lines) == (3, 2, 1)
    assert report.duplicates == 0


def test_chunked_reading_splits_lines_correctly(store: AnalyticsStore, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(_line(f"routing-{i}") for i in range(50)), encoding="utf-8")
    report = scan_hook_log(store, log, now=NOW, chunk_bytes=97)  # far smaller than a line
    assert (report.lines_read, report.imported, report.invalid_lines) == (50, 50, 0)
    state = load_source(store.conn, _sid(store, log))
    assert state is not None and state.offset == log.stat().st_size


def test_a_rotated_log_is_read_from_the_start_without_duplicates(
    store: AnalyticsStore, hook_log: Path
) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    before = counts(store)["runtime_events"]
    rotated = hook_log.with_name("route-hook.jsonl.1")
    os.rename(hook_log, rotated)
    first_lines = rotated.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    hook_log.write_text("".join(first_lines) + _line("routing-fresh-1"), encoding="utf-8")
    report = scan_hook_log(store, hook_log, now=NOW)
    assert report.action == "rotated"
    assert report.imported == 1
    assert report.duplicates == 3
    assert counts(store)["runtime_events"] == before + 1
    # the old file under its new name adds nothing either
    assert scan_hook_log(store, rotated, now=NOW).imported == 0


def test_a_truncated_log_is_read_from_the_start(store: AnalyticsStore, hook_log: Path) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    hook_log.write_text(_line("routing-after-truncate"), encoding="utf-8")  # same inode, shorter
    report = scan_hook_log(store, hook_log, now=NOW)
    assert report.action == "truncated"
    assert report.imported == 1
    assert load_source(store.conn, _sid(store, hook_log)).rescans == 1  # type: ignore[union-attr]


def test_a_log_replaced_in_place_by_a_longer_one_is_noticed(
    store: AnalyticsStore, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(_line("routing-a1") + _line("routing-a2"), encoding="utf-8")
    scan_hook_log(store, log, now=NOW)
    with log.open("r+", encoding="utf-8") as fh:  # same inode, new head, longer than before
        fh.write(_line("routing-b1") + _line("routing-b2") + _line("routing-b3"))
    report = scan_hook_log(store, log, now=NOW)
    assert report.action == "replaced"
    assert report.imported == 3


def test_rows_and_offset_commit_together_or_not_at_all(
    store: AnalyticsStore, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(_line("routing-ok") + _line("routing-boom"), encoding="utf-8")
    store.conn.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON routing_evaluations "
        "WHEN NEW.request_id = 'routing-boom' BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    with pytest.raises(sqlite3.IntegrityError):
        scan_hook_log(store, log, now=NOW)
    assert counts(store) == {"source_files": 0, "runtime_events": 0, "routing_evaluations": 0}
    store.conn.execute("DROP TRIGGER boom")
    assert scan_hook_log(store, log, now=NOW).imported == 2


def test_a_scan_that_lost_a_race_for_the_same_file_commits_nothing(
    store: AnalyticsStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(_line("routing-1"), encoding="utf-8")
    scan_hook_log(store, log, now=NOW)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(_line("routing-2"))
    real = hooklog.load_source

    def plan_then_another_writer(conn: sqlite3.Connection, sid: str) -> object:
        state = real(conn, sid)  # the scan plans from this state; another scan then commits
        conn.execute("UPDATE source_files SET lines_read = lines_read + 1")
        return state

    monkeypatch.setattr(hooklog, "load_source", plan_then_another_writer)
    with pytest.raises(ConflictError):
        scan_hook_log(store, log, now=NOW)
    assert counts(store)["runtime_events"] == 1


def test_forbidden_content_is_stored_nowhere(store: AnalyticsStore, hook_log: Path) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    scan_hook_log(store, hook_log, now=NOW)
    key_hex = key_file_for(store.path).read_text(encoding="ascii").strip()
    values = every_text_value(store)
    assert values, "the store should hold rows"
    needles = [*SEEDED_SECRETS, key_hex, str(hook_log), str(hook_log.parent)]
    hits = [(needle, value) for needle in needles for value in values if needle in value]
    assert hits == []


def test_the_key_is_created_once_with_owner_only_permissions(store: AnalyticsStore) -> None:
    key_file = key_file_for(store.path)
    assert key_file.name == "analytics.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(bytes.fromhex(key_file.read_text().strip())) == 32


def test_deleting_a_source_file_cascades_to_its_events_and_projection(
    store: AnalyticsStore, hook_log: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(_line("routing-other"), encoding="utf-8")
    scan_hook_log(store, hook_log, now=NOW)
    scan_hook_log(store, other, now=NOW)
    store.conn.execute("DELETE FROM source_files WHERE id = ?", (_sid(store, hook_log),))
    assert counts(store) == {"source_files": 1, "runtime_events": 1, "routing_evaluations": 1}


def test_a_missing_log_is_reported_not_an_error(store: AnalyticsStore, tmp_path: Path) -> None:
    report = scan_hook_log(store, tmp_path / "absent.jsonl", now=NOW)
    assert report.action == "missing"
    assert counts(store)["source_files"] == 0


def test_runtime_event_rows_have_the_spec_event_identity(
    store: AnalyticsStore, hook_log: Path
) -> None:
    scan_hook_log(store, hook_log, now=NOW)
    identities = set(
        store.conn.execute(
            "SELECT event_type, event_origin, event_name, hook_event FROM runtime_events"
        )
    )
    assert identities == {("hook", "hook_hint", "routing_evaluator", "RoutingEvaluator")}
    (meta,) = store.conn.execute(
        "SELECT metadata_json FROM runtime_events r JOIN routing_evaluations e "
        "ON e.runtime_event_id = r.id WHERE e.request_id = 'routing-8f77c2f9'"
    ).fetchone()
    assert json.loads(meta)["evaluator_top"] == "mcp-technical-analyst"


def _sid(store: AnalyticsStore, path: Path) -> str:
    return source_id(store.ids, "hook_log", str(path.resolve()))
