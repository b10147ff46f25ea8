"""Reviewer keys and signatures (kernel/signing.py): what a signature proves, and what a sealed key
file gives away without its passphrase (nothing)."""

from __future__ import annotations

import base64
import json
import unicodedata

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from kernel.errors import PolicyError, UsageError
from kernel.events import (
    EventDraft,
    ReviewAnsweredPayload,
    canonical_bytes,
    decode_event,
    encode_event,
    stamp,
)
from kernel.signing import (
    SCRYPT_N,
    SigningKey,
    generate_signing_key,
    key_id_of,
    open_key,
    proof_message,
    seal_key,
    sig_key_id,
    verify_signature,
)

FAST = 2**4  # scrypt work factor for tests only (normal use: SCRYPT_N)


def _key(seed: int = 1, reviewer: str = "human:ann") -> SigningKey:
    return SigningKey(reviewer, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


def _answer(actor: str = "human:ann"):
    draft = EventDraft(
        type="review_answered",
        actor=actor,
        payload=ReviewAnsweredPayload(choice=("flag",), rationale="x"),
        stage="disambiguation",
        causation=6,
    )
    return stamp(draft, seq=7, ts="2026-01-01T00:00:07.000Z", prev="0" * 64)


def test_signature_names_its_key_and_verifies_only_the_signed_bytes() -> None:
    key = generate_signing_key("human:ann")
    sig = key.sign(b"decision")
    assert sig.startswith(f"ed25519:{key.key_id}:")
    assert sig_key_id(sig) == key.key_id
    assert verify_signature(key.public_key, b"decision", sig)
    assert not verify_signature(key.public_key, b"decisioN", sig)
    assert not verify_signature(generate_signing_key("human:ann").public_key, b"decision", sig)


def test_key_id_is_the_sha256_prefix_of_the_raw_public_key() -> None:
    import hashlib

    key = _key()
    raw = base64.b64decode(key.public_key)
    assert len(raw) == 32
    assert key.key_id == key_id_of(key.public_key) == hashlib.sha256(raw).hexdigest()[:32]
    with pytest.raises(UsageError):
        key_id_of("not base64!")
    with pytest.raises(UsageError):
        key_id_of(base64.b64encode(b"short").decode())


def test_event_signature_covers_the_line_without_sig_and_survives_encoding() -> None:
    key = _key()
    event = _answer()
    signed = msgspec.structs.replace(event, sig=key.sign_event(event))
    line = encode_event(signed)
    decoded = decode_event(line)
    assert decoded.sig == signed.sig
    assert canonical_bytes(decoded) == encode_event(event)  # exactly the unsigned line
    assert verify_signature(key.public_key, canonical_bytes(decoded), decoded.sig or "")


def test_a_signature_claiming_another_key_id_fails() -> None:
    ann, bob = _key(1), _key(2, "human:bob")
    forged = ann.sign(b"x").replace(ann.key_id, bob.key_id)
    assert not verify_signature(bob.public_key, b"x", forged)
    assert not verify_signature(ann.public_key, b"x", forged)


@pytest.mark.parametrize(
    "sig",
    [
        "",
        "ed25519",
        "ed25519::",
        "ed25519:zz:abc",
        "rsa:" + "0" * 32 + ":" + "A" * 86 + "==",
        "ed25519:" + "0" * 32 + ":" + "A" * 86 + "==",
        "ed25519:" + "0" * 32 + ":" + "!" * 88,
    ],
)
def test_malformed_signatures_are_rejected_not_raised(sig: str) -> None:
    assert not verify_signature(_key().public_key, b"x", sig)
    assert sig_key_id(sig) in (None, "0" * 32)


@given(st.text(max_size=120), st.text(max_size=120), st.binary(max_size=64))
def test_verify_signature_never_raises(public_key: str, sig: str, data: bytes) -> None:
    assert verify_signature(public_key, data, sig) is False


@given(st.data())
def test_any_single_byte_change_of_signed_canonical_bytes_fails(data: st.DataObject) -> None:
    key = _key(3)
    event = _answer()
    message = canonical_bytes(event)
    sig = key.sign_event(event)
    index = data.draw(st.integers(0, len(message) - 1), label="index")
    flip = data.draw(st.integers(1, 255), label="xor")
    changed = bytearray(message)
    changed[index] ^= flip
    assert verify_signature(key.public_key, message, sig)
    assert not verify_signature(key.public_key, bytes(changed), sig)


def test_sealed_key_opens_with_its_passphrase_only() -> None:
    key = generate_signing_key("human:ann")
    sealed = seal_key(key, "correct horse", work_factor=FAST)
    opened = open_key(sealed, "correct horse")
    assert (opened.reviewer, opened.key_id, opened.public_key) == (
        key.reviewer,
        key.key_id,
        key.public_key,
    )
    assert opened.sign(b"m") == key.sign(b"m")  # Ed25519 is deterministic: the same private key
    with pytest.raises(PolicyError, match="wrong passphrase for human:ann") as refused:
        open_key(sealed, "correct horsE")
    assert refused.value.exit_code == 5


def test_sealed_key_document_hides_the_private_key_and_records_the_cost() -> None:
    key = _key(5)
    sealed = seal_key(key, "pw-pw-pw-pw")
    doc = json.loads(sealed)
    assert doc["kdf"] == {**doc["kdf"], "name": "scrypt", "n": SCRYPT_N, "r": 8, "p": 1}
    assert SCRYPT_N == 2**15
    assert doc["cipher"]["name"] == "chacha20poly1305"
    assert (doc["reviewer"], doc["key_id"], doc["public_key"]) == (
        "human:ann",
        key.key_id,
        key.public_key,
    )
    seed = bytes([5]) * 32
    assert base64.b64encode(seed) not in sealed and seed not in sealed
    assert "key_id" in repr(key) and base64.b64encode(seed).decode() not in repr(key)


def test_relabelling_a_sealed_key_as_another_reviewer_does_not_open() -> None:
    sealed = json.loads(seal_key(_key(), "passphrase", work_factor=FAST))
    sealed["reviewer"] = "human:mallory"
    with pytest.raises(PolicyError):  # the associated data no longer matches
        open_key(json.dumps(sealed).encode(), "passphrase")


def test_passphrase_is_normalized_so_the_same_text_always_opens() -> None:
    composed = unicodedata.normalize("NFC", "caffè forte")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    sealed = seal_key(_key(), composed, work_factor=FAST)
    assert open_key(sealed, decomposed).key_id == _key().key_id


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: "not json",
        lambda d: {**d, "format": "other"},
        lambda d: {**d, "version": 2},
        lambda d: {**d, "kdf": {**d["kdf"], "name": "pbkdf2"}},
        lambda d: {**d, "kdf": {**d["kdf"], "n": 2**30}},  # a hostile file must not eat memory
        lambda d: {**d, "kdf": {**d["kdf"], "n": 1000}},
        lambda d: {**d, "kdf": {**d["kdf"], "r": "8"}},
        lambda d: {**d, "cipher": {"name": "chacha20poly1305", "nonce": "AAAA"}},
        lambda d: {**d, "ciphertext": "!!"},
        lambda d: {**d, "key_id": "nope"},
    ],
)
def test_malformed_key_files_are_usage_errors(mutate) -> None:
    doc = json.loads(seal_key(_key(), "passphrase", work_factor=FAST))
    changed = mutate(doc)
    blob = changed.encode() if isinstance(changed, str) else json.dumps(changed).encode()
    with pytest.raises(UsageError, match="sealed"):
        open_key(blob, "passphrase")


def test_sealing_refuses_an_empty_passphrase_and_odd_work_factors() -> None:
    with pytest.raises(UsageError):
        seal_key(_key(), "")
    with pytest.raises(UsageError):
        seal_key(_key(), "pw", work_factor=1000)


def test_proof_message_binds_reviewer_and_key() -> None:
    assert proof_message("human:ann", "ab" * 16) == b"tht-reviewer-key:human:ann:" + b"ab" * 16


def test_generated_keys_are_for_humans_only() -> None:
    with pytest.raises(PolicyError):
        generate_signing_key("agent")
    with pytest.raises(UsageError):
        generate_signing_key("ann")
