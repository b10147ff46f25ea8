"""The records that cross the ``VectorStore`` port: points, filters, hits, collection layout.

One collection per workspace holds every kind of searchable point; the payload field ``kind``
separates them (ARCHITECTURE §3.6): :data:`KINDS`. Every point carries a dense vector (the
collection's default, unnamed vector) and, for kinds that take part in lexical search (Evidence
Fragments), a sparse vector named ``bm25`` whose IDF is applied by the engine (``Modifier.IDF``).

Point ids are UUIDs derived from a stable key (:func:`point_id`), so the same fragment gets the
same id in every adapter, every rebuild and every machine, and — through its ``order`` key — the
same place among equal scores in every generation.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import msgspec

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "BM25_VECTOR",
    "CORE_KEYWORD_INDEXES",
    "DENSE_VECTOR",
    "KINDS",
    "POINT_ID_NAMESPACE",
    "CollectionInfo",
    "CollectionSpec",
    "DenseVector",
    "FilterValue",
    "IndexType",
    "Kind",
    "ScoredPoint",
    "SparseVector",
    "VectorFilter",
    "VectorPoint",
    "point_id",
]

Kind: TypeAlias = Literal["evidence", "memory", "solved_question", "schema_table", "schema_column"]
KINDS: Final[tuple[str, ...]] = (
    "evidence",
    "memory",
    "solved_question",
    "schema_table",
    "schema_column",
)

DENSE_VECTOR: Final = ""
"""Name of the dense vector: Qdrant's default (unnamed) vector."""
BM25_VECTOR: Final = "bm25"
"""Name of the sparse BM25 vector (IDF applied by the engine)."""

IndexType: TypeAlias = Literal["keyword", "integer", "bool"]
CORE_KEYWORD_INDEXES: Final[tuple[str, ...]] = ("kind", "purpose", "generation", "unit_id")
"""Payload keys every collection indexes as keyword: the filters every search uses."""

POINT_ID_NAMESPACE: Final = uuid.UUID("5f0c6c0e-8d1a-5b8e-9d5e-7468742d7663")
"""UUID5 namespace of tht point ids (fixed forever: changing it changes every id)."""

DenseVector: TypeAlias = "Sequence[float] | npt.NDArray[np.float32]"
FilterValue: TypeAlias = "str | int | bool | Sequence[str] | Sequence[int]"


def point_id(key: str, *, order: str | None = None) -> str:
    """The point id for a stable key (e.g. ``"evidence:g3:evidence:free-rate#2"``): a UUID5.

    Deterministic across processes, adapters and machines, so both adapters return the same ids.

    ``order``: the part of the key that names the thing itself, without the generation or index
    it was written in (``"evidence:evidence:free-rate#2"``). Searches break equal scores by point
    id (:func:`kernel.vectors.fusion.order_hits`); with ``order`` the id's first 48 bits are those
    of ``order``'s UUID5 and the rest those of ``key``'s (version 8, RFC 9562's custom layout), so
    ids stay unique per key while tied points of two generations of the same content come back
    in the same order: republishing what did not change changes no ranking.
    """
    whole = uuid.uuid5(POINT_ID_NAMESPACE, key)
    if order is None:
        return str(whole)
    lead = uuid.uuid5(POINT_ID_NAMESPACE, order).bytes[:6]
    raw = bytearray(lead + whole.bytes[6:])
    raw[6] = (raw[6] & 0x0F) | 0x80  # version 8
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 9562 variant
    return str(uuid.UUID(bytes=bytes(raw)))


class SparseVector(msgspec.Struct, frozen=True, kw_only=True):
    """A sparse vector: parallel ``indices`` (unique, ascending for documents) and ``values``."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValueError("sparse vector: indices and values differ in length")

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.indices, self.values, strict=True))


class VectorPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One searchable point.

    ``id`` is a UUID string (use :func:`point_id`); ``kind`` is written to the payload as ``kind``;
    ``payload`` must be JSON-compatible and must not contain ``kind``. ``sparse`` is ``None`` for
    kinds that are searched densely only (Memory, Schema), per the Additive BM25 upgrade.
    """

    id: str
    kind: str
    dense: Any  # DenseVector: a float sequence or a 1-D float32 array
    sparse: SparseVector | None = None
    payload: Mapping[str, Any] = msgspec.field(default_factory=dict)


class VectorFilter(msgspec.Struct, frozen=True, kw_only=True):
    """A payload filter. ``kind`` is mandatory: kinds never mix in one search.

    ``match`` maps a payload key (dotted for nested keys, e.g. ``metadata.db``) to a value: a
    scalar matches that value (for an array field: any element equal to it), a list matches any
    of its values. ``exclude`` is the same with "must not". Conditions are ANDed.
    """

    kind: str
    match: Mapping[str, FilterValue] = msgspec.field(default_factory=dict)
    exclude: Mapping[str, FilterValue] = msgspec.field(default_factory=dict)


class ScoredPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One search hit, best first.

    ``score`` is the engine's similarity (dense: cosine; sparse: BM25 with IDF) or, for a hybrid
    query, the RRF score. ``dense_rank`` / ``bm25_rank`` are the 1-based positions of the point in
    the dense and BM25 rankings the result came from (``None``: not in that ranking, or not
    queried) - the diagnostics the Evidence evaluation set keeps.
    """

    id: str
    score: float
    payload: Mapping[str, Any]
    dense_rank: int | None = None
    bm25_rank: int | None = None


class CollectionSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The layout a caller needs: what :meth:`VectorStore.ensure_collection` creates or checks.

    ``dense_size`` is the embedder's dimension; ``bm25`` asks for the sparse ``bm25`` vector
    (added to an existing dense-only collection without touching its data); ``indexes`` are
    payload indexes beyond :data:`CORE_KEYWORD_INDEXES` (e.g. ``{"metadata.db": "keyword"}``).
    """

    dense_size: int
    bm25: bool = True
    indexes: Mapping[str, IndexType] = msgspec.field(default_factory=dict)

    def all_indexes(self) -> dict[str, IndexType]:
        merged: dict[str, IndexType] = dict.fromkeys(CORE_KEYWORD_INDEXES, "keyword")
        merged.update(self.indexes)
        return merged


class CollectionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What a collection is: its dense size, whether it has ``bm25`` (with IDF), its indexes."""

    dense_size: int
    distance: str
    bm25: bool
    bm25_idf: bool
    points: int
    indexes: Mapping[str, str]
