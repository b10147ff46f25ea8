"""What a reviewer reads before deciding (``tht session status``, the web UI's inbox and session
page: ``WorkflowKernel.load_for_display``) never rests on a cache the agent can write, in a signed
session. The attack: the agent rewrites the status cache with the ledger's real tail (workflow
digest, position, seq, head), so every cheap check passes, and a state of its own — the open
review's option relabelled, the review hidden, the session shown finalized. The reviewer would
then sign a choice they never saw. The same forgery changes an unsigned session's display (the
documented limit of unsigned mode, where the agent can write legal-looking history anyway),
which proves the forgery itself works."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kernel import events as ev
from kernel.fold import SessionState, fold
from kernel.status_cache import StatusCache
from kernel.workflow_kernel import WorkflowKernel
from tests.adversarial.test_checkpoints import _signed_run
from tests.golden import scenarios

FORGED_LABEL = "keep the current filter (forged)"


def _open_select(run: scenarios.Run) -> int:
    applied = run.kernel.apply_outcome(
        run.session,
        "disambiguation",
        scenarios._select(
            "Which ablation?",
            ("a", "drop every patient", (scenarios._event("concept_clarified", "x", meaning="m"),)),
        ),
        actor="agent",
    )
    return scenarios._review_seq(applied)


def _truth(run: scenarios.Run) -> SessionState:
    ledger = run.kernel.store.ledger(run.session)
    return fold(run.kernel.session_workflow(run.session), ledger.read().events)


def _forge_cache(run: scenarios.Run, forge: str) -> None:
    """Write a status cache that passes every cheap check and lies."""
    kernel: WorkflowKernel = run.kernel
    truth = _truth(run)
    tail = kernel.store.ledger(run.session).tail()
    if forge == "relabel":
        review = truth.open_reviews[0]
        option = msgspec.structs.replace(review.options[0], label=FORGED_LABEL)
        lying = msgspec.structs.replace(
            truth,
            open_reviews=(msgspec.structs.replace(review, options=(option,)),),
        )
    elif forge == "hide":
        lying = msgspec.structs.replace(truth, open_reviews=())
    else:
        lying = msgspec.structs.replace(truth, lifecycle="finalized", finalized_seq=truth.last_seq)
    cache = StatusCache(
        workflow=kernel.session_workflow(run.session).sha256,
        hint=tail.hint,
        last_seq=tail.last_seq,
        head=tail.head,
        state=lying,
    )
    path = run.workspace.cache_dir / "status" / f"{run.session}.msgpack"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.msgpack.encode(cache))


def _shown(run: scenarios.Run) -> tuple[SessionState, list[object]]:
    loaded, problems = run.kernel.load_for_display(run.session)
    return loaded.state, list(problems)


FORGERIES = ["relabel", "hide", "finalized"]


@pytest.mark.parametrize("forge", FORGERIES)
@pytest.mark.parametrize("checkpointed", [False, True], ids=["no-checkpoint", "checkpoint"])
def test_a_forged_status_cache_never_reaches_a_signed_sessions_display(
    tmp_path: Path, forge: str, checkpointed: bool
) -> None:
    run, _ = _signed_run(tmp_path)
    scenarios.start(run)
    if checkpointed:  # a signed answer first: the display then starts from its checkpoint
        scenarios.stage_by_select(run, "disambiguation", "concept_clarified", "a", meaning="m")
    _open_select(run)
    run.kernel.load_for_display(run.session)  # the genuine cache is written
    _forge_cache(run, forge)
    state, problems = _shown(run)
    assert state == _truth(run)
    assert problems == []
    assert state.open_reviews[0].options[0].label == "drop every patient"
    assert state.lifecycle == "active"


@pytest.mark.parametrize("forge", FORGERIES)
def test_the_same_forgery_changes_an_unsigned_sessions_display(tmp_path: Path, forge: str) -> None:
    """The control: unsigned mode shows the cache (documented in docs/security.md)."""
    run = scenarios.make_kernel(tmp_path / "ws")
    scenarios.start(run)
    _open_select(run)
    run.kernel.load_for_display(run.session)
    _forge_cache(run, forge)
    state, _ = _shown(run)
    assert state != _truth(run)


def test_a_workspace_in_signed_mode_shows_even_an_unsigned_session_verified(
    tmp_path: Path,
) -> None:
    """A session created before the workspace turned signed says ``unsigned``; the workspace's
    mode is enough for its display to rest on the ledger."""
    run = scenarios.make_kernel(tmp_path / "ws")
    scenarios.start(run)
    _open_select(run)
    signed, _ = _signed_run(tmp_path / "other")
    run.kernel._trust = signed.kernel._trust
    run.kernel.load_for_display(run.session)
    _forge_cache(run, "relabel")
    state, _ = _shown(run)
    assert state == _truth(run)


def test_a_line_edited_in_the_middle_of_a_signed_ledger_is_shown_as_a_problem(
    tmp_path: Path,
) -> None:
    """The cheap checks (tail and anchor) of the cached display cannot see an edit in the middle;
    a signed session's display verifies the ledger, so the reviewer is told."""
    run, _ = _signed_run(tmp_path)
    scenarios.start(run)
    _open_select(run)
    run.kernel.load_for_display(run.session)
    path = run.workspace.sessions_dir / run.session / "ledger.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if b'"usable"' in line]
    assert 0 < at < len(lines) - 1  # neither the first line nor the tail the cheap checks read
    lines[at] = lines[at].replace(b'"usable"', b'"usablE"', 1)
    path.write_bytes(b"".join(lines))
    state, problems = _shown(run)
    assert problems, "an edited line must be reported"
    assert state.question == scenarios.QUESTION
    assert isinstance(run.kernel.store.ledger(run.session).first_event(), ev.SessionCreated)
