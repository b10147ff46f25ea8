"""The store driver's values to and from PostgreSQL (kernel/store/postgres_codec.py), without a
server: placeholders, parameters, binary arrays, binary results. The same values through a
real server are tests/kernel/store/test_postgres_driver.py's."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.store.postgres_codec import bind, decoder, encode


def test_named_placeholders_become_numbered_once_per_name_in_order() -> None:
    sql, values = bind(
        "SELECT %(b)s, %(a)s, %(b)s, '100%%'", {"a": 1, "b": "x", "unused": object()}
    )
    assert sql == "SELECT $1, $2, $1, '100%'"
    assert values == ["x", 1]  # each name once, the unused one never sent


def test_positional_placeholders_count_and_are_checked() -> None:
    assert bind("SELECT %s, %s", ("a", 2)) == ("SELECT $1, $2", ["a", 2])
    assert bind("SELECT 1", None) == ("SELECT 1", [])
    for wrong in ((), ("a",), ("a", 2, 3)):
        with pytest.raises(ValueError, match="2 positional"):
            bind("SELECT %s, %s", wrong)


def test_named_placeholders_need_every_name_and_a_mapping() -> None:
    with pytest.raises(KeyError):
        bind("SELECT %(a)s, %(b)s", {"a": 1})
    with pytest.raises(ValueError, match="mapping"):
        bind("SELECT %(a)s", ("x",))
    with pytest.raises(ValueError, match="mixes"):
        bind("SELECT %(a)s, %s", {"a": 1})


@given(st.lists(st.sampled_from("abcde"), min_size=1, max_size=12))
def test_any_use_of_names_binds_each_value_to_its_own_number(names: list[str]) -> None:
    sql = ", ".join(f"%({n})s" for n in names)
    text, values = bind(sql, {n: f"v-{n}" for n in "abcde"})
    numbers = [int(part.strip()[1:]) for part in text.split(",")]
    assert [values[i - 1] for i in numbers] == [f"v-{n}" for n in names]
    assert sorted(set(numbers)) == list(range(1, len(set(names)) + 1))


def test_scalars_are_encoded_as_libpq_takes_them() -> None:
    assert encode(None) == (0, 0, None)
    assert encode("é") == (0, 0, "é".encode())  # text: the type left to the server
    assert encode(True) == (16, 0, b"t") and encode(False) == (16, 0, b"f")
    assert encode(-(2**63)) == (20, 0, str(-(2**63)).encode())
    assert encode(1.5) == (701, 0, b"1.5")
    assert encode(b"a\x00b") == (17, 1, b"a\x00b")  # binary: NUL survives
    assert encode(memoryview(b"xy")) == (17, 1, b"xy")


def test_text_with_nul_and_unknown_types_are_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        encode("a\x00b")
    with pytest.raises(ValueError, match="NUL"):
        encode(["ok", "a\x00b"])
    with pytest.raises(ValueError, match="surrogate"):
        encode("\ud800")
    with pytest.raises(TypeError):
        encode(object())
    with pytest.raises(TypeError, match="one kind"):
        encode([1, "x"])
    with pytest.raises(TypeError, match="one kind"):
        encode([True])


def _array(data: bytes) -> tuple[int, int, list[bytes | None]]:
    ndim, nulls, oid = struct.unpack("!iii", data[:12])
    if ndim == 0:
        return oid, nulls, []
    assert ndim == 1
    length, lower = struct.unpack("!ii", data[12:20])
    assert lower == 1
    items: list[bytes | None] = []
    at = 20
    for _ in range(length):
        (size,) = struct.unpack("!i", data[at : at + 4])
        at += 4
        items.append(None if size < 0 else data[at : at + size])
        at += max(size, 0)
    assert at == len(data)
    return oid, nulls, items


@given(st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=8))
def test_int_arrays_are_binary_int8_arrays(items: list[int | None]) -> None:
    oid, fmt, data = encode(items)
    assert fmt == 1 and data is not None
    element, nulls, raw = _array(data)
    assert oid == (1016 if any(i is not None for i in items) else 1009)
    assert nulls == int(None in items) or not items
    assert [None if r is None else struct.unpack("!q", r)[0] for r in raw] == items
    assert element in (20, 25)


_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))


@given(st.lists(st.none() | _TEXT, max_size=8))
def test_text_arrays_carry_utf8(items: list[str | None]) -> None:
    oid, _, data = encode(items)
    assert oid == 1009 and data is not None
    assert [None if r is None else r.decode() for r in _array(data)[2]] == items


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_bytea_arrays_carry_the_bytes(items: list[bytes]) -> None:
    oid, _, data = encode(items)
    assert oid == 1001 and data is not None and _array(data)[2] == items


def test_results_are_decoded_by_type() -> None:
    assert decoder(20)(struct.pack("!q", -5)) == -5
    assert decoder(23)(struct.pack("!i", 7)) == 7
    assert decoder(21)(struct.pack("!h", -2)) == -2
    assert decoder(16)(b"\x01") is True and decoder(16)(b"\x00") is False
    assert decoder(17)(b"\x00\xff") == b"\x00\xff"
    assert decoder(25)("ü".encode()) == "ü"
    assert decoder(701)(struct.pack("!d", 0.25)) == 0.25
    assert decoder(3802)(b'\x01{"a": [1]}') == {"a": [1]}
    assert decoder(114)(b'{"a": 1}') == {"a": 1}
    assert decoder(2278)(b"") is None  # void: pg_notify's result
    with pytest.raises(LookupError, match="jsonb"):
        decoder(3802)(b'\x02{"a": 1}')
    with pytest.raises(LookupError, match="oid 1184"):
        decoder(1184)  # timestamptz: the store never reads one
