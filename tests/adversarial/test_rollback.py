"""Rolling a signed session back (docs/security.md: "roll a ledger back"). A prefix of a valid
ledger is a valid ledger, so cutting the reviewer's last decisions off the end and re-anchoring
verifies by itself. The session's signed checkpoint, written after each signed command, records
the seq and line the reviewer's tht last saw: while it is there, the rollback is a problem
(``rolled_back``, exit 7) in verify, every policy load and the display, until a human records the
loss with a repair. It is a tripwire, not a boundary: an agent that also deletes the checkpoint
is not seen (the control below says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import events as ev
from kernel.errors import IntegrityError
from tests.adversarial.test_checkpoints import _checkpoint, _signed_run
from tests.adversarial.test_ledger_forgery import read_events, write_chained
from tests.golden import scenarios

H = scenarios.H


def _rolled_back_run(tmp_path: Path) -> tuple[scenarios.Run, int]:
    """A signed session whose F1 the reviewer answered and closed, rolled back to before the
    answer (the agent's own events before it are kept). The seq it ends at."""
    run, _ = _signed_run(tmp_path)
    scenarios.start(run)
    scenarios.f1(run)
    assert _checkpoint(run).is_file()
    folder = run.workspace.sessions_dir / run.session
    events = read_events(folder / "ledger.jsonl")
    first_answer = next(i for i, e in enumerate(events) if isinstance(e, ev.ReviewAnswered))
    kept = events[:first_answer]
    run.kernel.store.ledger(run.session).close()
    write_chained(folder, run.session, kept)
    return run, kept[-1].seq


def _codes(problems: list[object]) -> list[str]:
    return [getattr(p, "code", "") for p in problems]


def test_a_signed_session_rolled_back_past_the_reviewers_decisions_is_caught(
    tmp_path: Path,
) -> None:
    run, last = _rolled_back_run(tmp_path)
    report = run.kernel.verify(run.session)
    assert not report.ok and "rolled_back" in _codes(report.problems)
    (problem,) = [p for p in report.problems if p.code == "rolled_back"]
    assert f"ends at seq {last}" in problem.message and H in problem.message
    with pytest.raises(IntegrityError, match="rolled_back"):
        run.kernel.load(run.session)
    loaded, problems = run.kernel.load_for_display(run.session)
    assert "rolled_back" in _codes(problems)  # the reviewer sees it
    assert loaded.state.last_seq == last


def test_a_rollback_refilled_past_the_checkpoint_with_other_lines_is_caught(
    tmp_path: Path,
) -> None:
    """The agent cuts the reviewer's answer and appends its own legal events until the ledger is
    longer than before: the checkpoint's line is another one now."""
    run, _ = _rolled_back_run(tmp_path)
    folder = run.workspace.sessions_dir / run.session
    events = read_events(folder / "ledger.jsonl")
    cp_seq = _checkpoint_seq(run)
    longer = list(events)
    while len(longer) <= cp_seq:  # whatever the lines are: the one at cp_seq is not the same
        longer.append(_renumbered(events[-1], len(longer) + 1))
    write_chained(folder, run.session, longer)
    report = run.kernel.verify(run.session)
    assert "rolled_back" in _codes(report.problems)


def _checkpoint_seq(run: scenarios.Run) -> int:
    import msgspec

    return int(msgspec.msgpack.decode(_checkpoint(run).read_bytes())["checkpoint"]["seq"])


def _renumbered(event: ev.Event, seq: int) -> ev.Event:
    import msgspec

    return msgspec.structs.replace(event, seq=seq)


def test_without_the_checkpoint_the_rollback_verifies(tmp_path: Path) -> None:
    """The control, and the documented limit: the checkpoint is a tripwire in the agent's reach."""
    run, last = _rolled_back_run(tmp_path)
    _checkpoint(run).unlink()
    assert run.kernel.verify(run.session).ok
    assert run.kernel.load(run.session).state.last_seq == last


def test_a_human_repair_records_the_loss_and_the_session_goes_on(tmp_path: Path) -> None:
    run, last = _rolled_back_run(tmp_path)
    before, applied = run.kernel.repair(run.session, actor=H, reason="restored from a backup")
    assert "rolled_back" in _codes(before.problems)
    (repaired,) = [e for e in applied.events if isinstance(e, ev.LedgerRepaired)]
    assert repaired.seq == last + 1 and repaired.sig is not None
    assert any(p.startswith("rolled_back:") for p in repaired.payload.problems)
    assert run.kernel.verify(run.session).ok
    assert run.kernel.load(run.session).state.integrity == ()
