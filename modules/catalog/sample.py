"""The Catalog Sample under the Sensitive Data Policy (glossary). Pure.

A Catalog Sample is at most :data:`MAX_ROWS` rows of one Catalog Table and a few example values
per column, **transient**: built for one command's output, never persisted, never logged. It is
built under the **Sensitive Data Policy**:

- a column whose Sensitive Data Flag is false shows its real values (each cut at
  :data:`MAX_TEXT` characters);
- a flagged column shows **synthetic** values, never the real ones: type- and shape-preserving
  (:func:`synthetic_value`) and deterministic per (table, column, row) through a keyed hash
  (HMAC-SHA-256) of those names and the row's position — the real value is never an input,
  so a synthetic value says nothing of it beyond its shape.

The shape: a digit stays a digit, a letter a letter (of the same case), every other character
stays as it is and the length is kept — ``mario.rossi@example.it`` → ``kqzvt.pwlmd@xjfbtyz.qp``
(the ``@`` and the domain's shape kept); an ISO date stays a valid ISO date (``1980-05-17`` →
``1937-11-04``); an integer keeps its sign and number of digits, a float its digits' layout.
A synthetic value that would equal the real one is drawn again, so it never does — except
where no other value has the shape: ``NULL`` and the empty string stay as they are (they carry
no value), and a boolean is the keyed hash's bit (independent of the value: forcing it to
differ would reveal the value).

The rows are read by the composition root through ``kernel.database.run_read_only`` (read-only,
row limit :data:`MAX_ROWS`) with :func:`sample_sql`; the flags come from the verified catalog
ledger (a decision: never the fold cache).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from modules.catalog.records import CatalogState, CatalogTable

__all__ = [
    "MAX_EXAMPLES",
    "MAX_ROWS",
    "MAX_TEXT",
    "CatalogSample",
    "SampleColumn",
    "build_sample",
    "sample_key",
    "sample_sql",
    "synthetic_value",
]

MAX_ROWS = 5
#: characters of one value shown (a longer one is cut, with "…")
MAX_TEXT = 80
#: distinct example values per column
MAX_EXAMPLES = 5
_ATTEMPTS = 16
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?=$|[T ])")
_ISO_TIME = re.compile(r"^([T ])(\d{2}):(\d{2})(?::(\d{2}))?")


class SampleColumn(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    sensitive: bool
    examples: tuple[Any, ...] = ()


class CatalogSample(msgspec.Struct, frozen=True, kw_only=True):
    table: str
    columns: tuple[SampleColumn, ...]
    rows: tuple[tuple[Any, ...], ...]
    #: the table has more rows than the sample shows
    truncated: bool

    @property
    def synthetic(self) -> tuple[str, ...]:
        """The columns whose values are synthetic (their Sensitive Data Flag is true)."""
        return tuple(c.name for c in self.columns if c.sensitive)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "columns": [
                {
                    "name": c.name,
                    "type": c.type,
                    "sensitive": c.sensitive,
                    "values": "synthetic" if c.sensitive else "real",
                    "examples": list(c.examples),
                }
                for c in self.columns
            ],
            "rows": [list(r) for r in self.rows],
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "synthetic": list(self.synthetic),
        }


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sample_sql(table: CatalogTable, limit: int = MAX_ROWS) -> str:
    """The query that reads a sample: the catalog's columns, in order, at most ``limit`` rows.
    Double-quoted identifiers, which SQLite and PostgreSQL both read (the binding's schema is
    the connection's search path)."""
    columns = ", ".join(_quote(c.name) for c in table.columns) or "*"
    return f"SELECT {columns} FROM {_quote(table.name)} LIMIT {int(limit)}"


def sample_key(state: CatalogState) -> bytes:
    """The keyed hash's key: stable for a workspace's catalog (its first Catalog Sync Run's id,
    random per workspace), so a sample repeats between commands."""
    first = min(state.runs) if state.runs else ""
    return hashlib.sha256(b"tht catalog sample\0" + first.encode()).digest()


# --------------------------------------------------------------------------- synthetic values


def _stream(key: bytes, parts: Sequence[str]) -> Iterator[int]:
    """Pseudo-random bytes from the keyed hash of ``parts`` (never of a value)."""
    message = "\0".join(parts).encode("utf-8", errors="surrogatepass")
    counter = 0
    while True:
        yield from hmac.new(key, message + b"\0" + str(counter).encode(), hashlib.sha256).digest()
        counter += 1


def _digit(rnd: Iterator[int], low: int = 0, high: int = 9) -> str:
    return str(low + next(rnd) % (high - low + 1))


def _letter(rnd: Iterator[int], upper: bool) -> str:
    ch = chr(ord("a") + next(rnd) % 26)
    return ch.upper() if upper else ch


def _shape(text: str, rnd: Iterator[int], *, letters: bool = True) -> str:
    out = []
    for ch in text:
        if ch.isalnum() and not ch.isalpha():  # a digit, or another numeral ("¼", "Ⅻ")
            out.append(_digit(rnd))
        elif letters and ch.isalpha():
            out.append(_letter(rnd, ch.isupper()))
        else:
            out.append(ch)
    return "".join(out)


def _two(n: int) -> str:
    return f"{n:02d}"


def _text(text: str, rnd: Iterator[int]) -> str:
    date = _ISO_DATE.match(text)
    if date is None:
        return _shape(text, rnd)
    year = 1900 + next(rnd) % 110
    day = f"{year:04d}-{_two(1 + next(rnd) % 12)}-{_two(1 + next(rnd) % 28)}"
    rest = text[date.end() :]
    time = _ISO_TIME.match(rest)
    if time is not None:
        clock = f"{time.group(1)}{_two(next(rnd) % 24)}:{_two(next(rnd) % 60)}"
        if time.group(4) is not None:
            clock += f":{_two(next(rnd) % 60)}"
        day += clock
        rest = rest[time.end() :]
    return day + _shape(rest, rnd)


def _int(value: int, rnd: Iterator[int]) -> int:
    digits = len(str(abs(value)))
    if digits == 1:
        drawn = _digit(rnd)
    else:  # no leading zero; a 19-digit value stays within 64 bits
        drawn = _digit(rnd, 1, 8 if digits >= 19 else 9)
        drawn += "".join(_digit(rnd) for _ in range(digits - 1))
    return -int(drawn) if value < 0 else int(drawn)


def _float(value: float, rnd: Iterator[int]) -> float:
    drawn = float(_shape(repr(value), rnd, letters=False))
    return drawn if math.isfinite(drawn) else 0.0


def _draw(value: Any, rnd: Iterator[int]) -> Any:
    if isinstance(value, bool):
        return bool(next(rnd) & 1)
    if isinstance(value, int):
        return _int(value, rnd)
    if isinstance(value, float):
        return _float(value, rnd)
    return _text(value if isinstance(value, str) else str(value), rnd)


def synthetic_value(value: Any, *, key: bytes, table: str, column: str, row: int) -> Any:
    """The synthetic stand-in of one value of a sensitive column (see the module's docstring);
    ``key`` and ``(table, column, row)`` decide it, never ``value`` beyond its shape."""
    return _synthetic(value, key, (table, column, str(row)))


def _synthetic(value: Any, key: bytes, parts: tuple[str, ...]) -> Any:
    if value is None or value == "":
        return value
    if isinstance(value, list | tuple):
        return [_synthetic(v, key, (*parts, f"[{i}]")) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _synthetic(v, key, (*parts, f".{k}")) for k, v in value.items()}
    for attempt in range(_ATTEMPTS):
        drawn = _draw(value, _stream(key, (*parts, str(attempt))))
        if isinstance(value, bool) or drawn != value:
            return drawn
    # only a value with nothing to vary gets here (``"-"``, ``"..."``): letters instead
    text = str(value)
    rnd = _stream(key, (*parts, "letters"))
    letters = "".join(_letter(rnd, False) for _ in text) or "x"
    return letters if letters != text else letters[::-1] + "x"


# --------------------------------------------------------------------------- the sample


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + "…"
    if isinstance(value, list):
        return [_bounded(v) for v in value[:MAX_EXAMPLES]]
    if isinstance(value, dict):
        return {k: _bounded(v) for k, v in list(value.items())[:MAX_EXAMPLES]}
    return value


def _examples(values: Sequence[Any]) -> tuple[Any, ...]:
    found: list[Any] = []
    seen: set[str] = set()
    for value in values:
        if value is None:
            continue
        marker = msgspec.json.encode(value).decode()
        if marker in seen:
            continue
        seen.add(marker)
        found.append(value)
        if len(found) == MAX_EXAMPLES:
            break
    return tuple(found)


def build_sample(
    table: CatalogTable,
    rows: Sequence[Sequence[Any]],
    *,
    key: bytes,
    truncated: bool = False,
) -> CatalogSample:
    """The sample of ``table`` from the rows :func:`sample_sql` read (its columns, in order):
    at most :data:`MAX_ROWS`, real values where the flag is false, synthetic where it is true."""
    shown: list[tuple[Any, ...]] = []
    for index, row in enumerate(rows[:MAX_ROWS]):
        cells = []
        for column, value in zip(table.columns, row, strict=True):
            if column.sensitive:
                value = synthetic_value(
                    value, key=key, table=table.name, column=column.name, row=index
                )
            cells.append(_bounded(value))
        shown.append(tuple(cells))
    columns = tuple(
        SampleColumn(
            name=c.name,
            type=c.type,
            sensitive=c.sensitive,
            examples=_examples([r[i] for r in shown]),
        )
        for i, c in enumerate(table.columns)
    )
    return CatalogSample(
        table=table.name,
        columns=columns,
        rows=tuple(shown),
        truncated=truncated or len(rows) > MAX_ROWS,
    )
