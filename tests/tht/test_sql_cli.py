"""``tht sql check`` and ``tht sql run`` (ARCHITECTURE §6) on the demo database."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.tht.test_sql_proposals import (
    Tht,
    approve_cte,
    bind_demo,
    new_session,
    ok,
    sync,
    to_stage,
)
from tht.demo_database import DEMO_CTE, DEMO_SQL


@pytest.fixture
def sql_file(tmp_path: Path) -> Path:
    path = tmp_path / "final.sql"
    path.write_text(DEMO_SQL, encoding="utf-8")
    return path


def _write(tmp_path: Path, text: str, name: str = "q.sql") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ----------------------------------------------------------------------------- check


def test_check_without_a_catalog_says_to_sync(workspace: Path, tht: Tht, sql_file: Path) -> None:
    done = tht("sql", "check", str(sql_file), "--json")
    assert done.code == 2
    assert "catalog not synced" in done.stderr and "no database is bound" in done.stderr
    bind_demo(workspace)
    done = tht("sql", "check", str(sql_file), "--json")
    assert done.code == 2
    assert "run `tht catalog sync`" in done.stderr
    assert done.json()["error"]["code"] == "usage"


def test_check_of_a_good_query_against_the_catalog(
    workspace: Path, tht: Tht, sql_file: Path
) -> None:
    bind_demo(workspace)
    sync(tht)
    body = ok(tht("sql", "check", str(sql_file), "--json"))
    assert list(body) == ["ok", "dialect", "tables", "columns", "problems", "sensitive"]
    assert body["sensitive"] == []  # no Sensitive Data Flag is set
    assert body["ok"] is True and body["problems"] == []
    assert body["dialect"] == "sqlite"
    assert body["tables"] == ["ospedali", "procedure", "ricoveri"]
    assert "procedure.flag_ablazione" in body["columns"]
    human = tht("sql", "check", str(sql_file))
    assert human.code == 0 and human.stdout.startswith("ok (sqlite): 3 table(s)")


def test_check_of_a_bad_query_exits_2_and_still_prints_its_json(
    workspace: Path, tht: Tht, tmp_path: Path
) -> None:
    bind_demo(workspace)
    sync(tht)
    path = _write(tmp_path, "SELECT nomi\nFROM ospedali;\nDROP TABLE ospedali")
    done = tht("sql", "check", path, "--json")
    assert done.code == 2
    body = done.json()
    assert body["ok"] is False
    assert [p["code"] for p in body["problems"]] == [
        "not_single_statement",
        "not_read_only",
        "unknown_column",
    ]
    assert "3 problems" in done.stderr
    human = tht("sql", "check", path)
    assert human.code == 2
    lines = human.stdout.strip().splitlines()
    assert len(lines) == 3
    assert f"{path}:1:8: unknown_column: unknown column 'nomi' (did you mean 'nome'?)" in lines


def test_check_reads_stdin(workspace: Path, tht: Tht) -> None:
    bind_demo(workspace)
    sync(tht)
    done = tht("sql", "check", "-", "--json", stdin=b"SELECT regione FROM ospedal")
    assert done.code == 2
    assert done.json()["problems"][0]["code"] == "unknown_table"
    assert ok(tht("sql", "check", "-", "--json", stdin=b"SELECT regione FROM ospedali"))["ok"]


def test_check_refuses_what_is_not_a_readable_sql_file(
    workspace: Path, tht: Tht, tmp_path: Path
) -> None:
    bind_demo(workspace)
    sync(tht)
    assert tht("sql", "check", str(tmp_path)).code == 2  # a folder
    assert tht("sql", "check", str(tmp_path / "missing.sql")).code == 2
    binary = tmp_path / "latin1.sql"
    binary.write_bytes("SELECT 'città'".encode("latin-1"))
    done = tht("sql", "check", str(binary))
    assert done.code == 2 and "not UTF-8" in done.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert tht("sql", "check", str(fifo)).code == 2  # never blocks on a FIFO
    big = tmp_path / "big.sql"
    big.write_bytes(b"SELECT 1 " + b" " * (1024 * 1024))
    done = tht("sql", "check", str(big))
    assert done.code == 2 and "larger than" in done.stderr


def test_check_with_a_session_uses_its_snapshot_and_its_approved_ctes(
    workspace: Path, tht: Tht, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bind_demo(workspace)
    sync(tht)
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "cte")
    approve_cte(tht, tmp_path, session, DEMO_CTE[1])
    path = _write(tmp_path, f"SELECT a.ospedale_id FROM {DEMO_CTE[0]} AS a")
    assert ok(tht("sql", "check", path, session, "--json"))["ok"]
    monkeypatch.setenv("THT_SESSION", session)
    assert ok(tht("sql", "check", path, "--json"))["ok"]
    monkeypatch.delenv("THT_SESSION")
    # without the session, the CTE is no table of the catalog
    done = tht("sql", "check", path, "--json")
    assert done.code == 2 and done.json()["problems"][0]["code"] == "unknown_table"
    assert tht("sql", "check", path, "NOSUCHSESSION", "--json").code == 3


# ----------------------------------------------------------------------------- run


def test_run_returns_columns_rows_and_counts(workspace: Path, tht: Tht, sql_file: Path) -> None:
    bind_demo(workspace)
    body = ok(tht("sql", "run", str(sql_file), "--json"))
    assert list(body) == ["columns", "rows", "row_count", "truncated", "elapsed_ms"]
    assert [c["name"] for c in body["columns"]] == ["ospedale", "regione", "ricoveri_ablazione"]
    assert body["row_count"] == 12 and body["truncated"] is False
    assert body["rows"][0] == ["Ospedale San Luca", "Lombardia", 47]
    assert isinstance(body["elapsed_ms"], float)


def test_run_applies_the_limit_and_the_settings_defaults(
    workspace: Path, tht: Tht, sql_file: Path
) -> None:
    bind_demo(workspace)
    body = ok(tht("sql", "run", str(sql_file), "--limit", "3", "--json"))
    assert body["row_count"] == 3 and len(body["rows"]) == 3 and body["truncated"] is True
    settings = workspace / "workspace.yaml"
    text = settings.read_text(encoding="utf-8")
    settings.write_text(
        text.replace(
            'database: {url: "sqlite:///data/demo.db"}',
            'database: {url: "sqlite:///data/demo.db", row_limit: 5}',
        ),
        encoding="utf-8",
    )
    body = ok(tht("sql", "run", str(sql_file), "--json"))
    assert len(body["rows"]) == 5 and body["truncated"] is True
    assert tht("sql", "run", str(sql_file), "--limit", "-1").code == 2
    assert tht("sql", "run", str(sql_file), "--timeout-ms", "0").code == 2


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM ricoveri",
        "DROP TABLE ospedali",
        "UPDATE procedure SET flag_ablazione = 0",
        "INSERT INTO ospedali VALUES (99, 'x', 'y', 'z')",
        "PRAGMA writable_schema = 1",
        "ATTACH DATABASE 'other.db' AS other",
        "VACUUM INTO 'copy.db'",
        "SELECT 1; DELETE FROM ricoveri",
    ],
)
def test_run_refuses_any_write_and_leaves_the_file_untouched(
    workspace: Path, tht: Tht, tmp_path: Path, sql: str
) -> None:
    db = bind_demo(workspace)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    done = tht("sql", "run", _write(tmp_path, sql), "--json")
    assert done.code == 5, done.stdout + done.stderr
    assert done.json()["error"]["code"] == "refused"
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not (workspace / "copy.db").exists() and not (tmp_path / "copy.db").exists()


def test_run_without_a_database_is_a_usage_error(workspace: Path, tht: Tht, sql_file: Path) -> None:
    done = tht("sql", "run", str(sql_file))
    assert done.code == 2 and "no database bound" in done.stderr


def test_run_of_sql_the_database_rejects_is_exit_2_with_its_reason(
    workspace: Path, tht: Tht, tmp_path: Path
) -> None:
    bind_demo(workspace)
    done = tht("sql", "run", _write(tmp_path, "SELECT nomi FROM ospedali"), "--json")
    assert done.code == 2
    assert "nomi" in done.json()["error"]["message"]


def test_run_human_output_is_a_table(workspace: Path, tht: Tht, sql_file: Path) -> None:
    bind_demo(workspace)
    done = tht("sql", "run", str(sql_file), "--limit", "2")
    assert done.code == 0
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["ospedale", "regione", "ricoveri_ablazione"]
    assert "Ospedale San Luca" in lines[1]
    assert lines[-1].startswith("2 row(s) (truncated") and lines[-1].endswith(" ms")


def test_run_shows_null_and_keeps_control_characters_visible(
    workspace: Path, tht: Tht, tmp_path: Path
) -> None:
    bind_demo(workspace)
    done = tht("sql", "run", _write(tmp_path, "SELECT NULL AS n, char(27) || '[31mred' AS t"))
    assert done.code == 0
    assert "NULL" in done.stdout and "\x1b" not in done.stdout and "\\x1b" in done.stdout
    body = ok(tht("sql", "run", _write(tmp_path, "SELECT NULL AS n, x'00ff' AS b"), "--json"))
    assert body["rows"] == [[None, "\\x00ff"]]
