"""kernel.vectors.projection: the incremental, marker-guarded projection the schema index and
Memory's index share, over real embedded Qdrant (Qdrant Edge), the hashing embedder and BM25.

The invariant: whatever sequence of entry sets a projection is synced to — with crashes in the
middle, edited records, points written behind its back — after a sync that returns, the store
holds exactly the entries asked for, once each, with one marker of their build; and an entry
already in the store is never embedded again while its records can be trusted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.vectors import VectorFilter, VectorPoint, point_id
from kernel.vectors import projection as P
from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.hashing_embedder import HashingEmbedder

SPEC = P.ProjectionSpec(
    noun="test index",
    layout="test-index/v1",
    index_key="test_index",
    point_prefix="test",
    marker="test_index_complete",
    marker_kind="test_a",
    kinds=("test_a", "test_b"),
    header_file="test_index.json",
    manifest_file="test_index.manifest.json",
    remedy="tht test reindex",
)
DIM = 16


class Header(msgspec.Struct, frozen=True, kw_only=True):
    layout: str
    index: str
    build: str
    embedder: str
    bm25: str
    dense_size: int
    bound_to: str = ""


class CountingEmbedder:
    def __init__(self, fail_after: int | None = None) -> None:
        self.inner = HashingEmbedder(DIM)
        self.passages: list[str] = []
        self.fail_after = fail_after

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimension(self) -> int:
        return DIM

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        if self.fail_after is not None and len(self.passages) + len(texts) > self.fail_after:
            raise RuntimeError("the embedder died mid-sync")
        self.passages.extend(texts)
        return self.inner.embed_passages(texts)


BM25 = Bm25Encoder(("en",))
IDENTITY = (HashingEmbedder(DIM).identity, BM25.identity, DIM)


def entry(kind: str, name: str, text: str) -> P.ProjectionEntry:
    digest = P.content_digest(SPEC.layout, kind, name, text)
    return P.ProjectionEntry(
        kind=kind, digest=digest, text=text, dense_text=text, payload={"item": name}
    )


def sync(
    store: EdgeVectorStore,
    state: Path,
    entries: Sequence[P.ProjectionEntry],
    embedder: CountingEmbedder,
    *,
    bound: str = "h1",
) -> P.SyncOutcome:
    """What an owner's reindex does: trust, sync, records last."""
    store.ensure_collection(P.collection_spec(SPEC, DIM))
    identity = (embedder.identity, BM25.identity, DIM)
    header, present = P.trusted_entries(SPEC, state, store, identity, Header)
    index = header.index if header is not None else "idx0000000000001"
    outcome = P.sync_points(
        SPEC,
        store,
        embedder=embedder,
        bm25=BM25,
        index=index,
        entries=entries,
        present=present,
        bound={"bound_to": bound},
    )
    if not outcome.changed and header is not None and header.bound_to != bound:
        P.write_marker(SPEC, store, index, outcome.build, DIM, bound={"bound_to": bound})
    P.save_records(
        SPEC,
        state,
        (e.digest for e in entries),
        Header(
            layout=SPEC.layout,
            index=index,
            build=outcome.build,
            embedder=embedder.identity,
            bm25=BM25.identity,
            dense_size=DIM,
            bound_to=bound,
        ),
    )
    return outcome


def held(store: EdgeVectorStore, index: str = "idx0000000000001") -> list[tuple[str, str]]:
    """(kind, item) of every entry point of the index, sorted (never the marker)."""
    out = []
    for kind in SPEC.kinds:
        probe = [1.0] + [0.0] * (DIM - 1)
        for point in store.query_dense(
            dense=probe, where=P.index_filter(SPEC, kind, index), limit=1000
        ):
            out.append((kind, str(point.payload["item"])))
    return sorted(out)


def markers(store: EdgeVectorStore) -> int:
    return store.count(
        VectorFilter(
            kind=SPEC.marker_kind, match={"test_index": "idx0000000000001", "marker": SPEC.marker}
        )
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeVectorStore]:
    s = EdgeVectorStore(tmp_path / "qdrant")
    try:
        yield s
    finally:
        s.close()


A = [entry("test_a", "one", "net revenue of orders"), entry("test_b", "two", "active customers")]


def test_a_first_sync_embeds_everything_and_a_second_nothing(
    store: EdgeVectorStore, tmp_path: Path
) -> None:
    emb = CountingEmbedder()
    first = sync(store, tmp_path, A, emb)
    assert (first.embedded, first.rebuilt, first.changed) == (2, True, True)
    second = sync(store, tmp_path, A, emb)
    assert (second.embedded, second.kept, second.rebuilt, second.changed) == (0, 2, False, False)
    assert len(emb.passages) == 2
    assert held(store) == [("test_a", "one"), ("test_b", "two")]
    assert markers(store) == 1


def test_a_changed_entry_is_replaced_and_only_it_embedded(
    store: EdgeVectorStore, tmp_path: Path
) -> None:
    emb = CountingEmbedder()
    sync(store, tmp_path, A, emb)
    changed = [A[0], entry("test_b", "two", "active customers in the last year")]
    outcome = sync(store, tmp_path, changed, emb)
    assert (outcome.embedded, outcome.deleted, outcome.kept) == (1, 1, 1)
    assert emb.passages[-1] == "active customers in the last year"
    assert held(store) == [("test_a", "one"), ("test_b", "two")]
    assert markers(store) == 1


def test_a_crash_mid_sync_is_never_complete_and_the_next_sync_rebuilds(
    store: EdgeVectorStore, tmp_path: Path
) -> None:
    sync(store, tmp_path, A, CountingEmbedder())
    more = [*A, *(entry("test_b", f"n{i}", f"text number {i}") for i in range(100))]
    with pytest.raises(RuntimeError):
        sync(store, tmp_path, more, CountingEmbedder(fail_after=70))
    header = P.load_header(SPEC, tmp_path, Header)
    assert header is not None
    problem = P.check_marker(SPEC, store, header)
    assert problem is not None and problem.reason == "stale"  # the marker went first
    assert P.trusted_entries(SPEC, tmp_path, store, IDENTITY, Header)[1] is None
    outcome = sync(store, tmp_path, more, CountingEmbedder())
    assert outcome.rebuilt and outcome.embedded == len(more)
    assert len(held(store)) == len(more) and markers(store) == 1


@pytest.mark.parametrize(
    "damage",
    ["manifest-edited", "header-build-forged", "marker-deleted", "header-garbage", "manifest-gone"],
)
def test_records_that_do_not_agree_with_the_store_are_never_trusted(
    store: EdgeVectorStore, tmp_path: Path, damage: str
) -> None:
    sync(store, tmp_path, A, CountingEmbedder())
    manifest, header_file = tmp_path / SPEC.manifest_file, tmp_path / SPEC.header_file
    if damage == "manifest-edited":
        data = msgspec.json.decode(manifest.read_bytes())
        data["entries"] = data["entries"][:1]
        manifest.write_bytes(msgspec.json.encode(data))
    elif damage == "header-build-forged":
        data = msgspec.json.decode(header_file.read_bytes())
        data["build"] = "0" * 32
        header_file.write_bytes(msgspec.json.encode(data))
    elif damage == "marker-deleted":
        store.delete(VectorFilter(kind=SPEC.marker_kind, match={"marker": SPEC.marker}))
    elif damage == "header-garbage":
        header_file.write_bytes(b"{not json")
    else:
        manifest.unlink()
    assert P.trusted_entries(SPEC, tmp_path, store, IDENTITY, Header)[1] is None
    emb = CountingEmbedder()
    outcome = sync(store, tmp_path, A, emb)
    assert outcome.rebuilt and len(emb.passages) == 2
    assert held(store) == [("test_a", "one"), ("test_b", "two")] and markers(store) == 1


def test_a_point_written_behind_the_projections_back_is_dropped_by_a_rebuild(
    store: EdgeVectorStore, tmp_path: Path
) -> None:
    sync(store, tmp_path, A, CountingEmbedder())
    planted = VectorPoint(
        id=point_id("planted"),
        kind="test_b",
        dense=[1.0] + [0.0] * (DIM - 1),
        payload={"test_index": "idx0000000000001", "entry": "f" * 64, "item": "planted"},
    )
    store.upsert([planted])
    (tmp_path / SPEC.manifest_file).unlink()  # so the next sync cannot trust the records
    sync(store, tmp_path, A, CountingEmbedder())
    assert ("test_b", "planted") not in held(store)


def test_a_new_binding_rewrites_only_the_marker(store: EdgeVectorStore, tmp_path: Path) -> None:
    emb = CountingEmbedder()
    sync(store, tmp_path, A, emb, bound="h1")
    header = P.load_header(SPEC, tmp_path, Header)
    assert header is not None
    assert P.check_marker(SPEC, store, header, bound={"bound_to": "h1"}) is None
    outcome = sync(store, tmp_path, A, emb, bound="h2")
    assert (outcome.changed, len(emb.passages)) == (False, 2)
    assert P.check_marker(SPEC, store, header, bound={"bound_to": "h2"}) is None
    stale = P.check_marker(SPEC, store, header, bound={"bound_to": "h1"})
    assert stale is not None and stale.reason == "stale"


def test_check_header_says_why_a_projection_cannot_serve(
    store: EdgeVectorStore, tmp_path: Path
) -> None:
    emb = CountingEmbedder()
    missing = P.check_header(SPEC, tmp_path, Header, embedder=emb, bm25_identity=BM25.identity)
    assert isinstance(missing, P.ProjectionProblem) and missing.reason == "missing"
    assert "tht test reindex" in missing.message
    sync(store, tmp_path, A, emb)
    ok = P.check_header(SPEC, tmp_path, Header, embedder=emb, bm25_identity=BM25.identity)
    assert isinstance(ok, Header)
    other = P.check_header(SPEC, tmp_path, Header, embedder=emb, bm25_identity="bm25/other")
    assert isinstance(other, P.ProjectionProblem) and other.reason == "incompatible"
    data = msgspec.json.decode((tmp_path / SPEC.header_file).read_bytes())
    (tmp_path / SPEC.header_file).write_bytes(
        msgspec.json.encode({**data, "layout": "test-index/v0"})
    )
    old = P.check_header(SPEC, tmp_path, Header, embedder=emb, bm25_identity=BM25.identity)
    assert isinstance(old, P.ProjectionProblem) and old.reason == "incompatible"
    assert "layout test-index/v0" in old.message
    (tmp_path / SPEC.header_file).write_bytes(b"\xff")
    bad = P.check_header(SPEC, tmp_path, Header, embedder=emb, bm25_identity=BM25.identity)
    assert isinstance(bad, P.ProjectionProblem) and bad.reason == "corrupt"


def test_check_marker_of_a_missing_collection_is_missing(tmp_path: Path) -> None:
    fresh = EdgeVectorStore(tmp_path / "empty")
    try:
        header = Header(
            layout=SPEC.layout, index="i", build="b", embedder="e", bm25="b", dense_size=DIM
        )
        problem = P.check_marker(SPEC, fresh, header)
        assert problem is not None and problem.reason == "missing"
    finally:
        fresh.close()


def test_the_build_is_the_set_of_hashes() -> None:
    assert P.build_fingerprint(SPEC, ["b", "a"]) == P.build_fingerprint(SPEC, ["a", "b"])
    assert P.build_fingerprint(SPEC, ["a"]) != P.build_fingerprint(SPEC, ["a", "b"])
    assert P.content_digest("ab", "c") != P.content_digest("a", "bc")
    assert P.content_digest("\ud800") == P.content_digest("\ud800")  # a lone surrogate hashes


WORDS = ("revenue", "orders", "customers", "stores", "region", "churn", "margin")
ENTRY_SETS = st.lists(
    st.dictionaries(
        st.tuples(st.sampled_from(SPEC.kinds), st.sampled_from(("e1", "e2", "e3", "e4", "e5"))),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
        max_size=5,
    ),
    min_size=1,
    max_size=5,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=ENTRY_SETS, crash_at=st.one_of(st.none(), st.integers(0, 4)))
def test_any_sequence_of_syncs_converges_and_never_embeds_twice(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[dict[tuple[str, str], str]],
    crash_at: int | None,
) -> None:
    root = tmp_path_factory.mktemp("projection")
    store = EdgeVectorStore(root / "qdrant")
    try:
        for step, wanted in enumerate(steps):
            entries = [entry(kind, name, text) for (kind, name), text in sorted(wanted.items())]
            if crash_at == step:
                with contextlib.suppress(RuntimeError):  # dies at its first embedding, if any
                    sync(store, root, entries, CountingEmbedder(fail_after=0))
            trusted = P.trusted_entries(SPEC, root, store, IDENTITY, Header)[1]
            before = set(trusted or ())
            emb = CountingEmbedder()
            outcome = sync(store, root, entries, emb)
            assert held(store) == sorted((kind, name) for kind, name in wanted)
            assert markers(store) == 1
            fresh = [e for e in entries if e.digest not in before]
            assert outcome.embedded == len(fresh) == len(emb.passages)
    finally:
        store.close()
