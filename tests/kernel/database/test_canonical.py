"""The canonical form of query results and its hash (docs/database.md, "Result hash")."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import uuid

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.database.canonical import canonical_row, json_value, result_hash
from kernel.database.types import ResultColumn


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (7, 7),
        ("Ç", "Ç"),
        (1.5, 1.5),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (decimal.Decimal("12.50"), "12.50"),
        (decimal.Decimal("-Infinity"), "-Infinity"),
        (dt.date(2024, 2, 29), "2024-02-29"),
        (dt.datetime(2024, 1, 31, 8, 30, tzinfo=dt.UTC), "2024-01-31T08:30:00+00:00"),
        (dt.time(23, 59, 1), "23:59:01"),
        (dt.timedelta(days=1, seconds=30, microseconds=500_000), "86430.5"),
        (dt.timedelta(seconds=-1.25), "-1.25"),
        (b"\x00\xff", "\\x00ff"),
        (memoryview(b"ab"), "\\x6162"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (ipaddress.ip_address("10.0.0.1"), "10.0.0.1"),
        ([1, (2, b"\x01")], [1, [2, "\\x01"]]),
        ({"b": decimal.Decimal("1.0"), 3: None}, {"b": "1.0", "3": None}),
    ],
)
def test_driver_values_become_their_documented_json_values(value: object, expected: object) -> None:
    assert json_value(value) == expected


COLUMNS = (ResultColumn(name="a", type="INTEGER"), ResultColumn(name="b", type="TEXT"))


def test_the_hash_covers_columns_types_and_rows() -> None:
    rows = ((1, "x"), (2, None))
    base = result_hash(COLUMNS, rows)
    assert base == result_hash(COLUMNS, [list(r) for r in rows])
    assert base != result_hash(COLUMNS, rows[:1])
    assert base != result_hash((COLUMNS[0], ResultColumn(name="b", type="VARCHAR")), rows)
    assert base != result_hash((ResultColumn(name="z", type="INTEGER"), COLUMNS[1]), rows)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.decimals(places=2, allow_nan=False, allow_infinity=False),
    st.dates(),
)


@given(st.lists(st.tuples(scalars, scalars), max_size=6))
def test_what_is_printed_is_what_is_hashed(raw: list[tuple[object, object]]) -> None:
    """Canonical rows survive a JSON round trip unchanged, so a reader who re-hashes the printed
    rows (or result_sample.json) gets the recorded hash."""
    rows = [canonical_row(r) for r in raw]
    printed = msgspec.json.decode(msgspec.json.encode(rows))
    assert result_hash(COLUMNS, printed) == result_hash(COLUMNS, rows)
