"""The compiled runtime catalog: one text file the hook opens in well under a millisecond.

Layout (UTF-8, one record per line, built by :mod:`modules.routing.catalog_build`)::

    {header JSON}                       kind, schemaVersion, fingerprint, counts, offsets
    {target JSON}                       one line per skill / MCP server / agent, in index order
    ...
    <key>\\t[[target, weight, kind, label, extra?], ...]      inverted index, sorted by key
    ...

Index keys are normalized n-grams (``modules.routing.text``), ``ext:<extension>`` and
``@<id>`` (explicit mention of an id). The hook reads the file into memory (copy-on-read: opened
by fd with ``O_NONBLOCK``, refused unless ``fstat`` says it is a regular file, bounded by
:data:`MAX_PACK_BYTES` — never memory-mapped, so a catalog truncated or rewritten in place while
in use cannot raise SIGBUS, and a FIFO cannot block it), validates the header and every offset,
then finds each key of the prompt by binary search over the sorted lines. Targets are parsed only
when a key points at them.

Standard library only (hot path).
"""

from __future__ import annotations

import json

from kernel.files import FileRefused, read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

__all__ = [
    "CATALOG_KIND",
    "MAX_PACK_BYTES",
    "SCHEMA_VERSION",
    "SIGNALS_VERSION",
    "CatalogError",
    "CatalogPack",
    "encode_pack",
    "open_pack",
]

CATALOG_KIND = "tht-routing-catalog"
SCHEMA_VERSION = 1
# The version of the analyzer and signal derivation the index keys were built with: a catalog
# built by another version would meet the prompt on different keys (lexicon concepts, typo keys)
# and route badly without saying so, so it is refused with a message to rebuild it.
# 2: bilingual lexicon concepts, typo keys, role keys, meta words out of catalog n-grams.
SIGNALS_VERSION = 2
# A compiled catalog is a few hundred KiB; anything past this bound is not read.
MAX_PACK_BYTES = 64 * 1024 * 1024


class CatalogError(Exception):
    """The file is not a readable compiled catalog (the message names what is wrong)."""


def _canonical(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def encode_pack(
    header: Mapping[str, Any],
    targets: Sequence[Mapping[str, Any]],
    index: Mapping[str, Sequence[Sequence[Any]]],
) -> bytes:
    """The bytes of a compiled catalog. Deterministic: same inputs, same bytes, same fingerprint."""
    body = bytearray()
    offsets: list[int] = []
    for target in targets:
        offsets.append(len(body))
        body += _canonical(target) + b"\n"
    index_start = len(body)
    for key in sorted(index, key=lambda k: k.encode()):
        if "\t" in key or "\n" in key or not key:
            raise ValueError(f"invalid index key {key!r}")
        body += key.encode() + b"\t" + _canonical(index[key]) + b"\n"
    head: dict[str, Any] = dict(header)
    head.update(
        kind=CATALOG_KIND,
        schemaVersion=SCHEMA_VERSION,
        targetOffsets=offsets,
        indexStart=index_start,
        indexEnd=len(body),
        indexKeys=len(index),
    )
    head.pop("fingerprint", None)
    import hashlib

    digest = hashlib.sha256(_canonical(head) + b"\n" + bytes(body)).hexdigest()
    head["fingerprint"] = f"sha256:{digest}"
    return _canonical(head) + b"\n" + bytes(body)


class CatalogPack:
    """Read access to a compiled catalog (an in-memory copy; keys found by binary search)."""

    __slots__ = ("_base", "_buf", "_end", "_start", "_targets", "header", "path")

    def __init__(self, path: str, buf: Any, header: dict[str, Any], base: int) -> None:
        self.path = path
        self._buf = buf
        self.header = header
        self._base = base
        self._start = base + int(header["indexStart"])
        self._end = base + int(header["indexEnd"])
        self._targets: dict[int, dict[str, Any]] = {}

    @property
    def fingerprint(self) -> str:
        return str(self.header.get("fingerprint", ""))

    @property
    def target_count(self) -> int:
        return len(self.header["targetOffsets"])

    def target(self, index: int) -> dict[str, Any]:
        """The record of target ``index`` (parsed on first use)."""
        found = self._targets.get(index)
        if found is None:
            offsets = self.header["targetOffsets"]
            if not 0 <= index < len(offsets):
                raise CatalogError(f"{self.path}: target {index} out of range")
            start = self._base + int(offsets[index])
            end = self._buf.find(b"\n", start)
            found = json.loads(self._buf[start:end])
            self._targets[index] = found
        return found

    def targets(self) -> list[dict[str, Any]]:
        """Every target record (for commands and tests; the hook never needs all of them)."""
        return [self.target(i) for i in range(self.target_count)]

    def lookup(self, key: str) -> list[list[Any]]:
        """The postings of ``key``, or an empty list."""
        raw = self._find(key.encode())
        if raw is None:
            return []
        postings: list[list[Any]] = json.loads(raw)
        return postings

    def lookup_many(self, keys: Iterable[str]) -> dict[str, list[list[Any]]]:
        out: dict[str, list[list[Any]]] = {}
        for key in keys:
            if key not in out:
                found = self.lookup(key)
                if found:
                    out[key] = found
        return out

    def keys(self) -> list[str]:
        """Every index key in order (for commands and tests)."""
        out: list[str] = []
        pos = self._start
        while pos < self._end:
            end = self._buf.find(b"\n", pos, self._end)
            line = self._buf[pos:end]
            out.append(line[: line.find(b"\t")].decode())
            pos = end + 1
        return out

    def _find(self, key: bytes) -> bytes | None:
        buf = self._buf
        lo, hi = self._start, self._end
        while lo < hi:
            mid = (lo + hi) // 2
            start = buf.rfind(b"\n", lo, mid) + 1
            if start <= 0 or start < lo:
                start = lo
            end = buf.find(b"\n", start, hi)
            if end < 0:
                end = hi
            tab = buf.find(b"\t", start, end)
            if tab < 0:
                raise CatalogError(f"{self.path}: corrupt index line at byte {start}")
            found = buf[start:tab]
            if found == key:
                return bytes(buf[tab + 1 : end])
            if found < key:
                lo = end + 1
            else:
                hi = start
        return None


def _read_catalog(name: str) -> bytes:
    """The whole file, copied into memory (kernel.files): opened by fd without blocking (a FIFO
    or a device never hangs the hook), regular files only, at most :data:`MAX_PACK_BYTES`."""
    try:
        return read_regular(name, limit=MAX_PACK_BYTES)
    except FileRefused as refused:
        message = {
            "missing": "cannot read: no such file",
            "symlink": "cannot read: a symbolic link",
            "not_regular": "not a regular file (FIFO, device or folder)",
            "too_large": f"larger than {MAX_PACK_BYTES // (1024 * 1024)} MiB",
            "unreadable": f"cannot read: {refused.detail}",
        }[refused.reason]
        raise CatalogError(f"{name}: {message}") from refused


def _valid_offsets(header: dict[str, Any], size: int) -> bool:
    """Every offset of the header is an int inside the body and the index lies after them."""
    offsets = header.get("targetOffsets")
    start, end = header.get("indexStart"), header.get("indexEnd")
    if not isinstance(offsets, list) or not all(type(v) is int for v in (start, end, *offsets)):
        return False
    assert isinstance(start, int) and isinstance(end, int)
    if not 0 <= start <= end <= size:
        return False
    return all(0 <= o < start for o in offsets) if offsets else True


def open_pack(path: str | Path) -> CatalogPack:
    """Open a compiled catalog; :class:`CatalogError` names the file and the problem.

    The file is read once into memory (see the module docstring): later changes to it — a
    rewrite in place, a truncation — cannot affect, or crash, a pack already opened.
    """
    name = str(path)
    buf = _read_catalog(name)
    if not buf:
        raise CatalogError(f"{name}: empty file, not a compiled routing catalog")
    newline = buf.find(b"\n")
    if newline < 0:
        raise CatalogError(f"{name}: not a compiled routing catalog (no header line)")
    try:
        header = json.loads(buf[:newline])
    except ValueError as err:
        raise CatalogError(f"{name}: header is not JSON ({err})") from err
    except RecursionError as err:
        raise CatalogError(f"{name}: header nests too deeply") from err
    if not isinstance(header, dict) or header.get("kind") != CATALOG_KIND:
        raise CatalogError(f"{name}: not a compiled routing catalog (header.kind)")
    if header.get("schemaVersion") != SCHEMA_VERSION:
        raise CatalogError(
            f"{name}: header.schemaVersion {header.get('schemaVersion')!r} is not supported "
            f"(expected {SCHEMA_VERSION}); rebuild it with `tht route catalog build`"
        )
    if header.get("signalsVersion") != SIGNALS_VERSION:
        raise CatalogError(
            f"{name}: built with routing signals version {header.get('signalsVersion')!r}, "
            f"this tht uses {SIGNALS_VERSION}; rebuild it with `tht route catalog build`"
        )
    base = newline + 1
    if not _valid_offsets(header, len(buf) - base):
        raise CatalogError(f"{name}: header offsets do not match the file (truncated?)")
    return CatalogPack(name, buf, header, base)


def verify_pack(pack: CatalogPack) -> bool:
    """Whether the fingerprint matches the content (commands use it; the hook does not)."""
    head = {k: v for k, v in pack.header.items() if k != "fingerprint"}
    body = bytes(pack._buf[pack._base :])
    import hashlib

    digest = hashlib.sha256(_canonical(head) + b"\n" + body).hexdigest()
    return pack.fingerprint == f"sha256:{digest}"
