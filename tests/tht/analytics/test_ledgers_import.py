"""Session ledgers as a second source: kernel reader, incremental, stage projection, privacy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.errors import NotFoundError
from tht.analytics.ledgers import scan_sessions
from tht.analytics.sessions_query import stage_statistics
from tht.analytics.store import AnalyticsStore

from .conftest import NOW, every_text_value
from .sessions_driver import PRIVATE, Driver, drive_three_sessions

MIN = 60_000


@pytest.fixture
def workspace(tmp_path: Path) -> Driver:
    return drive_three_sessions(tmp_path / "ws")


def _events_in_ledgers(driver: Driver) -> int:
    return sum(len(driver.app.kernel.log(s)) for s in driver.sessions)


def test_every_ledger_event_is_imported_once(store: AnalyticsStore, workspace: Driver) -> None:
    reports = scan_sessions(store, workspace.app.workspace.root, now=NOW)
    assert [r.action for r in reports] == ["new", "new", "new"]
    total = _events_in_ledgers(workspace)
    assert sum(r.imported for r in reports) == total
    assert store.conn.execute(
        "SELECT COUNT(*) FROM runtime_events WHERE event_origin = 'session_ledger'"
    ).fetchone() == (total,)
    again = scan_sessions(store, workspace.app.workspace.root, now=NOW)
    assert [r.action for r in again] == ["unchanged"] * 3
    assert sum(r.imported for r in again) == 0


def test_stage_runs_record_outcomes_durations_waits_and_reopens(
    store: AnalyticsStore, workspace: Driver
) -> None:
    scan_sessions(store, workspace.app.workspace.root, now=NOW)
    a, b, c = (store.ids.derive(f"session\x00{s}") for s in workspace.sessions)
    rows = {
        (r[0], r[1]): r[2:]
        for r in store.conn.execute(
            "SELECT session_key, stage, outcome, runs, duration_ms, reviews, answered_reviews, "
            "review_wait_ms, reopen_count, started_at, ended_at FROM stage_runs"
        )
    }
    assert rows[(a, "disambiguation")][:7] == ("completed", 2, 14 * MIN, 3, 3, 13 * MIN, 1)
    assert rows[(a, "disambiguation")][7:] == (
        "2026-07-20T09:01:00.000Z",
        "2026-07-20T09:22:00.000Z",
    )
    # reopening disambiguation reopened every later step, as the kernel's fold does
    assert rows[(a, "memory_recall")][:7] == ("open", 0, None, 0, 0, None, 0)
    # the rewriting chosen at 09:12 (no wait), then its confirm 09:13 → 09:16
    assert rows[(a, "rewriting")][:7] == ("open", 1, 4 * MIN, 2, 2, 3 * MIN, 0)
    assert rows[(b, "disambiguation")][:7] == ("completed", 1, 20 * MIN, 1, 1, 20 * MIN, 0)
    assert rows[(b, "memory_recall")][:3] == ("failed", 1, 0)
    assert rows[(c, "disambiguation")][:7] == ("open", 1, None, 1, 0, None, 0)
    assert rows[(a, "admission")][0] == "completed"


def test_sessions_statistics_per_stage(store: AnalyticsStore, workspace: Driver) -> None:
    scan_sessions(store, workspace.app.workspace.root, now=NOW)
    result = stage_statistics(store.conn)
    assert result["sessions"] == 3
    stages = {s["stage"]: s for s in result["stages"]}
    assert [s["stage"] for s in result["stages"]][:3] == [
        "admission",
        "disambiguation",
        "memory_recall",
    ]
    f1 = stages["disambiguation"]
    assert (f1["sessions"], f1["completed"], f1["open"], f1["runs"]) == (3, 2, 1, 4)
    assert f1["duration_ms"] == {
        "avg": 17 * MIN,
        "p50": 17 * MIN,
        "p95": 19.7 * MIN,
        "max": 20 * MIN,
    }
    # answered waits: A 7, 2, 4 min; B 20 min; C's review is still open
    assert f1["review_wait_ms"] == {
        "answered": 4,
        "open": 1,
        "avg": 8.25 * MIN,
        "p50": 5.5 * MIN,
        "p95": 1_083_000,  # (7 * 15 + 20 * 85) / 100 min
        "max": 20 * MIN,
    }
    assert (f1["reopened_sessions"], f1["reopen_rate"]) == (1, 0.3333)
    f2 = stages["memory_recall"]
    assert (f2["skipped"], f2["failed"], f2["open"], f2["reopen_rate"]) == (0, 1, 1, 0.0)


_SETTLED = {"completed", "skipped", "failed"}


def _outcomes_agree_with_the_fold(store: AnalyticsStore, session: str, state: object) -> None:
    key = store.ids.derive(f"session\x00{session}")
    mine = dict(
        store.conn.execute("SELECT stage, outcome FROM stage_runs WHERE session_key = ?", (key,))
    )
    for view in state.stages:  # type: ignore[attr-defined]
        expected = view.state if view.state in _SETTLED else "open"
        if view.id in mine:
            assert mine[view.id] == expected, (view.id, view.state)
        else:
            assert view.state not in _SETTLED, view.id


def test_stage_outcomes_agree_with_the_kernel_fold(
    store: AnalyticsStore, workspace: Driver
) -> None:
    scan_sessions(store, workspace.app.workspace.root, now=NOW)
    for session in workspace.sessions:
        _outcomes_agree_with_the_fold(store, session, workspace.app.kernel.load(session).state)


def test_only_new_ledger_events_are_read_and_the_projection_follows(
    store: AnalyticsStore, workspace: Driver
) -> None:
    scan_sessions(store, workspace.app.workspace.root, now=NOW)
    c = workspace.sessions[2]
    before = len(workspace.app.kernel.log(c))
    workspace.answer(c, 30, choose=("flag",))  # C's open review is answered after 30 min
    reports = scan_sessions(store, workspace.app.workspace.root, now=NOW)
    assert [r.action for r in reports] == ["unchanged", "unchanged", "append"]
    assert reports[2].lines_read == len(workspace.app.kernel.log(c)) - before
    key = store.ids.derive(f"session\x00{c}")
    assert store.conn.execute(
        "SELECT answered_reviews, review_wait_ms FROM stage_runs "
        "WHERE session_key = ? AND stage = 'disambiguation'",
        (key,),
    ).fetchone() == (1, 30 * MIN)


def test_a_torn_ledger_tail_is_left_alone(store: AnalyticsStore, workspace: Driver) -> None:
    scan_sessions(store, workspace.app.workspace.root, now=NOW)
    ledger = workspace.app.kernel.store.ledger(workspace.sessions[0])
    with ledger.path.open("ab") as fh:
        fh.write(b'{"type":"stage_started","seq":99')
    reports = scan_sessions(store, workspace.app.workspace.root, now=NOW)
    assert (reports[0].action, reports[0].imported, reports[0].torn_tail) == ("append", 0, True)


def test_a_ledger_the_kernel_rejects_is_reported_and_skipped(
    store: AnalyticsStore, workspace: Driver
) -> None:
    ledger = workspace.app.kernel.store.ledger(workspace.sessions[1])
    lines = ledger.path.read_bytes().split(b"\n")
    lines[2] = b'{"type":"no_such_event"}'
    ledger.path.write_bytes(b"\n".join(lines))
    reports = scan_sessions(store, workspace.app.workspace.root, now=NOW)
    assert [r.action for r in reports] == ["new", "invalid", "new"]
    assert reports[1].imported == 0


def test_no_question_payload_or_person_reaches_the_store(
    store: AnalyticsStore, workspace: Driver
) -> None:
    scan_sessions(store, workspace.app.workspace.root, now=NOW)
    values = every_text_value(store)
    assert values
    needles = [*PRIVATE, *workspace.sessions, str(workspace.app.workspace.root)]
    assert [(n, v) for n in needles for v in values if n in v] == []


def test_a_folder_that_is_not_a_workspace_is_not_found(
    store: AnalyticsStore, tmp_path: Path
) -> None:
    with pytest.raises(NotFoundError):
        scan_sessions(store, tmp_path / "nowhere", now=NOW)


GOLDEN = Path(__file__).resolve().parents[3] / "golden" / "sessions"


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_kernel_golden_sessions_import_and_agree_with_their_fold(
    store: AnalyticsStore, tmp_path: Path, name: str
) -> None:
    from kernel.fold import fold
    from kernel.ledger import Ledger
    from kernel.workflow import default_workflow_path, load_workflow
    from kernel.workspace import init_workspace

    session = (GOLDEN / name / "session.txt").read_text().strip()
    data = (GOLDEN / name / "ledger.jsonl").read_bytes()
    workspace, _ = init_workspace(tmp_path / "ws")
    folder = workspace.session_dir(session)
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_bytes(default_workflow_path().read_bytes())
    (folder / "ledger.jsonl").write_bytes(data)

    (report,) = scan_sessions(store, workspace.root, now=NOW)
    complete = data[: data.rfind(b"\n") + 1].count(b"\n")
    assert (report.action, report.imported, report.invalid_lines) == ("new", complete, 0)
    assert report.torn_tail is (name == "torn_tail")
    read = Ledger(folder / "ledger.jsonl", session).read()
    _outcomes_agree_with_the_fold(store, session, fold(load_workflow(), read.events))
    assert [v for v in every_text_value(store) if "ablation" in v or "hospital" in v] == []
