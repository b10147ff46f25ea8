"""Fail-closed search of Memory's index, its rankings, and the relevance floor.

Real Qdrant Edge shards (see ``test_index.py`` for the helpers); the hashing embedder, so
cosines mean word overlap here, not meaning: the floor's value is the eval's business
(``benchmarks/eval_memory_recall.py``), its rule is tested here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.vectors import VectorFilter
from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from modules.memory.index import (
    HEADER_FILE,
    MEMORY_KIND,
    SOLVED_KIND,
    MemoryIndexHeader,
    load_header,
    reindex,
)
from modules.memory.index_capabilities import MemoryIndexCapabilities, MemoryIndexUnavailable
from modules.memory.recall import RecallHit
from modules.memory.search import (
    DEFAULT_FLOOR,
    REINDEX_COMMAND,
    ScoredMemoryHit,
    check_index,
    index_filter,
    relevant,
    search,
)
from tests.modules.memory.test_index import (
    BASE,
    SOLVED,
    CountingEmbedder,
    Index,
    record,
    solved,
    state,
)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    built.store.close()


def unavailable(index: Index, *, last_seq: int = 4, head: str = "h1") -> MemoryIndexUnavailable:
    with pytest.raises(MemoryIndexUnavailable) as err:
        check_index(index.caps, last_seq=last_seq, head=head)
    assert err.value.exit_code == 6
    assert REINDEX_COMMAND in err.value.message
    assert err.value.details["remedy"] == [REINDEX_COMMAND]
    return err.value


def edit_header(built: Index, **changes: Any) -> None:
    header = load_header(built.caps.state_dir)
    assert header is not None
    path = built.caps.state_dir / HEADER_FILE
    path.write_bytes(msgspec.json.encode(msgspec.structs.replace(header, **changes)))


# --- fail-closed ---------------------------------------------------------------------------


def test_a_missing_index_is_unavailable_never_empty(index: Index) -> None:
    assert unavailable(index).reason == "missing"


def test_an_index_of_another_registry_head_is_stale(index: Index) -> None:
    index.build(state())
    assert check_index(index.caps, last_seq=4, head="h1").registry_head == "h1"
    err = unavailable(index, last_seq=5, head="h2")
    assert err.reason == "stale" and "seq 4" in err.message and "seq 5" in err.message
    assert unavailable(index, last_seq=4, head="h-forked").reason == "stale"


def test_a_deleted_marker_is_stale_until_reindexed(index: Index) -> None:
    index.build(state())
    index.store.delete(VectorFilter(kind=MEMORY_KIND, match={"marker": "memory_index_complete"}))
    assert unavailable(index).reason == "stale"
    assert index.build(state()).rebuilt
    check_index(index.caps, last_seq=4, head="h1")


def test_a_store_that_lost_its_points_is_stale(index: Index) -> None:
    index.build(state())
    index.store.delete(VectorFilter(kind=MEMORY_KIND))
    assert unavailable(index).reason == "stale"


def test_a_store_without_the_collection_is_missing(index: Index, tmp_path: Path) -> None:
    index.build(state())
    index.store.close()
    index.store = EdgeVectorStore(tmp_path / "elsewhere")
    assert unavailable(index).reason == "missing"


def test_unreadable_records_are_corrupt(index: Index) -> None:
    index.build(state())
    (index.caps.state_dir / HEADER_FILE).write_text("{not json", encoding="utf-8")
    assert unavailable(index).reason == "corrupt"
    (index.caps.state_dir / HEADER_FILE).write_text('{"layout": 3}', encoding="utf-8")
    assert unavailable(index).reason == "corrupt"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        (
            {"registry_head": "h-now"},
            "stale",
        ),  # claims the registry as it is now: the marker disagrees
        ({"index": "someone-else"}, "stale"),
        ({"build": "0" * 32}, "stale"),
        ({"embedder": "another-model"}, "incompatible"),
        ({"dense_size": 64}, "incompatible"),
        ({"bm25": "bm25/v0"}, "incompatible"),
        ({"layout": "memory-index/v0"}, "incompatible"),
    ],
)
def test_a_tampered_header_is_unavailable(
    index: Index, changes: dict[str, Any], reason: str
) -> None:
    index.build(state())
    edit_header(index, **changes)
    head = str(changes.get("registry_head", "h1"))
    assert unavailable(index, head=head).reason == reason


def test_another_embedder_is_incompatible(index: Index) -> None:
    index.build(state())
    index.store.close()
    other = Index(index.folder, CountingEmbedder(identity="another-model/32"))
    with pytest.raises(MemoryIndexUnavailable) as err:
        check_index(other.caps, last_seq=4, head="h1")
    assert err.value.reason == "incompatible" and "another-model/32" in err.value.message
    other.store.close()
    index.store = EdgeVectorStore(index.folder / "qdrant")


# --- rankings ------------------------------------------------------------------------------


def test_points_of_another_index_in_the_same_store_are_never_returned(tmp_path: Path) -> None:
    mine = Index(tmp_path / "a")
    mine.build(state())
    foreign = MemoryIndexCapabilities(
        state_dir=tmp_path / "b-state",
        vector_store=lambda: mine.store,
        embedder=lambda: mine.embedder,
        bm25=lambda: Bm25Encoder(("en",)),
        nonce=lambda: "index-b",
    )
    theirs = state(
        [record("m-foreign", "revenue", "revenue of the other workspace")],
        [msgspec.structs.replace(SOLVED[0], solved_id="sq-foreign")],
    )
    reindex(foreign, theirs, registry_head="x")
    header = check_index(mine.caps, last_seq=4, head="h1")
    for mode in ("hybrid", "dense", "bm25"):
        ids = {h.id for h in search(mine.caps, header, "revenue", limit=50, mode=mode)}
        assert ids and not ids & {"m-foreign", "sq-foreign"}
        assert ids <= {"m-revenue", "m-active", "m-north", "sq-1"}
    assert check_index(foreign, last_seq=1 + 1, head="x").index == "index-b"
    mine.store.close()


def test_modes_carry_the_scores_they_queried(index: Index) -> None:
    index.build(state())
    header = check_index(index.caps, last_seq=4, head="h1")
    dense = search(index.caps, header, "revenue amount", limit=10, mode="dense")
    bm25 = search(index.caps, header, "revenue amount", limit=10, mode="bm25")
    hybrid = search(index.caps, header, "revenue amount", limit=10)
    assert dense and all(h.dense == h.score and h.lexical is None for h in dense)
    assert bm25 and all(h.lexical == h.score and h.dense is None for h in bm25)
    assert {h.id for h in bm25} == {"m-revenue", "sq-1"}  # the only texts with those words
    by_id = {h.id: h for h in hybrid}
    for hit in dense:
        assert by_id[hit.id].dense == pytest.approx(hit.dense)
    assert by_id["m-revenue"].lexical is not None


def test_hybrid_fuses_as_the_store_does(index: Index) -> None:
    many = [*BASE, *(record(f"m-{i}", f"order metric {i}", f"orders {i}") for i in range(30))]
    index.build(state(many, []))
    header = check_index(index.caps, last_seq=33, head="h1")
    text = "orders metric revenue"
    ours = search(index.caps, header, text, limit=20, kinds=(MEMORY_KIND,))
    where = index_filter(MEMORY_KIND, header.index)
    theirs = index.store.query_hybrid(
        dense=index.embedder.embed_queries([text])[0],
        sparse=Bm25Encoder(("en",)).embed_query(text),
        where=where,
        limit=20,
        prefetch_limit=index.caps.prefetch_limit,
        idf_corpus=where,
    )
    expected = {str(p.payload["item"]): p.score for p in theirs}
    assert {h.id: h.score for h in ours} == pytest.approx(expected)


def test_kinds_and_limit_are_respected_and_the_marker_never_returned(index: Index) -> None:
    index.build(state())
    header = check_index(index.caps, last_seq=4, head="h1")
    only = search(index.caps, header, "revenue by region", limit=10, kinds=(SOLVED_KIND,))
    assert [h.id for h in only] == ["sq-1"] and only[0].kind == SOLVED_KIND
    everything = search(index.caps, header, "revenue by region", limit=10, mode="dense")
    assert {h.id for h in everything} == {"m-revenue", "m-active", "m-north", "sq-1"}
    assert len(search(index.caps, header, "revenue by region", limit=2)) == 2
    assert search(index.caps, header, "revenue", limit=0) == []
    with pytest.raises(ValueError):
        search(index.caps, header, "revenue", limit=3, kinds=("evidence",))


def test_hits_are_ordered_and_repeatable(index: Index) -> None:
    index.build(state())
    header = check_index(index.caps, last_seq=4, head="h1")
    first = search(index.caps, header, "customer revenue region", limit=10)
    assert first == search(index.caps, header, "customer revenue region", limit=10)
    keys = [(-h.score, h.kind, h.id) for h in first]
    assert keys == sorted(keys)


def test_a_query_of_stopwords_only_still_ranks_densely(index: Index) -> None:
    index.build(state())
    header = check_index(index.caps, last_seq=4, head="h1")
    hits = search(index.caps, header, "the of and", limit=10)
    assert hits and all(h.lexical is None for h in hits)
    assert search(index.caps, header, "the of and", limit=10, mode="bm25") == []


# --- the relevance floor ---------------------------------------------------------------------


def hit(id_: str, dense: float | None, kind: str = MEMORY_KIND, score: float = 0.03) -> Any:
    return ScoredMemoryHit(id=id_, kind=kind, score=score, dense=dense, lexical=None)


def test_nothing_clears_the_floor_recalls_nothing() -> None:
    near_misses = [hit("a", 0.80), hit("b", 0.79), hit("c", None)]
    assert relevant(near_misses, floor=0.85) == []


def test_the_floor_keeps_order_and_reports_the_relevance() -> None:
    hits = [hit("a", 0.80, score=0.9), hit("b", 0.91, score=0.5), hit("c", 0.86, score=0.1)]
    assert relevant(hits, floor=0.85) == [
        RecallHit(id="b", kind="memory", score=0.91, why="cosine"),
        RecallHit(id="c", kind="memory", score=0.86, why="cosine"),
    ]


def test_a_floor_per_kind_and_a_kind_without_one_is_never_relevant() -> None:
    hits = [hit("m", 0.86), hit("s", 0.86, kind=SOLVED_KIND), hit("s2", 0.95, kind=SOLVED_KIND)]
    got = relevant(hits, floor={MEMORY_KIND: 0.85, SOLVED_KIND: 0.9})
    assert [(h.id, h.kind) for h in got] == [("m", "memory"), ("s2", "solved_question")]
    assert [h.id for h in relevant(hits, floor={MEMORY_KIND: 0.5})] == ["m"]


def test_a_hit_only_bm25_found_is_never_relevant() -> None:
    lexical_only = ScoredMemoryHit(id="x", kind=MEMORY_KIND, score=0.03, dense=None, lexical=30.0)
    assert relevant([lexical_only], floor=0.0) == []


def test_the_default_floor_is_documented_per_kind() -> None:
    assert set(DEFAULT_FLOOR) == {MEMORY_KIND, SOLVED_KIND}
    assert all(0.5 < v < 1.0 for v in DEFAULT_FLOOR.values())
    assert relevant([hit("a", 0.5), hit("b", 0.99)]) == [
        RecallHit(id="b", kind="memory", score=0.99, why="cosine")
    ]


_HITS = st.lists(
    st.builds(
        hit,
        st.text("abcdef", min_size=1, max_size=3),
        st.one_of(st.none(), st.floats(-1.0, 1.0)),
        st.sampled_from([MEMORY_KIND, SOLVED_KIND]),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(_HITS, st.floats(-1.0, 1.0), st.floats(0.0, 0.5))
def test_a_higher_floor_recalls_a_subset_and_everything_recalled_clears_it(
    hits: list[Any], floor: float, raise_by: float
) -> None:
    low = relevant(hits, floor=floor)
    high = relevant(hits, floor=floor + raise_by)
    assert all(h.score >= floor for h in low)
    assert [h for h in low if h.score >= floor + raise_by] == high
    assert [h.id for h in low] == [h.id for h in hits if h.dense is not None and h.dense >= floor]


def test_header_fields_are_the_documented_ones() -> None:
    assert set(MemoryIndexHeader.__struct_fields__) == {
        "layout",
        "index",
        "build",
        "registry_seq",
        "registry_head",
        "embedder",
        "bm25",
        "dense_size",
        "memories",
        "solved",
    }


def test_a_memory_the_question_names_is_recalled_even_when_the_ranking_misses_it(
    index: Index,
) -> None:
    """The term signal (modules/memory/terms.py): "fatturato" is revenue in the shipped
    lexicon, so an Italian question names the English memory although the hashing embedder
    and BM25 share no word with it; it is marked ``named`` and clears every floor."""
    from modules.memory.search import NAMED_RELEVANCE
    from modules.memory.terms import live_terms

    built = state()
    index.build(built)
    header = check_index(index.caps, last_seq=4, head="h1")
    question = "Qual è il fatturato di marzo?"
    plain = search(index.caps, header, question, limit=10)
    assert "m-revenue" not in {h.id for h in relevant(plain)}
    hits = search(index.caps, header, question, limit=10, terms=live_terms(built))
    named = [h for h in hits if h.named]
    assert [h.id for h in named] == ["m-revenue"]
    recalled = relevant(hits)
    assert recalled[0] == RecallHit(
        id="m-revenue", kind="memory", score=NAMED_RELEVANCE, why="named"
    )
    # dense and BM25 modes never add names (F2 searches hybrid)
    dense = search(index.caps, header, question, limit=10, mode="dense", terms=live_terms(built))
    assert not any(h.named for h in dense)


def test_a_question_naming_nothing_adds_nothing(index: Index) -> None:
    from modules.memory.terms import live_terms

    built = state()
    index.build(built)
    header = check_index(index.caps, last_seq=4, head="h1")
    question = "Quanti ordini sono stati annullati a febbraio?"
    with_terms = search(index.caps, header, question, limit=10, terms=live_terms(built))
    assert with_terms == search(index.caps, header, question, limit=10)


def test_a_solved_question_about_another_acronym_is_never_recalled_by_likeness(
    index: Index,
) -> None:
    """ "SAIDI" and "SAIFI" are two indices: the solved question about one is as close as can be
    to a question about the other for the embedder (here they differ in one token), and is
    still not recalled; the same question written with its own acronym is."""
    from modules.memory.terms import live_terms

    saifi = solved("sq-saifi", "SAIFI by area in 2024")
    built = state(BASE, (saifi,))
    index.build(built)
    header = check_index(index.caps, last_seq=built.last_seq, head="h1")
    terms = live_terms(built)
    floor = {MEMORY_KIND: 0.5, SOLVED_KIND: 0.5}
    other = search(index.caps, header, "SAIDI by area in 2024", limit=10, terms=terms)
    (hit_,) = [h for h in other if h.id == "sq-saifi"]
    assert hit_.contradicted and hit_.dense is not None and hit_.dense >= 0.5
    assert "sq-saifi" not in {h.id for h in relevant(other, floor=floor)}
    same = search(index.caps, header, "SAIFI by area in 2025", limit=10, terms=terms)
    assert "sq-saifi" in {h.id for h in relevant(same, floor=floor)}
    # without the term index (a caller that passes none) nothing is marked
    plain = search(index.caps, header, "SAIDI by area in 2024", limit=10)
    assert not any(h.contradicted for h in plain)
