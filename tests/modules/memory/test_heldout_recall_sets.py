"""The locked recall sets beside the main one (benchmarks/data/memory_recall, its README):
``queries_heldout2.jsonl`` (later questions over the main set's memories) and ``heldout3/``
(memories of its own in four other domains, with its solved and later questions), both by other
authors, reported once and never tuned on.

Checked: the shapes the runner reads, every expected id known, the types meaning what they say,
every question locked, the runner's refusal to tune on them, and the bytes that were measured.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from benchmarks import eval_memory_recall as ev

#: the bytes measured: an edit after a figure was seen fails here
PINNED = {
    "queries_heldout2.jsonl": "1d38ef43111da20f7deeab78b429c65b7eb51c6b26878a4105cd58fd5825f166",
    "heldout3/memories.jsonl": "21a1ff99d36ebdc563ebeb758c354fa291e0f3daece16827afa580d0bd057fcc",
    "heldout3/solved_questions.jsonl": (
        "135327b3c511ae542dcb489e52afe8e9522396ee9135c88f596751273168b1ac"
    ),
    "heldout3/queries.jsonl": "313923a8c6f9bd312ca03ab7faf2085bc2a665136489ce07c77477232327eb08",
}


def _load(name: str) -> ev.EvalSet:
    folder, queries, _, _ = ev.QUERY_SETS[name]
    return ev.load_set(folder, queries=queries)


@pytest.mark.parametrize(
    ("name", "split"), [("heldout2", "locked2"), ("heldout3", "locked3"), ("dev4", "dev4")]
)
def test_a_set_beside_the_main_one_is_well_formed(name: str, split: str) -> None:
    data = _load(name)
    language = {m["id"]: m["language"] for m in data.memories}
    solved = {s["id"] for s in data.solved}
    assert len(data.queries) >= 90 and len({q["id"] for q in data.queries}) == len(data.queries)
    types = Counter(q["type"] for q in data.queries)
    assert types["near_miss"] >= 20 and types["cross_lingual"] >= 25 and types["paraphrase"] >= 25
    for q in data.queries:
        assert q["split"] == split and q["language"] in ("it", "en"), q["id"]
        assert set(q["expect"]) <= set(language) | solved, q["id"]
        if q["type"] == "near_miss":
            assert q["expect"] == [], q["id"]
        elif q["type"] == "cross_lingual":  # (a question may rely on two memories)
            assert any(language[e] != q["language"] for e in q["expect"]), q["id"]
        elif q["type"] == "paraphrase":
            assert any(language[e] == q["language"] for e in q["expect"]), q["id"]
        else:
            assert set(q["expect"]) & solved, q["id"]
    covered = {e for q in data.queries for e in q["expect"]}
    assert set(language) <= covered  # every memory is asked about


def test_the_third_and_fourth_sets_have_memories_of_their_own_in_other_domains() -> None:
    main, third, fourth = _load("main"), _load("heldout3"), _load("dev4")
    domains = [{m["domain"] for m in s.memories} for s in (main, third, fourth)]
    assert not domains[0] & domains[1] and not domains[0] & domains[2]
    assert not domains[1] & domains[2]
    for other in (third, fourth):
        assert len(other.memories) >= 30 and len(other.solved) >= 5
        assert not {m["id"] for m in other.memories} & {m["id"] for m in main.memories}
    assert Counter(m["language"] for m in third.memories) == {"it": 18, "en": 18}
    assert Counter(m["language"] for m in fourth.memories) == {"it": 20, "en": 20}


def test_only_the_development_sets_may_be_tuned_on() -> None:
    assert frozenset({"main", "dev4"}) == ev.DEV_SETS
    assert set(ev.QUERY_SETS) - ev.DEV_SETS == {"heldout2", "heldout3"}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_locked_files_are_the_ones_measured(name: str) -> None:
    digest = hashlib.sha256((ev.DATA / name).read_bytes()).hexdigest()
    assert digest == PINNED[name], f"{name} was edited after it was measured"


@pytest.mark.parametrize("name", ["heldout2", "heldout3"])
def test_the_runner_refuses_to_tune_on_a_locked_set(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_TUNE", "1")
    with pytest.raises(SystemExit) as stop:
        ev.main(["--set", name])
    assert stop.value.code == 2
