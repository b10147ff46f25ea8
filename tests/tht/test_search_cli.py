"""``tht evidence publish``, ``tht search find / pack`` and ``tht evidence import-proposal``
through the real CLI (subprocesses, Qdrant Edge, hashing embedder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import run_tht

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evidence" / "sources"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kernel.workspace import init_workspace

    workspace, _ = init_workspace(tmp_path_factory.mktemp("cli") / "ws")
    text = workspace.settings_file.read_text(encoding="utf-8")
    workspace.settings_file.write_text(
        text.replace("evidence:\n", "evidence:\n  embedder: hashing\n"), encoding="utf-8"
    )
    for source in FIXTURES.iterdir():
        shutil.copy(source, workspace.sources_dir / source.name)
    assert run_tht("evidence", "prepare", cwd=workspace.root).returncode == 0
    return workspace.root


def test_find_before_publish_is_unavailable_with_exit_6_and_no_results(ws: Path) -> None:
    done = run_tht("search", "find", "tasso", "--json", cwd=ws)
    assert done.returncode == 6
    body = json.loads(done.stdout)
    assert body["status"] == "unavailable"
    assert body["results"] == []
    assert "tht evidence publish" in body["warning"]
    assert "warning:" in done.stderr


def test_publish_then_find_with_filters(ws: Path) -> None:
    published = run_tht("evidence", "publish", "--json", cwd=ws)
    assert published.returncode == 0, published.stderr
    body = json.loads(published.stdout)
    assert body["status"] == "activated"
    assert "no evaluation set" in published.stderr

    found = run_tht(
        "search",
        "find",
        "Tasso di occupazione",
        "--kind",
        "formula",
        "--limit",
        "3",
        "--json",
        cwd=ws,
    )
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["status"] == "available"
    assert result["generation"] == body["generation"]["id"]
    assert result["results"][0]["id"] == "evidence:tasso-di-occupazione"
    assert set(result["results"][0]) >= {"id", "kind", "title", "score", "excerpt", "source"}
    assert {r["kind"] for r in result["results"]} == {"formula"}

    filtered = run_tht(
        "search", "find", "tasso", "--where", "db=california_schools", "--json", cwd=ws
    )
    sources = {r["source"] for r in json.loads(filtered.stdout)["results"]}
    assert sources == {"evidence/sources/california-schools.md"}

    status = json.loads(run_tht("evidence", "status", "--json", cwd=ws).stdout)
    assert status["active_generation"]["id"] == body["generation"]["id"]


def test_bad_find_arguments_are_usage_errors(ws: Path) -> None:
    assert run_tht("search", "find", "x", "--purpose", "memory", cwd=ws).returncode == 2
    assert run_tht("search", "find", "x", "--kind", "rule", cwd=ws).returncode == 2
    assert run_tht("search", "find", "x", "--where", "db", cwd=ws).returncode == 2


def test_pack_records_a_receipt_with_ids_only(ws: Path) -> None:
    run_tht("evidence", "publish", cwd=ws)
    new = run_tht("session", "new", "Quanti ricoveri con ablazione nel 2023?", "--json", cwd=ws)
    assert new.returncode == 0, new.stderr
    session = json.loads(new.stdout)["session"]
    pack = run_tht("search", "pack", session, "--stage", "disambiguation", "--json", cwd=ws)
    assert pack.returncode == 0, pack.stderr
    body = json.loads(pack.stdout)
    assert body["status"] == "available"
    assert 0 < len(body["evidence"]) <= 5
    assert set(body["evidence"][0]) == {"id", "title", "kind", "excerpt"}
    log = json.loads(run_tht("session", "log", session, "--json", cwd=ws).stdout)
    receipts = [e for e in log if e["type"] == "evidence_consulted"]
    assert len(receipts) == 1
    assert receipts[0]["seq"] == body["receipt"]
    assert receipts[0]["stage"] == "disambiguation"
    assert receipts[0]["payload"] == {
        "purpose": "disambiguation",
        "generation": body["generation"],
        "returned": [e["id"] for e in body["evidence"]],
    }
    assert run_tht("search", "pack", session, "--stage", "datamart", cwd=ws).returncode == 2


def test_import_proposal_from_a_session_artifact_awaits_review(ws: Path, tmp_path: Path) -> None:
    done = run_tht("evidence", "import-proposal", "NOPE0000", "--seq", "3", cwd=ws)
    assert done.returncode == 3
    assert run_tht("evidence", "import-proposal", cwd=ws, env={"THT_SESSION": "x"}).returncode == 2
