"""Tamper evidence: editing, deleting, swapping, duplicating or re-chaining any ledger line is
detected by ``verify`` (``tht ledger verify`` exits 7), and the problems name the line.

The hash chain catches a change to any line but the last (the next line's ``prev`` no longer
matches); the head anchor (``ledger.head``, the last acknowledged seq and hash) catches a change
to, or the removal of, the last lines — and a forger who rebuilds the whole chain after an edit.
``verify --repair`` never "repairs" tampering: it only quarantines a torn tail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel.errors import IntegrityError
from kernel.events import ProposedEvent, ReviewOptionPayload
from kernel.ledger import line_hash
from kernel.outcomes import ArtifactChange, ModuleOutcome, ReviewRequest
from kernel.workflow_kernel import WorkflowKernel
from kernel.workspace import init_workspace
from tests.support.kernel_env import admitted_session, make_kernel, receipt_outcome

Lines = list[bytes]


def _build(root: Path) -> tuple[WorkflowKernel, str, Path]:
    """A workspace with a session of 17 events of many types (decisions, artifacts, lifecycle)."""
    init_workspace(root)
    kernel = make_kernel(root)
    session = admitted_session(kernel)
    option = ReviewOptionPayload(
        id="k12",
        label="K-12 schools",
        events=(
            ProposedEvent(type="concept_clarified", subject="schools", payload={"meaning": "x"}),
        ),
    )
    select = ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(kind="select", prompt="Which schools?", options=(option,)),
    )
    review = kernel.apply_outcome(session, "disambiguation", select, actor="agent")
    kernel.answer(session, review.events[-1].seq, actor="human:ana", choose=("k12",))
    confirm = ModuleOutcome(
        status="awaiting_review", review=ReviewRequest(kind="confirm", prompt="Done?")
    )
    review = kernel.apply_outcome(session, "disambiguation", confirm, actor="agent")
    kernel.answer(session, review.events[-1].seq, actor="human:ana", approve=True)
    kernel.skip(session, "memory_recall", actor="human:ana", reason="no memories yet")
    rewrite = ModuleOutcome(
        status="awaiting_review",
        artifacts=(ArtifactChange(name="question.md", content=b"# Schools in Alameda\n"),),
        review=ReviewRequest(kind="confirm", prompt="Approve?", artifacts=("question.md",)),
    )
    kernel.apply_outcome(session, "rewriting", rewrite, actor="agent")
    kernel.pause(session, actor="human:ana")
    kernel.resume(session, actor="human:ana")
    ledger_path = root / "sessions" / session / "ledger.jsonl"
    assert kernel.verify(session).ok
    return kernel, session, ledger_path


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bytes, bytes]:
    root = tmp_path_factory.mktemp("tamper")
    _, session, ledger_path = _build(root)
    anchor = ledger_path.with_name("ledger.head").read_bytes()
    return root, session, ledger_path.read_bytes(), anchor


def _edit_ts(line: bytes) -> bytes:
    """A schema-valid edit: same fields, another timestamp."""
    event = json.loads(line)
    event["ts"] = "2031-01-01T00:00:00.000Z"
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def _with_field(line: bytes, key: str, value: object) -> bytes:
    event = json.loads(line)
    event[key] = value
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def _rechain(lines: Lines, start: int, session_prev: str) -> Lines:
    """Rebuild ``prev`` from line ``start`` on: what a forger who knows the format would do."""
    out = list(lines)
    prev = line_hash(out[start - 1]) if start else session_prev
    for i in range(start, len(out)):
        out[i] = _with_field(out[i], "prev", prev)
        prev = line_hash(out[i])
    return out


def edit(lines: Lines, i: int) -> Lines:
    return [*lines[:i], _edit_ts(lines[i]), *lines[i + 1 :]]


def edit_seq(lines: Lines, i: int) -> Lines:
    return [*lines[:i], _with_field(lines[i], "seq", i + 101), *lines[i + 1 :]]


def garble(lines: Lines, i: int) -> Lines:
    return [*lines[:i], lines[i][: len(lines[i]) // 2], *lines[i + 1 :]]


def retype(lines: Lines, i: int) -> Lines:
    return [*lines[:i], _with_field(lines[i], "type", "no_such_event"), *lines[i + 1 :]]


def delete(lines: Lines, i: int) -> Lines:
    return [*lines[:i], *lines[i + 1 :]]


def swap(lines: Lines, i: int) -> Lines:
    j = i + 1 if i + 1 < len(lines) else i - 1
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return out


def duplicate(lines: Lines, i: int) -> Lines:
    return [*lines[: i + 1], lines[i], *lines[i + 1 :]]


Tamper = Callable[[Lines, int], Lines]
TAMPERS: dict[str, Tamper] = {
    "edit": edit,
    "edit_seq": edit_seq,
    "garble": garble,
    "retype": retype,
    "delete": delete,
    "swap": swap,
    "duplicate": duplicate,
}


def _inside_batch(lines: Lines, i: int) -> bool:
    """Line ``i`` (0-based) continues the batch of the line before it."""
    return i > 0 and json.loads(lines[i - 1])["batch_left"] > 0


def _first_line(name: str, i: int, n: int, lines: Lines) -> int:
    """The 1-based line the first problem must name after ``TAMPERS[name]`` at index ``i``."""
    if name == "edit":
        if _inside_batch(lines, i):
            return i + 1  # its new timestamp parts it from its own batch
        return i + 2 if i + 1 < n else n  # the next line's prev, or the head anchor on the last
    if name == "swap" and i + 1 == n:
        return n - 1  # the last line swaps with the one before it
    if name == "duplicate":
        return i + 2  # the copy
    return i + 1


def _tampered(pristine: tuple[Path, str, bytes, bytes], lines: Lines) -> WorkflowKernel:
    root, _, _, anchor = pristine
    path = next((root / "sessions").iterdir()) / "ledger.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    path.with_name("ledger.head").write_bytes(anchor)
    return make_kernel(root)


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_tampering_with_any_line_is_detected_and_named(
    pristine: tuple[Path, str, bytes, bytes], name: str
) -> None:
    root, session, data, _ = pristine
    lines = data.split(b"\n")[:-1]
    n = len(lines)
    assert n >= 15
    for i in range(n):
        kernel = _tampered(pristine, TAMPERS[name](lines, i))
        report = kernel.verify(session)
        where = f"{name} at line {i + 1}"
        assert not report.ok, f"{where} went unnoticed"
        named = [p.line for p in report.problems if p.line is not None]
        assert named and min(named) == _first_line(name, i, n, lines), (where, report.problems)
        first = min(report.problems, key=lambda p: p.line or p.seq or 0)
        assert not first.repairable, where
        before = (root / "sessions" / session / "ledger.jsonl").read_bytes()
        with pytest.raises(IntegrityError):  # nothing is appended to a damaged ledger
            kernel.pause(session, actor="human:ann")
        assert (root / "sessions" / session / "ledger.jsonl").read_bytes() == before


def test_a_schema_valid_edit_breaks_exactly_the_next_link(
    pristine: tuple[Path, str, bytes, bytes],
) -> None:
    _, session, data, _ = pristine
    lines = data.split(b"\n")[:-1]
    for i in range(len(lines) - 1):
        report = _tampered(pristine, edit(lines, i)).verify(session)
        # the new timestamp may also part the line from its batch: reported at the same line
        assert [(p.code, p.line) for p in report.problems if p.code != "batch"] == [
            ("hash_chain", i + 2)
        ]
        assert {p.line for p in report.problems} <= {i + 1, i + 2}


def test_editing_or_deleting_the_last_line_is_caught_by_the_head_anchor(
    pristine: tuple[Path, str, bytes, bytes],
) -> None:
    _, session, data, _ = pristine
    lines = data.split(b"\n")[:-1]
    n = len(lines)
    edited = _tampered(pristine, edit(lines, n - 1)).verify(session)
    assert [(p.code, p.line, p.seq) for p in edited.problems] == [("head_anchor", n, n)]
    deleted = _tampered(pristine, lines[:-1]).verify(session)
    assert [(p.code, p.line, p.seq) for p in deleted.problems] == [("head_anchor", n, n)]
    two_deleted = _tampered(pristine, lines[:-2]).verify(session)
    assert [(p.code, p.line, p.seq) for p in two_deleted.problems] == [("head_anchor", n - 1, n)]


def test_a_rebuilt_hash_chain_is_still_caught_by_the_head_anchor(
    pristine: tuple[Path, str, bytes, bytes],
) -> None:
    _, session, data, _ = pristine
    lines = data.split(b"\n")[:-1]
    genesis = json.loads(lines[0])["prev"]
    n = len(lines)
    for i in (0, n // 2, n - 1):
        forged = _rechain(edit(lines, i), i + 1, genesis)
        report = _tampered(pristine, forged).verify(session)
        assert [(p.code, p.line) for p in report.problems] == [("head_anchor", n)], i


def _verify_cli(root: Path, session: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(root / ".home")
    argv = ["ledger", "verify", session, "--workspace", str(root), "--json"]
    return subprocess.run(
        [sys.executable, "-m", "tht", *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("name", "where"),
    [("edit", "middle"), ("edit", "last"), ("delete", "last"), ("swap", "first")],
)
def test_tht_ledger_verify_exits_7_and_names_the_line(
    pristine: tuple[Path, str, bytes, bytes], name: str, where: str
) -> None:
    root, session, data, _ = pristine
    lines = data.split(b"\n")[:-1]
    n = len(lines)
    i = {"first": 0, "middle": n // 2, "last": n - 1}[where]
    _tampered(pristine, TAMPERS[name](lines, i))
    done = _verify_cli(root, session)
    assert done.returncode == 7, done.stderr
    body = json.loads(done.stdout)
    assert body["ok"] is False and body["session"] == session
    lines_named = [p["line"] for p in body["problems"] if p["line"] is not None]
    assert min(lines_named) == _first_line(name, i, n, lines)


def test_an_untouched_ledger_verifies_with_exit_0(
    pristine: tuple[Path, str, bytes, bytes],
) -> None:
    root, session, data, _ = pristine
    _tampered(pristine, data.split(b"\n")[:-1])
    done = _verify_cli(root, session)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["problems"] == []


def test_the_head_anchor_is_one_record_rewritten_in_place(tmp_path: Path) -> None:
    """No rename per append (a rename made ext4 flush on every append); an anchor written by an
    older kernel (shorter, renamed into place) is overwritten whole."""
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    ledger = kernel.store.ledger(session)
    ledger.head_path.write_bytes(json.dumps(json.loads(ledger.head_path.read_bytes())).encode())
    inode = os.stat(ledger.head_path).st_ino
    for i in range(3):
        kernel.apply_outcome(session, "disambiguation", receipt_outcome(f"r{i}"), actor="agent")
        data = ledger.head_path.read_bytes()
        assert len(data) == 128 and data.endswith(b"\n")
        assert os.stat(ledger.head_path).st_ino == inode
        tail = ledger.tail()
        assert json.loads(data) == {"seq": tail.last_seq, "head": tail.head}
        assert ledger.read_anchor() == (tail.last_seq, tail.head)
    assert kernel.verify(session).ok
