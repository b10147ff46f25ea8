"""Memory's projection: what is indexed, incremental reindex, crash and head bookkeeping.

Real Qdrant Edge shards in a temporary folder; a hashing embedder wrapped to count what it is
asked to embed (the point of incrementality: unchanged memories are never embedded again).
The helpers here (:class:`Index`, :func:`record`, :func:`state`) serve ``test_search.py`` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.vectors import VectorFilter
from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.hashing_embedder import HashingEmbedder
from modules.memory import fold_registry
from modules.memory.index import (
    MANIFEST_FILE,
    MEMORY_KIND,
    SOLVED_KIND,
    entry_hash,
    load_header,
    memory_entries,
    reindex,
)
from modules.memory.index_capabilities import MemoryIndexCapabilities, MemoryIndexUnavailable
from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion
from modules.memory.search import check_index, search
from tests.modules.memory.registry_support import forgotten, saved, stamped


class CountingEmbedder:
    def __init__(self, dimension: int = 32, identity: str | None = None) -> None:
        self.inner = HashingEmbedder(dimension)
        self._identity = identity or self.inner.identity
        self.passages: list[str] = []
        self.fail_after: int | None = None  # raise once this many passages were embedded

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        if self.fail_after is not None and len(self.passages) + len(texts) > self.fail_after:
            raise RuntimeError("embedder died mid-reindex")
        self.passages.extend(texts)
        return self.inner.embed_passages(texts)


def record(
    memory_id: str,
    subject: str,
    meaning: str,
    target: str | None = None,
    *,
    rationale: str = "",
    status: str = "live",
    seq: int = 1,
) -> MemoryRecord:
    return MemoryRecord(
        memory_id=memory_id,
        subject=subject,
        meaning=meaning,
        target=target,
        rationale=rationale,
        language="en",
        source_session="S1",
        source_seq=seq,
        reviewer="human:ana",
        saved_seq=seq,
        saved_at="2026-01-01T00:00:00Z",
        status=status,  # type: ignore[arg-type]
    )


def solved(solved_id: str, question: str, rewritten: str = "", *, seq: int = 1) -> SolvedQuestion:
    return SolvedQuestion(
        solved_id=solved_id,
        question=question,
        rewritten=rewritten,
        sql="SELECT 1",
        sql_sha256="",
        source_session=f"S-{solved_id}",
        source_seq=9,
        saved_seq=seq,
        saved_at="2026-01-01T00:00:00Z",
    )


BASE = (
    record("m-revenue", "revenue", "net amount of orders not cancelled", "orders.net_amount"),
    record("m-active", "active customer", "a customer with an order in the last 12 months"),
    record("m-north", "north area", "stores in the northern regions", "stores.region"),
)
SOLVED = (solved("sq-1", "revenue by region in 2024", "sum of net amount per region"),)


def state(
    memories: Iterable[MemoryRecord] = BASE,
    solved_questions: Iterable[SolvedQuestion] = SOLVED,
    *,
    last_seq: int | None = None,
) -> MemoryState:
    mems = {m.memory_id: m for m in memories}
    sqs = {s.solved_id: s for s in solved_questions}
    return MemoryState(
        last_seq=len(mems) + len(sqs) if last_seq is None else last_seq,
        memories=mems,
        solved=sqs,
    )


class Index:
    def __init__(
        self, folder: Path, embedder: CountingEmbedder | None = None, nonce: str = "index-a"
    ) -> None:
        self.folder = folder
        self.store = EdgeVectorStore(folder / "qdrant")
        self.embedder = embedder or CountingEmbedder()
        self.caps = MemoryIndexCapabilities(
            state_dir=folder / "state",
            vector_store=lambda: self.store,
            embedder=lambda: self.embedder,
            bm25=lambda: Bm25Encoder(("en",)),
            nonce=lambda: nonce,
        )

    def build(self, memory: MemoryState, head: str = "h1") -> Any:
        return reindex(self.caps, memory, registry_head=head)

    def indexed(self, kind: str = MEMORY_KIND) -> set[str]:
        """The item ids of the index's points of ``kind`` (the marker has none)."""
        header = load_header(self.caps.state_dir)
        assert header is not None
        where = VectorFilter(kind=kind, match={"memory_index": header.index})
        hits = self.store.query_dense(
            dense=[1.0] + [0.0] * (self.embedder.dimension - 1), where=where, limit=10_000
        )
        return {str(h.payload["item"]) for h in hits if "item" in h.payload}

    def found(self, text: str, memory: MemoryState, head: str = "h1", **kw: Any) -> list[str]:
        header = check_index(self.caps, last_seq=memory.last_seq, head=head)
        return [h.id for h in search(self.caps, header, text, limit=50, **kw)]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    built.store.close()


# --- what is indexed ---------------------------------------------------------------------


def test_only_live_memories_and_every_solved_question_are_entries() -> None:
    memory = state(
        [
            *BASE,
            record("m-old", "revenue", "gross amount", "orders.amount", status="superseded"),
            record("m-gone", "churn", "lost customers", status="forgotten"),
        ]
    )
    entries = memory_entries(memory)
    assert [(e.kind, e.id) for e in entries] == [
        (MEMORY_KIND, "m-active"),
        (MEMORY_KIND, "m-north"),
        (MEMORY_KIND, "m-revenue"),
        (SOLVED_KIND, "sq-1"),
    ]


def test_index_text_is_subject_meaning_target_rationale_and_the_dense_text_the_subject() -> None:
    memory = state([record("m", "revenue", "net amount", "orders.net", rationale="finance")], [])
    (entry,) = memory_entries(memory)
    assert entry.text == "revenue\nnet amount\norders.net\nfinance"
    assert entry.dense_text == "revenue"
    (sq,) = memory_entries(state([], SOLVED))
    assert sq.text == sq.dense_text == "revenue by region in 2024\nsum of net amount per region"


def test_the_entry_hash_covers_embedder_bm25_kind_id_and_texts() -> None:
    (entry,) = memory_entries(state([BASE[0]], []))
    base = entry_hash(entry, embedder="e1", bm25="b1")
    assert entry_hash(entry, embedder="e2", bm25="b1") != base
    assert entry_hash(entry, embedder="e1", bm25="b2") != base
    for change in ({"kind": SOLVED_KIND}, {"id": "other"}, {"text": "x"}, {"dense_text": "x"}):
        assert (
            entry_hash(msgspec.structs.replace(entry, **change), embedder="e1", bm25="b1") != base
        )


def test_first_build_embeds_every_entry_once(index: Index) -> None:
    report = index.build(state())
    assert (report.memories, report.solved, report.embedded, report.rebuilt) == (3, 1, 4, True)
    assert (report.deleted, report.kept, report.head, report.last_seq) == (0, 0, "h1", 4)
    assert sorted(index.embedder.passages) == sorted(
        [
            "revenue",
            "active customer",
            "north area",
            SOLVED[0].question + "\n" + SOLVED[0].rewritten,
        ]
    )
    assert index.indexed() == {"m-revenue", "m-active", "m-north"}
    assert index.indexed(SOLVED_KIND) == {"sq-1"}


def test_every_point_carries_the_index_id(index: Index) -> None:
    index.build(state())
    for kind in (MEMORY_KIND, SOLVED_KIND):
        total = index.store.count(VectorFilter(kind=kind))
        mine = index.store.count(VectorFilter(kind=kind, match={"memory_index": "index-a"}))
        assert total == mine > 0


# --- incremental reindex -----------------------------------------------------------------


def test_an_unchanged_registry_embeds_nothing_and_deletes_nothing(index: Index) -> None:
    index.build(state())
    index.embedder.passages.clear()
    report = index.build(state())
    assert (report.embedded, report.deleted, report.kept, report.rebuilt) == (0, 0, 4, False)
    assert index.embedder.passages == []


def test_a_forgotten_memory_is_deleted_and_never_returned(index: Index) -> None:
    """Through the real registry fold: memory_saved ×2, then memory_forgotten."""
    drafts = [saved("revenue", "net amount of orders"), saved("margin", "revenue minus cost")]
    before = fold_registry(stamped(drafts))
    index.build(before, head="h2")
    revenue = next(m.memory_id for m in before.live() if m.subject == "revenue")
    assert revenue in index.found("revenue", before, head="h2")
    after = fold_registry(stamped([*drafts, forgotten(revenue)]))
    index.embedder.passages.clear()
    report = index.build(after, head="h3")
    assert (report.deleted, report.embedded, report.memories) == (1, 0, 1)
    assert revenue not in index.indexed()
    for mode in ("hybrid", "dense", "bm25"):
        assert revenue not in index.found("revenue", after, head="h3", mode=mode)


def test_a_superseded_memory_leaves_and_its_successor_arrives(index: Index) -> None:
    index.build(state())
    old = msgspec.structs.replace(BASE[0], status="superseded", superseded_by="m-revenue-2")
    new = record("m-revenue-2", "revenue", "net amount, VAT excluded", "orders.net_amount")
    report = index.build(state([old, new, *BASE[1:]]), head="h2")
    assert (report.deleted, report.embedded) == (1, 1)
    assert index.indexed() == {"m-revenue-2", "m-active", "m-north"}


def test_changed_text_is_embedded_again_and_nothing_else(index: Index) -> None:
    index.build(state())
    index.embedder.passages.clear()
    changed = msgspec.structs.replace(BASE[1], rationale="agreed with marketing")
    report = index.build(state([BASE[0], changed, BASE[2]]), head="h2")
    assert (report.embedded, report.deleted, report.kept) == (1, 1, 3)
    assert index.embedder.passages == ["active customer"]
    header = check_index(index.caps, last_seq=4, head="h2")
    hits = search(index.caps, header, "marketing", limit=5, mode="bm25")
    assert [h.id for h in hits] == ["m-active"]


def test_a_new_solved_question_is_the_only_thing_embedded(index: Index) -> None:
    index.build(state())
    index.embedder.passages.clear()
    more = (*SOLVED, solved("sq-2", "active customers in Veneto"))
    report = index.build(state(solved_questions=more), head="h2")
    assert (report.embedded, report.deleted, report.solved) == (1, 0, 2)
    assert index.embedder.passages == ["active customers in Veneto"]


def test_the_header_records_the_registry_it_was_built_from(index: Index) -> None:
    index.build(state(last_seq=7), head="abc")
    header = load_header(index.caps.state_dir)
    assert header is not None
    assert (header.registry_seq, header.registry_head, header.memories, header.solved) == (
        7,
        "abc",
        3,
        1,
    )


def test_a_moved_head_with_the_same_entries_rewrites_only_the_marker(index: Index) -> None:
    index.build(state(last_seq=4), head="h1")
    index.embedder.passages.clear()
    report = index.build(state(last_seq=5), head="h2")
    assert (report.embedded, report.deleted, report.rebuilt) == (0, 0, False)
    assert check_index(index.caps, last_seq=5, head="h2").registry_head == "h2"
    with pytest.raises(MemoryIndexUnavailable):
        check_index(index.caps, last_seq=4, head="h1")


def test_an_empty_registry_builds_an_empty_but_complete_index(index: Index) -> None:
    empty = MemoryState()
    report = index.build(empty, head="")
    assert (report.memories, report.solved, report.embedded) == (0, 0, 0)
    header = check_index(index.caps, last_seq=0, head="")
    assert search(index.caps, header, "revenue", limit=5) == []


# --- crashes and untrusted records ---------------------------------------------------------


def test_a_reindex_that_dies_midway_leaves_an_unavailable_index_then_rebuilds(
    index: Index,
) -> None:
    index.build(state())
    more = [*BASE, *(record(f"m-{i}", f"concept {i}", f"meaning {i}") for i in range(100))]
    index.embedder.passages.clear()
    index.embedder.fail_after = 70  # the marker is gone, some new points written
    with pytest.raises(RuntimeError):
        index.build(state(more), head="h2")
    for last_seq, head in ((4, "h1"), (104, "h2")):  # neither the old nor the new registry
        with pytest.raises(MemoryIndexUnavailable) as err:
            check_index(index.caps, last_seq=last_seq, head=head)
        assert err.value.reason == "stale"
    index.embedder.fail_after = None
    report = index.build(state(more), head="h2")
    assert report.rebuilt and report.embedded == 104
    assert len(index.indexed()) == 103


def test_a_lost_manifest_makes_the_next_reindex_rebuild(index: Index) -> None:
    index.build(state())
    (index.caps.state_dir / MANIFEST_FILE).unlink()
    report = index.build(state())
    assert report.rebuilt and report.embedded == 4
    assert index.indexed() == {"m-revenue", "m-active", "m-north"}  # no duplicate points
    assert index.store.count(VectorFilter(kind=MEMORY_KIND)) == 4  # 3 + the marker


def test_another_embedder_rebuilds_from_scratch(index: Index) -> None:
    index.build(state())
    index.store.close()
    other = Index(index.folder, CountingEmbedder(identity="another-model/32"))
    report = other.build(state())
    assert report.rebuilt and report.embedded == 4
    assert check_index(other.caps, last_seq=4, head="h1").embedder == "another-model/32"
    other.store.close()
    index.store = EdgeVectorStore(index.folder / "qdrant")  # for the fixture's close


# --- invariant -------------------------------------------------------------------------------

_POOL = [record(f"m-{i}", f"subject {i}", f"meaning {i}") for i in range(8)]
_STATUSES = st.sampled_from(["live", "live", "superseded", "forgotten", "absent"])


@settings(max_examples=12, deadline=None)
@given(st.lists(st.lists(_STATUSES, min_size=8, max_size=8), min_size=1, max_size=4))
def test_the_index_always_holds_exactly_the_live_memories(
    tmp_path_factory: pytest.TempPathFactory, history: list[list[str]]
) -> None:
    """After any sequence of registry states, the points are the live memories, and each
    reindex embeds exactly the memories that were not live (indexed) before."""
    built = Index(tmp_path_factory.mktemp("prop"))
    try:
        previous: set[str] = set()
        for step, statuses in enumerate(history):
            memories = [
                msgspec.structs.replace(m, status=s)
                for m, s in zip(_POOL, statuses, strict=True)
                if s != "absent"
            ]
            live = {m.memory_id for m in memories if m.status == "live"}
            report = built.build(state(memories, []), head=f"h{step}")
            assert built.indexed() == live
            assert report.embedded == len(live - previous)
            assert report.deleted == len(previous - live)
            previous = live
    finally:
        built.store.close()
