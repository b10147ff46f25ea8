"""The Catalog Sample under the Sensitive Data Policy (modules/catalog/sample.py): real values
where the flag is false, synthetic ones where it is true — shape-preserving, deterministic per
(table, column, row), never the real value — at most five rows, bounded values."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from modules.catalog.records import CatalogColumn, CatalogState, CatalogSyncRun, CatalogTable
from modules.catalog.sample import (
    MAX_EXAMPLES,
    MAX_ROWS,
    MAX_TEXT,
    build_sample,
    sample_key,
    sample_sql,
    synthetic_value,
)

KEY = b"k" * 32


def synth(value: Any, row: int = 0, column: str = "c", key: bytes = KEY) -> Any:
    return synthetic_value(value, key=key, table="t", column=column, row=row)


def shape(text: str) -> str:
    return "".join(
        ("A" if ch.isupper() else "a") if ch.isalpha() else "9" if ch.isalnum() else ch
        for ch in text
    )


def table(*columns: tuple[str, str, bool]) -> CatalogTable:
    return CatalogTable(
        name="clienti",
        columns=tuple(
            CatalogColumn(name=n, position=i, type=t, sensitive=s)
            for i, (n, t, s) in enumerate(columns, 1)
        ),
    )


# ----------------------------------------------------------------------------- synthetic values


def test_an_email_keeps_its_at_and_its_domains_shape() -> None:
    real = "mario.rossi@example.it"
    fake = synth(real)
    assert fake != real and len(fake) == len(real)
    assert re.fullmatch(r"[a-z]{5}\.[a-z]{5}@[a-z]{7}\.[a-z]{2}", fake)


def test_digits_stay_digits_and_letters_letters_of_the_same_case() -> None:
    real = "RSSMRA80A01H501U"
    fake = synth(real)
    assert fake != real and shape(fake) == shape(real)


def test_an_iso_date_stays_a_valid_iso_date() -> None:
    for real in ("1980-05-17", "2024-02-29", "1999-12-31T23:59:58", "2001-01-01 10:00"):
        fake = synth(real)
        assert fake != real and len(fake) == len(real)
        dt.datetime.fromisoformat(fake)  # parses


def test_numbers_keep_their_type_sign_and_digits() -> None:
    assert isinstance(synth(1234), int) and len(str(synth(1234))) == 4
    assert synth(-57) < 0 and len(str(abs(synth(-57)))) == 2
    assert synth(7) != 7 and 0 <= synth(7) <= 9
    big = 9_000_000_000_000_000_001
    assert synth(big) != big and synth(big) < 2**63
    fake = synth(3.25)
    assert isinstance(fake, float) and fake != 3.25 and shape(repr(fake)) == shape("3.25")


def test_what_has_no_value_to_hide_stays_as_it_is() -> None:
    assert synth(None) is None
    assert synth("") == ""
    assert isinstance(synth(True), bool)  # a bit independent of the value
    assert synth("-") != "-" and synth("...") != "..."  # no shape to keep: letters instead


def test_nested_values_are_synthesized_leaf_by_leaf() -> None:
    real = {"mail": "a.b@c.it", "tags": ["vip", 42]}
    fake = synth(real)
    assert set(fake) == {"mail", "tags"}
    assert fake["mail"] != real["mail"] and shape(fake["mail"]) == shape("a.b@c.it")
    assert len(fake["tags"]) == 2 and fake["tags"][0] != "vip" and fake["tags"][1] != 42


def test_deterministic_per_table_column_and_row_and_keyed() -> None:
    real = "Zorbaqwex"
    assert synth(real, row=1) == synth(real, row=1)
    assert len({synth(real, row=r) for r in range(5)}) == 5
    assert synth(real, column="a") != synth(real, column="b")
    assert synth(real, key=b"x" * 32) != synth(real)


def test_the_real_value_is_no_input_beyond_its_shape() -> None:
    # two values of the same shape get the same stand-in: it cannot encode either of them
    assert synth("Zorbaqwex") == synth("Quixplodm")


_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=40
)


@given(value=_texts, row=st.integers(min_value=0, max_value=4))
def test_a_text_is_never_its_real_value_and_keeps_its_length(value: str, row: int) -> None:
    fake = synth(value, row=row)
    assert isinstance(fake, str) and fake != value and len(fake) == len(value)
    if any(ch.isalnum() for ch in value) and not re.match(r"\d{4}-\d{2}-\d{2}", value):
        assert shape(fake) == shape(value)


@given(value=st.integers(min_value=-(2**62), max_value=2**62))
def test_an_integer_is_never_its_real_value(value: int) -> None:
    fake = synth(value)
    assert isinstance(fake, int) and fake != value
    assert len(str(abs(fake))) == len(str(abs(value))) and (fake < 0) == (value < 0)


@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_is_never_its_real_value(value: float) -> None:
    fake = synth(value)
    assert isinstance(fake, float) and fake != value


# ----------------------------------------------------------------------------- the sample


def test_sample_sql_reads_the_catalogs_columns_quoted_with_a_limit() -> None:
    t = table(("id", "INTEGER", False), ('we"ird', "TEXT", True))
    assert sample_sql(t) == f'SELECT "id", "we""ird" FROM "clienti" LIMIT {MAX_ROWS}'
    assert sample_sql(t, limit=6).endswith("LIMIT 6")


def test_real_values_where_the_flag_is_false_synthetic_where_it_is_true() -> None:
    t = table(("id", "INTEGER", False), ("email", "TEXT", True), ("citta", "TEXT", False))
    rows = [(i, f"zq{i}@leakcheck.example", "Milano") for i in range(8)]
    sample = build_sample(t, rows, key=KEY)
    body = sample.to_json()
    assert body["row_count"] == MAX_ROWS and body["truncated"] is True
    assert [r[0] for r in body["rows"]] == [0, 1, 2, 3, 4]
    assert all(r[2] == "Milano" for r in body["rows"])
    assert all("leakcheck" not in r[1] and "@" in r[1] for r in body["rows"])
    assert body["synthetic"] == ["email"]
    email = body["columns"][1]
    assert (email["sensitive"], email["values"]) == (True, "synthetic")
    assert body["columns"][0]["values"] == "real"
    assert body["columns"][2]["examples"] == ["Milano"]  # distinct
    assert "leakcheck" not in str(body)


def test_values_and_examples_are_bounded() -> None:
    t = table(("note", "TEXT", False), ("secret", "TEXT", True))
    long = "x" * 500
    sample = build_sample(t, [(long, long)] * 3 + [(str(i), "s") for i in range(9)], key=KEY)
    assert all(len(v) <= MAX_TEXT + 1 for row in sample.rows for v in row)
    assert sample.rows[0][0] == "x" * MAX_TEXT + "…"
    assert all(len(c.examples) <= MAX_EXAMPLES for c in sample.columns)


def test_the_key_is_stable_for_a_catalog_and_differs_between_workspaces() -> None:
    def state(run: str) -> CatalogState:
        return CatalogState(
            runs={run: CatalogSyncRun(id=run, status="completed", started_seq=1, started_ts="")}
        )

    assert sample_key(state("01A")) == sample_key(state("01A"))
    assert sample_key(state("01A")) != sample_key(state("01B"))
