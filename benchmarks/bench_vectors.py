"""Vector store query latency: our ``VectorStore`` vs the bare Qdrant Edge query, same run.

10,000 evidence fragments (real BIRD evidence clauses and Italian fragments from the test
fixtures, recombined), hashing-embedder dense vectors (384-d: the benchmark measures the store,
not a model) and real BM25 vectors. Filtered hybrid query (kind + purpose + generation, about half
the corpus; and + ``metadata.db``, about 1/11), limit 10, 50 candidates per ranking, RRF k=60:

- ours: ``EdgeVectorStore.query_hybrid`` - one query batch (dense + BM25, IDF over the kind),
  deterministic tie handling, RRF in Python, payloads of the 10 hits;
- bare: one ``EdgeShard.query`` with two filtered prefetches fused by the engine's ``Fusion.Rrf``
  (collection-wide IDF), payloads included - the least a caller could do;
- qdrant-client's local mode through the same ``VectorStore`` code (fewer queries: it is slow).

Target: ours / bare p50 <= 2x on the broad filter.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import qdrant_edge as qe

from kernel.vectors import CollectionSpec, VectorFilter, VectorPoint, point_id
from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.hashing_embedder import HashingEmbedder
from kernel.vectors.qdrant_server import QdrantServerVectorStore

FRAGMENTS = 10_000
QUERIES = 300
LOCAL_QUERIES = 15
DIM = 384
DBS = [f"db{i}" for i in range(11)]
PURPOSES = (["schema_linking"], ["sql_generation"], ["schema_linking", "sql_generation"])
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vectors"


def _pool() -> tuple[list[str], list[str]]:
    bird = json.loads((FIXTURES / "bird_evidence.json").read_text(encoding="utf-8"))
    italian = json.loads((FIXTURES / "italian_fragments.json").read_text(encoding="utf-8"))
    clauses = [f["text"] for f in bird["fragments"]] + [f["text"] for f in italian["fragments"]]
    questions = [q["question"] for q in bird["questions"]]
    return clauses, questions


def _corpus(rnd: random.Random) -> tuple[list[VectorPoint], list[str]]:
    clauses, questions = _pool()
    texts = [
        " ".join(rnd.sample(clauses, rnd.randint(1, 4))) + f" (note {n})" for n in range(FRAGMENTS)
    ]
    embedder, encoder = HashingEmbedder(DIM), Bm25Encoder(("en", "it"))
    dense = embedder.embed_passages(texts)
    points = [
        VectorPoint(
            id=point_id(f"evidence:g1:bench-{n}"),
            kind="evidence",
            dense=dense[n],
            sparse=encoder.embed_document(text),
            payload={
                "purpose": PURPOSES[n % 3],
                "generation": "g1",
                "unit_id": f"evidence:bench-{n // 3}",
                "metadata": {"db": DBS[n % len(DBS)]},
                "text": text,
            },
        )
        for n, text in enumerate(texts)
    ]
    queries = questions + [rnd.choice(clauses) for _ in range(QUERIES)]
    return points, queries[:QUERIES]


def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] * 1000


def _edge_filter(where: VectorFilter) -> qe.Filter:
    must = [qe.FieldCondition("kind", match=qe.MatchValue(where.kind))]
    must += [qe.FieldCondition(k, match=qe.MatchValue(v)) for k, v in sorted(where.match.items())]
    return qe.Filter(must=must)


def main() -> None:
    rnd = random.Random(20)
    started = time.perf_counter()
    points, texts = _corpus(rnd)
    embedder, encoder = HashingEmbedder(DIM), Bm25Encoder(("en", "it"))
    query_dense = embedder.embed_queries(texts)
    queries = [(query_dense[i].tolist(), encoder.embed_query(t)) for i, t in enumerate(texts)]
    elapsed = time.perf_counter() - started
    print(f"corpus: {len(points)} fragments, {len(queries)} queries ({elapsed:.1f} s)")

    broad = VectorFilter(kind="evidence", match={"purpose": "schema_linking", "generation": "g1"})
    narrow = VectorFilter(
        kind="evidence",
        match={"purpose": "schema_linking", "generation": "g1", "metadata.db": "db3"},
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = EdgeVectorStore(Path(tmp) / "qdrant")
        store.ensure_collection(CollectionSpec(dense_size=DIM, indexes={"metadata.db": "keyword"}))
        t0 = time.perf_counter()
        store.upsert(points)
        print(f"edge: indexed {len(points)} points in {time.perf_counter() - t0:.1f} s")
        shard = store.shard

        def ours(where: VectorFilter) -> Callable[[int], object]:
            def run(i: int) -> object:
                dense, sparse = queries[i]
                return store.query_hybrid(dense=dense, sparse=sparse, where=where, limit=10)

            return run

        def bare(where: VectorFilter) -> Callable[[int], object]:
            edge_filter = _edge_filter(where)

            def run(i: int) -> object:
                dense, sparse = queries[i]
                sv = qe.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
                return shard.query(
                    qe.QueryRequest(
                        limit=10,
                        prefetches=[
                            qe.Prefetch(
                                limit=50, query=qe.Query.Nearest(dense), filter=edge_filter
                            ),
                            qe.Prefetch(
                                limit=50,
                                query=qe.Query.Nearest(sv, using="bm25"),
                                filter=edge_filter,
                            ),
                        ],
                        query=qe.Fusion.Rrf(k=60),
                        with_payload=True,
                    )
                )

            return run

        for label, where in (
            ("broad filter (1/2 of corpus)", broad),
            ("narrow filter (1/33)", narrow),
        ):
            ours_t, bare_t = _interleaved(ours(where), bare(where), len(queries))
            ratio = _p50(ours_t) / _p50(bare_t)
            print(
                f"edge hybrid, {label}: ours p50 {_p50(ours_t):.3f} ms (p95 {_p95(ours_t):.3f}), "
                f"bare Qdrant Edge p50 {_p50(bare_t):.3f} ms (p95 {_p95(bare_t):.3f}); "
                f"ratio {ratio:.2f}x (target <= 2x)"
            )
        dense_t = _timed(
            lambda i: store.query_dense(dense=queries[i][0], where=broad), len(queries)
        )
        sparse_t = _timed(
            lambda i: store.query_sparse(sparse=queries[i][1], where=broad), len(queries)
        )
        print(
            f"edge dense-only p50 {_p50(dense_t):.3f} ms; sparse-only p50 {_p50(sparse_t):.3f} ms"
        )
        store.close()

    local = QdrantServerVectorStore.local(":memory:", "bench")
    local.ensure_collection(CollectionSpec(dense_size=DIM, indexes={"metadata.db": "keyword"}))
    t0 = time.perf_counter()
    local.upsert(points)
    print(f"qdrant-client local mode: indexed in {time.perf_counter() - t0:.1f} s")
    local_t = _timed(
        lambda i: local.query_hybrid(dense=queries[i][0], sparse=queries[i][1], where=broad),
        LOCAL_QUERIES,
    )
    print(
        f"qdrant-client local mode hybrid, broad filter: p50 {_p50(local_t):.1f} ms "
        f"({LOCAL_QUERIES} queries)"
    )
    local.close()


def _timed(run: Callable[[int], object], n: int) -> list[float]:
    for i in range(min(10, n)):
        run(i)
    samples = []
    for i in range(n):
        t = time.perf_counter()
        run(i)
        samples.append(time.perf_counter() - t)
    return samples


def _interleaved(
    a: Callable[[int], object], b: Callable[[int], object], n: int
) -> tuple[list[float], list[float]]:
    """Alternate the two per query, so machine noise hits both alike."""
    for i in range(min(10, n)):
        a(i)
        b(i)
    ta, tb = [], []
    for i in range(n):
        for run, samples in ((a, ta), (b, tb)) if i % 2 else ((b, tb), (a, ta)):
            t = time.perf_counter()
            run(i)
            samples.append(time.perf_counter() - t)
    return ta, tb


if __name__ == "__main__":
    main()
