"""The reviewer registry (kernel/reviewers.py): only members can change it, and only its
members' valid, unrevoked signatures vouch for a human decision."""

from __future__ import annotations

import json
import stat
import tempfile
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.clock import FixedClock
from kernel.errors import ConflictError, IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.events import (
    Event,
    EventDraft,
    ReviewAnsweredPayload,
    decode_event,
    encode_event,
    stamp,
)
from kernel.ledger import line_hash
from kernel.ledger_verify import genesis_hash
from kernel.reviewer_events import ReviewerAddedPayload, WorkflowApprovedPayload
from kernel.reviewer_registry import ReviewerRegistry
from kernel.reviewers import REGISTRY_LEDGER_ID, fold_registry
from kernel.signing import SigningKey, proof_message

SHA = "ab" * 32


def _key(seed: int, reviewer: str) -> SigningKey:
    return SigningKey(reviewer, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


ANN, BOB, CY = _key(1, "human:ann"), _key(2, "human:bob"), _key(3, "human:cy")
MALLORY = _key(9, "human:mallory")


@pytest.fixture
def registry(tmp_path: Path) -> ReviewerRegistry:
    return ReviewerRegistry(tmp_path / "reviewers")


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


def _with_ann_and_bob(registry: ReviewerRegistry, clock: FixedClock) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    registry.add_reviewer(BOB, by=ANN, clock=clock)


def _human_event(key: SigningKey, *, actor: str | None = None, ts: str) -> Event:
    draft = EventDraft(
        type="review_answered",
        actor=actor or key.reviewer,
        payload=ReviewAnsweredPayload(choice=("flag",)),
        causation=6,
    )
    event = stamp(draft, seq=7, ts=ts, prev="0" * 64)
    return msgspec.structs.replace(event, sig=key.sign_event(event))


def _forged_line(
    registry: ReviewerRegistry, payload: ReviewerAddedPayload, signer: SigningKey, actor: str
) -> bytes:
    """What a careful agent appends: the next seq, chained to the real head, signed by its key."""
    tail = registry.ledger.tail()
    draft = EventDraft(
        type="reviewer_added", actor=actor, payload=payload, subject=payload.reviewer
    )
    event = stamp(draft, seq=tail.last_seq + 1, ts="2026-01-01T00:01:00.000Z", prev=tail.head)
    event = msgspec.structs.replace(event, sig=signer.sign_event(event))
    return encode_event(event)


def _append_raw(registry: ReviewerRegistry, line: bytes) -> None:
    """Append a line *and* move the head anchor, as an agent covering its tracks would."""
    seq = decode_event(line).seq
    with registry.ledger.path.open("ab") as fh:
        fh.write(line + b"\n")
    registry.ledger.head_path.write_text(json.dumps({"seq": seq, "head": line_hash(line)}))


def _mallory_payload(added_by: str | None = "human:ann") -> ReviewerAddedPayload:
    return ReviewerAddedPayload(
        reviewer=MALLORY.reviewer,
        key_id=MALLORY.key_id,
        public_key=MALLORY.public_key,
        proof=MALLORY.sign(proof_message(MALLORY.reviewer, MALLORY.key_id)),
        added_by=added_by,
    )


# --------------------------------------------------------------------------- writers


def test_first_reviewer_adds_themselves_with_a_self_signed_root(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    assert not registry.exists() and not registry.state().signed
    event = registry.add_reviewer(ANN, by=None, clock=clock)
    assert (event.seq, event.actor, event.payload.added_by) == (1, "human:ann", None)
    assert event.sig is not None and event.sig.startswith(f"ed25519:{ANN.key_id}:")
    state = registry.state()
    assert state.signed and state.reviewers() == ["human:ann"]
    record = state.key(ANN.key_id)
    assert record is not None and (record.added_seq, record.revoked_seq) == (1, None)
    assert registry.verify().ok


def test_registry_files_are_private(registry: ReviewerRegistry, clock: FixedClock) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    assert stat.S_IMODE(registry.folder.stat().st_mode) == 0o700
    for path in (registry.ledger.path, registry.ledger.head_path, registry.ledger.lock_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_later_reviewers_are_added_by_a_member(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    _with_ann_and_bob(registry, clock)
    added = registry.add_reviewer(CY, by=BOB, clock=clock)
    assert (added.actor, added.payload.added_by) == ("human:bob", "human:bob")
    assert registry.state().reviewers() == ["human:ann", "human:bob", "human:cy"]
    assert registry.verify().ok


@pytest.mark.parametrize(
    "attempt, error",
    [
        (lambda r, c: r.add_reviewer(CY, by=None, clock=c), "already has reviewers"),
        (lambda r, c: r.add_reviewer(CY, by=MALLORY, clock=c), "not in this workspace"),
        (lambda r, c: r.add_reviewer(BOB, by=ANN, clock=c), "already in the registry"),
        (lambda r, c: r.approve_workflow(SHA, "w", 1, "x", by=MALLORY, clock=c), "not in this"),
    ],
)
def test_writes_that_break_the_rules_are_refused_and_write_nothing(
    registry: ReviewerRegistry, clock: FixedClock, attempt, error: str
) -> None:
    _with_ann_and_bob(registry, clock)
    before = registry.ledger.read_bytes()
    with pytest.raises(PolicyError, match=error):
        attempt(registry, clock)
    assert registry.ledger.read_bytes() == before


def test_the_root_cannot_be_vouched_for_by_someone_else(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    with pytest.raises(PolicyError, match="adds themselves"):
        registry.add_reviewer(ANN, by=BOB, clock=clock)
    assert not registry.exists()


def test_revoked_key_can_no_longer_sign_the_registry(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    _with_ann_and_bob(registry, clock)
    revoked = registry.revoke("human:bob", BOB.key_id, "laptop lost", by=ANN, clock=clock)
    record = registry.state().key(BOB.key_id)
    assert record is not None and (record.revoked_seq, record.revoked_ts) == (3, revoked.ts)
    assert registry.state().reviewers() == ["human:ann"]
    with pytest.raises(PolicyError, match="revoked"):
        registry.add_reviewer(CY, by=BOB, clock=clock)
    with pytest.raises(PolicyError, match="already revoked"):
        registry.revoke("human:bob", BOB.key_id, "again", by=ANN, clock=clock)
    assert registry.verify().ok


def test_the_last_active_key_cannot_be_revoked(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    with pytest.raises(PolicyError, match="last active key"):
        registry.revoke("human:ann", ANN.key_id, "oops", by=ANN, clock=clock)
    with pytest.raises(NotFoundError):
        registry.revoke("human:bob", ANN.key_id, "not bob's", by=ANN, clock=clock)
    with pytest.raises(UsageError):
        registry.revoke("human:ann", ANN.key_id, " ", by=ANN, clock=clock)


def test_approved_workflows_are_recorded_by_sha256(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    event = registry.approve_workflow(SHA, "custom", 2, "reviewed", by=ANN, clock=clock)
    assert event.payload == WorkflowApprovedPayload(
        sha256=SHA, name="custom", version=2, reason="reviewed"
    )
    assert registry.state().approved_workflows == frozenset({SHA})
    with pytest.raises(UsageError):
        registry.approve_workflow("ABC", "custom", 2, "x", by=ANN, clock=clock)


def test_a_concurrent_write_makes_the_stale_writer_conflict(
    registry: ReviewerRegistry, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    other = ReviewerRegistry(registry.folder)
    decide = registry._writable_state

    def racing():  # the state is read, then another process appends before we do
        state = decide()
        other.add_reviewer(BOB, by=ANN, clock=clock)
        return state

    monkeypatch.setattr(registry, "_writable_state", racing)
    with pytest.raises(ConflictError, match="run it again"):
        registry.approve_workflow(SHA, "w", 1, "x", by=ANN, clock=clock)
    assert [e.seq for e in registry.ledger.read().events] == [1, 2]


# --------------------------------------------------------------------------- human events


def test_check_human_event_accepts_a_members_signature_only(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    _with_ann_and_bob(registry, clock)
    state = registry.state()
    ts = "2026-02-01T00:00:00.000Z"
    assert state.check_human_event(_human_event(ANN, ts=ts)) is None
    unsigned = msgspec.structs.replace(_human_event(ANN, ts=ts), sig=None)
    assert state.check_human_event(unsigned) == "unsigned human decision"
    assert "unknown key" in (state.check_human_event(_human_event(MALLORY, ts=ts)) or "")
    as_ann = _human_event(BOB, actor="human:ann", ts=ts)
    assert (
        state.check_human_event(as_ann) == f"key {BOB.key_id} belongs to human:bob, not human:ann"
    )
    altered = msgspec.structs.replace(_human_event(ANN, ts=ts), causation=5)
    assert state.check_human_event(altered) == "signature does not verify"
    garbled = msgspec.structs.replace(_human_event(ANN, ts=ts), sig="ed25519:junk")
    assert state.check_human_event(garbled) is not None


def test_revocation_is_not_retroactive(registry: ReviewerRegistry, clock: FixedClock) -> None:
    _with_ann_and_bob(registry, clock)  # ts 00:00:00, 00:00:01
    registry.revoke("human:bob", BOB.key_id, "left", by=ANN, clock=clock)  # 00:00:02
    state = registry.state()
    before = _human_event(BOB, ts="2026-01-01T00:00:01.500Z")
    after = _human_event(BOB, ts="2026-01-01T00:00:02.000Z")
    assert state.check_human_event(before) is None
    assert state.check_human_event(after) == (
        f"key {BOB.key_id} was revoked at 2026-01-01T00:00:02.000Z"
    )
    odd = _human_event(BOB, ts="2026-01-01 00:00")  # not comparable: fail closed
    assert state.check_human_event(odd) is not None


def test_a_key_revoked_as_compromised_vouches_for_nothing_by_itself(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    """Whatever instant the event claims: its ``ts`` is the signer's word."""
    _with_ann_and_bob(registry, clock)
    registry.revoke("human:bob", BOB.key_id, "stolen", by=ANN, clock=clock, compromised=True)
    state = registry.state()
    record = state.keys[BOB.key_id]
    assert record.compromised and record.revoked_seq == 3
    backdated = _human_event(BOB, ts="2025-06-01T00:00:00.000Z")
    assert "revoked as compromised" in (state.check_human_event(backdated) or "")
    assert state.compromised_signature(backdated)  # genuine, so a later witness may vouch
    forged = msgspec.structs.replace(backdated, sig=MALLORY.sign_event(backdated))
    assert not state.compromised_signature(forged)  # a made-up signature never is
    assert not state.compromised_signature(_human_event(ANN, ts="2026-01-01T00:00:05.000Z"))


def test_an_ordinary_revocation_can_later_be_marked_compromised_once(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    _with_ann_and_bob(registry, clock)
    registry.revoke("human:bob", BOB.key_id, "lost", by=ANN, clock=clock)
    first = registry.state().keys[BOB.key_id]
    assert not first.compromised
    with pytest.raises(PolicyError, match="--compromised"):
        registry.revoke("human:bob", BOB.key_id, "lost", by=ANN, clock=clock)
    registry.revoke("human:bob", BOB.key_id, "found leaked", by=ANN, clock=clock, compromised=True)
    marked = registry.state().keys[BOB.key_id]
    assert marked.compromised and (marked.revoked_seq, marked.revoked_ts) == (
        first.revoked_seq,
        first.revoked_ts,
    )
    with pytest.raises(PolicyError, match="already revoked"):
        registry.revoke("human:bob", BOB.key_id, "x", by=ANN, clock=clock, compromised=True)
    assert registry.verify().ok


# --------------------------------------------------------------------------- forgery


def test_an_agents_properly_chained_self_signed_member_is_rejected(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    _with_ann_and_bob(registry, clock)
    # claims ann added it, but only mallory's key signed it
    _append_raw(registry, _forged_line(registry, _mallory_payload(), MALLORY, "human:ann"))
    report = registry.verify()
    assert not report.ok
    assert [(p.code, p.seq) for p in report.problems] == [("registry_signature", 3)]
    state = registry.state()
    assert MALLORY.key_id not in state.keys and state.reviewers() == ["human:ann", "human:bob"]
    event = _human_event(MALLORY, ts="2026-02-01T00:00:00.000Z")
    assert "unknown key" in (state.check_human_event(event) or "")
    with pytest.raises(IntegrityError, match="tht reviewer verify"):  # no append on top of it
        registry.add_reviewer(CY, by=ANN, clock=clock)


def test_an_entry_signed_as_its_actor_by_another_members_key_is_rejected(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    _with_ann_and_bob(registry, clock)
    line = _forged_line(registry, _mallory_payload("human:ann"), BOB, "human:ann")
    _append_raw(registry, line)
    problems = registry.verify().problems
    assert [p.code for p in problems] == ["registry_signature"]
    assert "human:bob" in problems[0].message


@pytest.mark.parametrize(
    "payload, problem",
    [
        (lambda: _mallory_payload(None), "registry_rule"),  # a second root
        (lambda: msgspec.structs.replace(_mallory_payload(), proof=ANN.sign(b"x")), "signature"),
        (lambda: msgspec.structs.replace(_mallory_payload(), key_id=ANN.key_id), "registry_rule"),
        (lambda: msgspec.structs.replace(_mallory_payload(), reviewer="agent"), "registry_rule"),
    ],
)
def test_additions_signed_by_a_member_must_still_follow_the_rules(
    registry: ReviewerRegistry, clock: FixedClock, payload, problem: str
) -> None:
    _with_ann_and_bob(registry, clock)
    _append_raw(registry, _forged_line(registry, payload(), ANN, "human:ann"))
    codes = [p.code for p in registry.verify().problems]
    assert len(codes) == 1 and problem in codes[0]
    assert MALLORY.key_id not in registry.state().keys


def test_the_root_must_be_signed_by_its_own_key(tmp_path: Path) -> None:
    registry = ReviewerRegistry(tmp_path / "reviewers")
    registry.folder.mkdir()
    payload = msgspec.structs.replace(_mallory_payload(None), reviewer="human:mallory")
    _append_raw(registry, _forged_line(registry, payload, ANN, "human:mallory"))
    report = registry.verify()
    assert [p.code for p in report.problems] == ["registry_signature"]
    assert not registry.state().signed


def test_a_session_event_in_the_registry_is_a_problem(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    tail = registry.ledger.tail()
    payload = ReviewAnsweredPayload(choice=("x",))
    draft = EventDraft(type="review_answered", actor="human:ann", payload=payload)
    event = stamp(draft, seq=2, ts="2026-01-01T00:01:00.000Z", prev=tail.head)
    _append_raw(registry, encode_event(msgspec.structs.replace(event, sig=ANN.sign_event(event))))
    assert [p.code for p in registry.verify().problems] == ["registry_rule"]


def test_a_missing_head_anchor_is_a_problem(registry: ReviewerRegistry, clock: FixedClock) -> None:
    registry.add_reviewer(ANN, by=None, clock=clock)
    registry.ledger.head_path.unlink()
    assert [p.code for p in registry.verify().problems] == ["head_anchor"]


def test_verify_without_a_registry_says_how_to_create_one(registry: ReviewerRegistry) -> None:
    with pytest.raises(NotFoundError, match="tht reviewer add"):
        registry.verify()


def test_a_wholesale_replacement_is_indistinguishable_but_for_the_root_key_id(
    registry: ReviewerRegistry, clock: FixedClock
) -> None:
    """Documented limit: an agent that deletes the registry and writes its own root passes
    verification; only the root's key id, noted by the human at `add` time, tells them apart."""
    registry.add_reviewer(ANN, by=None, clock=clock)
    noted = ANN.key_id
    for path in registry.folder.iterdir():
        path.unlink()
    impostor = _key(9, "human:ann")  # the agent even reuses the reviewer's name
    ReviewerRegistry(registry.folder).add_reviewer(impostor, by=None, clock=clock)
    state = registry.state()
    assert registry.verify().ok and state.reviewers() == ["human:ann"]
    assert noted not in state.keys


# --------------------------------------------------------------------------- properties


def _entries() -> list[Event]:
    """A valid three-entry registry, as events (pure: no files)."""
    with tempfile.TemporaryDirectory() as folder:
        registry = ReviewerRegistry(Path(folder) / "reviewers")
        clock = FixedClock()
        _with_ann_and_bob(registry, clock)
        registry.approve_workflow(SHA, "w", 1, "ok", by=BOB, clock=clock)
        return registry.ledger.read().events


ENTRIES = _entries()


@given(index=st.integers(0, len(ENTRIES) - 1), seed=st.binary(min_size=32, max_size=32))
def test_an_entry_re_signed_by_a_non_member_key_is_a_problem(index: int, seed: bytes) -> None:
    outsider = SigningKey("human:ann", Ed25519PrivateKey.from_private_bytes(seed))
    if outsider.key_id in {ANN.key_id, BOB.key_id}:
        return
    events = list(ENTRIES)
    events[index] = msgspec.structs.replace(
        events[index], sig=outsider.sign_event(msgspec.structs.replace(events[index], sig=None))
    )
    state = fold_registry(events)
    assert [p.seq for p in state.problems][:1] == [index + 1]
    assert state.problems[0].code == "registry_signature"
    assert outsider.key_id not in state.keys


@settings(max_examples=40)
@given(data=st.data())
def test_any_single_byte_change_of_the_registry_file_fails_verification(
    data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        registry = ReviewerRegistry(Path(folder) / "reviewers")
        clock = FixedClock()
        _with_ann_and_bob(registry, clock)
        raw = bytearray(registry.ledger.read_bytes())
        index = data.draw(st.integers(0, len(raw) - 2), label="index")  # not the final newline
        raw[index] ^= data.draw(st.integers(1, 255), label="xor")
        registry.ledger.path.write_bytes(bytes(raw))
        report = registry.verify()  # never raises, whatever the damage
        assert not report.ok


def test_fold_is_total_on_the_genesis_of_another_ledger() -> None:
    assert genesis_hash(REGISTRY_LEDGER_ID) == ENTRIES[0].prev
    assert fold_registry([]).last_seq == 0 and not fold_registry([]).problems
