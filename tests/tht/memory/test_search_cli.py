"""``tht memory search``'s refusals before it opens anything (exit 2, nothing read or written)
and its ``--mode bm25`` diagnostic, through the real CLI on the prepared workspaces (one memory,
``ablazione``, and one solved question)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kernel.transitions import MAX_QUESTION_CHARS
from tests.tht.memory.conftest import Prepared


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def test_a_query_over_the_question_limit_is_refused_and_nothing_is_done(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    before = _digest(ws.root)
    query = "ablazione " * (MAX_QUESTION_CHARS // 10) + "x"  # one past the limit, once stripped
    done = ws.tht("memory", "search", query, "--json")
    assert done.code == 2
    error = done.json()["error"]["message"]
    assert f"{MAX_QUESTION_CHARS + 1} characters long" in error
    assert f"the limit is {MAX_QUESTION_CHARS}" in error
    assert f"the limit is {MAX_QUESTION_CHARS}" in ws.tht("memory", "search", query).stderr
    assert _digest(ws.root) == before


def test_bm25_mode_without_explain_is_refused_saying_how_to_see_its_ranking(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    done = ws.tht("memory", "search", "ablazione", "--mode", "bm25")
    assert done.code == 2
    assert "--mode bm25 never returns results" in done.stderr
    assert "--explain" in done.stderr


def test_bm25_mode_with_explain_shows_the_bm25_ranking_with_its_scores(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    body = ws.ok("memory", "search", "ablazione", "--mode", "bm25", "--explain")
    assert body["results"] == []  # nothing a BM25 score alone clears the floor with
    candidates = body["explain"]["candidates"]
    mine = next(c for c in candidates if c["id"] == prepared.memory_id)
    assert mine["why"] == "bm25-only" and mine["signals"]["bm25"] > 0
    assert all(c["signals"]["cosine"] is None for c in candidates)
    scores = [c["signals"]["bm25"] for c in candidates]
    assert scores == sorted(scores, reverse=True)  # the ranking, best first
    text = ws.tht("memory", "search", "ablazione", "--mode", "bm25", "--explain")
    assert text.code == 0 and "bm25-only" in text.stdout
