"""The schema index: incremental reindex, fail-closed checks, no foreign or stale points.

Real Qdrant Edge shards in a temporary folder; a hashing embedder wrapped to count what it is
asked to embed (the point of incrementality: unchanged tables and columns are never embedded).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernel.schema_view import SchemaColumn, SchemaRelationship, SchemaTable, StaticSchemaView
from kernel.vectors import VectorFilter
from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.hashing_embedder import HashingEmbedder
from modules.catalog.schema_capabilities import SchemaIndexCapabilities, SchemaIndexUnavailable
from modules.catalog.schema_index import (
    COLUMN_KIND,
    HEADER_FILE,
    TABLE_KIND,
    load_header,
    reindex,
    schema_entries,
)
from modules.catalog.schema_search import check_index, embed_query, search_index


class CountingEmbedder:
    def __init__(self, dimension: int = 32, identity: str | None = None) -> None:
        self.inner = HashingEmbedder(dimension)
        self._identity = identity or self.inner.identity
        self.passages: list[str] = []

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        self.passages.extend(texts)
        return self.inner.embed_passages(texts)


def col(name: str, type_: str = "INTEGER", *, pk: bool = False, position: int = 0) -> SchemaColumn:
    return SchemaColumn(name=name, type=type_, pk=pk, position=position)


def shop(version: str = "v1", **changes: Any) -> StaticSchemaView:
    tables = {
        "customers": [col("id", pk=True), col("name", "TEXT"), col("city", "TEXT")],
        "orders": [col("id", pk=True), col("customer_id"), col("order_date", "DATE")],
        "products": [col("id", pk=True), col("name", "TEXT"), col("category", "TEXT")],
    }
    tables.update(changes)
    return StaticSchemaView(
        dialect="sqlite",
        version=version,
        schema_tables=tuple(
            SchemaTable(
                name=n,
                columns=tuple(msgspec.structs.replace(c, position=i + 1) for i, c in enumerate(cs)),
            )
            for n, cs in tables.items()
        ),
        schema_relationships=(
            SchemaRelationship(
                id="r1",
                from_table="orders",
                from_columns=("customer_id",),
                to_table="customers",
                to_columns=("id",),
                origin="physical",
            ),
        ),
    )


class Index:
    def __init__(self, folder: Path, embedder: CountingEmbedder | None = None) -> None:
        self.folder = folder
        self.store = EdgeVectorStore(folder / "qdrant")
        self.embedder = embedder or CountingEmbedder()
        self.caps = SchemaIndexCapabilities(
            state_dir=folder / "state",
            vector_store=lambda: self.store,
            embedder=lambda: self.embedder,
            bm25=lambda: Bm25Encoder(("en",)),
            nonce=lambda: "index-under-test",
        )

    def columns(self, table: str) -> list[str]:
        header = load_header(self.caps.state_dir)
        assert header is not None
        names = []
        for view_column in ("id", "name", "city", "customer_id", "order_date", "category", "town"):
            match = {"schema_index": header.index, "table": table, "column": view_column}
            if self.store.count(VectorFilter(kind=COLUMN_KIND, match=match)):
                names.append(view_column)
        return names


@pytest.fixture
def index(tmp_path: Path) -> Any:
    built = Index(tmp_path)
    yield built
    built.store.close()


def test_first_build_embeds_every_table_and_column(index: Index) -> None:
    report = reindex(index.caps, shop())
    assert (report.tables, report.columns, report.embedded, report.rebuilt) == (3, 9, 12, True)
    assert len(index.embedder.passages) == 12
    assert index.columns("customers") == ["id", "name", "city"]


def test_an_unchanged_view_embeds_nothing_and_deletes_nothing(index: Index) -> None:
    reindex(index.caps, shop())
    index.embedder.passages.clear()
    report = reindex(index.caps, shop(version="v2"))
    assert (report.embedded, report.deleted, report.kept, report.rebuilt) == (0, 0, 12, False)
    assert index.embedder.passages == []
    header = load_header(index.caps.state_dir)
    assert header is not None and header.view_version == "v2"


def test_a_dropped_column_disappears_and_only_its_table_is_embedded_again(index: Index) -> None:
    reindex(index.caps, shop())
    index.embedder.passages.clear()
    dropped = shop(version="v2", customers=[col("id", pk=True), col("name", "TEXT")])
    report = reindex(index.caps, dropped)
    assert index.columns("customers") == ["id", "name"]
    # the table's own text lists its columns: it changed; the other columns did not
    assert report.embedded == 1 and report.deleted == 2
    assert index.embedder.passages == [
        e.text
        for e in schema_entries(
            dropped, embedder=index.embedder.identity, bm25=Bm25Encoder(("en",)).identity
        )
        if e.kind == TABLE_KIND and e.table == "customers"
    ]


def test_a_renamed_column_appears_and_is_found(index: Index) -> None:
    reindex(index.caps, shop())
    renamed = shop(
        version="v2", customers=[col("id", pk=True), col("name", "TEXT"), col("town", "TEXT")]
    )
    report = reindex(index.caps, renamed)
    assert index.columns("customers") == ["id", "name", "town"]
    assert report.embedded == 2  # the new column and its table
    header = check_index(index.caps, renamed)
    _, columns = search_index(index.caps, header, embed_query(index.caps, "customer town"))
    assert ("customers", "town") in [(h.table, h.column) for h in columns]
    assert ("customers", "city") not in [(h.table, h.column) for h in columns]


def test_a_changed_type_or_description_is_embedded_again(index: Index) -> None:
    reindex(index.caps, shop())
    index.embedder.passages.clear()
    described = msgspec.structs.replace(col("city", "TEXT"), description="where they live")
    report = reindex(
        index.caps, shop(version="v2", customers=[col("id", pk=True), col("name"), described])
    )
    # name's type and city's description; the table's text names its columns, no types
    assert report.embedded == 2 and report.deleted == 2
    assert any("where they live" in t for t in index.embedder.passages)


def test_a_missing_index_is_unavailable_never_empty(index: Index) -> None:
    with pytest.raises(SchemaIndexUnavailable) as err:
        check_index(index.caps, shop())
    assert err.value.reason == "missing" and err.value.exit_code == 6
    assert "tht catalog reindex" in err.value.message


def test_a_stale_index_is_unavailable_until_reindexed(index: Index) -> None:
    reindex(index.caps, shop())
    changed = shop(version="v2", products=[col("id", pk=True), col("title", "TEXT")])
    with pytest.raises(SchemaIndexUnavailable) as err:
        check_index(index.caps, changed)
    assert err.value.reason == "stale" and "v1" in err.value.message and "v2" in err.value.message
    reindex(index.caps, changed)
    assert check_index(index.caps, changed).view_version == "v2"


def test_a_new_catalog_version_with_the_same_content_is_not_stale(index: Index) -> None:
    reindex(index.caps, shop())
    assert check_index(index.caps, shop(version="v9")).view_version == "v1"


def test_a_store_that_lost_its_points_is_stale_and_the_next_reindex_rebuilds(
    index: Index,
) -> None:
    reindex(index.caps, shop())
    index.store.delete(VectorFilter(kind=TABLE_KIND))  # the marker goes with the tables
    with pytest.raises(SchemaIndexUnavailable) as err:
        check_index(index.caps, shop())
    assert err.value.reason == "stale"
    index.embedder.passages.clear()
    report = reindex(index.caps, shop())
    assert report.rebuilt and report.embedded == 12
    check_index(index.caps, shop())


def test_unreadable_records_are_corrupt_and_rebuilt(index: Index) -> None:
    reindex(index.caps, shop())
    (index.caps.state_dir / HEADER_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(SchemaIndexUnavailable) as err:
        check_index(index.caps, shop())
    assert err.value.reason == "corrupt"
    assert reindex(index.caps, shop()).rebuilt


def test_a_header_of_another_layout_is_incompatible_and_rebuilt(index: Index) -> None:
    reindex(index.caps, shop())
    path = index.caps.state_dir / HEADER_FILE
    header = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**header, "layout": "schema-index/v0"}), encoding="utf-8")
    with pytest.raises(SchemaIndexUnavailable) as err:
        check_index(index.caps, shop())
    assert err.value.reason == "incompatible"
    assert "layout schema-index/v0" in str(err.value)
    assert reindex(index.caps, shop()).rebuilt
    check_index(index.caps, shop())


def test_another_embedder_makes_the_index_incompatible(index: Index, tmp_path: Path) -> None:
    reindex(index.caps, shop())
    other = Index(index.folder, CountingEmbedder(identity="another-model/32"))
    index.store.close()
    with pytest.raises(SchemaIndexUnavailable) as err:
        check_index(other.caps, shop())
    assert err.value.reason == "incompatible"
    report = reindex(other.caps, shop())
    assert report.rebuilt and report.embedded == 12
    other.store.close()


def test_points_of_another_index_in_the_same_store_are_never_returned(tmp_path: Path) -> None:
    first = Index(tmp_path / "a")
    reindex(first.caps, shop())
    foreign = SchemaIndexCapabilities(
        state_dir=tmp_path / "b-state",
        vector_store=lambda: first.store,
        embedder=lambda: first.embedder,
        bm25=lambda: Bm25Encoder(("en",)),
        nonce=lambda: "another-index",
    )
    other_view = StaticSchemaView(
        dialect="sqlite",
        version="x",
        schema_tables=(SchemaTable(name="invoices", columns=(col("total", "REAL"),)),),
    )
    reindex(foreign, other_view)
    header = check_index(first.caps, shop())
    tables, columns = search_index(first.caps, header, embed_query(first.caps, "invoice total"))
    assert {h.table for h in tables} == {"customers", "orders", "products"}
    assert "invoices" not in {h.table for h in columns}
    first.store.close()


def test_hits_do_not_depend_on_the_index_id(tmp_path: Path) -> None:
    """Point ids carry the (random) index id; equal scores must not rank by it."""
    results = []
    for nonce in ("first-index", "second-index"):
        store = EdgeVectorStore(tmp_path / nonce / "qdrant")
        caps = SchemaIndexCapabilities(
            state_dir=tmp_path / nonce / "state",
            vector_store=lambda s=store: s,  # type: ignore[misc]
            embedder=lambda: HashingEmbedder(32),
            bm25=lambda: Bm25Encoder(("en",)),
            nonce=lambda n=nonce: n,  # type: ignore[misc]
        )
        reindex(caps, shop())
        header = check_index(caps, shop())
        # "column" and "table" are in every entry's text: BM25 ties everywhere
        results.append(search_index(caps, header, embed_query(caps, "column of table name")))
        store.close()
    assert results[0] == results[1]
    ranks = [h.bm25_rank for h in results[0][1] if h.bm25_rank is not None]
    assert len(set(ranks)) < len(ranks)  # there were ties, and they share a rank
