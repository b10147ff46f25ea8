"""Keyed ids (spec 000 §22.7): every id in the analytics store is an HMAC under a local key.

Ids derive from what they identify (a log line, a file path, a session id), so importing the same
thing twice yields the same id and ``INSERT OR IGNORE`` makes the import idempotent. Keying the hash
means an id never reveals the path or content it was derived from: without the key, a copied
database cannot be matched against guessed paths or lines.

The key lives beside the database (``analytics.sqlite`` → ``analytics.key``), created on first use
with permissions 0600; it is never written into the database.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from kernel.errors import UsageError

__all__ = ["KeyedIds", "key_file_for", "load_or_create_key"]

_KEY_BYTES = 32


class KeyedIds:
    """Derives 128-bit hex ids: ``HMAC-SHA256(key, text)`` truncated to 32 hex characters."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("an HMAC key needs at least 16 bytes")
        self._key = key

    def derive(self, data: str | bytes) -> str:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        return hmac.digest(self._key, raw, "sha256").hex()[:32]


def key_file_for(db_path: Path) -> Path:
    """The key file beside a database: same folder, same stem, ``.key``."""
    return db_path.with_name(db_path.stem + ".key")


def load_or_create_key(path: Path) -> bytes:
    """Read the hex key at ``path``, creating it (0600, atomically) if it does not exist.

    Creation writes a temporary file and hard-links it into place, so two processes starting at
    once agree on a single key and neither ever reads a half-written one.
    """
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, secrets.token_bytes(_KEY_BYTES).hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process won the race: use its key
    finally:
        tmp.unlink(missing_ok=True)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    text = path.read_text(encoding="ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise UsageError(
            f"{path}: not an analytics key (expected at least 32 hex characters); "
            "restore it or move the database and key away to start afresh"
        )
    return key
