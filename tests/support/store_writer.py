"""A writer process for the PostgreSQL store's concurrency and chaos tests and its benchmark
(``python -m tests.support.store_writer`` from the repo root).

The server's URL comes from the environment variable ``THT_STORE_URL`` — never from the command
line (``ps`` would show it), and it is never printed. Every mode appends single-receipt batches
(``evidence_consulted`` in the running ``disambiguation`` stage: legal for the fold) straight
through the store's ledger (``LedgerPort.append`` with ``expected_last_seq``), one process, one
``PostgresStore``, for its whole life.

``race WORKSPACE SESSION WRITER COUNT GO ACKS``
    Read the tail, print ``ready``, wait until the file GO exists, then append COUNT receipts,
    re-reading the tail and retrying whenever the store raises ``ConflictError``. Every attempt
    has its own subject ``WRITER-N-aATTEMPT``. After each acknowledged append one line
    ``WRITER N ATTEMPT SEQ HEAD`` goes to ACKS in a single unbuffered ``write`` (a shared file
    opened ``O_APPEND``). Prints ``{"acked": N, "lost": [subject, ...], "exit_codes": [...]}``:
    the subject and exit code of every attempt that lost its race.

``chaos WORKSPACE SESSION ACKS UNAVAILABLE STOP``
    Append receipts ``c-N`` until the file STOP exists while the test stops and restarts the
    server under it. An acknowledged append writes ``N SEQ HEAD`` to ACKS. ``UnavailableError``
    (the server is down) writes its message, newlines escaped, to UNAVAILABLE and the writer
    retries after 20 ms. After any failure the writer re-syncs from the ledger before appending
    again: an append whose acknowledgement was lost with the connection (committed, or not) is
    looked for by its subject and never appended twice. Prints ``{"acked", "recovered",
    "unavailable", "conflicts"}`` as JSON.

``bench WORKSPACE SESSION COUNT GO``
    Print ``ready``, wait for GO, append COUNT receipts (no conflicts: one writer per session),
    print the elapsed seconds.

Any other error ends the process with a traceback and exit 1.

For the tests that drive it: :func:`launch` (the URL in the environment), :func:`ack_rows`,
:func:`wait_until`, :func:`started_session` and :class:`ChainWatcher`, a reader that follows a
ledger and checks every line's bytes as it appears.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import ConflictError, UnavailableError
from kernel.ledger_records import LedgerTail
from kernel.ledger_verify import line_hash
from kernel.store.base import LedgerPort
from kernel.workflow_kernel import WorkflowKernel

__all__ = [
    "URL_ENV",
    "ChainWatcher",
    "ack_rows",
    "launch",
    "receipt",
    "started_session",
    "wait_until",
]

URL_ENV = "THT_STORE_URL"
RETRY_S = 0.02
REPO = Path(__file__).resolve().parents[2]


def receipt(subject: str) -> ev.EventDraft:
    """One receipt the fold accepts in a running ``disambiguation`` stage, any number of times."""
    return ev.EventDraft(
        type="evidence_consulted",
        actor="agent",
        stage="disambiguation",
        invocation="disambiguation#1",
        subject=subject,
        payload=ev.EvidenceConsultedPayload(
            purpose="disambiguation", generation="g1", returned=(f"evidence:{subject}",)
        ),
    )


def _ledger(workspace: str, session: str) -> LedgerPort:
    from kernel.store.postgres import PostgresStore

    return PostgresStore(os.environ[URL_ENV], workspace=workspace).ledger(session)


def _wait_for(go: Path) -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while not go.exists():
        time.sleep(0.001)


def race(workspace: str, session: str, writer: str, count: int, go: Path, acks: Path) -> None:
    ledger = _ledger(workspace, session)
    clock = FixedClock()
    ack = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    # read before GO: every writer's first append chains onto the same tail, so at least
    # WRITERS - 1 of them lose their first race whatever the scheduler does
    expected = ledger.tail().last_seq
    _wait_for(go)
    lost: list[str] = []
    codes: set[int] = set()
    n = attempt = 0
    while n < count:
        subject = f"{writer}-{n}-a{attempt}"
        try:
            done = ledger.append([receipt(subject)], expected_last_seq=expected, clock=clock)
        except ConflictError as err:
            lost.append(subject)
            codes.add(err.exit_code)
            expected = ledger.tail().last_seq
            attempt += 1
            continue
        seq = done.events[-1].seq
        os.write(ack, f"{writer} {n} {attempt} {seq} {done.head}\n".encode())
        expected = seq
        n += 1
        attempt = 0
    os.close(ack)
    sys.stdout.write(json.dumps({"acked": n, "lost": lost, "exit_codes": sorted(codes)}) + "\n")


def _resync(ledger: LedgerPort, pending: str) -> tuple[int, bool]:
    """The ledger's last seq, and whether the append of ``pending`` already landed (committed,
    its acknowledgement lost with the connection): with one writer it can only be the last."""
    events = ledger.read().events
    if not events:
        return 0, False
    return events[-1].seq, events[-1].subject == pending


def chaos(workspace: str, session: str, acks: Path, unavailable: Path, stop: Path) -> None:
    ledger = _ledger(workspace, session)
    clock = FixedClock()
    ack = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    down = os.open(unavailable, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    n = recovered = outages = conflicts = 0
    expected: int | None = None  # None: re-read the ledger before the next append
    # after STOP, one last re-sync settles an append left in doubt
    while not stop.exists() or expected is None:
        subject = f"c-{n}"
        try:
            if expected is None:
                expected, landed = _resync(ledger, subject)
                if landed:
                    recovered += 1
                    n += 1
                    continue
            if stop.exists():
                break
            done = ledger.append([receipt(subject)], expected_last_seq=expected, clock=clock)
        except UnavailableError as err:
            outages += 1
            os.write(down, (err.message.replace("\n", "\\n") + "\n").encode())
            expected = None
            time.sleep(RETRY_S)
            continue
        except ConflictError:
            conflicts += 1  # the only writer, re-synced after every failure: never expected
            expected = None
            continue
        seq = done.events[-1].seq
        os.write(ack, f"{n} {seq} {done.head}\n".encode())
        expected = seq
        n += 1
    os.close(ack)
    os.close(down)
    body = {
        "acked": n - recovered,
        "recovered": recovered,
        "unavailable": outages,
        "conflicts": conflicts,
    }
    sys.stdout.write(json.dumps(body) + "\n")


def bench(workspace: str, session: str, count: int, go: Path) -> None:
    ledger = _ledger(workspace, session)
    clock = FixedClock()
    expected = ledger.tail().last_seq
    _wait_for(go)
    start = time.perf_counter()
    for n in range(count):
        ledger.append([receipt(f"b-{n}")], expected_last_seq=expected, clock=clock)
        expected += 1
    sys.stdout.write(f"{time.perf_counter() - start}\n")


# --------------------------------------------------------------------------- for the tests


def launch(dsn: str, *args: str, **popen: Any) -> subprocess.Popen[str]:
    """Start a writer; the URL goes in its environment (``ps`` shows argv), no other THT_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env[URL_ENV] = dsn
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_writer", *args],
        cwd=REPO,
        env=env,
        text=True,
        **popen,
    )


def ack_rows(path: Path) -> list[list[str]]:
    """The complete lines of an ACKS / UNAVAILABLE file, split on spaces."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return [line.split() for line in data[: data.rfind(b"\n") + 1].decode().splitlines()]


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def started_session(kernel: WorkflowKernel) -> str:
    """An admitted session whose ``disambiguation`` stage runs (receipts are legal in it)."""
    from tests.support.kernel_env import admitted_session, receipt_outcome

    session = admitted_session(kernel)
    kernel.apply_outcome(session, "disambiguation", receipt_outcome("setup"), actor="agent")
    return session


class ChainWatcher:
    """Follows a ledger from a tail, checking every new line's bytes: seq + 1, ``prev`` = the
    previous line's hash, and the tail never moving back nor losing a line it showed."""

    def __init__(self, ledger: LedgerPort, start: LedgerTail | None = None) -> None:
        self.ledger = ledger
        tail = start or ledger.tail()
        self.seq, self.hint, self.head = tail.last_seq, tail.hint, tail.head
        self.lines: dict[int, bytes] = {}

    def step(self) -> None:
        tail = self.ledger.tail()
        assert tail.last_seq >= self.seq, f"the tail moved back: {tail.last_seq} < {self.seq}"
        lines = self.ledger.lines_after(self.seq, self.hint)
        assert lines is not None and len(lines) >= tail.last_seq - self.seq, "lines vanished"
        for line in lines[: tail.last_seq - self.seq]:
            event = ev.decode_event(line)
            assert event.seq == self.seq + 1, f"gap or reorder: {event.seq} after {self.seq}"
            assert event.prev == self.head, f"seq {event.seq} does not chain onto {self.seq}"
            self.seq, self.head = event.seq, line_hash(line)
            self.lines[event.seq] = line
        assert self.head == tail.head, "the tail's head is not the hash of its last line"
        self.hint = tail.hint

    def subjects(self) -> list[str | None]:
        return [ev.decode_event(self.lines[seq]).subject for seq in sorted(self.lines)]


def main(argv: list[str]) -> None:
    mode, *args = argv
    if mode == "race":
        race(args[0], args[1], args[2], int(args[3]), Path(args[4]), Path(args[5]))
    elif mode == "chaos":
        chaos(args[0], args[1], Path(args[2]), Path(args[3]), Path(args[4]))
    elif mode == "bench":
        bench(args[0], args[1], int(args[2]), Path(args[3]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
