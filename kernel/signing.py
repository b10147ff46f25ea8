"""Reviewer keys and signatures of human decisions (ARCHITECTURE §3.9, signed mode).

The agent tht constrains runs with the user's OS account, so it can write any file the user can.
What it cannot do is produce an Ed25519 signature without the reviewer's private key, and that key
only exists on disk *sealed*: encrypted under a key derived (scrypt) from a passphrase the reviewer
types at a terminal. This module is the pure part of that: key generation, signing, verification,
sealing and opening. It reads no files and no environment; its only impurity is the operating
system's randomness (new keys, salts, nonces).

Formats:

- signature: ``ed25519:<key id>:<base64 signature>`` — the key id makes a signature say which
  registry entry must verify it, so verification never tries keys one by one.
- key id: the first 32 hex digits of the SHA-256 of the raw 32-byte public key.
- sealed key: a small JSON document (see :func:`seal_key`); the reviewer id and key id are bound
  into the AEAD's associated data, so a sealed key cannot be relabelled as someone else's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import unicodedata
from typing import Any

from cryptography.exceptions import InvalidKey, InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from kernel.errors import PolicyError, UsageError
from kernel.events import Event, canonical_bytes

__all__ = [
    "SCRYPT_N",
    "SigningKey",
    "generate_signing_key",
    "key_id_of",
    "open_key",
    "proof_message",
    "seal_key",
    "sig_key_id",
    "verify_signature",
]

#: scrypt cost in normal use: 2**15 x r=8 is 32 MiB and tens of milliseconds per guess, which
#: makes guessing a passphrase from a stolen key file expensive. Tests pass ``work_factor=``.
SCRYPT_N = 2**15
_SCRYPT_R = 8
_SCRYPT_P = 1
# bounds accepted when opening a file: a hostile file must not make us allocate gigabytes
_MIN_N, _MAX_N = 2**4, 2**20
_MAX_SCRYPT_MEMORY = 256 * 2**20  # bytes scrypt may use (128 * n * r)
_FORMAT = "tht-reviewer-key"
_VERSION = 1
_CIPHER = "chacha20poly1305"
_PREFIX = "ed25519"
_KEY_ID = re.compile(r"^[0-9a-f]{32}$")
_SIG = re.compile(r"^ed25519:([0-9a-f]{32}):([A-Za-z0-9+/]{86}==)$")


class SigningKey:
    """An unlocked reviewer key, in memory only (never written unsealed, never printed)."""

    __slots__ = ("_private", "key_id", "public_key", "reviewer")

    def __init__(self, reviewer: str, private: Ed25519PrivateKey) -> None:
        self.reviewer = reviewer
        self._private = private
        raw = private.public_key().public_bytes_raw()
        self.public_key = base64.b64encode(raw).decode("ascii")
        self.key_id = _key_id_of_raw(raw)

    def __repr__(self) -> str:  # never the private key, even in a traceback
        return f"SigningKey(reviewer={self.reviewer!r}, key_id={self.key_id!r})"

    def sign(self, data: bytes) -> str:
        """``ed25519:<key id>:<base64 signature>`` of ``data``."""
        signature = base64.b64encode(self._private.sign(data)).decode("ascii")
        return f"{_PREFIX}:{self.key_id}:{signature}"

    def sign_event(self, event: Event) -> str:
        """The ``sig`` of a stamped event: a signature of its canonical bytes (the line
        without ``sig``, which includes ``prev`` and so the whole history before it)."""
        return self.sign(canonical_bytes(event))

    def _seed(self) -> bytes:
        return self._private.private_bytes_raw()


def generate_signing_key(reviewer: str) -> SigningKey:
    """A new key pair for ``reviewer`` (``human:<id>``) from the OS's randomness."""
    from kernel.transitions import check_human

    check_human(reviewer)
    return SigningKey(reviewer, Ed25519PrivateKey.generate())


def _key_id_of_raw(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:32]


def _public_raw(public_key_b64: str) -> bytes | None:
    """The raw 32 bytes of a base64 public key, or None when it is not one."""
    try:
        raw = base64.b64decode(public_key_b64.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None
    return raw if len(raw) == 32 else None


def key_id_of(public_key_b64: str) -> str:
    """The key id of a base64 raw Ed25519 public key (UsageError when it is not one)."""
    raw = _public_raw(public_key_b64)
    if raw is None:
        raise UsageError("not an Ed25519 public key (expected base64 of 32 raw bytes)")
    return _key_id_of_raw(raw)


def sig_key_id(sig: str) -> str | None:
    """The key id a signature names, or None when ``sig`` is not a well-formed signature."""
    match = _SIG.match(sig) if isinstance(sig, str) else None
    return match.group(1) if match else None


def verify_signature(public_key_b64: str, data: bytes, sig: str) -> bool:
    """Whether ``sig`` is a signature of ``data`` by that key; False (never an exception) for
    any malformed key or signature, or one that names another key id."""
    raw = _public_raw(public_key_b64) if isinstance(public_key_b64, str) else None
    match = _SIG.match(sig) if isinstance(sig, str) else None
    if raw is None or match is None or match.group(1) != _key_id_of_raw(raw):
        return False
    try:
        signature = base64.b64decode(match.group(2), validate=True)
        if base64.b64encode(signature).decode("ascii") != match.group(2):
            return False  # one signature, one spelling: no malleable base64 padding bits
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, data)
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True


def proof_message(reviewer: str, key_id: str) -> bytes:
    """What a new key signs to prove its holder has it (``reviewer_added.proof``)."""
    return f"tht-reviewer-key:{reviewer}:{key_id}".encode()


# --------------------------------------------------------------------------- sealing


def _associated_data(reviewer: str, key_id: str) -> bytes:
    return f"{_FORMAT}:v{_VERSION}:{reviewer}:{key_id}".encode()


def _derive(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # NFC: the same passphrase typed on two keyboards/terminals must derive the same key
    secret = unicodedata.normalize("NFC", passphrase).encode("utf-8")
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(secret)


def seal_key(key: SigningKey, passphrase: str, *, work_factor: int = SCRYPT_N) -> bytes:
    """The key encrypted under ``passphrase``: a JSON document (UTF-8, one line).

    ``work_factor`` is scrypt's ``n`` (a power of two); only tests lower it, to stay fast.
    """
    if not passphrase:
        raise UsageError("an empty passphrase cannot protect a reviewer key; choose one")
    if work_factor < _MIN_N or work_factor > _MAX_N or work_factor & (work_factor - 1):
        raise UsageError(
            f"scrypt work factor {work_factor}: expected a power of two in [16, 2**20]"
        )
    salt = os.urandom(16)
    nonce = os.urandom(12)
    wrapping = _derive(passphrase, salt, work_factor, _SCRYPT_R, _SCRYPT_P)
    ciphertext = ChaCha20Poly1305(wrapping).encrypt(
        nonce, key._seed(), _associated_data(key.reviewer, key.key_id)
    )
    document = {
        "format": _FORMAT,
        "version": _VERSION,
        "reviewer": key.reviewer,
        "key_id": key.key_id,
        "public_key": key.public_key,
        "kdf": {
            "name": "scrypt",
            "n": work_factor,
            "r": _SCRYPT_R,
            "p": _SCRYPT_P,
            "salt": _b64(salt),
        },
        "cipher": {"name": _CIPHER, "nonce": _b64(nonce)},
        "ciphertext": _b64(ciphertext),
    }
    return json.dumps(document, separators=(",", ":")).encode("utf-8") + b"\n"


def open_key(blob: bytes, passphrase: str) -> SigningKey:
    """Unseal a key file's bytes.

    Raises :class:`~kernel.errors.PolicyError` (exit 5) for a wrong passphrase and
    :class:`~kernel.errors.UsageError` (exit 2) for a file that is not a sealed reviewer key.
    """
    doc = _parse_sealed(blob)
    reviewer, key_id = doc["reviewer"], doc["key_id"]
    kdf, cipher = doc["kdf"], doc["cipher"]
    try:
        wrapping = _derive(passphrase, kdf["salt"], kdf["n"], kdf["r"], kdf["p"])
    except (ValueError, InvalidKey, MemoryError) as err:
        raise UsageError(f"sealed key of {reviewer}: unusable scrypt parameters ({err})") from err
    try:
        seed = ChaCha20Poly1305(wrapping).decrypt(
            cipher["nonce"], doc["ciphertext"], _associated_data(reviewer, key_id)
        )
    except InvalidTag as err:
        raise PolicyError(
            f"wrong passphrase for {reviewer}; nothing was signed (type it again, or ask an "
            "admin to revoke this key and add a new one if it is lost)"
        ) from err
    try:
        key = SigningKey(reviewer, Ed25519PrivateKey.from_private_bytes(seed))
    except ValueError as err:
        raise UsageError(f"sealed key of {reviewer}: the decrypted key is not Ed25519") from err
    if key.key_id != key_id or key.public_key != doc["public_key"]:
        raise UsageError(f"sealed key of {reviewer}: its public key does not match its key id")
    return key


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _parse_sealed(blob: bytes) -> dict[str, Any]:
    """Validate a sealed key's document, decoding its binary fields; UsageError otherwise."""

    def bad(why: str) -> UsageError:
        return UsageError(f"not a sealed tht reviewer key ({why}); was the key file replaced?")

    try:
        raw = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise bad("not JSON") from err
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
        raise bad("unknown format")
    if raw.get("version") != _VERSION:
        raise bad(f"version {raw.get('version')!r}, expected {_VERSION}")
    kdf, cipher = raw.get("kdf"), raw.get("cipher")
    if not isinstance(kdf, dict) or kdf.get("name") != "scrypt":
        raise bad("kdf must be scrypt")
    if not isinstance(cipher, dict) or cipher.get("name") != _CIPHER:
        raise bad(f"cipher must be {_CIPHER}")
    reviewer, key_id = raw.get("reviewer"), raw.get("key_id")
    if not isinstance(reviewer, str) or not reviewer.startswith("human:"):
        raise bad("no reviewer")
    if not isinstance(key_id, str) or not _KEY_ID.match(key_id):
        raise bad("no key id")
    if not isinstance(raw.get("public_key"), str):
        raise bad("no public key")
    n, r, p = kdf.get("n"), kdf.get("r"), kdf.get("p")
    if not all(type(x) is int for x in (n, r, p)):
        raise bad("scrypt n, r, p must be integers")
    assert isinstance(n, int) and isinstance(r, int) and isinstance(p, int)
    in_range = _MIN_N <= n <= _MAX_N and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16
    if not in_range or 128 * n * r > _MAX_SCRYPT_MEMORY:
        raise bad(f"scrypt parameters out of range (n={n}, r={r}, p={p})")
    salt = _unb64(kdf.get("salt"))
    nonce = _unb64(cipher.get("nonce"))
    ciphertext = _unb64(raw.get("ciphertext"))
    if salt is None or len(salt) < 8 or nonce is None or len(nonce) != 12:
        raise bad("bad salt or nonce")
    if ciphertext is None or len(ciphertext) != 32 + 16:
        raise bad("bad ciphertext")
    return {
        "reviewer": reviewer,
        "key_id": key_id,
        "public_key": raw["public_key"],
        "kdf": {"n": n, "r": r, "p": p, "salt": salt},
        "cipher": {"nonce": nonce},
        "ciphertext": ciphertext,
    }


def _unb64(value: object) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None
