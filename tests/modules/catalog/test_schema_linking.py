"""Schema linking on a small realistic schema: ranked tables and columns, joins, determinism.

Most tests are pure (``link`` with hand-made index hits); the last ones run the whole path over
a real Qdrant Edge index with the hashing embedder.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernel.schema_view import SchemaColumn, SchemaRelationship, SchemaTable, StaticSchemaView
from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.hashing_embedder import HashingEmbedder
from modules.catalog.linking import SchemaLink, link
from modules.catalog.linking_hints import EvidenceHint, strip_values
from modules.catalog.schema_capabilities import SchemaIndexCapabilities
from modules.catalog.schema_index import reindex
from modules.catalog.schema_search import IndexHit, check_index, embed_query, search_index

STEM = Bm25Encoder(("en",)).tokens


def _table(name: str, *columns: tuple[str, str]) -> SchemaTable:
    return SchemaTable(
        name=name,
        columns=tuple(
            SchemaColumn(name=c, type=t, position=i + 1, pk=c == "id")
            for i, (c, t) in enumerate(columns)
        ),
    )


def _rel(rid: str, a: str, ac: str, b: str) -> SchemaRelationship:
    return SchemaRelationship(
        id=rid, from_table=a, from_columns=(ac,), to_table=b, to_columns=("id",), origin="physical"
    )


TABLES = (
    _table("customers", ("id", "INTEGER"), ("name", "TEXT"), ("city", "TEXT")),
    _table(
        "orders",
        ("id", "INTEGER"),
        ("customer_id", "INTEGER"),
        ("order_date", "DATE"),
        ("status", "TEXT"),
    ),
    _table(
        "order_items",
        ("order_id", "INTEGER"),
        ("product_id", "INTEGER"),
        ("quantity", "INTEGER"),
        ("unit_price", "REAL"),
    ),
    _table(
        "products",
        ("id", "INTEGER"),
        ("name", "TEXT"),
        ("category", "TEXT"),
        ("supplier_id", "INTEGER"),
    ),
    _table("suppliers", ("id", "INTEGER"), ("name", "TEXT"), ("country", "TEXT")),
    _table("warehouses", ("id", "INTEGER"), ("city", "TEXT"), ("capacity", "INTEGER")),
)
RELATIONSHIPS = (
    _rel("r1", "orders", "customer_id", "customers"),
    _rel("r2", "order_items", "order_id", "orders"),
    _rel("r3", "order_items", "product_id", "products"),
    _rel("r4", "products", "supplier_id", "suppliers"),
)
VIEW = StaticSchemaView(
    dialect="sqlite", version="v1", schema_tables=TABLES, schema_relationships=RELATIONSHIPS
)
QUESTION = "Which customers from the city of Milan bought products of category Garden?"


def _hits(*ranked: tuple[str, str]) -> list[IndexHit]:
    return [
        IndexHit(table=t, column=c, score=1.0 / (i + 1), dense_rank=i + 1, bm25_rank=i + 1)
        for i, (t, c) in enumerate(ranked)
    ]


TABLE_HITS = _hits(("customers", ""), ("products", ""), ("warehouses", ""), ("suppliers", ""))
COLUMN_HITS = _hits(
    ("products", "category"),
    ("customers", "city"),
    ("warehouses", "city"),
    ("customers", "name"),
    ("products", "name"),
)


def _link(question: str = QUESTION, view: StaticSchemaView = VIEW, **kw: object) -> SchemaLink:
    kw.setdefault("hints", ())
    return link(question, view, TABLE_HITS, COLUMN_HITS, stem=STEM, **kw)  # type: ignore[arg-type]


def test_the_join_path_goes_through_the_bridge_tables() -> None:
    result = _link()
    assert {j.left + "=" + j.right for j in result.joins} == {
        "orders.customer_id=customers.id",
        "order_items.order_id=orders.id",
        "order_items.product_id=products.id",
    }
    assert result.chosen[0] == result.tables[0].name  # the path grows from the best table
    assert set(result.chosen) == {"customers", "orders", "order_items", "products"}
    # the bridges are linked tables too, ranked with the chosen ones, before the others
    assert {t.name for t in result.tables[:4]} == {
        "customers",
        "products",
        "orders",
        "order_items",
    }
    assert result.tables[0].name in ("customers", "products")


def test_named_columns_and_join_keys_lead_the_columns() -> None:
    top = {(c.table, c.column) for c in _link().columns[:8]}
    assert {("products", "category"), ("customers", "city")} <= top
    assert {("orders", "customer_id"), ("order_items", "product_id")} <= top


def test_the_output_is_sorted_bounded_and_deterministic() -> None:
    result = _link(limit=5)
    assert len(result.tables) == 5 and len(result.columns) == 5
    scores = [c.score for c in result.columns]
    assert scores == sorted(scores, reverse=True)
    assert _link(limit=5) == result
    shuffled = list(TABLES)
    random.Random(7).shuffle(shuffled)
    view = StaticSchemaView(
        dialect="sqlite",
        version="v1",
        schema_tables=tuple(shuffled),
        schema_relationships=tuple(reversed(RELATIONSHIPS)),
    )
    assert _link(view=view, limit=5) == result


def test_the_json_is_exactly_the_contract_shape() -> None:
    body = _link(limit=3).to_json()
    assert list(body) == ["tables", "columns", "joins"]
    assert set(body["tables"][0]) == {"name", "score"}
    assert set(body["columns"][0]) == {"table", "column", "score"}
    assert set(body["joins"][0]) == {"from", "to"}


def test_an_evidence_mention_boosts_the_columns_it_names() -> None:
    question = "Total revenue per customer"
    plain = _link(question)
    hint = EvidenceHint(text="revenue = SUM(order_items.quantity * order_items.unit_price)")
    boosted = _link(question, hints=[hint])
    top = [(c.table, c.column) for c in boosted.columns[:4]]
    assert ("order_items", "quantity") in top and ("order_items", "unit_price") in top
    assert "order_items" in {t.name for t in boosted.tables[:2]}
    assert ("order_items", "quantity") not in [(c.table, c.column) for c in plain.columns[:4]]


def test_a_delimited_or_plain_mention_counts_too() -> None:
    hint = EvidenceHint(text="capacity refers to `capacity`; big means capacity > 1000")
    result = _link("Which are the big ones?", hints=[hint])
    assert (result.columns[0].table, result.columns[0].column) == ("warehouses", "capacity")


def test_a_weaker_hint_boosts_less() -> None:
    question = "Total revenue per customer"
    text = "revenue = SUM(order_items.quantity * order_items.unit_price)"
    strong = _link(question, hints=[EvidenceHint(text=text, weight=1.0)], limit=30)
    weak = _link(question, hints=[EvidenceHint(text=text, weight=0.3)], limit=30)

    def score(result: SchemaLink) -> float:
        return next(c.score for c in result.columns if c.column == "quantity")

    assert score(strong) > score(weak)


def test_a_quoted_value_is_not_taken_for_a_name() -> None:
    def city(question: str) -> float:
        return next(
            c.score
            for c in _link(question, limit=30).columns
            if (c.table, c.column) == ("customers", "city")
        )

    assert city("customers whose status is 'city'") < city("customers whose status is city")
    assert strip_values("status 'city' and \"x y\"") == ("status   and  ", ["city", "x y"])


def test_a_single_table_question_has_no_joins() -> None:
    table_hits = _hits(("warehouses", ""))
    column_hits = _hits(("warehouses", "capacity"), ("warehouses", "city"))
    result = link(
        "warehouse capacity by city", VIEW, table_hits, column_hits, (), stem=STEM, limit=5
    )
    assert result.joins == ()
    assert result.tables[0].name == "warehouses"


def test_hits_outside_the_view_are_ignored() -> None:
    ghost = _hits(("gone", "column"), *((h.table, h.column) for h in COLUMN_HITS))
    result = link(QUESTION, VIEW, TABLE_HITS, ghost, (), stem=STEM, limit=50)
    assert "gone" not in {c.table for c in result.columns}


@pytest.fixture
def indexed(tmp_path: Path) -> object:
    store = EdgeVectorStore(tmp_path / "qdrant")
    caps = SchemaIndexCapabilities(
        state_dir=tmp_path / "state",
        vector_store=lambda: store,
        embedder=lambda: HashingEmbedder(64),
        bm25=lambda: Bm25Encoder(("en",)),
    )
    reindex(caps, VIEW)
    yield caps
    store.close()


def _link_indexed(caps: SchemaIndexCapabilities, question: str) -> SchemaLink:
    header = check_index(caps, VIEW)
    tables, columns = search_index(caps, header, embed_query(caps, question))
    return link(question, VIEW, tables, columns, (), stem=STEM, limit=10)


def test_linking_over_a_real_index_finds_tables_columns_and_joins(
    indexed: SchemaIndexCapabilities,
) -> None:
    result = _link_indexed(indexed, QUESTION)
    names = [t.name for t in result.tables[:4]]
    assert "customers" in names and "products" in names
    assert ("products", "category") in [(c.table, c.column) for c in result.columns]
    assert _link_indexed(indexed, QUESTION) == result
