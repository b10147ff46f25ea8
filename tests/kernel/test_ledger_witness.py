"""The witness of a workspace-level ledger (kernel/ledger_witness.py) over a real file ledger:
a cut, a deletion or a replaced history is ``rolled_back``; a ledger that only grew is not, and
moves the witness along; a witness of another ledger, malformed or unreadable is none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.ledger_witness import WitnessedLedger, WitnessFile, witness_problem
from kernel.memory_events import MemorySavedPayload, MemorySource
from kernel.store.fs import FileSystemStore
from tests.support.rollback import roll_back


def _draft(n: int, tag: str = "") -> ev.EventDraft:
    return ev.EventDraft(
        type="memory_saved",
        actor="module:memory",
        subject=f"subject {n}{tag}",
        payload=MemorySavedPayload(
            memory_id=f"mem-{n:016d}",
            subject=f"subject {n}{tag}",
            meaning=f"meaning {n}",
            source=MemorySource(session="01SESSION0000000000000000", seq=n),
            reviewer="human:ann",
        ),
    )


class Folder:
    """A workspace's memory registry folder, opened as tht opens it (witness included)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.witness_path = root / ".tht" / "witness" / "memory.json"

    def open(self, *, witnessed: bool = True) -> WitnessedLedger:
        store = FileSystemStore(self.root / "sessions", self.root / ".tht" / "cache")
        inner = store.workspace_ledger("memory")
        path = self.witness_path if witnessed else self.root / "elsewhere.json"
        return WitnessedLedger(
            inner, WitnessFile(path, inner.session_id), label="the registry", remedy="accept"
        )

    def append(self, count: int, *, tag: str = "", witnessed: bool = True) -> None:
        ledger = self.open(witnessed=witnessed)
        for _ in range(count):
            last = ledger.inner.tail().last_seq
            ledger.append([_draft(last + 1, tag)], expected_last_seq=last, clock=FixedClock())
        ledger.close()

    def codes(self) -> list[str]:
        ledger = self.open()
        try:
            return [p.code for p in ledger.verify().problems]
        finally:
            ledger.close()


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(n=st.integers(2, 8), data=st.data())
def test_any_cut_is_rolled_back_and_any_growth_is_not(
    tmp_path_factory: pytest.TempPathFactory, n: int, data: st.DataObject
) -> None:
    f = Folder(tmp_path_factory.mktemp("witness"))
    f.append(n)
    assert f.codes() == []
    witness = json.loads(f.witness_path.read_bytes())
    assert witness["seq"] == n
    grown = data.draw(st.integers(0, 3), label="grown")
    f.append(grown)  # growth, witnessed or not, is never a rollback
    assert f.codes() == []
    assert json.loads(f.witness_path.read_bytes())["seq"] == n + grown
    keep = data.draw(st.integers(0, n + grown - 1), label="keep")
    roll_back(f.root / "memory", keep)
    codes = f.codes()
    assert "rolled_back" in codes
    ledger = f.open()
    with pytest.raises(IntegrityError, match="rolled_back"):
        ledger.tail()  # a cut (or deleted) ledger never reads as a fresh one
    # refilled past the witness with other lines, unwitnessed: still another history
    refill = n + grown - keep + data.draw(st.integers(0, 2), label="past")
    f.append(refill, tag=" (agent)", witnessed=False)
    assert f.codes() == ["rolled_back"]


def test_the_same_lines_put_back_are_no_rollback(folder: Folder) -> None:
    folder.append(4)
    saved = (folder.root / "memory" / "ledger.jsonl").read_bytes()
    roll_back(folder.root / "memory", 2)
    assert folder.codes() == ["rolled_back"]
    (folder.root / "memory" / "ledger.jsonl").write_bytes(saved)  # restored from a backup
    roll_back(folder.root / "memory", 3)
    folder.append(1, witnessed=False)  # the same line again: the same history
    assert folder.codes() == []


def test_a_witness_of_another_ledger_malformed_or_oversized_is_none(folder: Folder) -> None:
    folder.append(3)
    good = json.loads(folder.witness_path.read_bytes())
    roll_back(folder.root / "memory", 1)
    assert folder.codes() == ["rolled_back"]
    for text in (
        json.dumps({**good, "ledger": "workspace-catalog"}),
        json.dumps({**good, "version": 2}),
        "{not json",
        json.dumps({**good, "pad": "x" * 5000}),
    ):
        folder.witness_path.write_text(text)
        assert folder.codes() == [], text


def test_a_witness_whose_hint_is_another_stores_is_read_by_seq(folder: Folder) -> None:
    """A ledger migrated between stores keeps its lines, not its hints: the witnessed line is
    then found by its seq (the next line's ``prev``, or the head at the end)."""
    folder.append(5)
    good = json.loads(folder.witness_path.read_bytes())
    for seq in (3, 5):
        ledger = folder.open()
        lines = (folder.root / "memory" / "ledger.jsonl").read_bytes().splitlines()
        from kernel.ledger_verify import line_hash

        head = line_hash(lines[seq - 1])
        moved = {**good, "seq": seq, "head": head, "hint": 7}
        folder.witness_path.write_text(json.dumps(moved))
        assert ledger.problem(5) is None, seq
        folder.witness_path.write_text(json.dumps({**moved, "head": "0" * 64}))
        problem = ledger.problem(5)
        assert problem is not None and "is another one" in problem.message
        ledger.close()


def test_the_witness_moves_only_forward_unless_reset(folder: Folder) -> None:
    folder.append(3)
    ledger = folder.open()
    file = ledger.witness
    file.record(1, "a" * 64, 10)  # a command that saw less: kept as it was
    assert json.loads(folder.witness_path.read_bytes())["seq"] == 3
    file.record(1, "a" * 64, 10, reset=True)
    assert json.loads(folder.witness_path.read_bytes())["seq"] == 1
    ledger.close()


def test_witness_problem_is_pure() -> None:
    from kernel.ledger_witness import LedgerWitness

    w = LedgerWitness(ledger="x", seq=4, head="h" * 64, hint=0)
    heads = {4: "h" * 64}
    assert witness_problem(w, 4, lambda s, _: heads.get(s), label="L", remedy="R") is None
    assert witness_problem(w, 9, lambda s, _: heads.get(s), label="L", remedy="R") is None
    cut = witness_problem(w, 3, lambda s, _: heads.get(s), label="L", remedy="R")
    assert cut is not None and cut.code == "rolled_back"
    assert cut.message.startswith("L ends at seq 3") and "`R`" in cut.message
    other = witness_problem(w, 4, lambda s, _: "o" * 64, label="L", remedy="R")
    assert other is not None and "L's line 4 is another one" in other.message
    empty = LedgerWitness(ledger="x", seq=0, head="", hint=0)
    assert witness_problem(empty, 0, lambda s, _: None, label="L", remedy="R") is None


def test_a_damaged_line_before_the_witnessed_one_is_reported_not_raised(folder: Folder) -> None:
    """The witnessed line is no longer where it ended (a shorter line before it) and the ledger
    no longer decodes: verify reports both, it does not raise."""
    folder.append(4)
    path = folder.root / "memory" / "ledger.jsonl"
    lines = path.read_bytes().splitlines()
    lines[1] = b"{not an event}"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    codes = folder.codes()
    assert "rolled_back" in codes and len(codes) > 1
