"""The demo's Workspace Database (tht/demo_database.py): deterministic, realistic, and the shape
the demo relies on (declared keys, one FK-less join for the Generated Relationships, the
ablation flag versus the free-text pathology)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from tests.tht.conftest import Result
from tests.tht.test_sql_proposals import bind_demo, ok, sync
from tht.demo_database import DEMO_CTE, DEMO_QUESTION, DEMO_SQL, make_demo_database

#: the digest of every row of every table: pins the generator itself (its PRNG, its data),
#: independently of the SQLite library's file format
CONTENT_SHA256 = "fb72474dff9da2f1e0b3b4ecc2f481eeb518312b6615ac947888d78fc15372d7"


def _content(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        ]
        dump = {t: db.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() for t in tables}
    finally:
        db.close()
    return hashlib.sha256(json.dumps(dump, ensure_ascii=False).encode()).hexdigest()


def test_the_same_bytes_every_time(tmp_path: Path) -> None:
    first = make_demo_database(tmp_path / "a" / "demo.db")
    second = make_demo_database(tmp_path / "b" / "demo.db")
    assert first.read_bytes() == second.read_bytes()
    assert _content(first) == CONTENT_SHA256


def test_it_replaces_a_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    path.write_bytes(b"not a database")
    make_demo_database(path)
    again = make_demo_database(path)
    assert again == path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.db"]
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"


def test_the_schema_declares_keys_and_leaves_one_join_without_a_foreign_key(tmp_path: Path) -> None:
    db = sqlite3.connect(make_demo_database(tmp_path / "demo.db"))
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"ospedali", "procedure", "pazienti", "ricoveri"}
    for table in tables:
        pk = [c[1] for c in db.execute(f"PRAGMA table_info({table})") if c[5]]
        assert pk == ["id"], table
    fks = {(r[3], r[2], r[4]) for r in db.execute("PRAGMA foreign_key_list(ricoveri)")}
    assert fks == {("ospedale_id", "ospedali", "id"), ("paziente_id", "pazienti", "id")}
    columns = [c[1] for c in db.execute("PRAGMA table_info(ricoveri)")]
    assert "procedura_id" in columns
    patients = [c[1] for c in db.execute("PRAGMA table_info(pazienti)")]
    assert patients == ["id", "fascia_eta", "sesso"]  # no personal data


def test_the_data_is_the_running_example(tmp_path: Path) -> None:
    db = sqlite3.connect(make_demo_database(tmp_path / "demo.db"))

    def one(sql: str) -> object:
        return db.execute(sql).fetchone()

    assert one("SELECT COUNT(*) FROM ricoveri") == (2400,)
    assert one("SELECT MIN(data_ricovero), MAX(data_ricovero) FROM ricoveri") == (
        "2023-01-01",
        "2024-12-31",
    )
    assert one("SELECT COUNT(DISTINCT strftime('%Y', data_ricovero)) FROM ricoveri") == (2,)
    assert {r[0] for r in db.execute("SELECT DISTINCT flag_ablazione FROM procedure")} == {0, 1}
    assert one(
        "SELECT COUNT(*) FROM ricoveri WHERE procedura_id NOT IN (SELECT id FROM procedure)"
    ) == (0,)
    assert one(
        "SELECT COUNT(*) FROM ricoveri WHERE date(data_dimissione) < date(data_ricovero)"
    ) == (0,)
    assert {r[0] for r in db.execute("SELECT DISTINCT stato FROM ricoveri")} == {
        "concluso",
        "annullato",
    }
    # the ambiguity F1 exists for: the free text mentions ablations the flag does not count
    (mentions,) = one(
        "SELECT COUNT(*) FROM procedure WHERE patologia LIKE '%ablazion%' AND flag_ablazione = 0"
    )  # type: ignore[misc]
    assert mentions >= 2


def test_the_demo_sql_answers_the_demo_question(tmp_path: Path) -> None:
    assert "ablazione" in DEMO_QUESTION and "2024" in DEMO_QUESTION
    db = sqlite3.connect(make_demo_database(tmp_path / "demo.db"))
    rows = db.execute(DEMO_SQL).fetchall()
    assert len(rows) == 12
    counts = [r[2] for r in rows]
    assert counts == sorted(counts, reverse=True) and min(counts) > 0
    (expected,) = db.execute(
        "SELECT COUNT(*) FROM ricoveri r JOIN procedure p ON p.id = r.procedura_id "
        "WHERE p.flag_ablazione = 1 AND r.stato <> 'annullato' AND r.data_ricovero LIKE '2024-%'"
    ).fetchone()
    assert sum(counts) == expected
    assert DEMO_CTE[0] in DEMO_SQL


def test_the_catalog_finds_the_join_without_a_foreign_key(
    workspace: Path, tht: Callable[..., Result]
) -> None:
    bind_demo(workspace)
    sync(tht)
    relationships = ok(tht("catalog", "relationships", "--json"))
    found = {(r["from"], r["to"], r["origin"]) for r in relationships}
    assert ("ricoveri.procedura_id", "procedure.id", "generated") in found
    assert ("ricoveri.ospedale_id", "ospedali.id", "physical") in found
    sql = workspace / "final.sql"
    sql.write_text(DEMO_SQL, encoding="utf-8")
    assert ok(tht("sql", "check", str(sql), "--json"))["ok"]


def test_python_m_writes_it_for_the_tour_and_never_replaces_a_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tht.demo_database", *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    target = tmp_path / "ws" / "data" / "ospedali.db"  # the folders are made
    done = run(str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == make_demo_database(tmp_path / "ref.db").read_bytes()
    target.write_bytes(b"mine")
    again = run(str(target))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert target.read_bytes() == b"mine" and "Traceback" not in again.stderr
    blocked = tmp_path / "file"
    blocked.write_text("x")
    nowhere = run(str(blocked / "sub" / "x.db"))  # a parent that is a file
    assert nowhere.returncode == 2 and "cannot write" in nowhere.stderr
    assert "Traceback" not in nowhere.stderr
    assert run().returncode == 2  # no PATH: usage
