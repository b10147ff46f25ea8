"""F5/F6 proposals are checked before a review opens, and F4 records the Effective Relationship
Snapshot (tht/sql_runtime.py, hooked into ``App.propose``).

A proposal whose SQL artifacts fail the check is rejected whole: exit 2, one line per problem,
and the ledger is byte-for-byte unchanged. The demo database is the Workspace Database; the
catalog is synced through the real ``tht catalog sync``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernel.schema_view import SNAPSHOT_ARTIFACT, decode_snapshot
from tests.tht.conftest import Result
from tht.demo_database import DEMO_CTE, DEMO_SQL, make_demo_database

Tht = Callable[..., Result]
H = "human:ann"
CTE_NAME, CTE_BODY = DEMO_CTE
USES_CTE = (
    "SELECT o.nome, COUNT(*) AS n\n"
    f"FROM {CTE_NAME} AS a\n"
    "JOIN ospedali AS o ON o.id = a.ospedale_id\n"
    "GROUP BY o.nome\n"
)


# ----------------------------------------------------------------------------- helpers


def bind_demo(workspace: Path) -> Path:
    """The demo database in ``data/demo.db``, bound in workspace.yaml."""
    db = make_demo_database(workspace / "data" / "demo.db")
    with (workspace / "workspace.yaml").open("a", encoding="utf-8") as f:
        f.write('\ndatabase: {url: "sqlite:///data/demo.db"}\n')
    return db


def sync(tht: Tht) -> None:
    done = tht("catalog", "sync", "--json")
    assert done.code == 0, done.stdout + done.stderr


def ok(done: Result) -> Any:
    assert done.code == 0, done.stdout + done.stderr
    return done.json()


def propose(tht: Tht, tmp: Path, session: str, stage: str, body: dict[str, Any]) -> Result:
    path = tmp / f"{stage}-proposal.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return tht("propose", stage, "--file", str(path), session, "--json")


def confirm(tht: Tht, tmp: Path, session: str, stage: str, **artifacts: str) -> None:
    body = {
        "kind": "confirm",
        "artifacts": [{"name": n.replace("__", "/"), "content": c} for n, c in artifacts.items()],
    }
    review = ok(propose(tht, tmp, session, stage, body))["review"]
    ok(tht("review", "answer", str(review), session, "--approve", "--as", H, "--json"))


def new_session(tht: Tht, question: str = "Quanti ricoveri con ablazione nel 2024?") -> str:
    """A session on ``question`` (one about the bound database: admission judges relevance)."""
    return str(ok(tht("session", "new", question, "--json"))["session"])


def to_stage(tht: Tht, tmp: Path, session: str, target: str) -> None:
    """Drive the session to ``target`` the shortest legal way (F4 proposed like an agent)."""
    order = ["disambiguation", "memory_recall", "rewriting", "schema_linking", "cte", "sql"]
    for stage in order[: order.index(target)]:
        if stage == "memory_recall":
            continue  # runs by itself when F1 closes: the workspace memory is empty
        if stage in ("disambiguation", "cte"):
            ok(tht("stage", "skip", stage, session, "--reason", "not needed", "--as", H, "--json"))
        elif stage == "rewriting":
            event = {"type": "question_rewritten", "payload": {"question": "Ablazioni 2024"}}
            option = {"id": "q", "label": "q", "events": [event]}
            select = {"kind": "select", "prompt": "rewrite?", "options": [option]}
            review = ok(propose(tht, tmp, session, stage, select))["review"]
            ok(tht("review", "answer", str(review), session, "--choose", "q", "--as", H, "--json"))
            confirm(tht, tmp, session, stage)  # question.md is rendered by tht
        else:
            confirm(tht, tmp, session, stage, **{"schema_linking.json": "{}\n"})


def approve_cte(tht: Tht, tmp: Path, session: str, content: str) -> None:
    """F5: propose the CTE (select), choose it, then close F5 (confirm)."""
    review = ok(propose(tht, tmp, session, "cte", cte_proposal(content)))["review"]
    ok(tht("review", "answer", str(review), session, "--choose", "approve", "--as", H, "--json"))
    confirm(tht, tmp, session, "cte")


def cte_proposal(*contents: str) -> dict[str, Any]:
    names = [CTE_NAME] + [f"{CTE_NAME}_{i}" for i in range(1, len(contents))]
    return {
        "kind": "select",
        "prompt": "Approve the CTEs?",
        "options": [
            {
                "id": "approve",
                "label": "the CTEs",
                "events": [
                    {
                        "type": "cte_approved",
                        "subject": name,
                        "payload": {"name": name, "artifact": f"cte/{i + 1}.sql"},
                    }
                    for i, name in enumerate(names)
                ],
            }
        ],
        "artifacts": [{"name": f"cte/{i + 1}.sql", "content": c} for i, c in enumerate(contents)],
    }


def sql_proposal(sql: str) -> dict[str, Any]:
    return {
        "kind": "confirm",
        "prompt": "Approve the final SQL?",
        "artifacts": [{"name": "sql_final.sql", "content": sql}],
    }


def ledger_bytes(workspace: Path, session: str) -> bytes:
    return b"".join(
        p.read_bytes()
        for p in sorted((workspace / "sessions" / session).rglob("*"))
        if p.is_file() and "cache" not in p.parts
    )


@pytest.fixture
def bound(workspace: Path, tht: Tht) -> Path:
    bind_demo(workspace)
    sync(tht)
    return workspace


# ----------------------------------------------------------------------------- F5 / F6


def test_a_final_sql_that_fails_the_check_is_rejected_whole(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "sql")
    before = ledger_bytes(bound, session)
    done = propose(
        tht, tmp_path, session, "sql", sql_proposal("SELEC banana FROM WHERE ;;; DROP TABLE x")
    )
    assert done.code == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(
        "error: proposal for sql rejected: its SQL fails the check (3 problems"
    )
    assert (
        lines[1].strip()
        == "sql_final.sql:1:14: parse_error: Invalid expression / Unexpected token near 'FROM'"
    )
    assert "not_single_statement" in lines[2] and "not_read_only" in lines[3]
    assert len(lines) == 4
    error = done.json()["error"]
    assert error["exit_code"] == 2
    assert [p["code"] for p in error["details"]["problems"]] == [
        "parse_error",
        "not_single_statement",
        "not_read_only",
    ]
    assert {p["artifact"] for p in error["details"]["problems"]} == {"sql_final.sql"}
    assert ledger_bytes(bound, session) == before


def test_unknown_names_are_rejected_with_a_did_you_mean(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "sql")
    before = ledger_bytes(bound, session)
    sql = (
        "SELECT o.nome, COUNT(*)\n"
        "FROM ricoveri AS r\n"
        "JOIN ospedale AS o ON o.id = r.ospedale_id\n"
        "WHERE r.data >= '2024-01-01'\n"
        "GROUP BY o.nome"
    )
    done = propose(tht, tmp_path, session, "sql", sql_proposal(sql))
    assert done.code == 2
    assert (
        "sql_final.sql:3:6: unknown_table: unknown table 'ospedale' (did you mean 'ospedali'?)"
        in done.stderr
    )
    assert "sql_final.sql:4:7: unknown_column: unknown column 'r.data' (did you mean" in done.stderr
    assert ledger_bytes(bound, session) == before


def test_a_good_final_sql_opens_its_review(bound: Path, tht: Tht, tmp_path: Path) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "sql")
    body = ok(propose(tht, tmp_path, session, "sql", sql_proposal(DEMO_SQL)))
    assert body["review"] is not None


def test_a_bad_cte_is_rejected_and_names_its_artifact_and_line(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "cte")
    before = ledger_bytes(bound, session)
    good = CTE_BODY
    bad = f"{CTE_NAME}_1 AS (\n  SELECT a.ospedale_id, a.giorni\n  FROM {CTE_NAME} AS a\n)\n"
    done = propose(tht, tmp_path, session, "cte", cte_proposal(good, bad))
    assert done.code == 2, done.stderr
    # the second CTE may use the first (its output columns are id, ospedale_id)
    assert "cte/2.sql:2:25: unknown_column: unknown column 'a.giorni'" in done.stderr
    assert "cte/1.sql" not in done.stderr
    assert ledger_bytes(bound, session) == before


def test_both_forms_of_a_cte_artifact_are_checked_and_accepted(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "cte")
    definition = f"{CTE_NAME} AS (\n{CTE_BODY})\n"
    later = f"SELECT a.ospedale_id FROM {CTE_NAME} AS a"
    assert ok(propose(tht, tmp_path, session, "cte", cte_proposal(definition, later)))["review"]


def test_the_final_sql_may_use_the_approved_ctes_and_their_columns(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "cte")
    approve_cte(tht, tmp_path, session, CTE_BODY)
    assert ok(propose(tht, tmp_path, session, "sql", sql_proposal(USES_CTE)))["review"]


def test_a_column_the_approved_cte_does_not_output_is_unknown(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "cte")
    approve_cte(tht, tmp_path, session, CTE_BODY)
    done = propose(
        tht, tmp_path, session, "sql", sql_proposal(f"SELECT a.stato FROM {CTE_NAME} AS a")
    )
    assert done.code == 2
    assert "unknown column 'a.stato'" in done.stderr


def test_without_catalog_and_database_the_sql_is_not_checked_and_it_is_said(
    workspace: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "sql")
    done = propose(tht, tmp_path, session, "sql", sql_proposal("SELEC banana"))
    assert done.code == 0, done.stderr
    assert "was not checked" in done.stderr


def test_a_bound_database_without_a_catalog_says_to_sync_and_records_nothing(
    workspace: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "sql")
    bind_demo(workspace)
    before = ledger_bytes(workspace, session)
    done = propose(tht, tmp_path, session, "sql", sql_proposal(DEMO_SQL))
    assert done.code == 2
    assert "tht catalog sync" in done.stderr
    assert ledger_bytes(workspace, session) == before


# ----------------------------------------------------------------------------- F4 snapshot


def test_the_f4_proposal_records_the_snapshot_once(bound: Path, tht: Tht, tmp_path: Path) -> None:
    from kernel.schema_view import encode_snapshot
    from tht.catalog_runtime import schema_view
    from tht.composition import open_app

    session = new_session(tht)
    to_stage(tht, tmp_path, session, "schema_linking")
    first = ok(
        propose(
            tht,
            tmp_path,
            session,
            "schema_linking",
            {"kind": "confirm", "artifacts": [{"name": "schema_linking.json", "content": "{}"}]},
        )
    )
    shown = ok(tht("artifact", "show", SNAPSHOT_ARTIFACT, session, "--json"))
    live = schema_view(open_app(bound))
    assert live is not None
    snapshot = decode_snapshot(encode_snapshot(live))
    assert shown["content"] == encode_snapshot(live).decode()
    assert {t.name for t in snapshot.tables()} == {"ospedali", "procedure", "pazienti", "ricoveri"}
    assert snapshot.binding == "sqlite:///data/demo.db"  # the catalog's sync: what F7 checks
    # rejected, then proposed again: the session keeps the snapshot it recorded
    ok(tht("review", "answer", str(first["review"]), session, "--reject", "--as", H, "--json"))
    log_before = ok(tht("session", "log", session, "--json"))
    ok(
        propose(
            tht,
            tmp_path,
            session,
            "schema_linking",
            {"kind": "confirm", "artifacts": [{"name": "schema_linking.json", "content": "{}"}]},
        )
    )
    log = ok(tht("session", "log", session, "--json"))
    written = [
        e["payload"]["name"] for e in log[len(log_before) :] if e["type"] == "artifact_written"
    ]
    assert written == ["schema_linking.json"]


def test_an_agent_cannot_propose_the_snapshot(bound: Path, tht: Tht, tmp_path: Path) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "schema_linking")
    before = ledger_bytes(bound, session)
    forged = {
        "kind": "confirm",
        "artifacts": [{"name": SNAPSHOT_ARTIFACT, "content": '{"dialect":"sqlite","tables":[]}'}],
    }
    done = propose(tht, tmp_path, session, "schema_linking", forged)
    assert done.code == 5
    assert "recorded by tht" in done.stderr
    assert ledger_bytes(bound, session) == before


def test_f6_is_checked_against_the_snapshot_the_session_saw(
    bound: Path, tht: Tht, tmp_path: Path
) -> None:
    session = new_session(tht)
    to_stage(tht, tmp_path, session, "sql")  # F4 recorded the snapshot
    db = sqlite3.connect(bound / "data" / "demo.db")
    db.execute("ALTER TABLE ospedali RENAME COLUMN regione TO area")
    db.commit()
    db.close()
    sync(tht)
    # the live catalog no longer has ospedali.regione, the session's snapshot does
    assert ok(propose(tht, tmp_path, session, "sql", sql_proposal("SELECT regione FROM ospedali")))[
        "review"
    ]
    other = new_session(tht)
    to_stage(tht, tmp_path, other, "sql")
    done = propose(tht, tmp_path, other, "sql", sql_proposal("SELECT regione FROM ospedali"))
    assert done.code == 2 and "unknown column 'regione'" in done.stderr
