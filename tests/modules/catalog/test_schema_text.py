"""Index text of tables and columns: names split at snake_case, CamelCase and digits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.schema_view import SchemaColumn, SchemaTable
from modules.catalog.schema_text import (
    MAX_TABLE_COLUMNS_IN_TEXT,
    column_text,
    split_identifier,
    table_text,
)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("FreeMealCount_K12", "free meal count k 12"),
        ("Free Meal Count (K-12)", "free meal count k 12"),
        ("customer_id", "customer id"),
        ("CustomerID", "customer id"),
        ("HTMLParser", "html parser"),
        ("cardKingdomFoilId", "card kingdom foil id"),
        ("NumTstTakr", "num tst takr"),
        ("ADDRESS", "address"),
        ("città_nome", "città nome"),
        ("dataNascita2020", "data nascita 2020"),
        ("__", ""),
    ],
)
def test_identifiers_split_into_lowercase_words(name: str, words: str) -> None:
    assert split_identifier(name) == words


# two letters at least: a one-letter word before a capitalised one is an acronym in CamelCase
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)


@given(st.lists(_WORD, min_size=1, max_size=5))
def test_snake_and_camel_case_of_the_same_words_split_alike(words: list[str]) -> None:
    snake = "_".join(words)
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    assert split_identifier(snake) == " ".join(words)
    assert split_identifier(camel) == " ".join(words)


def test_a_column_text_carries_table_type_key_and_description() -> None:
    table = SchemaTable(name="frpm", columns=())
    column = SchemaColumn(
        name="FreeMealCount_K12", type="INTEGER", pk=True, description="Free meals, grades K-12"
    )
    text = column_text(table, column)
    assert text.startswith("free meal count k 12 (FreeMealCount_K12): column of table frpm")
    assert "type integer" in text and "primary key" in text
    assert text.endswith("Free meals, grades K-12")


def test_a_plain_snake_case_name_is_not_repeated_raw() -> None:
    text = column_text(SchemaTable(name="orders"), SchemaColumn(name="order_date", type="DATE"))
    assert text == "order date: column of table orders, type date."


def test_a_table_text_lists_its_columns_up_to_a_bound() -> None:
    columns = tuple(SchemaColumn(name=f"c{i}_x") for i in range(MAX_TABLE_COLUMNS_IN_TEXT + 5))
    text = table_text(SchemaTable(name="WideTable", columns=columns, description="Very wide."))
    assert text.startswith("wide table (WideTable): table with columns c 0 x, c 1 x")
    assert f"c {MAX_TABLE_COLUMNS_IN_TEXT - 1} x" in text
    assert f"c {MAX_TABLE_COLUMNS_IN_TEXT} x" not in text
    assert text.endswith("Very wide.")
