"""Vocabulary alignment through the real CLI: the generation's table in ``evidence status``, and
a forged table as an attacker would write it: exit 6 for the queries it could change, never a
silently different ranking, until ``evidence publish`` rebuilds it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli import run_tht

ENGLISH = Path(__file__).resolve().parents[1] / "fixtures" / "evidence" / "english"

ITALIAN = "Quanti atomi di iodio ci sono nelle molecole?"


def test_a_forged_vocabulary_table_makes_cross_lingual_search_exit_6(tmp_path: Path) -> None:
    from kernel.workspace import init_workspace

    workspace, _ = init_workspace(tmp_path / "ws")
    text = workspace.settings_file.read_text(encoding="utf-8")
    workspace.settings_file.write_text(
        text.replace("evidence:\n", "evidence:\n  embedder: hashing\n"), encoding="utf-8"
    )
    shutil.copy(ENGLISH / "chemistry.md", workspace.sources_dir / "chemistry.md")
    root = workspace.root
    assert run_tht("evidence", "prepare", cwd=root).returncode == 0
    published = run_tht("evidence", "publish", "--json", cwd=root)
    assert published.returncode == 0, published.stderr
    first = json.loads(published.stdout)["generation"]

    status = json.loads(run_tht("evidence", "status", "--json", cwd=root).stdout)
    table = status["active_generation"]["vocabulary"]
    # the clauses' content words: bond, element, iodine, refers, single, sulfur, type
    assert table["words"] == 7
    assert len(table["sha256"]) == 64
    assert status["active_generation"]["languages"] == ["en"]
    assert run_tht("search", "find", ITALIAN, "--json", cwd=root).returncode == 0
    debug = run_tht("search", "find", ITALIAN, "--json", "--debug", cwd=root)
    assert debug.returncode == 0 and json.loads(debug.stdout)["status"] == "available"
    assert "debug modules.evidence.retrieval: BM25 query gained" in debug.stderr

    path = root / ".tht" / "evidence" / "vocabulary" / f"{first['id']}.npz"
    assert path.is_file()
    path.write_bytes(path.read_bytes()[:-8] + b"\0" * 8)  # the agent edits the table
    done = run_tht("search", "find", ITALIAN, "--json", cwd=root)
    assert done.returncode == 6
    body = json.loads(done.stdout)
    assert (body["status"], body["results"]) == ("unavailable", [])
    assert "vocabulary" in body["warning"] and "tht evidence publish" in body["warning"]
    assert "Traceback" not in done.stderr
    # an English query never reads the table
    assert run_tht("search", "find", "iodine atoms", "--json", cwd=root).returncode == 0

    again = run_tht("evidence", "publish", "--json", cwd=root)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["generation"]["id"] != first["id"]
    assert not path.exists()  # only the active generation's table is kept
    assert run_tht("search", "find", ITALIAN, "--json", cwd=root).returncode == 0
