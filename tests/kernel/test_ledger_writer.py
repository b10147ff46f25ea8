"""The writer's kept-open descriptors and cached tail never hide another writer's appends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import ConflictError, IntegrityError
from kernel.ledger import Ledger

SESSION = "01WRITERTEST00000000000000"


def _draft(n: int) -> ev.EventDraft:
    if n == 1:
        return ev.EventDraft(
            type="session_created",
            actor="agent",
            subject=SESSION,
            payload=ev.SessionCreatedPayload(
                question="q", workflow=ev.WorkflowRef(name="w", version=1, sha256="x")
            ),
        )
    return ev.EventDraft(
        type="evidence_consulted",
        actor="agent",
        stage="disambiguation",
        payload=ev.EvidenceConsultedPayload(
            purpose="schema_linking", generation="g", returned=(f"e{n}",)
        ),
    )


def test_two_writers_in_one_process_see_each_others_appends(tmp_path: Path) -> None:
    path = tmp_path / "s" / "ledger.jsonl"
    a, b = Ledger(path, SESSION), Ledger(path, SESSION)
    clock = FixedClock()
    a.append([_draft(1)], expected_last_seq=0, clock=clock)
    b.append([_draft(2)], expected_last_seq=1, clock=clock)
    with pytest.raises(ConflictError):
        a.append([_draft(3)], expected_last_seq=1, clock=clock)  # a's cached tail is stale
    a.append([_draft(3)], expected_last_seq=2, clock=clock)
    b.append([_draft(4), _draft(5)], expected_last_seq=3, clock=clock)
    assert [e.seq for e in Ledger(path, SESSION).read().events] == [1, 2, 3, 4, 5]
    assert Ledger(path, SESSION).verify().ok
    a.close()
    b.close()


def test_a_truncated_ledger_is_reread_not_trusted_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "s" / "ledger.jsonl"
    ledger = Ledger(path, SESSION)
    clock = FixedClock()
    ledger.append([_draft(1)], expected_last_seq=0, clock=clock)
    ledger.append([_draft(2)], expected_last_seq=1, clock=clock)
    first = path.read_bytes().split(b"\n")[0] + b"\n"
    path.write_bytes(first + b'{"partial')  # a torn tail written by someone else
    damaged = path.read_bytes()
    with pytest.raises(IntegrityError):  # seen despite the cached tail; never laundered
        ledger.append([_draft(3)], expected_last_seq=1, clock=clock)
    assert path.read_bytes() == damaged
    assert [e.seq for e in Ledger(path, SESSION).read().events] == [1]


def test_a_replaced_ledger_file_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "s" / "ledger.jsonl"
    ledger = Ledger(path, SESSION)
    clock = FixedClock()
    ledger.append([_draft(1)], expected_last_seq=0, clock=clock)
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)  # same bytes, another inode
    ledger.append([_draft(2)], expected_last_seq=1, clock=clock)
    assert [e.seq for e in Ledger(path, SESSION).read().events] == [1, 2]


def test_a_forked_child_never_shares_the_parents_descriptors(tmp_path: Path) -> None:
    path = tmp_path / "s" / "ledger.jsonl"
    ledger = Ledger(path, SESSION)
    clock = FixedClock()
    ledger.append([_draft(1)], expected_last_seq=0, clock=clock)
    pid = os.fork()
    if pid == 0:  # child: append through the inherited object
        code = 0
        try:
            ledger.append([_draft(2)], expected_last_seq=1, clock=FixedClock())
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    ledger.append([_draft(3)], expected_last_seq=2, clock=clock)
    assert [e.seq for e in Ledger(path, SESSION).read().events] == [1, 2, 3]
    assert Ledger(path, SESSION).verify().ok


def test_a_writer_process_and_a_cached_writer_interleave(tmp_path: Path) -> None:
    path = tmp_path / "s" / "ledger.jsonl"
    ledger = Ledger(path, SESSION)
    ledger.append([_draft(1)], expected_last_seq=0, clock=FixedClock())
    ledger.append([_draft(2)], expected_last_seq=1, clock=FixedClock())
    script = (
        "import sys; from pathlib import Path; from kernel import events as ev;"
        "from kernel.clock import FixedClock; from kernel.ledger import Ledger;"
        f"L = Ledger(Path({str(path)!r}), {SESSION!r});"
        "d = ev.EventDraft(type='evidence_consulted', actor='agent', stage='disambiguation',"
        " payload=ev.EvidenceConsultedPayload(purpose='schema_linking', generation='g'));"
        "L.append([d], expected_last_seq=2, clock=FixedClock())"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    with pytest.raises(ConflictError):
        ledger.append([_draft(4)], expected_last_seq=2, clock=FixedClock())
    ledger.append([_draft(4)], expected_last_seq=3, clock=FixedClock())
    assert Ledger(path, SESSION).verify().ok
