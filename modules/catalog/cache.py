"""The fold cache of the catalog ledger: the folded state after ``(last_seq, head)``.

Keyed by logical identity (ARCHITECTURE §3.5), never by a byte offset alone: ``hint`` is the
store's opaque position of line ``last_seq``, used only once that line hashes to ``head``. It is
an optimisation: a cache that does not decode, is of another format, or no longer matches the
ledger is ignored (and ``tht catalog verify`` compares it with a fresh fold).
"""

from __future__ import annotations

import msgspec

from modules.catalog.records import CatalogState

__all__ = ["CACHE_FORMAT", "CatalogCache", "decode_cache", "encode_cache"]

#: bump when the fold's rules change: an old cache then folds afresh
CACHE_FORMAT = 6  # 2: Sensitive Data Flags and Suggestion Runs; 3: flag decisions kept;
# 4: description and relationship decisions kept; 5: a relationship decision's origin;
# 6: Manual Relationships put back whatever their endpoints' case (``put_back``)


class CatalogCache(msgspec.Struct, frozen=True, kw_only=True):
    format: int = CACHE_FORMAT
    hint: int
    last_seq: int
    head: str
    state: CatalogState


_ENC = msgspec.msgpack.Encoder()
_DEC = msgspec.msgpack.Decoder(CatalogCache)


def encode_cache(cache: CatalogCache) -> bytes | None:
    try:
        return _ENC.encode(cache)
    except OverflowError:  # an integer beyond msgpack's range: no cache, full folds
        return None


def decode_cache(data: bytes | None) -> CatalogCache | None:
    if data is None:
        return None
    try:
        cache = _DEC.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return cache if cache.format == CACHE_FORMAT else None
