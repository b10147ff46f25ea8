"""``tht schema link`` and the linked schema in ``tht search pack`` through the real CLI.

Subprocesses over a workspace bound to the demo database (deterministic SQLite), synced with
``tht catalog sync`` (which builds the schema index), Qdrant Edge and the hashing embedder.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import run_tht

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden" / "schema_linking" / "cli_link.json"
FIXTURES = REPO / "tests" / "fixtures" / "evidence" / "sources"
QUESTION = "Quanti ricoveri con ablazione per ospedale nel 2024?"


def _workspace(root: Path, *, bound: bool = True) -> Path:
    from kernel.workspace import init_workspace
    from tht.demo_database import make_demo_database

    ws, _ = init_workspace(root)
    text = ws.settings_file.read_text(encoding="utf-8")
    text = text.replace("evidence:\n", "evidence:\n  embedder: hashing\n")
    if bound:
        make_demo_database(ws.root / "data" / "demo.db")
        text += '\ndatabase: {url: "sqlite:///data/demo.db"}\n'
    ws.settings_file.write_text(text, encoding="utf-8")
    return ws.root


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _workspace(tmp_path_factory.mktemp("schema") / "ws")
    done = run_tht("catalog", "sync", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_link_json_is_the_contract_shape_and_matches_the_golden(
    synced: Path, update_golden: bool
) -> None:
    done = run_tht("schema", "link", QUESTION, "--json", cwd=synced)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert list(body) == ["tables", "columns", "joins"]
    assert all(set(t) == {"name", "score"} for t in body["tables"])
    assert all(set(c) == {"table", "column", "score"} for c in body["columns"])
    assert all(set(j) == {"from", "to"} for j in body["joins"])
    assert {"ricoveri", "ospedali"} <= {t["name"] for t in body["tables"][:3]}
    assert {"from": "ricoveri.ospedale_id", "to": "ospedali.id"} in body["joins"]
    text = json.dumps(body, indent=1, ensure_ascii=False) + "\n"
    if update_golden:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.read_text(encoding="utf-8") == text
    again = run_tht("schema", "link", QUESTION, "--json", cwd=synced)
    assert again.stdout == done.stdout  # deterministic across processes


def test_link_limit_bounds_both_lists(synced: Path) -> None:
    done = run_tht("schema", "link", QUESTION, "--limit", "2", "--json", cwd=synced)
    body = json.loads(done.stdout)
    assert len(body["tables"]) == 2 and len(body["columns"]) == 2


def test_people_get_tables_not_json(synced: Path) -> None:
    done = run_tht("schema", "link", QUESTION, cwd=synced)
    assert done.returncode == 0, done.stderr
    assert "ricoveri" in done.stdout and "ospedali.id" in done.stdout
    assert not done.stdout.lstrip().startswith("{")


def test_an_empty_question_is_a_usage_error(synced: Path) -> None:
    done = run_tht("schema", "link", "  ", "--json", cwd=synced)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "usage"


def test_no_database_bound_is_exit_2_with_the_remedy(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", bound=False)
    done = run_tht("schema", "link", QUESTION, "--json", cwd=root)
    assert done.returncode == 2
    assert "no workspace database is bound" in json.loads(done.stdout)["error"]["message"]
    assert "Traceback" not in done.stderr


def test_a_catalog_never_synced_is_exit_6_with_the_remedy(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    done = run_tht("schema", "link", QUESTION, "--json", cwd=root)
    assert done.returncode == 6
    assert json.loads(done.stdout)["error"]["message"] == (
        "catalog not synced: run `tht catalog sync`"
    )


def test_a_missing_or_stale_index_is_exit_6_never_an_empty_link(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    assert run_tht("catalog", "sync", cwd=root).returncode == 0
    store = root / ".tht" / "qdrant"
    # the catalog moves on while the index cannot follow (its store is unusable during the sync)
    with sqlite3.connect(root / "data" / "demo.db") as con:
        con.execute("CREATE TABLE reparti (id INTEGER PRIMARY KEY, nome TEXT)")
    shutil.move(store, root / "qdrant.aside")
    store.write_text("not a vector store", encoding="utf-8")
    resync = run_tht("catalog", "sync", cwd=root)
    assert resync.returncode == 0, resync.stderr
    assert "schema index was not updated" in resync.stderr
    store.unlink()
    shutil.move(root / "qdrant.aside", store)
    stale = run_tht("schema", "link", QUESTION, "--json", cwd=root)
    assert stale.returncode == 6, stale.stderr
    error = json.loads(stale.stdout)["error"]
    assert error["details"]["reason"] == "stale" and "tht catalog reindex" in error["message"]
    assert "tables" not in json.loads(stale.stdout)
    # the index's records gone: missing
    shutil.rmtree(root / ".tht" / "schema_index")
    missing = run_tht("schema", "link", QUESTION, "--json", cwd=root)
    assert missing.returncode == 6
    assert json.loads(missing.stdout)["error"]["details"]["reason"] == "missing"
    # the next sync rebuilds it, and linking works again
    assert run_tht("catalog", "sync", cwd=root).returncode == 0
    assert run_tht("schema", "link", QUESTION, "--json", cwd=root).returncode == 0


def _answer(root: Path, session: str, proposal: dict[str, object], *extra: str) -> None:
    path = root / "proposal.json"
    path.write_text(json.dumps(proposal), encoding="utf-8")
    proposed = run_tht("propose", "rewriting", "--file", str(path), session, "--json", cwd=root)
    assert proposed.returncode == 0, proposed.stderr
    seq = str(json.loads(proposed.stdout)["review"])
    answered = run_tht("review", "answer", seq, session, *extra, "--as", "human:ann", cwd=root)
    assert answered.returncode == 0, answered.stderr


def test_the_schema_linking_pack_includes_the_schema_linked_to_the_rewritten_question(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path / "ws")
    for source in FIXTURES.iterdir():
        shutil.copy(source, root / "evidence" / "sources" / source.name)
    for step in (("catalog", "sync"), ("evidence", "prepare"), ("evidence", "publish")):
        assert run_tht(*step, cwd=root).returncode == 0
    created = run_tht("session", "new", QUESTION, "--json", cwd=root)
    session = json.loads(created.stdout)["session"]
    skip = ("stage", "skip", "disambiguation", session, "--reason", "n/a", "--as", "human:ann")
    assert run_tht(*skip, cwd=root).returncode == 0  # F2 then runs by itself: nothing to recall
    rewritten = "Numero di ricoveri con procedura di ablazione per ospedale nel 2024"
    event = {"type": "question_rewritten", "payload": {"question": rewritten}}
    _answer(
        root,
        session,
        {
            "kind": "select",
            "prompt": "?",
            "options": [{"id": "a", "label": "r", "events": [event]}],
        },
        "--choose",
        "a",
    )
    confirm = {"kind": "confirm", "prompt": "ok?"}  # question.md: rendered by tht
    _answer(root, session, confirm, "--approve")

    done = run_tht("search", "pack", session, "--stage", "schema_linking", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert {"status", "stage", "purpose", "generation", "evidence", "receipt"} <= set(body)
    schema = body["schema"]
    assert schema["status"] == "available" and schema["question"] == rewritten
    assert {"ricoveri", "procedure"} <= {t["name"] for t in schema["tables"][:3]}
    # the pack's glossary unit names flag_ablazione: the hint puts it first
    assert (schema["columns"][0]["table"], schema["columns"][0]["column"]) == (
        "procedure",
        "flag_ablazione",
    )
    # another stage's pack carries no schema section
    other = run_tht("search", "pack", session, "--stage", "disambiguation", "--json", cwd=root)
    assert "schema" not in json.loads(other.stdout)
