"""Fixed data for the vector-store contract suite: real evidence text, deterministic vectors.

Fragments are BIRD mini-dev evidence clauses (``tests/fixtures/vectors/bird_evidence.json``, with
its provenance) and Italian fragments written for these tests; three of them are stored twice
under another key, so exact score ties occur in every ranking. Dense vectors come from the
hashing embedder (the contract is about stores, not models), sparse ones from the BM25 encoder.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.hashing_embedder import HashingEmbedder
from kernel.vectors.records import SparseVector, VectorFilter, VectorPoint, point_id

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vectors"
DIM = 64
PURPOSES = (["schema_linking"], ["sql_generation"], ["schema_linking", "sql_generation"])
EMBEDDER = HashingEmbedder(DIM)
ENCODER = Bm25Encoder(("en", "it"))


@functools.cache
def fragments() -> tuple[dict[str, str], ...]:
    bird = json.loads((FIXTURES / "bird_evidence.json").read_text(encoding="utf-8"))
    italian = json.loads((FIXTURES / "italian_fragments.json").read_text(encoding="utf-8"))
    rows = [{"db": f["db"], "text": f["text"]} for f in bird["fragments"]]
    rows += [{"db": f["db"], "text": f["text"]} for f in italian["fragments"]]
    duplicates = [dict(rows[i], dup="1") for i in (3, 40, 230)]
    return tuple(rows + duplicates)


@functools.cache
def questions() -> tuple[dict[str, str], ...]:
    bird = json.loads((FIXTURES / "bird_evidence.json").read_text(encoding="utf-8"))
    rows = [{"db": q["db"], "text": q["question"]} for q in bird["questions"]]
    rows += [
        {"db": "ospedale", "text": "tasso di riammissione dei pazienti anziani in cardiologia"},
        {"db": "ambulatori", "text": "tempo di attesa per le visite urgenti"},
    ]
    return tuple(rows)


def evidence_key(i: int) -> str:
    return f"evidence:g1:frag-{i}"


@functools.cache
def evidence_points() -> tuple[VectorPoint, ...]:
    rows = fragments()
    dense = EMBEDDER.embed_passages([r["text"] for r in rows])
    points = []
    for i, row in enumerate(rows):
        points.append(
            VectorPoint(
                id=point_id(evidence_key(i)),
                kind="evidence",
                dense=dense[i],
                sparse=ENCODER.embed_document(row["text"]),
                payload={
                    "purpose": PURPOSES[i % 3],
                    "generation": "g1",
                    "unit_id": f"evidence:{row['db']}-{i // 2}",
                    "metadata": {"db": row["db"]},
                    "text": row["text"],
                    "n": i,
                },
            )
        )
    return tuple(points)


@functools.cache
def memory_points() -> tuple[VectorPoint, ...]:
    """Dense-only points of another kind, with the same texts as the first evidence fragments."""
    rows = fragments()[:30]
    dense = EMBEDDER.embed_passages([r["text"] for r in rows])
    return tuple(
        VectorPoint(
            id=point_id(f"memory:{i}"),
            kind="memory",
            dense=dense[i],
            payload={"metadata": {"db": row["db"]}, "n": i},
        )
        for i, row in enumerate(rows)
    )


def query_vectors(text: str) -> tuple[list[float], SparseVector]:
    return EMBEDDER.embed_queries([text])[0].tolist(), ENCODER.embed_query(text)


def evidence(purpose: str | None = None, db: str | None = None) -> VectorFilter:
    match: dict[str, str] = {}
    if purpose:
        match["purpose"] = purpose
    if db:
        match["metadata.db"] = db
    return VectorFilter(kind="evidence", match=match)
