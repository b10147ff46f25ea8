"""Schema migrations: ordered, recorded, upgrade without data loss, refuse unknown versions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernel.errors import UnavailableError
from tht.analytics.hooklog import scan_hook_log
from tht.analytics.migrations import LATEST_VERSION, MIGRATIONS, applied_migrations
from tht.analytics.store import open_store

from .conftest import HOOK_LOG, NOW


def _snapshot(conn: object, tables: list[str]) -> dict[str, list[tuple[object, ...]]]:
    return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}  # type: ignore[attr-defined]


def test_migrations_are_numbered_in_order() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST_VERSION + 1))
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)
    assert "add_routing_evaluations" in {m.name for m in MIGRATIONS}


def test_a_fresh_store_records_every_migration(tmp_path: Path) -> None:
    with open_store(tmp_path / "a.sqlite", now=NOW) as store:
        assert applied_migrations(store.conn) == [(m.version, m.name) for m in MIGRATIONS]
        assert store.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        indexes = {
            r[0]
            for r in store.conn.execute(
                "SELECT name FROM sqlite_master WHERE tbl_name = 'routing_evaluations' "
                "AND type = 'index' AND name LIKE 'idx_%'"
            )
        }
        assert {
            "idx_routing_evaluations_occurred_at",
            "idx_routing_evaluations_profile_status",
            "idx_routing_evaluations_model",
            "idx_routing_evaluations_changed_top",
        } <= indexes


@pytest.mark.parametrize("version", range(1, LATEST_VERSION))
def test_a_store_at_an_older_version_upgrades_without_losing_data(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "old.sqlite"
    with open_store(path, now=NOW, target_version=version) as old:
        assert applied_migrations(old.conn)[-1][0] == version
        old.conn.execute(
            "INSERT INTO source_files (id, kind, size, offset, first_scanned_at, last_scanned_at) "
            "VALUES ('src1', 'hook_log', 10, 10, ?, ?)",
            (NOW, NOW),
        )
        old.conn.executemany(
            "INSERT INTO runtime_events (id, source_file_id, event_type, event_origin, event_name, "
            "occurred_at, metadata_json) VALUES (?, 'src1', 'hook', 'hook_hint', "
            "'routing_evaluator', ?, '{}')",
            [(f"ev{i}", f"2026-07-0{i}T00:00:00.000Z") for i in range(1, 6)],
        )
        tables = [
            r[0]
            for r in old.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] != "schema_migrations"
        ]
        before = _snapshot(old.conn, tables)
    with open_store(path, now=NOW) as upgraded:
        assert applied_migrations(upgraded.conn)[-1][0] == LATEST_VERSION
        assert _snapshot(upgraded.conn, tables) == before
        report = scan_hook_log(upgraded, HOOK_LOG, now=NOW)  # the upgraded store is usable
        assert report.imported > 0


def test_a_store_written_by_a_newer_tht_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    with open_store(path, now=NOW) as store:
        store.conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', ?)",
            (LATEST_VERSION + 1, NOW),
        )
    with pytest.raises(UnavailableError, match="another tht version"):
        open_store(path, now=NOW)


def test_two_processes_opening_a_fresh_store_apply_each_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "race.sqlite"
    code = (
        "import sys; from pathlib import Path; from tht.analytics.store import open_store; "
        f"open_store(Path(sys.argv[1]), now={NOW!r}).close()"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)]) for _ in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    with open_store(path, now=NOW) as store:
        assert applied_migrations(store.conn) == [(m.version, m.name) for m in MIGRATIONS]
