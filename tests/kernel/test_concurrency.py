"""Concurrency: real processes appending to one session at once.

- Six writer processes (``tests/support/ledger_writer.py race``) append receipt batches through
  the kernel, retrying on ``ConflictError``: no gap, no duplicate, no lost or extra event, every
  batch contiguous, and the one ``stage_started`` decided on the state it appended after.
- Real ``tht`` CLI processes race on one session with the ledger lock held until every one of
  them has loaded its state and is waiting to append: exactly one wins; every loser exits 4
  with a ``conflict`` error object and writes nothing. Two pauses (or two answers to one review)
  never both succeed, with or without the lock held.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from kernel.events import ReviewAnswered, SessionPaused, StageStarted
from kernel.ledger import Ledger
from tests.support.kernel_env import QUESTION, admitted_session, make_kernel

REPO = Path(__file__).resolve().parents[2]
WRITERS = 6
BATCHES = 15
RACERS = 4

pytestmark = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="needs Linux /proc/locks to see blocked flock waiters"
)


def test_concurrent_writers_leave_no_gap_duplicate_or_half_written_batch(tmp_path: Path) -> None:
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    initial = kernel.load(session).state.last_seq
    go = tmp_path / "go"
    race = [sys.executable, "-m", "tests.support.ledger_writer", "race", str(tmp_path), session]
    writers = [
        subprocess.Popen(
            [*race, f"w{i}", str(BATCHES), str(go)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(WRITERS)
    ]
    for writer in writers:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
    go.touch()
    results = []
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        results.append(json.loads(out))

    ledger = kernel.store.ledger(session)
    report = ledger.verify()
    assert report.ok, report.problems
    events = ledger.read().events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    by_seq = {e.seq: e for e in events}
    acknowledged: list[str] = []
    for i, result in enumerate(results):
        assert len(result["batches"]) == BATCHES
        for n, (first, last) in enumerate(result["batches"]):
            batch = [by_seq[seq] for seq in range(first, last + 1)]
            subjects = [e.subject for e in batch if not isinstance(e, StageStarted)]
            expected = [f"w{i}-{n}-{j}" for j in range(3)]
            assert subjects == expected, f"batch {n} of w{i} is not contiguous: {subjects}"
            acknowledged.extend(expected)
    receipts = [e.subject for e in events[initial:] if e.subject is not None]
    assert sorted(receipts) == sorted(acknowledged), "lost, duplicated or extra events"
    assert len(receipts) == len(set(receipts)) == WRITERS * BATCHES * 3
    started = [e for e in events if isinstance(e, StageStarted) and e.stage == "disambiguation"]
    assert len(started) == 1, "two writers both started the stage"
    assert len(events) == initial + 1 + WRITERS * BATCHES * 3
    print(f"{sum(r['conflicts'] for r in results)} conflicts retried")


def test_verify_during_concurrent_appends_never_reports_a_false_problem(tmp_path: Path) -> None:
    """A reader verifying while a writer appends sees the ledger and its head anchor at some
    instant: never "lines removed" or "edited" (the anchor is read before and after the lines).
    At most a torn tail: the reader caught a ``write`` in progress."""
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    go = tmp_path / "go"
    race = [sys.executable, "-m", "tests.support.ledger_writer", "race", str(tmp_path), session]
    writer = subprocess.Popen(
        [*race, "w0", "150", str(go)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    go.touch()
    ledger = kernel.store.ledger(session)
    verified = 0
    while writer.poll() is None:
        report = ledger.verify()
        assert {p.code for p in report.problems} <= {"torn_tail"}, report.problems
        verified += 1
    assert writer.returncode == 0, writer.communicate()[1]
    assert verified >= 10
    assert ledger.verify().ok


# --------------------------------------------------------------------------- CLI races


def _tht(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tht", *args, "--workspace", str(workspace), "--json"],
        capture_output=True,
        text=True,
        env=_env(workspace),
        check=False,
        timeout=60,
    )


def _env(workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(workspace / ".home")
    return env


@pytest.fixture
def cli_session(tmp_path: Path) -> tuple[Path, str]:
    """A workspace with one admitted session, made in-process (what `tht workspace init` and
    `tht session new` do) to keep the test fast; the races themselves are CLI processes."""
    from kernel.workspace import init_workspace
    from tht.composition import open_app

    workspace = tmp_path / "ws"
    init_workspace(workspace)
    created = open_app(workspace).new_session(QUESTION, actor="agent")
    assert created.state.current_stage == "disambiguation"
    return workspace, created.session


def _blocked_on(lock: Path, pids: set[int]) -> set[int]:
    """The pids waiting for an flock on ``lock`` (Linux ``/proc/locks``: ``->`` lines)."""
    inode = os.stat(lock).st_ino
    waiting = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        # "1: -> FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF"
        if len(fields) > 6 and fields[1] == "->" and fields[6].endswith(f":{inode}"):
            waiting.add(int(fields[5]))
    return waiting & pids


@contextmanager
def _held(lock: Path) -> Iterator[None]:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _race(
    workspace: Path, session: str, argvs: Sequence[Sequence[str]], *, hold: bool
) -> list[tuple[int, dict[str, object], str]]:
    """Start every command at once; with ``hold``, release the ledger lock only once all of them
    are blocked on it (each has loaded its state and planned its append). Returns
    ``(exit code, JSON body, stderr)`` per command."""
    lock = workspace / "sessions" / session / "ledger.jsonl.lock"

    def start() -> list[subprocess.Popen[str]]:
        return [
            subprocess.Popen(
                [sys.executable, "-m", "tht", *argv, "--workspace", str(workspace), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(workspace),
            )
            for argv in argvs
        ]

    if hold:
        with _held(lock):
            procs = start()
            pids = {p.pid for p in procs}
            deadline = time.monotonic() + 60
            while _blocked_on(lock, pids) != pids:
                early = [p for p in procs if p.poll() is not None]
                assert not early, f"exited before reaching the lock: {early[0].communicate()}"
                assert time.monotonic() < deadline, "the racers never all reached the lock"
                time.sleep(0.005)
    else:
        procs = start()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        results.append((proc.returncode, json.loads(out), err))
    return results


def _ledger(workspace: Path, session: str) -> bytes:
    return (workspace / "sessions" / session / "ledger.jsonl").read_bytes()


def _verify_ok(workspace: Path, session: str) -> None:
    done = _tht(workspace, "ledger", "verify", session)
    assert done.returncode == 0 and json.loads(done.stdout)["ok"], done.stdout


def _one_winner_and_conflicts(results: list[tuple[int, dict[str, object], str]]) -> None:
    codes = sorted(code for code, _, _ in results)
    assert codes == [0] + [4] * (len(results) - 1), [(c, e) for c, _, e in results]
    for code, body, stderr in results:
        if code == 4:
            error = body["error"]
            assert isinstance(error, dict)
            assert error["code"] == "conflict" and error["exit_code"] == 4
            assert stderr.startswith("error: ") and "Traceback" not in stderr


def test_every_loser_of_an_append_race_exits_4_and_writes_nothing(
    cli_session: tuple[Path, str], tmp_path: Path
) -> None:
    workspace, session = cli_session
    proposal = tmp_path / "confirm.json"
    proposal.write_text(json.dumps({"kind": "confirm", "prompt": "Approve the clarifications?"}))
    before = _ledger(workspace, session)
    argv = ["propose", "disambiguation", "--file", str(proposal), session]
    results = _race(workspace, session, [argv] * RACERS, hold=True)
    _one_winner_and_conflicts(results)
    ((winner, _),) = [(body, err) for code, body, err in results if code == 0]
    added = _ledger(workspace, session)[len(before) :]
    assert _ledger(workspace, session).startswith(before)
    assert added.count(b"\n") == len(winner["events"]) == 2  # stage_started + review_requested
    _verify_ok(workspace, session)


@pytest.mark.parametrize("hold", [True, False], ids=["lock-held", "free-running"])
def test_two_concurrent_pauses_never_both_succeed(
    cli_session: tuple[Path, str], hold: bool
) -> None:
    workspace, session = cli_session
    pause = ["session", "pause", session, "--as", "human:ana"]
    resume = ["session", "resume", session, "--as", "human:ana"]
    ledger = Ledger(workspace / "sessions" / session / "ledger.jsonl", session)
    for round_ in range(1 if hold else 2):
        results = _race(workspace, session, [pause] * RACERS, hold=hold)
        codes = sorted(code for code, _, _ in results)
        if hold:
            _one_winner_and_conflicts(results)
        else:  # a loser either lost the append (4) or loaded the paused state (5)
            assert codes[0] == 0 and all(c in (4, 5) for c in codes[1:]), results
        paused = [e for e in ledger.read().events if isinstance(e, SessionPaused)]
        assert len(paused) == round_ + 1, "two pauses succeeded"
        assert _tht(workspace, *resume).returncode == 0
    _verify_ok(workspace, session)


@pytest.mark.parametrize("hold", [True, False], ids=["lock-held", "free-running"])
def test_two_concurrent_answers_to_one_review_never_both_succeed(
    cli_session: tuple[Path, str], tmp_path: Path, hold: bool
) -> None:
    workspace, session = cli_session
    proposal = tmp_path / "select.json"
    options = [
        {
            "id": option,
            "label": f"meaning {option}",
            "events": [
                {"type": "concept_clarified", "subject": "schools", "payload": {"meaning": option}}
            ],
        }
        for option in ("a", "b", "c", "d")
    ]
    proposal.write_text(json.dumps({"kind": "select", "prompt": "Which?", "options": options}))
    proposed = _tht(workspace, "propose", "disambiguation", "--file", str(proposal), session)
    review = json.loads(proposed.stdout)["review"]
    answers = [
        ["review", "answer", str(review), session, "--choose", option, "--as", "human:ana"]
        for option in ("a", "b", "c", "d")
    ]
    results = _race(workspace, session, answers, hold=hold)
    if hold:
        _one_winner_and_conflicts(results)
    else:  # a loser either lost the append (4) or found the review already answered (5)
        codes = sorted(code for code, _, _ in results)
        assert codes[0] == 0 and all(c in (4, 5) for c in codes[1:]), results
    events = Ledger(workspace / "sessions" / session / "ledger.jsonl", session).read().events
    answered = [e for e in events if isinstance(e, ReviewAnswered) and e.causation == review]
    clarified = [e for e in events if e.subject == "schools"]
    assert len(answered) == 1 and len(clarified) == 1, "two answers to one review succeeded"
    _verify_ok(workspace, session)
