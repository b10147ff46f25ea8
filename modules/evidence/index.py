"""The Evidence Index: fragments of the publishable units as points of one generation.

Each fragment becomes one point of ``kind: evidence`` in the workspace collection: its dense
vector (the embedder, passage role; cached by content so unchanged fragments are never embedded
again), its sparse ``bm25`` vector, and a payload with what filtering and Evidence Results need::

    generation, unit_id, fragment_id, fragment, purpose (list), unit_kind, title, text, source,
    metadata (values as strings)

Point ids are ``point_id("evidence:<generation>:<fragment id>", order="evidence:<fragment id>")``:
stable, adapter-independent, and ordered alike in every generation (equal scores keep their order
when the same content is published again).

After the last fragment, one marker point (``marker: generation_complete``, no purpose, no unit, so
no search ever returns it) records that the generation was written completely: the search path
checks it with one selective count, where counting every fragment would cost a scan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modules.evidence.fragments import EvidenceFragment, fragment_unit
from modules.evidence.retrieval import metadata_value
from modules.evidence.units import EvidenceUnit, render_unit

if TYPE_CHECKING:
    from kernel.vectors import CollectionSpec, Embedder, VectorPoint, VectorStore
    from modules.evidence.approval import DigestTable
    from modules.evidence.capabilities import SparseEncoder

__all__ = [
    "COMPLETE_MARKER",
    "INDEX_LAYOUT",
    "IndexedFragment",
    "collection_spec",
    "fingerprint",
    "fragment_digests",
    "fragments_of",
    "write_completion_marker",
    "write_generation",
]

COMPLETE_MARKER = "generation_complete"

INDEX_LAYOUT = "evidence-index/v1"
_EMBED_BATCH = 64
_UPSERT_BATCH = 256


@dataclass(frozen=True)
class IndexedFragment:
    unit: EvidenceUnit
    fragment: EvidenceFragment


def fragments_of(units: Sequence[EvidenceUnit], max_chunk_chars: int) -> list[IndexedFragment]:
    return [
        IndexedFragment(unit=unit, fragment=fragment)
        for unit in units
        for fragment in fragment_unit(unit, max_chunk_chars).fragments
    ]


def fingerprint(
    units: Sequence[EvidenceUnit], *, max_chunk_chars: int, embedder: str, bm25: str
) -> str:
    """What a generation is built from; equal fingerprints build equal indexes."""
    digest = hashlib.sha256()
    for part in (INDEX_LAYOUT, str(max_chunk_chars), embedder, bm25):
        digest.update(part.encode("utf-8") + b"\0")
    for unit in sorted(units, key=lambda u: u.id):
        digest.update(render_unit(unit).encode("utf-8") + b"\0")
    return digest.hexdigest()


def fragment_digests(items: Sequence[IndexedFragment], generation: str) -> DigestTable:
    """Each fragment point's digest (approval.point_digest), by fragment id: the statement of
    what the generation's index holds."""
    from modules.evidence.approval import DigestTable, point_digest

    return DigestTable.build({i.fragment.id: point_digest(_payload(i, generation)) for i in items})


def _payload(item: IndexedFragment, generation: str) -> dict[str, object]:
    front = item.unit.front
    return {
        "generation": generation,
        "unit_id": front.id,
        "fragment_id": item.fragment.id,
        "fragment": item.fragment.index,
        "purpose": list(front.purposes),
        "unit_kind": front.kind,
        "title": front.title,
        "text": item.fragment.text,
        "source": f"evidence/sources/{front.source}",
        "metadata": {k: metadata_value(v) for k, v in sorted(front.metadata.items())},
    }


def write_generation(
    store: VectorStore,
    embedder: Embedder,
    bm25: SparseEncoder,
    items: Sequence[IndexedFragment],
    generation: str,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> int:
    """Embed and upsert every fragment as a point of ``generation``; returns the point count."""
    from kernel.vectors import VectorPoint, point_id

    total = len(items)
    if progress is not None:  # the total from the start: a bar never shows "0/None"
        progress("embedding", 0, total)
    points: list[VectorPoint] = []
    for start in range(0, total, _EMBED_BATCH):
        batch = items[start : start + _EMBED_BATCH]
        texts = [i.fragment.rendered for i in batch]
        dense = embedder.embed_passages(texts)
        for row, item in enumerate(batch):
            points.append(
                VectorPoint(
                    id=point_id(
                        f"evidence:{generation}:{item.fragment.id}",
                        order=f"evidence:{item.fragment.id}",
                    ),
                    kind="evidence",
                    dense=dense[row],
                    sparse=bm25.embed_document(item.fragment.rendered),
                    payload=_payload(item, generation),
                )
            )
        if progress is not None:
            progress("embedding", min(start + _EMBED_BATCH, total), total)
        if len(points) >= _UPSERT_BATCH:
            store.upsert(points)
            points = []
    if points:
        store.upsert(points)
    return total


def write_completion_marker(
    store: VectorStore, generation: str, dense_size: int, fragments: int
) -> None:
    """The point proving ``generation`` was written completely (written last)."""
    from kernel.vectors import VectorPoint, point_id

    unit = [0.0] * dense_size
    unit[0] = 1.0
    store.upsert(
        [
            VectorPoint(
                id=point_id(f"evidence:{generation}:{COMPLETE_MARKER}"),
                kind="evidence",
                dense=unit,
                payload={
                    "generation": generation,
                    "marker": COMPLETE_MARKER,
                    "fragments": fragments,
                    "purpose": [],
                },
            )
        ]
    )


def collection_spec(dense_size: int, metadata_keys: Sequence[str]) -> CollectionSpec:
    """The collection layout the Evidence Index needs: dense + ``bm25``, keyword indexes on the
    Evidence kind, the completion marker and every metadata key used in ``--where``."""
    from kernel.vectors import CollectionSpec

    return CollectionSpec(
        dense_size=dense_size,
        bm25=True,
        indexes={
            "unit_kind": "keyword",
            "marker": "keyword",
            **{f"metadata.{k}": "keyword" for k in sorted(metadata_keys)},
        },
    )
