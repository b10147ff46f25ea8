"""Crash safety: a real writer process SIGKILLed at random moments loses nothing it acknowledged.

A writer (``tests/support/ledger_writer.py``) appends receipt batches of 1–40 events through the
real kernel and acknowledges each append after it returns. The test lets it acknowledge 0–3
appends, then kills it with SIGKILL after a further random delay of 0–10 ms — during start-up,
while loading, mid-``write``, mid-``fsync``, while writing the head anchor or the status cache —
≥ 200 times under the ci profile. After every kill:

- ``verify`` is ok, or reports only a torn tail, which ``verify --repair`` quarantines;
- every acknowledged append is in the ledger: its last line hashes to the head it was told;
- no acknowledged batch is half-present, and a half-present batch (a ``write`` cut short by the
  kill: its first lines complete, the rest torn) is only ever the ledger's last batch — see
  ``test_an_interrupted_batch_leaves_none_of_its_events`` for that known gap;
- the status (cached, incremental fold) equals the fold of the ledger, and the next writer
  appends after whatever the crash left.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import settings

from kernel import events as ev
from kernel.errors import IntegrityError
from kernel.fold import fold
from kernel.ledger import line_hash
from kernel.workflow_kernel import WorkflowKernel
from tests.support.kernel_env import admitted_session, make_kernel, receipt_outcome

REPO = Path(__file__).resolve().parents[2]
KILLS = 200 if settings.get_current_profile_name() == "ci" else 60
KILLS_PER_SESSION = 25
MAX_DELAY_S = 0.010
_SUBJECT = re.compile(r"^w(\d+)-b(\d+)-(\d+)of(\d+)$")


def _writer(*args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.ledger_writer", *args],
        cwd=REPO,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


def _complete_acks(acks: Path) -> list[tuple[int, int, str]]:
    """Acknowledged appends; a partial ack line (killed mid-write) is dropped from the file."""
    if not acks.exists():
        return []
    data = acks.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with acks.open("r+b") as fh:
            fh.truncate(end)
    rows = []
    for line in data[:end].decode().splitlines():
        first, last, head = line.split()
        rows.append((int(first), int(last), head))
    return rows


def _await_acks(acks: Path, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if acks.exists() and acks.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.0005)
    raise AssertionError(f"the writer acknowledged fewer than {count} appends in {timeout} s")


class CrashChecker:
    """What must hold after each kill."""

    def __init__(self, kernel: WorkflowKernel, root: Path, session: str) -> None:
        self.kernel = kernel
        self.session = session
        self.acks = root / f"acks-{session}.txt"
        self.torn = 0
        self.acknowledged = 0
        self.half_batches: set[tuple[str, str]] = set()

    def check(self) -> None:
        report = self.kernel.verify(self.session)
        codes = [p.code for p in report.problems]
        # a kill after the fsync and before the anchor's store leaves acknowledged-looking lines
        # past the anchor ("unanchored"): never an event lost, and only a human accepts them
        assert set(codes) <= {"torn_tail", "unanchored"}, report.problems
        if codes:
            self.torn += "torn_tail" in codes
            self.kernel.repair(self.session, actor="human:ops", reason="after a crash")
            repaired = self.kernel.verify(self.session)
            assert repaired.ok, repaired.problems
        ledger = self.kernel.store.ledger(self.session)
        lines = ledger.read_bytes().split(b"\n")[:-1]
        acked = _complete_acks(self.acks)
        for first, last, head in acked:
            assert last <= len(lines), f"acknowledged seq {last} is missing"
            assert line_hash(lines[last - 1]) == head, f"acknowledged seq {last} changed"
            assert first <= last
        self.acknowledged = len(acked)
        events = ledger.read().events
        batches: dict[tuple[str, str], list[int]] = defaultdict(list)
        sizes: dict[tuple[str, str], int] = {}
        last_key = None
        for event in events:
            match = _SUBJECT.match(event.subject or "")
            if match:
                last_key = (match[1], match[2])
                batches[last_key].append(event.seq)
                sizes[last_key] = int(match[4])
        acked_seqs = {seq for first, last, _ in acked for seq in range(first, last + 1)}
        for key, seqs in batches.items():
            if len(seqs) == sizes[key] or key in self.half_batches:
                continue
            assert key == last_key, f"batch {key} is half-present and not the last one"
            assert not acked_seqs & set(seqs), f"half-present batch {key} was acknowledged"
            self.half_batches.add(key)
        state = self.kernel.load(self.session).state
        assert state == fold(self.kernel.session_workflow(self.session), events)


def test_sigkilled_writers_lose_no_acknowledged_append(tmp_path: Path) -> None:
    kernel = make_kernel(tmp_path)
    rng = random.Random(20260101)
    errors = tmp_path / "zygote.err"
    with errors.open("w") as err:
        zygote = _writer(
            "zygote", str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err
        )
    assert zygote.stdin is not None and zygote.stdout is not None
    checker: CrashChecker | None = None
    total_acknowledged = torn = half = waited = 0
    try:
        for kill in range(KILLS):
            if kill % KILLS_PER_SESSION == 0:
                if checker is not None:
                    total_acknowledged += checker.acknowledged
                    torn += checker.torn
                    half += len(checker.half_batches)
                checker = CrashChecker(kernel, tmp_path, admitted_session(kernel))
            assert checker is not None
            zygote.stdin.write(f"{checker.session} {checker.acks} {kill}\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            wait_for = rng.choice((0, 0, 1, 2, 3))
            _await_acks(checker.acks, checker.acknowledged + wait_for)
            waited += wait_for
            time.sleep(rng.uniform(0, MAX_DELAY_S))
            os.kill(pid, signal.SIGKILL)
            status = int(zygote.stdout.readline())
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
                f"writer {kill} ended on its own (status {status}): {errors.read_text()}"
            )
            checker.check()
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=30)
    assert checker is not None
    total_acknowledged += checker.acknowledged
    torn += checker.torn
    half += len(checker.half_batches)
    # the kills landed while appends were happening, not only before the first one
    assert total_acknowledged >= waited >= KILLS // 2
    print(
        f"{KILLS} kills, {total_acknowledged} acknowledged appends, {torn} torn tails repaired, "
        f"{half} interrupted batches left half-present"
    )


def test_a_standalone_writer_process_killed_mid_loop_loses_nothing(tmp_path: Path) -> None:
    """The same check with plain ``python`` processes (no fork): start-up, imports and all."""
    kernel = make_kernel(tmp_path)
    checker = CrashChecker(kernel, tmp_path, admitted_session(kernel))
    for seed in range(3):
        writer = _writer("loop", str(tmp_path), checker.session, str(checker.acks), str(seed))
        _await_acks(checker.acks, checker.acknowledged + 5)
        time.sleep(random.Random(seed).uniform(0, MAX_DELAY_S))
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
        checker.check()
    assert checker.acknowledged >= 15


def test_a_torn_tail_is_never_an_event_and_repair_quarantines_it(tmp_path: Path) -> None:
    """What a crash mid-``write`` leaves (a final line without its newline), made on purpose."""
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    ledger = kernel.store.ledger(session)
    complete = ledger.read_bytes()
    last_line = complete.split(b"\n")[-2]
    torn = last_line[: len(last_line) // 2]
    with ledger.path.open("ab") as fh:
        fh.write(torn)
    report = kernel.verify(session)
    assert [(p.code, p.line, p.repairable) for p in report.problems] == [
        ("torn_tail", report.events + 1, True)
    ]
    shown, problems = kernel.load_for_display(session)
    assert shown.state == fold(kernel.session_workflow(session), ledger.read().events)
    assert shown.torn is not None and [p.code for p in problems] == ["torn_tail"]
    with pytest.raises(IntegrityError):  # policy never folds a ledger that does not verify
        kernel.load(session)
    kernel.repair(session, actor="human:ops", reason="crash mid-write")
    assert kernel.verify(session).ok
    after = ledger.read_bytes()
    assert after.startswith(complete)
    assert after.count(b"\n") == complete.count(b"\n") + 1  # + ledger_repaired
    assert b'"type":"ledger_repaired"' in after[len(complete) :]
    assert _quarantined(ledger.quarantine_path) == [(len(complete), torn)]


def test_the_next_append_refuses_a_torn_tail_and_launders_nothing(tmp_path: Path) -> None:
    """ARCHITECTURE §3.9 rule 3: an append never quarantines (that would let `truncate -s -1`
    plus any agent command rewrite a human's final batch silently)."""
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    ledger = kernel.store.ledger(session)
    with ledger.path.open("ab") as fh:
        fh.write(b'{"type":"stage_started","seq":5,')
    damaged = ledger.read_bytes()
    with pytest.raises(IntegrityError):
        kernel.apply_outcome(session, "disambiguation", receipt_outcome("a"), actor="agent")
    with pytest.raises(IntegrityError):  # even straight at the ledger, under its lock
        ledger.append([], expected_last_seq=4, clock=kernel.clock)
        ledger.append(
            [
                ev.EventDraft(
                    type="session_paused", actor="human:x", payload=ev.OptionalReasonPayload()
                )
            ],
            expected_last_seq=4,
            clock=kernel.clock,
        )
    assert ledger.read_bytes() == damaged
    assert not ledger.quarantine_path.exists()


def _quarantined(path: Path) -> list[tuple[int, bytes]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["offset"], base64.b64decode(r["data_b64"])) for r in records]


def test_an_interrupted_batch_leaves_none_of_its_events(tmp_path: Path) -> None:
    """What SIGKILL mid-``write`` of a multi-event batch leaves (seen in the crash loop above):
    the batch's first line complete, the next one torn, the head anchor still at the previous
    batch. The batch is all or nothing: its whole first line is torn too (``batch_left``)."""
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    ledger = kernel.store.ledger(session)
    before, anchor = ledger.read_bytes(), ledger.head_path.read_bytes()
    kernel.apply_outcome(session, "disambiguation", receipt_outcome("a", "b", "c"), actor="agent")
    batch = ledger.read_bytes()[len(before) :]
    cut = batch.index(b"\n") + 1 + 10
    ledger.path.write_bytes(before + batch[:cut])
    ledger.head_path.write_bytes(anchor)
    read = ledger.read()
    assert len(read.events) == before.count(b"\n")  # readers never see half a batch
    assert read.torn is not None and read.torn.offset == len(before)
    report = kernel.verify(session)
    assert [p.code for p in report.problems] == ["torn_tail"]
    assert "1 line(s) of an unfinished batch" in report.problems[0].message
    kernel.repair(session, actor="human:ops", reason="interrupted batch")
    assert ledger.read_bytes().startswith(before)
    assert kernel.verify(session).ok
    assert kernel.load(session).state.last_seq == before.count(b"\n") + 1  # ledger_repaired


def test_a_batch_cut_exactly_at_a_line_end_is_still_torn(tmp_path: Path) -> None:
    """No partial line at all: the file ends with a newline, but the batch's last line is
    missing (batch_left > 0 on the final line). Readers, tail and the next append agree."""
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    ledger = kernel.store.ledger(session)
    before, anchor = ledger.read_bytes(), ledger.head_path.read_bytes()
    kernel.apply_outcome(session, "disambiguation", receipt_outcome("a", "b", "c"), actor="agent")
    batch = ledger.read_bytes()[len(before) :]
    ledger.path.write_bytes(before + batch[: batch.index(b"\n") + 1])
    ledger.head_path.write_bytes(anchor)
    last = before.count(b"\n")
    assert ledger.tail().last_seq == last
    assert ledger.tail().size == len(before)
    assert kernel.load_for_display(session)[0].state.last_seq == last
    with pytest.raises(IntegrityError):
        kernel.apply_outcome(session, "disambiguation", receipt_outcome("d"), actor="agent")
    kernel.repair(session, actor="human:ops", reason="batch cut at a line end")
    applied = kernel.apply_outcome(session, "disambiguation", receipt_outcome("d"), actor="agent")
    assert applied.events[0].seq == last + 2  # after ledger_repaired
    assert kernel.verify(session).ok
    assert _quarantined(ledger.quarantine_path)[0][0] == len(before)
