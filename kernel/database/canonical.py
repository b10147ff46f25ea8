"""The canonical form of a query result, and its hash (``QueryResult.sha256``).

Values coming from a driver are converted to JSON values, explicitly, once: the rows a
:class:`~kernel.database.types.QueryResult` holds are these converted values, so what is
printed, what ``result_sample.json`` records and what is hashed are the same thing.

=========================  ==========================================================
driver value               JSON value
=========================  ==========================================================
None, bool, int, str       itself
float                      itself when finite; ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
Decimal                    its exact text (``str``), e.g. ``"12.50"``; non-finite as floats
date, datetime, time       ISO 8601 text (``isoformat()``; an aware datetime keeps its offset)
timedelta                  total seconds as text, e.g. ``"90.5"``
bytes, bytearray, memoryview  ``"\\x"`` + lowercase hex (PostgreSQL's ``bytea`` output)
UUID, IP addresses, other  ``str(value)``
list, tuple                a list of converted values (PostgreSQL arrays)
dict                       a mapping with string keys of converted values (json/jsonb)
=========================  ==========================================================

The hash is SHA-256 of ``{"columns": [{"name", "type"}…], "rows": [[…]…]}`` encoded as
msgspec JSON with ``order="deterministic"`` (sorted object keys, no whitespace), hex-encoded.
Equal columns and rows give equal hashes on every machine.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from kernel.database.types import ResultColumn

__all__ = ["canonical_row", "json_value", "result_hash"]

_ENCODER = msgspec.json.Encoder(order="deterministic")


def json_value(value: Any) -> Any:
    """One driver value as its JSON value (see the module's table)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _non_finite(value)
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else _non_finite(float(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _seconds(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


def _seconds(value: dt.timedelta) -> str:
    whole = decimal.Decimal(value.days * 86_400 + value.seconds)
    exact = whole + decimal.Decimal(value.microseconds).scaleb(-6)
    return format(exact.normalize(), "f")


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def canonical_row(row: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(json_value(v) for v in row)


def result_hash(columns: Sequence[ResultColumn], rows: Sequence[Sequence[Any]]) -> str:
    """SHA-256 (hex) of the canonical JSON of the columns and the (converted) rows."""
    body = {
        "columns": [{"name": c.name, "type": c.type} for c in columns],
        "rows": [list(r) for r in rows],
    }
    return hashlib.sha256(_ENCODER.encode(body)).hexdigest()
