"""F7 through the real CLI on a real SQLite workspace database: approving F6 runs the SQL
read-only (``module:core``), writes ``result_sample.json`` and records ``result_verified``; an
error or a timeout fails the stage; an unreachable database writes nothing; `tht stage run`
re-runs it (ARCHITECTURE §3.8, §6)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kernel.outcomes import ArtifactChange
from tests.adversarial.test_ledger_forgery import snapshot, tht
from tests.golden import scenarios as sc

SQL = "SELECT nome, COUNT(*) AS n FROM ospedali GROUP BY nome ORDER BY nome;\n"
FOREVER = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c;\n"
)


def _database(ws: Path) -> Path:
    path = ws / "data" / "h.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE ospedali (id INTEGER PRIMARY KEY, nome TEXT NOT NULL)")
        db.executemany("INSERT INTO ospedali VALUES (?, ?)", [(1, "San Luca"), (2, "Levante")])
    db.close()
    return path


def _bind(ws: Path, extra: str = "") -> None:
    with (ws / "workspace.yaml").open("a", encoding="utf-8") as settings:
        settings.write(f'\ndatabase: {{url: "sqlite:///data/h.db"{extra}}}\n')


def _at_f6_review(ws: Path, sql: str) -> tuple[str, int]:
    """A session whose F6 confirm review (with ``sql_final.sql``) is open."""
    run = sc.make_kernel(ws)
    sc.start(run)
    sc.through_f4(run)
    sc.stage_by_select(run, "cte", "cte_approved", "c", name="c", artifact="cte/1.sql")
    sc.close(run, "cte", (ArtifactChange(name="cte/1.sql", content=b"c AS (SELECT 1)\n"),))
    sc.stage_by_select(run, "sql", "sql_approved", None, dialect="sqlite")
    artifact = (ArtifactChange(name="sql_final.sql", content=sql.encode()),)
    review = sc._review_seq(
        run.kernel.apply_outcome(run.session, "sql", sc._confirm(artifacts=artifact), actor="agent")
    )
    return run.session, review


def _approve(ws: Path, session: str, review: int) -> tuple[int, dict]:
    done = tht(ws, "review", "answer", str(review), session, "--approve", "--as", sc.H, "--json")
    return done.returncode, json.loads(done.stdout)


def _status(ws: Path, session: str) -> dict:
    done = tht(ws, "session", "status", session, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _stage(status: dict, stage: str) -> str:
    return next(s["state"] for s in status["stages"] if s["id"] == stage)


def test_approving_f6_verifies_the_result_on_the_database(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session, review = _at_f6_review(ws, SQL)
    database = _database(ws)
    _bind(ws)
    before = database.read_bytes()
    code, body = _approve(ws, session, review)
    assert code == 0, body
    ran = body["ran"]
    assert ran["stage"] == "verification" and ran["status"] == "completed"
    assert ran["verified"]["ok"] is True and ran["verified"]["rows"] == 2
    assert ran["current_stage"] == "datamart"
    shown = tht(ws, "artifact", "show", "result_sample.json", session, "--json")
    sample = json.loads(json.loads(shown.stdout)["content"])
    assert sample["rows"] == [["Levante", 1], ["San Luca", 1]]
    assert sample["result_sha256"] == ran["verified"]["result_sha256"]
    log = json.loads(tht(ws, "session", "log", session, "--json").stdout)
    (verified,) = [e for e in log if e["type"] == "result_verified"]
    assert verified["actor"] == "module:core" and verified["stage"] == "verification"
    assert database.read_bytes() == before  # read only
    human = tht(ws, "session", "status", session)
    assert "F7 result (verified by tht): 2 row(s)" in human.stdout
    assert tht(ws, "ledger", "verify", session).returncode == 0


def test_a_query_that_fails_on_the_database_fails_f7_and_blocks(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session, review = _at_f6_review(ws, SQL)
    database = _database(ws)
    _bind(ws)
    with sqlite3.connect(database) as db:  # the database changed after the SQL was reviewed
        db.execute("ALTER TABLE ospedali RENAME COLUMN nome TO name")
    db.close()
    code, body = _approve(ws, session, review)
    assert code == 0, body  # the human's approval stands
    assert body["ran"]["status"] == "failed"
    assert "nome" in body["ran"]["verified"]["reason"]
    status = _status(ws, session)
    assert _stage(status, "verification") == "failed" and status["blocked"]
    done = tht(ws, "session", "finalize", session, "--as", sc.H)
    assert done.returncode == 5
    with sqlite3.connect(database) as db:  # fixed: running F7 again verifies it
        db.execute("ALTER TABLE ospedali RENAME COLUMN name TO nome")
    db.close()
    again = tht(ws, "stage", "run", "verification", session, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "completed"
    assert not _status(ws, session)["blocked"]


def test_a_query_past_the_timeout_fails_f7_with_the_reason(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session, review = _at_f6_review(ws, FOREVER)
    _database(ws)
    _bind(ws, ", timeout_ms: 200")
    code, body = _approve(ws, session, review)
    assert code == 0
    ran = body["ran"]
    assert ran["status"] == "failed" and ran["verified"]["ok"] is False
    log = json.loads(tht(ws, "session", "log", session, "--json").stdout)
    (verified,) = [e for e in log if e["type"] == "result_verified"]
    assert verified["payload"]["checks"] == ["timeout"]


def test_an_unreachable_database_writes_nothing_and_the_run_can_be_repeated(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    session, review = _at_f6_review(ws, SQL)
    _bind(ws)  # bound, but the file is not there
    code, body = _approve(ws, session, review)
    assert code == 0
    assert body["ran"]["status"] == "not_run" and body["ran"]["exit_code"] == 6
    folder = ws / "sessions" / session
    before = snapshot(folder)
    done = tht(ws, "stage", "run", "verification", session, "--json")
    assert done.returncode == 6
    assert snapshot(folder) == before
    assert not (ws / "data" / "h.db").exists()  # never created by a read
    _database(ws)
    assert tht(ws, "stage", "run", "verification", session).returncode == 0


def test_without_a_database_f7_says_what_is_missing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session, review = _at_f6_review(ws, SQL)
    code, body = _approve(ws, session, review)
    assert code == 0 and body["ran"]["status"] == "not_run"
    assert "no database bound" in body["ran"]["reason"]
    done = tht(ws, "stage", "run", "verification", session)
    assert done.returncode == 2 and "no database bound" in done.stderr


@pytest.mark.parametrize("stage", ["cte", "disambiguation"])
def test_stage_run_refuses_a_stage_tht_does_not_run(tmp_path: Path, stage: str) -> None:
    ws = tmp_path / "ws"
    session, _ = _at_f6_review(ws, SQL)
    done = tht(ws, "stage", "run", stage, session, "--json")
    assert done.returncode == 5
    assert json.loads(done.stdout)["error"]["code"] == "refused"


def test_stage_run_on_an_unknown_stage_is_not_found(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session, _ = _at_f6_review(ws, SQL)
    assert tht(ws, "stage", "run", "nope", session).returncode == 3


def _at_f6_review_with_snapshot(ws: Path, sql: str, binding: str) -> tuple[str, int]:
    """Like :func:`_at_f6_review`, with F4's catalog snapshot recording ``binding``."""
    from kernel.schema_view import SNAPSHOT_ARTIFACT, StaticSchemaView, encode_snapshot

    run = sc.make_kernel(ws)
    sc.start(run)
    sc.f1(run)
    run.kernel.skip(run.session, "memory_recall", actor=sc.H, reason="no memory yet")
    sc.stage_by_select(run, "rewriting", "question_rewritten", None, question="Hospitals")
    sc.close(run, "rewriting", (ArtifactChange(name="question.md", content=b"# Hospitals\n"),))
    sc.stage_by_select(run, "schema_linking", "schema_linked", None, tables=["ospedali"])
    snapshot = encode_snapshot(StaticSchemaView(dialect="sqlite", version="v", binding=binding))
    sc.close(run, "schema_linking", (ArtifactChange(name=SNAPSHOT_ARTIFACT, content=snapshot),))
    sc.stage_by_select(run, "cte", "cte_approved", "c", name="c", artifact="cte/1.sql")
    sc.close(run, "cte", (ArtifactChange(name="cte/1.sql", content=b"c AS (SELECT 1)\n"),))
    sc.stage_by_select(run, "sql", "sql_approved", None, dialect="sqlite")
    artifact = (ArtifactChange(name="sql_final.sql", content=sql.encode()),)
    review = sc._review_seq(
        run.kernel.apply_outcome(run.session, "sql", sc._confirm(artifacts=artifact), actor="agent")
    )
    return run.session, review


def test_f7_records_the_database_it_ran_against(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session, review = _at_f6_review_with_snapshot(ws, SQL, "sqlite:///data/h.db")
    _database(ws)
    _bind(ws)
    code, body = _approve(ws, session, review)
    assert code == 0 and body["ran"]["verified"]["ok"] is True, body
    log = json.loads(tht(ws, "session", "log", session, "--json").stdout)
    (verified,) = [e for e in log if e["type"] == "result_verified"]
    assert verified["payload"]["database"] == "sqlite:///data/h.db"


def test_f7_against_another_database_than_the_sessions_catalog_fails(tmp_path: Path) -> None:
    """The agent points workspace.yaml at a copy with doctored rows (same structure): tht does
    not verify the approved SQL on it — the result would be "verified by tht" on data nobody
    linked against."""
    ws = tmp_path / "ws"
    session, review = _at_f6_review_with_snapshot(ws, SQL, "sqlite:///data/h.db")
    real = _database(ws)
    doctored = ws / "data" / "copy.db"
    doctored.write_bytes(real.read_bytes())
    with sqlite3.connect(doctored) as db:
        db.execute("UPDATE ospedali SET nome = 'Forged'")
    db.close()
    with (ws / "workspace.yaml").open("a", encoding="utf-8") as settings:
        settings.write('\ndatabase: {url: "sqlite:///data/copy.db"}\n')
    code, body = _approve(ws, session, review)
    assert code == 0, body  # the approval stands; F7 ran and failed
    ran = body["ran"]
    assert ran["status"] == "failed" and ran["verified"]["ok"] is False
    log = json.loads(tht(ws, "session", "log", session, "--json").stdout)
    (verified,) = [e for e in log if e["type"] == "result_verified"]
    payload = verified["payload"]
    assert payload["checks"] == ["database"] and payload["rows"] == 0
    assert (
        "sqlite:///data/copy.db" in payload["reason"] and "sqlite:///data/h.db" in payload["reason"]
    )
    assert payload["database"] == "sqlite:///data/copy.db"
    shown = tht(ws, "artifact", "show", "result_sample.json", session, "--json")
    assert shown.returncode != 0  # nothing from the doctored copy was recorded
