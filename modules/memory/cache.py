"""The fold cache of the Memory registry: the folded state after ``(last_seq, head)``.

Keyed by logical identity (ARCHITECTURE §3.5), never by a byte offset alone: ``hint`` is the
store's opaque position of line ``last_seq``, used only once that line hashes to ``head``. It is
an optimisation for what reads *show*: a cache that does not decode, is of another format, or no
longer matches the registry is ignored, ``tht memory verify`` compares it with a fresh fold, and
no write ever decides on it (:meth:`~modules.memory.registry.MemoryRegistry.load_for_write`).
"""

from __future__ import annotations

import msgspec

from modules.memory.records import MemoryState

__all__ = ["CACHE_FORMAT", "MemoryCache", "decode_cache", "encode_cache"]

#: bump when the fold's rules change: an old cache then folds afresh
CACHE_FORMAT = 1


class MemoryCache(msgspec.Struct, frozen=True, kw_only=True):
    format: int = CACHE_FORMAT
    hint: int
    last_seq: int
    head: str
    state: MemoryState


_ENC = msgspec.msgpack.Encoder()
_DEC = msgspec.msgpack.Decoder(MemoryCache)


def encode_cache(cache: MemoryCache) -> bytes | None:
    try:
        return _ENC.encode(cache)
    except OverflowError:  # an integer beyond msgpack's range: no cache, full folds
        return None


def decode_cache(data: bytes | None) -> MemoryCache | None:
    if data is None:
        return None
    try:
        cache = _DEC.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return cache if cache.format == CACHE_FORMAT else None
