"""Introspection snapshots: what a Catalog Sync Run observed, stored content-addressed.

The bytes are the deterministic msgspec JSON of :class:`~kernel.database.types.Introspection`
(sorted keys), so the same observed structure is the same object (a resync that observes nothing
new stores nothing new) and ``catalog_sync_completed`` names it by its SHA-256.
"""

from __future__ import annotations

import msgspec

from kernel.database.types import Introspection
from kernel.errors import IntegrityError

__all__ = ["decode_introspection", "encode_introspection"]

_ENC = msgspec.json.Encoder(order="deterministic")
_DEC = msgspec.json.Decoder(Introspection)


def encode_introspection(snapshot: Introspection) -> bytes:
    return _ENC.encode(snapshot)


def decode_introspection(data: bytes, sha256: str) -> Introspection:
    try:
        return _DEC.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise IntegrityError(
            f"catalog snapshot {sha256[:12]}… is not an introspection ({err}); "
            "run `tht catalog verify`"
        ) from err
