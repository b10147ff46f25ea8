"""``QdrantServerVectorStore``: the workspace collection on a Qdrant server (qdrant-client).

Selected by ``vector_store.kind: server`` and ``vector_store.url`` in ``workspace.yaml``. The same
layout and queries as the embedded adapter (one collection; dense default vector, cosine; sparse
``bm25`` with IDF; keyword payload indexes). qdrant-client's *local mode*
(``QdrantClient(path=...)`` or ``":memory:"``) runs the same code in-process; it is brute-force
Python (about 0.5 s per filtered hybrid query at 10k points), fit for the contract tests, not as the
default store.

A server that does not answer, or answers 5xx, is :class:`VectorStoreUnreachableError` (exit 6).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Final

from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from kernel.vectors.errors import (
    CollectionCorruptError,
    CollectionIncompatibleError,
    CollectionMissingError,
    VectorStoreBusyError,
    VectorStoreError,
    VectorStoreUnreachableError,
)
from kernel.vectors.fusion import RankedHit
from kernel.vectors.records import (
    BM25_VECTOR,
    DENSE_VECTOR,
    CollectionInfo,
    CollectionSpec,
    IndexType,
    SparseVector,
    VectorFilter,
    VectorPoint,
)
from kernel.vectors.store import QdrantStoreBase, Using

__all__ = ["QdrantServerVectorStore"]

_BATCH: Final = 256
_SCHEMA: Final[dict[IndexType, qm.PayloadSchemaType]] = {
    "keyword": qm.PayloadSchemaType.KEYWORD,
    "integer": qm.PayloadSchemaType.INTEGER,
    "bool": qm.PayloadSchemaType.BOOL,
}


class QdrantServerVectorStore(QdrantStoreBase):
    """The workspace collection ``collection`` behind a :class:`qdrant_client.QdrantClient`."""

    def __init__(
        self, client: QdrantClient, collection: str, *, where: str = "", local: bool = False
    ) -> None:
        self._client = client
        self.collection = collection
        self._where = where or collection
        self._local = local
        self._info: CollectionInfo | None = None

    @classmethod
    def from_url(
        cls, url: str, collection: str, *, api_key: str | None = None, timeout: int = 10
    ) -> QdrantServerVectorStore:
        """A store on the server at ``url`` (no request is made until first use)."""
        client = QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
        return cls(client, collection, where=f"{url} collection {collection!r}")

    @classmethod
    def local(cls, location: str, collection: str) -> QdrantServerVectorStore:
        """qdrant-client's local mode: ``location`` is a folder, or ``":memory:"``."""
        try:
            if location == ":memory:":
                client = QdrantClient(location=":memory:")
            else:
                client = QdrantClient(path=location)
        except RuntimeError as err:  # another client holds the folder's lock
            raise VectorStoreBusyError(f"{location}: {err}") from err
        except Exception as err:
            raise CollectionCorruptError(f"{location}: cannot open local Qdrant: {err}") from err
        return cls(client, collection, where=f"{location} collection {collection!r}", local=True)

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> QdrantServerVectorStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._info = None
        with self._engine("close"):
            self._client.close()

    # --- collection --------------------------------------------------------------------------

    def ensure_collection(self, spec: CollectionSpec) -> CollectionInfo:
        if spec.dense_size < 1:
            raise ValueError(f"vector store: dense_size must be positive, got {spec.dense_size}")
        with self._engine("check the collection"):
            exists = self._client.collection_exists(self.collection)
        if not exists:
            with self._engine("create the collection"):
                self._client.create_collection(
                    self.collection,
                    vectors_config=qm.VectorParams(
                        size=spec.dense_size, distance=qm.Distance.COSINE
                    ),
                    sparse_vectors_config=(
                        {BM25_VECTOR: qm.SparseVectorParams(modifier=qm.Modifier.IDF)}
                        if spec.bm25
                        else None
                    ),
                )
        info = self.describe()
        if info.dense_size != spec.dense_size or info.distance != "cosine":
            raise CollectionIncompatibleError(
                f"{self._where}: the collection holds {info.dense_size}-dimensional "
                f"{info.distance} vectors, {spec.dense_size}-dimensional cosine were asked for "
                "(embedder changed? delete the collection and rebuild the index)"
            )
        if info.bm25 and not info.bm25_idf:
            raise CollectionIncompatibleError(
                f"{self._where}: the `bm25` sparse vector has no IDF modifier"
            )
        if spec.bm25 and not info.bm25:
            with self._engine("add the bm25 vector"):
                self._client.create_vector_name(
                    self.collection,
                    vector_name=BM25_VECTOR,
                    vector_name_config=qm.SparseVectorNameConfig(
                        sparse=qm.SparseVectorConfig(modifier=qm.Modifier.IDF)
                    ),
                )
        for key, kind in sorted(spec.all_indexes().items()):
            if info.indexes.get(key) == kind:
                continue
            with self._engine(f"index payload key {key!r}"), warnings.catch_warnings():
                # local mode warns that payload indexes have no effect there
                warnings.simplefilter("ignore", UserWarning)
                self._client.create_payload_index(self.collection, key, field_schema=_SCHEMA[kind])
        self._info = None
        return self.describe()

    def describe(self) -> CollectionInfo:
        with self._engine("describe the collection"):
            info = self._client.get_collection(self.collection)
        params = info.config.params
        vectors = params.vectors
        dense = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else vectors
        if dense is None:
            raise CollectionIncompatibleError(
                f"{self._where}: the collection has no default dense vector"
            )
        sparse = (params.sparse_vectors or {}).get(BM25_VECTOR)
        indexes = {
            key: str(getattr(value.data_type, "value", value.data_type))
            for key, value in sorted((info.payload_schema or {}).items())
        }
        return CollectionInfo(
            dense_size=int(dense.size),
            distance=str(dense.distance.value).lower(),
            bm25=sparse is not None,
            bm25_idf=sparse is not None and sparse.modifier == qm.Modifier.IDF,
            points=int(info.points_count or 0),
            indexes=indexes,
        )

    def _layout(self) -> CollectionInfo:
        if self._info is None:
            self._info = self.describe()
        return self._info

    # --- writes ------------------------------------------------------------------------------

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        self._check_points(points, self._layout())
        for start in range(0, len(points), _BATCH):
            batch = [_point_struct(p) for p in points[start : start + _BATCH]]
            with self._engine("upsert points"):
                self._client.upsert(self.collection, points=batch, wait=True)

    def delete(self, where: VectorFilter) -> None:
        with self._engine("delete points"):
            self._client.delete(
                self.collection,
                points_selector=qm.FilterSelector(filter=_filter(where)),
                wait=True,
            )

    def count(self, where: VectorFilter) -> int:
        with self._engine("count points"):
            return int(self._client.count(self.collection, count_filter=_filter(where)).count)

    # --- engine primitives for QdrantStoreBase -----------------------------------------------

    def _request(
        self,
        using: Using,
        vector: Sequence[float] | SparseVector,
        where: VectorFilter,
        limit: int,
        idf_corpus: VectorFilter | None,
    ) -> qm.QueryRequest:
        if using == "dense":
            assert not isinstance(vector, SparseVector)
            return qm.QueryRequest(
                query=list(vector),
                filter=_filter(where),
                limit=limit,
                with_payload=False,
                with_vector=False,
                # a server builds HNSW past its indexing threshold; HNSW is approximate and
                # would make results differ from the embedded store's (local mode is exact)
                params=None if self._local else qm.SearchParams(exact=True),
            )
        assert isinstance(vector, SparseVector)
        if idf_corpus is not None:
            params = qm.SearchParams(idf=qm.IdfCorpusParams(corpus=_filter(idf_corpus)))
        elif self._local:
            params = None  # local mode's collection-wide statistics count live points only
        else:
            # a server's collection-wide statistics still count deleted and replaced points;
            # a corpus filter matching everything makes it count the live ones
            params = qm.SearchParams(idf=qm.IdfCorpusParams(corpus=qm.Filter()))
        return qm.QueryRequest(
            query=qm.SparseVector(indices=list(vector.indices), values=list(vector.values)),
            using=BM25_VECTOR,
            filter=_filter(where),
            limit=limit,
            with_payload=False,
            with_vector=False,
            params=params,
        )

    def _search(
        self,
        using: Using,
        vector: Sequence[float] | SparseVector,
        where: VectorFilter,
        limit: int,
        idf_corpus: VectorFilter | None,
    ) -> list[RankedHit]:
        (hits,) = self._batch([self._request(using, vector, where, limit, idf_corpus)])
        return hits

    def _search_pair(
        self,
        dense: Sequence[float],
        sparse: SparseVector,
        where: VectorFilter,
        limit: int,
        idf_corpus: VectorFilter | None,
    ) -> tuple[list[RankedHit], list[RankedHit]]:
        dense_hits, bm25_hits = self._batch(
            [
                self._request("dense", dense, where, limit, None),
                self._request("bm25", sparse, where, limit, idf_corpus),
            ]
        )
        return dense_hits, bm25_hits

    def _batch(self, requests: list[qm.QueryRequest]) -> list[list[RankedHit]]:
        with self._engine("query"):
            responses = self._client.query_batch_points(self.collection, requests=requests)
        return [[RankedHit(str(p.id), float(p.score)) for p in r.points] for r in responses]

    def _payloads(self, ids: Sequence[Any]) -> dict[Any, Mapping[str, Any]]:
        with self._engine("retrieve payloads"):
            records = self._client.retrieve(
                self.collection, ids=list(ids), with_payload=True, with_vectors=False
            )
        return {str(r.id): dict(r.payload or {}) for r in records}

    # --- internals ---------------------------------------------------------------------------

    @contextmanager
    def _engine(self, action: str) -> Iterator[None]:
        """Turn qdrant-client's exceptions into typed vector-store errors."""
        try:
            yield
        except VectorStoreError:
            raise
        except UnexpectedResponse as err:
            body = (err.content or b"").decode("utf-8", "replace")[:300]
            message = f"{self._where}: cannot {action}: HTTP {err.status_code}: {body}"
            details = {"status": err.status_code}
            status = err.status_code or 0
            if status == 404:
                raise CollectionMissingError(message, details=details) from err
            if status >= 500:
                raise VectorStoreUnreachableError(message, details=details) from err
            if "dimension" in body or "Not existing vector name" in body:
                raise CollectionIncompatibleError(message, details=details) from err
            raise VectorStoreError(message, details=details) from err
        except ResponseHandlingException as err:
            raise VectorStoreUnreachableError(
                f"{self._where}: cannot {action}: the server does not answer: {err.source}"
            ) from err
        except ValueError as err:  # local mode
            text = str(err)
            if "not found" in text and "Collection" in text:
                raise CollectionMissingError(f"{self._where}: cannot {action}: {text}") from err
            if "dimension" in text.lower() or "vector" in text.lower():
                raise CollectionIncompatibleError(
                    f"{self._where}: cannot {action}: {text}"
                ) from err
            raise VectorStoreError(f"{self._where}: cannot {action}: {text}") from err
        except (OSError, RuntimeError) as err:
            raise VectorStoreUnreachableError(f"{self._where}: cannot {action}: {err}") from err


def _point_struct(point: VectorPoint) -> qm.PointStruct:
    dense = point.dense.tolist() if hasattr(point.dense, "tolist") else list(point.dense)
    vector: dict[str, Any] = {DENSE_VECTOR: dense}
    if point.sparse is not None:
        vector[BM25_VECTOR] = qm.SparseVector(
            indices=list(point.sparse.indices), values=list(point.sparse.values)
        )
    payload = dict(point.payload)
    payload["kind"] = point.kind
    return qm.PointStruct(id=point.id, vector=vector, payload=payload)


def _condition(key: str, value: Any) -> qm.FieldCondition:
    if isinstance(value, str | int | bool):
        return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))
    values = list(value)
    if not values:
        raise ValueError(f"vector store: empty list of values for filter key {key!r}")
    return qm.FieldCondition(key=key, match=qm.MatchAny(any=values))


def _filter(where: VectorFilter) -> qm.Filter:
    must: list[Any] = [qm.FieldCondition(key="kind", match=qm.MatchValue(value=where.kind))]
    must.extend(_condition(k, v) for k, v in sorted(where.match.items()))
    must_not: list[Any] = [_condition(k, v) for k, v in sorted(where.exclude.items())]
    return qm.Filter(must=must, must_not=must_not or None)
