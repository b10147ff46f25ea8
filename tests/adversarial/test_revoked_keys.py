"""A revoked reviewer key in the hands of an agent (ARCHITECTURE §3.9, docs/security.md).

An event's ``ts`` is what its signer wrote (the kernel's clock, ``THT_CLOCK``, or a line written by
hand), so whoever holds a leaked key can sign as of any instant before an ordinary revocation: a
decision the key "made while it was trusted" cannot be told apart from one made yesterday with a
clock set back. ``--compromised`` revocation is retroactive: the key's signatures count only
where a later signature of a trusted key in the same ledger witnesses them. And a command that
signs with a revoked key is refused before it writes, instead of appending an event that then
blocks the session."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kernel.clock import FixedClock
from kernel.errors import IntegrityError, PolicyError
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import SigningKey, generate_signing_key
from kernel.trust import Trust
from tests.golden import scenarios

ANN, BOB = "human:ann", "human:bob"
#: the registry's clock: the revocation is recorded long after the session's events
LATER = FixedClock(start=datetime(2026, 6, 1, tzinfo=UTC))


class Team:
    def __init__(self, tmp_path: Path) -> None:
        self.run = scenarios.make_kernel(tmp_path / "ws")
        self.keys = {ANN: generate_signing_key(ANN), BOB: generate_signing_key(BOB)}
        self.registry = ReviewerRegistry(self.run.workspace.reviewers_dir)
        clock = FixedClock()
        self.registry.add_reviewer(self.keys[ANN], by=None, clock=clock)
        self.registry.add_reviewer(self.keys[BOB], by=self.keys[ANN], clock=clock)
        self.trust()

    def trust(self) -> None:
        """The kernel's trust, from the registry as it is now (tht builds it per command)."""
        state = self.registry.state()
        self.run.kernel._trust = Trust(
            signed=True,
            human_check=state.check_human_event,
            check_signature=state.signature_valid,
            compromised=state.compromised_signature,
            unlock=lambda reviewer: self.keys[reviewer],
        )

    def revoke_bob(self, *, compromised: bool) -> None:
        key: SigningKey = self.keys[BOB]
        self.registry.revoke(
            BOB,
            key.key_id,
            "laptop stolen",
            by=self.keys[ANN],
            clock=LATER,
            compromised=compromised,
        )
        self.trust()

    def answer(self, reviewer: str) -> None:
        """An agent-proposed select in F1, answered (signed) by ``reviewer``."""
        run = self.run
        applied = run.kernel.apply_outcome(
            run.session,
            "disambiguation",
            scenarios._select(
                "Which?",
                ("a", "a", (scenarios._event("concept_clarified", reviewer, meaning="m"),)),
            ),
            actor="agent",
        )
        run.kernel.answer(
            run.session, scenarios._review_seq(applied), actor=reviewer, choose=("a",)
        )


@pytest.fixture
def team(tmp_path: Path) -> Team:
    t = Team(tmp_path)
    scenarios.start(t.run)
    return t


def test_a_decision_signed_with_a_leaked_key_as_of_before_an_ordinary_revocation_verifies(
    team: Team,
) -> None:
    """The control, and the documented limit: the instant is the signer's word."""
    team.answer(BOB)  # its ts (January) is before the revocation (June)
    team.revoke_bob(compromised=False)
    assert team.run.kernel.verify(team.run.session).ok
    team.run.kernel.load(team.run.session)


@pytest.mark.parametrize("upgrade", [False, True], ids=["compromised", "revoked-then-compromised"])
def test_a_compromised_keys_unwitnessed_decision_no_longer_verifies(
    team: Team, upgrade: bool
) -> None:
    team.answer(BOB)
    if upgrade:  # first revoked as lost, later found to be leaked
        team.revoke_bob(compromised=False)
    team.revoke_bob(compromised=True)
    report = team.run.kernel.verify(team.run.session)
    assert not report.ok
    assert any("compromised" in p.message for p in report.problems)
    with pytest.raises(IntegrityError, match="compromised"):
        team.run.kernel.load(team.run.session)


@pytest.mark.parametrize("full", [False, True], ids=["verify", "verify-full"])
def test_a_compromised_keys_decision_witnessed_by_a_later_trusted_one_still_verifies(
    team: Team, full: bool
) -> None:
    """Ann's later signature covers the whole history before it, and her tht verified it then."""
    team.answer(BOB)
    team.answer(ANN)
    team.revoke_bob(compromised=True)
    assert team.run.kernel.verify(team.run.session, full=full).ok
    state = team.run.kernel.load(team.run.session).state
    assert state.integrity == ()


def test_a_compromised_keys_decision_after_the_last_trusted_one_is_caught(team: Team) -> None:
    team.answer(ANN)
    team.answer(BOB)
    team.revoke_bob(compromised=True)
    for full in (False, True):
        assert not team.run.kernel.verify(team.run.session, full=full).ok


def test_a_revoked_key_is_refused_before_anything_is_written(team: Team) -> None:
    team.revoke_bob(compromised=False)
    kernel = team.run.kernel
    kernel.clock = FixedClock(start=datetime(2026, 7, 1, tzinfo=UTC))  # after the revocation
    ledger = team.run.workspace.sessions_dir / team.run.session / "ledger.jsonl"
    applied = kernel.apply_outcome(
        team.run.session,
        "disambiguation",
        scenarios._select(
            "Which?", ("a", "a", (scenarios._event("concept_clarified", "x", meaning="m"),))
        ),
        actor="agent",
    )
    before = ledger.read_bytes()
    with pytest.raises(PolicyError, match="cannot sign"):
        kernel.answer(team.run.session, scenarios._review_seq(applied), actor=BOB, choose=("a",))
    assert ledger.read_bytes() == before
    assert kernel.verify(team.run.session).ok
