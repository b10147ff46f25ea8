"""Values to and from PostgreSQL for the store's driver (:mod:`kernel.store.postgres_libpq`):
placeholders, parameters and binary results. Pure functions, no I/O.

- **Placeholders**: the store's SQL is written with ``%(name)s`` (or ``%s``) placeholders and
  ``%%`` for a literal ``%``; :func:`bind` turns them into ``$1, $2, …`` (once per statement
  text: the translation is cached) and orders the values.
- **Parameters** (:func:`encode`): ``str`` as text (type left to the server, as psycopg does),
  ``int`` as ``int8``, ``bool``, ``float``, ``bytes`` as binary ``bytea``, a list as a binary
  one-dimensional array (``int8[]``, ``text[]`` or ``bytea[]`` by its elements), None as NULL.
  A ``str`` holding NUL (or a lone surrogate) cannot be a text parameter: :class:`ValueError`.
- **Results** arrive in binary; :data:`DECODERS` reads them by type oid (ints, bool, float,
  bytea, the text types, json/jsonb as Python values, void). Another type is a
  :class:`LookupError` (the store never selects one).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

__all__ = ["DECODERS", "Param", "bind", "decoder", "encode"]

#: (type oid, format 0 text / 1 binary, the bytes or None for NULL)
Param = tuple[int, int, bytes | None]

_INT8, _BOOL, _BYTEA, _TEXT, _FLOAT8 = 20, 16, 17, 25, 701
_ARRAY_OF = {_INT8: 1016, _TEXT: 1009, _BYTEA: 1001}
_PLACEHOLDER = re.compile(r"%\((?P<name>[A-Za-z_][A-Za-z0-9_]*)\)s|%s|%%")
_BOUND: dict[str, tuple[str, tuple[str, ...] | int]] = {}
_INT4, _INT2, _UINT4 = struct.Struct("!i"), struct.Struct("!h"), struct.Struct("!I")
_Q, _D, _F = struct.Struct("!q"), struct.Struct("!d"), struct.Struct("!f")
_HEADER = struct.Struct("!iiiii")  # ndim, has nulls, element oid, length, lower bound


def _translate(sql: str) -> tuple[str, tuple[str, ...] | int]:
    names: list[str] = []
    positional = 0
    kinds: set[str] = set()

    def number(found: re.Match[str]) -> str:
        nonlocal positional
        text = found.group(0)
        if text == "%%":
            return "%"
        if found.group("name") is None:
            kinds.add("positional")
            positional += 1
            return f"${positional}"
        kinds.add("named")
        name = found.group("name")
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    translated = _PLACEHOLDER.sub(number, sql)
    if len(kinds) > 1:
        raise ValueError("a statement mixes %(name)s and %s placeholders")
    return translated, tuple(names) if "named" in kinds else positional


def bind(
    sql: str, params: Mapping[str, object] | Sequence[object] | None
) -> tuple[str, list[object]]:
    """The statement with ``$n`` placeholders and its values in order."""
    found = _BOUND.get(sql)
    if found is None:
        found = _BOUND[sql] = _translate(sql)
    text, wanted = found
    if isinstance(wanted, tuple):
        if not isinstance(params, Mapping):
            raise ValueError("named placeholders need a mapping of parameters")
        return text, [params[name] for name in wanted]
    given = [] if params is None else list(params) if not isinstance(params, Mapping) else None
    if given is None or len(given) != wanted:
        raise ValueError(f"the statement takes {wanted} positional parameter(s)")
    return text, given


def encode(value: object) -> Param:
    """One parameter as libpq takes it."""
    if type(value) is str:  # the usual three first, by exact type (a bool is no int here)
        if "\x00" not in value:
            try:
                return 0, 0, value.encode()
            except UnicodeEncodeError:
                pass
        return 0, 0, _text(value)  # (its error)
    if type(value) is bytes:
        return _BYTEA, 1, value
    if type(value) is int:
        return _INT8, 0, str(value).encode()
    if value is None:
        return 0, 0, None
    if isinstance(value, str):
        return 0, 0, _text(value)
    if isinstance(value, bool):
        return _BOOL, 0, b"t" if value else b"f"
    if isinstance(value, int):
        return _INT8, 0, str(value).encode()
    if isinstance(value, float):
        return _FLOAT8, 0, repr(value).encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return _BYTEA, 1, bytes(value)
    if isinstance(value, list | tuple):
        return _array(list(value))
    raise TypeError(f"the store cannot send a {type(value).__name__} to PostgreSQL")


def _text(value: str) -> bytes:
    if "\x00" in value:
        raise ValueError("PostgreSQL text cannot contain NUL (0x00) characters")
    try:
        return value.encode()
    except UnicodeEncodeError:
        raise ValueError("text with a lone surrogate is not UTF-8") from None


def _array(items: list[object]) -> Param:
    kinds = {type(item) for item in items if item is not None}
    if kinds <= {int}:
        oid = _INT8 if kinds else _TEXT
    elif kinds <= {str}:
        oid = _TEXT
    elif kinds <= {bytes}:
        oid = _BYTEA
    else:
        raise TypeError("an array parameter holds ints, strs or bytes, one kind only")
    if not items:
        return _ARRAY_OF[oid], 1, struct.pack("!iii", 0, 0, oid)
    parts = [_HEADER.pack(1, int(None in items), oid, len(items), 1)]
    for item in items:
        if item is None:
            parts.append(_INT4.pack(-1))
            continue
        if isinstance(item, int):
            data = _Q.pack(item)
        elif isinstance(item, str):
            data = _text(item)
        else:
            assert isinstance(item, bytes)
            data = item
        parts += [_INT4.pack(len(data)), data]
    return _ARRAY_OF[oid], 1, b"".join(parts)


def _utf8(data: bytes) -> str:
    return data.decode()


def _jsonb(data: bytes) -> Any:
    if data[:1] != b"\x01":
        raise LookupError(f"jsonb in binary format version {data[:1]!r}")
    return msgspec.json.decode(data[1:])


DECODERS: dict[int, Callable[[bytes], Any]] = {
    16: lambda data: data != b"\x00",  # bool
    17: bytes,  # bytea
    18: _utf8,  # "char"
    19: _utf8,  # name
    20: lambda data: _Q.unpack(data)[0],  # int8
    21: lambda data: _INT2.unpack(data)[0],  # int2
    23: lambda data: _INT4.unpack(data)[0],  # int4
    25: _utf8,  # text
    26: lambda data: _UINT4.unpack(data)[0],  # oid
    114: msgspec.json.decode,  # json
    700: lambda data: _F.unpack(data)[0],  # float4
    701: lambda data: _D.unpack(data)[0],  # float8
    705: _utf8,  # unknown (a literal)
    1042: _utf8,  # bpchar
    1043: _utf8,  # varchar
    2278: lambda data: None,  # void (pg_notify, set_config's callers)
    3802: _jsonb,  # jsonb
}


def decoder(oid: int) -> Callable[[bytes], Any]:
    """How to read a binary value of type ``oid``; LookupError for one the store never reads."""
    found = DECODERS.get(oid)
    if found is None:
        raise LookupError(f"the store does not read PostgreSQL values of type oid {oid}")
    return found
