"""The VectorStore contract: every adapter passes this one suite (ARCHITECTURE §4.2).

Adapters: Qdrant Edge (embedded default) and qdrant-client (here in its local mode, on disk, the
same code path that talks to a server). Real engines, real folders; fixed data from
``vector_corpus``.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kernel.errors import UnavailableError
from kernel.vectors import (
    CollectionCorruptError,
    CollectionIncompatibleError,
    CollectionMissingError,
    CollectionSpec,
    ScoredPoint,
    SparseVector,
    VectorFilter,
    VectorPoint,
    VectorStoreError,
    point_id,
)
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.fusion import RankedHit, rrf_fuse
from kernel.vectors.qdrant_server import QdrantServerVectorStore
from kernel.vectors.store import QdrantStoreBase
from tests.contract import vector_corpus as corpus

ADAPTERS = ("edge", "qdrant_client_local")
SPEC = CollectionSpec(dense_size=corpus.DIM, indexes={"metadata.db": "keyword"})

StoreFactory = Callable[[], QdrantStoreBase]


def _factory(adapter: str, folder: Path, *, on_disk: bool = False) -> StoreFactory:
    """A store of ``adapter`` in ``folder``.

    qdrant-client's local mode keeps its data in memory unless ``on_disk`` (then SQLite, with a
    sync per point: seconds for this corpus); the query code is the same either way. Qdrant Edge is
    always on disk.
    """
    if adapter == "edge":
        return lambda: EdgeVectorStore(folder / "qdrant", lock_timeout=0.5)
    location = str(folder / "qdrant-local") if on_disk else ":memory:"
    return lambda: QdrantServerVectorStore.local(location, "workspace")


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_store(
    adapter: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[StoreFactory]:
    """Opens stores of one adapter on one folder (on disk when the test is marked ``on_disk``)."""
    opened: list[QdrantStoreBase] = []
    make = _factory(
        adapter, tmp_path, on_disk=request.node.get_closest_marker("on_disk") is not None
    )

    def factory() -> QdrantStoreBase:
        store = make()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        with contextlib.suppress(VectorStoreError):
            store.close()


@pytest.fixture
def store(open_store: StoreFactory) -> QdrantStoreBase:
    """A populated store the test may change."""
    store = open_store()
    store.ensure_collection(SPEC)
    store.upsert(list(corpus.evidence_points()) + list(corpus.memory_points()))
    return store


@pytest.fixture(scope="module", params=ADAPTERS)
def searched(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[QdrantStoreBase]:
    """A populated store shared by the read-only tests of this module (building one costs ~1 s)."""
    store = _factory(str(request.param), tmp_path_factory.mktemp("searched"))()
    store.ensure_collection(SPEC)
    store.upsert(list(corpus.evidence_points()) + list(corpus.memory_points()))
    yield store
    store.close()


def _ids(hits: list[ScoredPoint]) -> list[str]:
    return [h.id for h in hits]


def assert_same_hits(ours: list[ScoredPoint], theirs: list[ScoredPoint]) -> None:
    """Same ids, order, ranks and payloads; scores equal up to float32 noise."""
    assert [(h.id, h.dense_rank, h.bm25_rank) for h in ours] == [
        (h.id, h.dense_rank, h.bm25_rank) for h in theirs
    ]
    for a, b in zip(ours, theirs, strict=True):
        assert math.isclose(a.score, b.score, rel_tol=1e-5, abs_tol=1e-7)
        assert a.payload == b.payload


# --- collection layout -------------------------------------------------------------------------


def test_ensure_collection_creates_the_layout(open_store: StoreFactory, adapter: str) -> None:
    store = open_store()
    info = store.ensure_collection(SPEC)
    assert (info.dense_size, info.distance, info.bm25, info.bm25_idf) == (64, "cosine", True, True)
    assert info.points == 0
    if adapter == "edge":  # qdrant-client's local mode keeps no payload indexes
        assert set(info.indexes) >= {"kind", "purpose", "generation", "unit_id", "metadata.db"}
        assert all(kind == "keyword" for kind in info.indexes.values())


def test_ensure_collection_is_idempotent_and_keeps_points(store: QdrantStoreBase) -> None:
    before = store.describe()
    after = store.ensure_collection(SPEC)
    assert after == before
    assert after.points == len(corpus.evidence_points()) + len(corpus.memory_points())


def test_ensure_collection_refuses_another_dense_size(searched: QdrantStoreBase) -> None:
    with pytest.raises(CollectionIncompatibleError) as caught:
        searched.ensure_collection(CollectionSpec(dense_size=corpus.DIM * 2))
    assert caught.value.exit_code == 6
    assert caught.value.details["reason"] == "incompatible"


# --- writes and counts -------------------------------------------------------------------------


def test_count_filters_by_kind_purpose_metadata_and_exclusion(searched: QdrantStoreBase) -> None:
    points = corpus.evidence_points()
    assert searched.count(VectorFilter(kind="evidence")) == len(points)
    assert searched.count(VectorFilter(kind="memory")) == len(corpus.memory_points())
    assert searched.count(VectorFilter(kind="solved_question")) == 0
    schema = sum("schema_linking" in p.payload["purpose"] for p in points)
    assert searched.count(corpus.evidence("schema_linking")) == schema
    financial = sum(p.payload["metadata"]["db"] == "financial" for p in points)
    assert searched.count(corpus.evidence(db="financial")) == financial
    both = VectorFilter(kind="evidence", match={"metadata.db": ["financial", "formula_1"]})
    formula = sum(p.payload["metadata"]["db"] == "formula_1" for p in points)
    assert searched.count(both) == financial + formula
    not_financial = VectorFilter(kind="evidence", exclude={"metadata.db": "financial"})
    assert searched.count(not_financial) == len(points) - financial


def test_upsert_replaces_a_point_with_the_same_id(store: QdrantStoreBase) -> None:
    first = corpus.evidence_points()[0]
    replaced = VectorPoint(
        id=first.id,
        kind="evidence",
        dense=first.dense,
        sparse=first.sparse,
        payload={**first.payload, "generation": "g2"},
    )
    store.upsert([replaced])
    assert store.count(VectorFilter(kind="evidence")) == len(corpus.evidence_points())
    assert store.count(VectorFilter(kind="evidence", match={"generation": "g2"})) == 1


def test_delete_by_filter_removes_only_matching_points(store: QdrantStoreBase) -> None:
    financial = corpus.evidence(db="financial")
    total = store.count(VectorFilter(kind="evidence"))
    removed = store.count(financial)
    store.delete(financial)
    assert store.count(financial) == 0
    assert store.count(VectorFilter(kind="evidence")) == total - removed
    assert store.count(VectorFilter(kind="memory")) == len(corpus.memory_points())
    dense, sparse = corpus.query_vectors("loan amount of the district")
    hits = store.query_hybrid(dense=dense, sparse=sparse, where=VectorFilter(kind="evidence"))
    assert all(h.payload["metadata"]["db"] != "financial" for h in hits)


def test_point_ids_must_be_uuids_and_kind_is_not_a_payload_key(searched: QdrantStoreBase) -> None:
    point = corpus.evidence_points()[0]
    with pytest.raises(ValueError, match="UUID"):
        searched.upsert([VectorPoint(id="frag-1", kind="evidence", dense=point.dense)])
    with pytest.raises(ValueError, match="reserved"):
        searched.upsert(
            [VectorPoint(id=point.id, kind="evidence", dense=point.dense, payload={"kind": "x"})]
        )


# --- queries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_every_hit_satisfies_the_filter(searched: QdrantStoreBase, mode: str) -> None:
    where = corpus.evidence("sql_generation", "california_schools")
    for question in corpus.questions():
        dense, sparse = corpus.query_vectors(question["text"])
        if mode == "hybrid":
            hits = searched.query_hybrid(dense=dense, sparse=sparse, where=where, limit=20)
        elif mode == "dense":
            hits = searched.query_dense(dense=dense, where=where, limit=20)
        else:
            hits = searched.query_sparse(sparse=sparse, where=where, limit=20)
        for hit in hits:
            assert hit.payload["kind"] == "evidence"
            assert "sql_generation" in hit.payload["purpose"]
            assert hit.payload["metadata"]["db"] == "california_schools"


def test_kinds_never_mix_in_a_search(searched: QdrantStoreBase) -> None:
    text = corpus.fragments()[0]["text"]  # also stored as a memory point
    dense, _ = corpus.query_vectors(text)
    memory = searched.query_dense(dense=dense, where=VectorFilter(kind="memory"), limit=50)
    evidence = searched.query_dense(dense=dense, where=VectorFilter(kind="evidence"), limit=50)
    assert memory and all(h.payload["kind"] == "memory" for h in memory)
    assert evidence and all(h.payload["kind"] == "evidence" for h in evidence)
    assert not set(_ids(memory)) & set(_ids(evidence))


def test_hits_are_ordered_by_score_then_id_with_exact_ties(searched: QdrantStoreBase) -> None:
    duplicate = corpus.fragments()[-1]  # the same text is stored under two keys
    dense, sparse = corpus.query_vectors(duplicate["text"])
    for hits in (
        searched.query_dense(dense=dense, where=VectorFilter(kind="evidence"), limit=10),
        searched.query_sparse(sparse=sparse, where=VectorFilter(kind="evidence"), limit=10),
    ):
        keys = [(-h.score, h.id) for h in hits]
        assert keys == sorted(keys)
        top = [h for h in hits if h.score == hits[0].score]
        assert len(top) >= 2  # the duplicate pair ties at the top
        assert {h.payload["text"] for h in top} == {duplicate["text"]}


def test_hybrid_is_rrf_of_the_filtered_dense_and_bm25_rankings(searched: QdrantStoreBase) -> None:
    where = corpus.evidence("schema_linking")
    for question in corpus.questions()[:10]:
        dense, sparse = corpus.query_vectors(question["text"])
        for k, prefetch in ((60, 50), (2, 20)):
            hybrid = searched.query_hybrid(
                dense=dense, sparse=sparse, where=where, limit=10, prefetch_limit=prefetch, rrf_k=k
            )
            d = searched.query_dense(dense=dense, where=where, limit=prefetch)
            s = searched.query_sparse(sparse=sparse, where=where, limit=prefetch)
            expected = rrf_fuse(
                [RankedHit(h.id, h.score) for h in d],
                [RankedHit(h.id, h.score) for h in s],
                k=k,
                limit=10,
            )
            assert [(h.id, h.dense_rank, h.bm25_rank) for h in hybrid] == [
                (f.id, f.dense_rank, f.bm25_rank) for f in expected
            ]
            for hit in hybrid:
                ranks = [r for r in (hit.dense_rank, hit.bm25_rank) if r is not None]
                assert math.isclose(hit.score, sum(1 / (k + r - 1) for r in ranks))


def test_lexical_query_finds_its_fragment_through_bm25(searched: QdrantStoreBase) -> None:
    dense, sparse = corpus.query_vectors("Excellence rate NumGE1500 NumTstTakr")
    hits = searched.query_hybrid(dense=dense, sparse=sparse, where=VectorFilter(kind="evidence"))
    assert hits[0].payload["text"] == "Excellence rate = NumGE1500 / NumTstTakr"
    assert hits[0].bm25_rank == 1


def test_query_of_stopwords_only_leaves_the_dense_ranking(searched: QdrantStoreBase) -> None:
    dense, sparse = corpus.query_vectors("the of and il di che")
    assert sparse.indices == ()
    where = VectorFilter(kind="evidence")
    assert searched.query_sparse(sparse=sparse, where=where) == []
    hybrid = searched.query_hybrid(dense=dense, sparse=sparse, where=where, limit=5)
    assert _ids(hybrid) == _ids(searched.query_dense(dense=dense, where=where, limit=5))
    assert all(h.bm25_rank is None for h in hybrid)


def test_a_query_vector_of_another_size_is_incompatible(searched: QdrantStoreBase) -> None:
    _, sparse = corpus.query_vectors("loan")
    with pytest.raises(CollectionIncompatibleError):
        searched.query_dense(dense=[0.1] * (corpus.DIM + 1), where=VectorFilter(kind="evidence"))
    with pytest.raises(CollectionIncompatibleError):
        searched.query_hybrid(
            dense=[0.1] * 3, sparse=sparse, where=VectorFilter(kind="evidence"), limit=3
        )


def test_idf_corpus_narrows_the_bm25_statistics(searched: QdrantStoreBase) -> None:
    _, sparse = corpus.query_vectors("race")
    where = corpus.evidence(db="formula_1")
    default = searched.query_sparse(sparse=sparse, where=where, limit=3)
    narrowed = searched.query_sparse(sparse=sparse, where=where, limit=3, idf_corpus=where)
    assert default and narrowed
    assert _ids(default) == _ids(narrowed)
    assert narrowed[0].score < default[0].score  # "race" is more common within formula_1


# --- the two adapters agree --------------------------------------------------------------------


def _populated(adapter: str, folder: Path) -> QdrantStoreBase:
    store = _factory(adapter, folder)()
    store.ensure_collection(SPEC)
    store.upsert(list(corpus.evidence_points()) + list(corpus.memory_points()))
    store.delete(VectorFilter(kind="evidence", match={"n": [5, 6, 7]}))
    points = corpus.evidence_points()
    store.upsert(  # replaced points: the old vectors must leave the BM25 statistics
        [
            VectorPoint(
                id=p.id, kind=p.kind, dense=p.dense, sparse=points[-1 - i].sparse, payload=p.payload
            )
            for i, p in enumerate(points[10:30])
        ]
    )
    return store


def test_both_adapters_return_the_same_ids_in_the_same_order(tmp_path: Path) -> None:
    edge = _populated("edge", tmp_path / "edge")
    client = _populated("qdrant_client_local", tmp_path / "client")
    try:
        filters = [
            VectorFilter(kind="evidence"),
            corpus.evidence("schema_linking"),
            corpus.evidence("sql_generation", "formula_1"),
            VectorFilter(kind="evidence", exclude={"metadata.db": "financial"}),
        ]
        compared = 0
        for question in corpus.questions()[::2]:  # local mode filters in Python: keep it lean
            dense, sparse = corpus.query_vectors(question["text"])
            for where in filters:
                results = []
                for store in (edge, client):
                    results.append(
                        [
                            store.query_hybrid(dense=dense, sparse=sparse, where=where, limit=10),
                            store.query_hybrid(
                                dense=dense, sparse=sparse, where=where, limit=5, rrf_k=2
                            ),
                            store.query_dense(dense=dense, where=where, limit=10),
                            store.query_sparse(sparse=sparse, where=where, limit=10),
                        ]
                    )
                for ours, theirs in zip(results[0], results[1], strict=True):
                    assert_same_hits(ours, theirs)
                    compared += len(ours)
        assert compared > 1000
    finally:
        edge.close()
        client.close()


# --- additive BM25 upgrade ---------------------------------------------------------------------


def test_additive_bm25_upgrade_keeps_dense_data(open_store: StoreFactory) -> None:
    store = open_store()
    store.ensure_collection(CollectionSpec(dense_size=corpus.DIM, bm25=False))
    dense_only = [
        VectorPoint(id=p.id, kind=p.kind, dense=p.dense, payload=p.payload)
        for p in corpus.evidence_points()
    ]
    store.upsert(dense_only + list(corpus.memory_points()))
    dense, sparse = corpus.query_vectors("Formula 1 race of the driver")
    where = VectorFilter(kind="evidence")
    before = store.query_dense(dense=dense, where=where, limit=15)
    with pytest.raises(CollectionIncompatibleError):
        store.query_sparse(sparse=sparse, where=where)

    info = store.ensure_collection(CollectionSpec(dense_size=corpus.DIM, bm25=True))

    assert info.bm25 and info.bm25_idf
    assert info.points == len(dense_only) + len(corpus.memory_points())
    assert_same_hits(store.query_dense(dense=dense, where=where, limit=15), before)
    assert store.query_sparse(sparse=sparse, where=where) == []  # no fragment has BM25 yet
    store.upsert(list(corpus.evidence_points()))  # only Evidence Fragments get BM25 values
    assert store.query_sparse(sparse=sparse, where=where)
    memory = store.query_dense(dense=dense, where=VectorFilter(kind="memory"), limit=5)
    assert memory and all(h.payload["kind"] == "memory" for h in memory)


# --- durability and fail-closed ----------------------------------------------------------------


@pytest.mark.on_disk
def test_a_reopened_store_serves_the_same_results(open_store: StoreFactory) -> None:
    store = open_store()
    store.ensure_collection(SPEC)
    store.upsert(list(corpus.evidence_points()))
    dense, sparse = corpus.query_vectors("average salary of the district")
    where = VectorFilter(kind="evidence")
    before = store.query_hybrid(dense=dense, sparse=sparse, where=where)
    store.close()

    reopened = open_store()

    assert reopened.count(where) == len(corpus.evidence_points())
    assert_same_hits(reopened.query_hybrid(dense=dense, sparse=sparse, where=where), before)


@pytest.mark.on_disk
def test_a_missing_collection_fails_closed(open_store: StoreFactory) -> None:
    store = open_store()
    dense, sparse = corpus.query_vectors("loan")
    where = VectorFilter(kind="evidence")
    attempts: list[Callable[[], object]] = [
        store.describe,
        lambda: store.count(where),
        lambda: store.query_hybrid(dense=dense, sparse=sparse, where=where),
        lambda: store.query_dense(dense=dense, where=where),
        lambda: store.upsert([corpus.evidence_points()[0]]),
    ]
    for attempt in attempts:
        with pytest.raises(CollectionMissingError) as caught:
            attempt()
        assert isinstance(caught.value, UnavailableError)
        assert caught.value.exit_code == 6
        assert caught.value.details["reason"] == "missing"


def _corrupt(adapter: str, folder: Path) -> None:
    if adapter == "edge":
        (folder / "qdrant" / "edge_config.json").write_text("{not json", encoding="utf-8")
    else:
        meta = folder / "qdrant-local" / "meta.json"
        meta.write_text(json.dumps({"collections": {"workspace": "garbage"}}), encoding="utf-8")


@pytest.mark.on_disk
def test_a_corrupt_collection_fails_closed(
    open_store: StoreFactory, adapter: str, tmp_path: Path
) -> None:
    store = open_store()
    store.ensure_collection(SPEC)
    store.upsert(list(corpus.evidence_points())[:10])
    store.close()
    _corrupt(adapter, tmp_path)
    dense, sparse = corpus.query_vectors("loan")
    with pytest.raises(VectorStoreError) as caught:
        reopened = open_store()
        reopened.query_hybrid(dense=dense, sparse=sparse, where=VectorFilter(kind="evidence"))
    assert caught.value.exit_code == 6
    assert isinstance(caught.value, CollectionCorruptError | CollectionIncompatibleError)


def test_sparse_vectors_round_trip_exactly(searched: QdrantStoreBase) -> None:
    """A document scored against its own query terms ranks first (vectors stored as given)."""
    point = corpus.evidence_points()[2]
    text = point.payload["text"]
    _, sparse = corpus.query_vectors(text)
    hits = searched.query_sparse(
        sparse=sparse, where=VectorFilter(kind="evidence", match={"n": point.payload["n"]})
    )
    assert [h.id for h in hits] == [point.id]
    assert point_id(corpus.evidence_key(2)) == point.id
    assert isinstance(point.sparse, SparseVector)
