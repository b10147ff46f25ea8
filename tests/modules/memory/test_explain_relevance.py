"""``explain_relevance``: the verdict ``tht memory search --explain`` prints is the floor's own
(``relevant``), for any hit; and each reason names the signal that decided it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from modules.memory.search import (
    DEFAULT_FLOOR,
    MENTION_OFFSET,
    NOT_RECALLED_BECAUSE,
    RECALLED_BECAUSE,
    ScoredMemoryHit,
    explain_relevance,
    relevant,
)

SCORES = st.one_of(st.none(), st.floats(min_value=-1.0, max_value=1.0, allow_nan=False))
HITS = st.builds(
    ScoredMemoryHit,
    id=st.just("m1"),
    kind=st.sampled_from(["memory", "solved_question", "other_kind"]),
    score=st.floats(min_value=0.0, max_value=1.0),
    dense=SCORES,
    lexical=st.one_of(st.none(), st.floats(min_value=0.0, max_value=40.0)),
    mention=SCORES,
    named=st.booleans(),
    contradicted=st.booleans(),
)


@given(hit=HITS)
def test_the_explained_verdict_is_the_floors(hit: ScoredMemoryHit) -> None:
    signal, floor, why = explain_relevance(hit)
    recalled = bool(relevant([hit]))
    assert (why in RECALLED_BECAUSE) == recalled
    assert why in RECALLED_BECAUSE + NOT_RECALLED_BECAUSE
    assert floor == DEFAULT_FLOOR.get(hit.kind)
    if recalled:
        assert relevant([hit])[0].score == signal


def _hit(**kw: object) -> ScoredMemoryHit:
    base: dict[str, object] = {"id": "m1", "kind": "memory", "score": 0.5, "dense": None}
    base["lexical"] = None
    base.update(kw)
    return ScoredMemoryHit(**base)  # type: ignore[arg-type]


def test_each_reason_names_the_signal_that_decided() -> None:
    bar = DEFAULT_FLOOR["memory"]
    assert explain_relevance(_hit(named=True, dense=0.1))[2] == "named"
    assert explain_relevance(_hit(dense=bar))[2] == "cosine"
    assert explain_relevance(_hit(dense=0.1, mention=bar + MENTION_OFFSET))[2] == "mention"
    assert explain_relevance(_hit(dense=bar - 0.001))[2] == "below-floor"
    assert explain_relevance(_hit(lexical=12.0))[2] == "bm25-only"
    assert explain_relevance(_hit(kind="other_kind", dense=0.99))[2] == "no-floor"
    # another acronym than the question's: no likeness recalls it; a named subject still is
    assert explain_relevance(_hit(dense=0.99, contradicted=True))[:3:2] == (
        None,
        "acronym-conflict",
    )
    assert explain_relevance(_hit(dense=0.99, contradicted=True, named=True))[2] == "named"
