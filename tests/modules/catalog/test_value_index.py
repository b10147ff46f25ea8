"""The value index (issue 14 item 6), pure: what is indexed, the bounds, the three lookups."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from modules.catalog.records import CatalogColumn, CatalogState, CatalogTable
from modules.catalog.value_index import (
    MAX_VALUE_CHARS,
    build_value_index,
    distinct_sql,
    indexable_columns,
    normalize_value,
)


def state(*, sensitive: bool = False) -> CatalogState:
    procedure = CatalogTable(
        name="procedure",
        columns=(
            CatalogColumn(name="id", position=1, type="INTEGER", pk=True),
            CatalogColumn(name="descrizione", position=2, type="TEXT"),
            CatalogColumn(name="flag_ablazione", position=3, type="BOOLEAN"),
            CatalogColumn(name="patologia", position=4, type="VARCHAR(200)", sensitive=sensitive),
        ),
    )
    ospedali = CatalogTable(
        name="ospedali",
        columns=(
            CatalogColumn(name="nome", position=1, type="TEXT"),
            CatalogColumn(name="citta", position=2, type="character varying"),
        ),
    )
    return CatalogState(tables={"procedure": procedure, "ospedali": ospedali})


DISTINCT = {
    "procedure.descrizione": ["Ablazione transcatetere di flutter", "Angioplastica coronarica"],
    "procedure.patologia": ["esiti di pregressa ablazione; fibrillazione", "Appendicite acuta"],
    "ospedali.nome": ["San Carlo", "Sant'Anna"],
    "ospedali.citta": ["Milano", "Torino", "Città di Castello"],
}


def test_text_columns_are_indexed_and_sensitive_ones_never() -> None:
    indexed, sensitive = indexable_columns(state(sensitive=True))
    assert indexed == ["ospedali.nome", "ospedali.citta", "procedure.descrizione"]
    assert sensitive == ["procedure.patologia"]
    index = build_value_index(state(sensitive=True), "fp", DISTINCT)
    assert [c.column for c in index.columns] == indexed
    assert index.skipped_sensitive == ("procedure.patologia",)
    assert all("fibrillazione" not in v for c in index.columns for v in c.values)


def test_the_index_is_bounded() -> None:
    many = {"ospedali.nome": [f"ospedale {i}" for i in range(12)], "ospedali.citta": ["x" * 500]}
    index = build_value_index(state(), "fp", many, cap=10)
    nome = next(c for c in index.columns if c.column == "ospedali.nome")
    assert len(nome.values) == 10 and nome.truncated
    citta = next(c for c in index.columns if c.column == "ospedali.citta")
    assert citta.values == () and len("x" * 500) > MAX_VALUE_CHARS  # prose, not a value
    assert "LIMIT 11" in distinct_sql("ospedali.nome", 10)
    assert distinct_sql('we"ird.co"l') == (
        'SELECT DISTINCT "co""l" FROM "we""ird" WHERE "co""l" IS NOT NULL ORDER BY 1 LIMIT 501'
    )


def test_exact_contained_and_fuzzy_lookups_list_every_column() -> None:
    finder = build_value_index(state(), "fp", DISTINCT).finder()
    exact = finder.find("citta di castello")
    assert [(m.value, m.columns, m.kind) for m in exact] == [
        ("Città di Castello", ("ospedali.citta",), "normalized")
    ]
    assert finder.columns_of("ablazione") == ("procedure.descrizione", "procedure.patologia")
    assert {m.kind for m in finder.find("ablazione")} == {"contained"}
    assert finder.columns_of("ablazion") == ("procedure.descrizione", "procedure.patologia")
    assert {m.kind for m in finder.find("Milan")} == {"fuzzy"}
    assert finder.find("abla") == []  # too short for containment of a fragment… or fuzzy
    assert finder.find("xyzzy") == [] and finder.find("  ") == []


@given(st.text(max_size=40))
def test_normalizing_is_idempotent(text: str) -> None:
    once = normalize_value(text)
    assert normalize_value(once) == once


@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzàèéìòù ", min_size=1, max_size=20),
        min_size=1,
        max_size=8,
    )
)
def test_every_indexed_value_is_found_in_its_column(values: list[str]) -> None:
    index = build_value_index(state(), "fp", {"ospedali.nome": values})
    finder = index.finder()
    for value in index.columns[0].values if index.columns else ():
        assert "ospedali.nome" in finder.columns_of(value)
