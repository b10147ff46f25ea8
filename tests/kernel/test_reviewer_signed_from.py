"""Where signed mode began (kernel/reviewers.py): the registry's first entry records, for each
workspace-level ledger, its last line at that moment; only the root may, it is signed like the
rest of the entry, and registries written before the field existed still verify byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernel.clock import FixedClock
from kernel.errors import PolicyError
from kernel.events import EventDraft, decode_event, encode_event, stamp
from kernel.ledger_verify import line_hash
from kernel.reviewer_events import LedgerStart, ReviewerAdded, ReviewerAddedPayload
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signature_rules import SigningStart
from kernel.signing import SigningKey, proof_message

HEAD = "cd" * 32
STARTS = {"catalog": LedgerStart(seq=12, head=HEAD), "memory": LedgerStart(seq=0, head="0" * 64)}


def _key(seed: int, reviewer: str) -> SigningKey:
    return SigningKey(reviewer, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


ANN, BOB = _key(1, "human:ann"), _key(2, "human:bob")

#: a registry written by tht before ``signed_from`` existed (commit 0b509fb: ann adds herself,
#: adds bob, revokes bob), with the keys above and a fixed clock
PRE_FIELD_REGISTRY = (
    b'{"type":"reviewer_added","seq":1,"ts":"2026-01-01T00:00:00.000Z","v":1,"actor":"human:ann",'
    b'"stage":null,"invocation":null,"attempt":null,"subject":"human:ann","retracts":null,'
    b'"causation":null,"batch_left":0,'
    b'"prev":"297ea3cbfe629b36a066e83b42d1482245eba2f92f950b8b5bf759a0a148b73b",'
    b'"sig":"ed25519:34750f98bd59fcfc946da45aaabe933b:401prTBJFbq6xnHWDobzczHb8Jbnlj4B53NjNFmLbz'
    b'jSfc+KmPxN5XNdyxJyhSwdLXY8z/RS1qQdestuqtLXCQ==","payload":{"reviewer":"human:ann",'
    b'"key_id":"34750f98bd59fcfc946da45aaabe933b",'
    b'"public_key":"iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=",'
    b'"proof":"ed25519:34750f98bd59fcfc946da45aaabe933b:XNZ/eXoh1+p1n5/f0a7MvdcO0j6z//1LC1ENT/n'
    b'VQgMnq5jezaWkIbCf/zFKfM3bXcQVkWh17bNHRmpxFTjkCA==","added_by":null}}\n'
    b'{"type":"reviewer_added","seq":2,"ts":"2026-01-01T00:00:01.000Z","v":1,"actor":"human:ann",'
    b'"stage":null,"invocation":null,"attempt":null,"subject":"human:bob","retracts":null,'
    b'"causation":null,"batch_left":0,'
    b'"prev":"4c0fc4b7a1cefae34aa56d1cbbea205ad62d181df9a42598d868e41586ad6408",'
    b'"sig":"ed25519:34750f98bd59fcfc946da45aaabe933b:Y7qx09n//JwbvfONsimH2+DusSkbiTgVKrtbH9wmW'
    b'WfNILYZgv9xdU1QfdHrKOMSAe8Tp0KofHhQicjAtJcQAw==","payload":{"reviewer":"human:bob",'
    b'"key_id":"6a3803d5f059902a1c6dafbc9ba47292",'
    b'"public_key":"gTl3Dqh9F19Wo1Rmw0x+zMuNipG07jeiXfYPW4/Js5Q=",'
    b'"proof":"ed25519:6a3803d5f059902a1c6dafbc9ba47292:Qzhdy3PFHKrIItIl9YScgS2on3lqHBq7yJotzdi'
    b'q85iYuHdx9N3EJf2unUIfg3vD+NJMx9w73E0ttEoEXCOCAg==","added_by":"human:ann"}}\n'
    b'{"type":"reviewer_revoked","seq":3,"ts":"2026-01-01T00:00:02.000Z","v":1,'
    b'"actor":"human:ann","stage":null,"invocation":null,"attempt":null,"subject":"human:bob",'
    b'"retracts":null,"causation":null,"batch_left":0,'
    b'"prev":"6aff9d8d1a6b024f3e8e8bc0e33bf5aad48e67cbb124b4b8ecfe53ec5d37d82f",'
    b'"sig":"ed25519:34750f98bd59fcfc946da45aaabe933b:s2M1WD1ONyDVCl3JtTan22dxq3jcdX/fZ2xRvjRD3z'
    b'Zn9ZYSh7zNCqAhGumCuH/1Kh18KuKRLqux+cksLl01CQ==","payload":{"reviewer":"human:bob",'
    b'"key_id":"6a3803d5f059902a1c6dafbc9ba47292","reason":"left"}}\n'
)
PRE_FIELD_HEAD = "c401dea58aff6a0aca84e0819d54574f3875eae19c3a7b16d3a3540f51d89162"


@pytest.fixture
def registry(tmp_path: Path) -> ReviewerRegistry:
    return ReviewerRegistry(tmp_path / "reviewers")


def _write(registry: ReviewerRegistry, data: bytes) -> None:
    registry.folder.mkdir(parents=True, exist_ok=True)
    registry.ledger.path.write_bytes(data)
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    anchor = {"seq": decode_event(last).seq, "head": line_hash(last)}
    registry.ledger.head_path.write_text(json.dumps(anchor))


def test_a_registry_written_before_the_field_existed_verifies_byte_for_byte(
    registry: ReviewerRegistry,
) -> None:
    assert line_hash(PRE_FIELD_REGISTRY.splitlines()[-1]) == PRE_FIELD_HEAD
    _write(registry, PRE_FIELD_REGISTRY)
    report = registry.verify()
    assert report.ok, report.problems
    for line in PRE_FIELD_REGISTRY.splitlines():
        assert encode_event(decode_event(line)) == line  # so every signature still verifies
    state = registry.state()
    assert state.signed_from is None  # no start recorded: the ledgers keep the older rule
    assert state.check_human_event.signed_from("catalog") is None
    assert not state.keys[BOB.key_id].active and state.reviewers() == ["human:ann"]


def test_the_writer_without_a_start_writes_the_same_bytes_as_before(
    registry: ReviewerRegistry,
) -> None:
    clock = FixedClock()
    registry.add_reviewer(ANN, by=None, clock=clock)
    registry.add_reviewer(BOB, by=ANN, clock=clock)
    registry.revoke("human:bob", BOB.key_id, "left", by=ANN, clock=clock)
    assert registry.ledger.path.read_bytes() == PRE_FIELD_REGISTRY


def test_the_root_records_where_signed_mode_began_and_the_check_hands_it_out(
    registry: ReviewerRegistry,
) -> None:
    event = registry.add_reviewer(ANN, by=None, clock=FixedClock(), signed_from=STARTS)
    assert isinstance(event, ReviewerAdded) and event.payload.signed_from == STARTS
    line = registry.ledger.path.read_bytes().splitlines()[0]
    assert b'"signed_from":{"catalog":{"seq":12,"head":"' + HEAD.encode() in line
    assert registry.verify().ok
    check = registry.state().check_human_event
    assert isinstance(check, SigningStart)
    assert check.signed_from("catalog") == STARTS["catalog"]
    assert check.signed_from("memory") == STARTS["memory"]
    assert check.signed_from("elsewhere") is None


def test_only_the_root_may_record_it(registry: ReviewerRegistry) -> None:
    registry.add_reviewer(ANN, by=None, clock=FixedClock(), signed_from=STARTS)
    before = registry.ledger.path.read_bytes()
    with pytest.raises(PolicyError, match="first reviewer"):
        registry.add_reviewer(BOB, by=ANN, clock=FixedClock(), signed_from=STARTS)
    assert registry.ledger.path.read_bytes() == before


def _signed_line(
    registry: ReviewerRegistry, payload: ReviewerAddedPayload, by: SigningKey
) -> bytes:
    tail = registry.ledger.tail()
    draft = EventDraft(type="reviewer_added", actor=by.reviewer, payload=payload)
    event = stamp(draft, seq=tail.last_seq + 1, ts="2026-01-01T00:05:00.000Z", prev=tail.head)
    return encode_event(msgspec.structs.replace(event, sig=by.sign_event(event)))


def _payload(
    key: SigningKey, added_by: str | None, signed_from: dict[str, LedgerStart]
) -> ReviewerAddedPayload:
    return ReviewerAddedPayload(
        reviewer=key.reviewer,
        key_id=key.key_id,
        public_key=key.public_key,
        proof=key.sign(proof_message(key.reviewer, key.key_id)),
        added_by=added_by,
        signed_from=signed_from,
    )


def test_a_later_entry_cannot_move_where_signing_began_even_signed_by_a_member(
    registry: ReviewerRegistry,
) -> None:
    """A genuine reviewer's key signing a later start is still refused: the start is the
    root's, so no later entry can open a window for unsigned entries."""
    registry.add_reviewer(ANN, by=None, clock=FixedClock(), signed_from=STARTS)
    moved = {"catalog": LedgerStart(seq=99, head=HEAD)}
    line = _signed_line(registry, _payload(BOB, "human:ann", moved), ANN)
    _write(registry, registry.ledger.path.read_bytes() + line + b"\n")
    report = registry.verify()
    assert [(p.code, p.line) for p in report.problems] == [("registry_rule", 2)]
    assert "first entry" in report.problems[0].message
    state = registry.state()
    assert state.signed_from == STARTS and BOB.key_id not in state.keys


def test_a_root_with_a_malformed_start_is_not_a_root(registry: ReviewerRegistry) -> None:
    bad = {"catalog": LedgerStart(seq=3, head="not a hash")}
    registry.folder.mkdir(parents=True)
    _write(registry, _signed_line(registry, _payload(ANN, None, bad), ANN) + b"\n")
    report = registry.verify()
    assert [p.code for p in report.problems] == ["registry_rule"]
    assert not registry.state().signed


def test_editing_the_recorded_start_breaks_the_roots_signature(
    registry: ReviewerRegistry,
) -> None:
    """The agent cannot move signed mode's start forward (to cover lines it wrote): the root's
    own signature covers it, and a registry that does not verify trusts nobody."""
    registry.add_reviewer(ANN, by=None, clock=FixedClock(), signed_from=STARTS)
    data = registry.ledger.path.read_bytes()
    _write(registry, data.replace(b'"seq":12,', b'"seq":40,'))
    report = registry.verify()
    assert "registry_signature" in {p.code for p in report.problems}
