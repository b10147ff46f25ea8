"""Prepared workspaces, built once per test run through the real CLI and copied by each test
that changes them (``Ws.copy``): building them is most of the cost, copying is cheap.

- ``at_datamart``: sessions A and A2 (the same first question, the same answers: F1 ablazione =
  the flag, F2 completed by itself on the empty memory, F3 … F7), both waiting at F8 datamart;
- ``at_f8``: A's datamart skipped, so its memory promotion review is open (one candidate);
- ``promoted``: A's candidate promoted and A finalized (its solved question saved), A2 still at
  datamart — its clarification is now in memory;
- ``at_f2``: on ``promoted``, session B (the demo's second question, only the year grounded in
  F1) with its F2 review open: the memory and the solved question recalled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tht.memory.support import (
    SECOND_QUESTION,
    Ws,
    first_session_to_datamart,
    make_workspace,
)


@dataclass(frozen=True)
class Prepared:
    at_datamart: Ws
    at_f8: Ws
    promoted: Ws
    at_f2: Ws
    a: str  # the first session (promotes)
    a2: str  # its twin (its clarification ends up already in memory)
    b: str  # the second session (recalls)
    candidate_seq: int  # A's concept_clarified of ablazione
    promotion_review: int  # A's memory_promotion review
    recall_review: int  # B's memory_recall review
    memory_id: str
    solved_id: str


def _digest(root: Path) -> str:
    """Every file of a prepared workspace, names and bytes."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prepared]:
    base = tmp_path_factory.mktemp("memory-e2e")
    ws = make_workspace(base / "at_datamart")
    a = first_session_to_datamart(ws)
    a2 = first_session_to_datamart(ws)
    candidate_seq = ws.seq_of(a, "concept_clarified", "ablazione")

    at_f8 = ws.copy(base / "at_f8")
    ran = at_f8.skip_datamart(a)["ran"]
    assert ran["stage"] == "memory_promotion" and ran["status"] == "review", ran
    promotion_review = int(ran["review"])

    promoted = at_f8.copy(base / "promoted")
    answered = promoted.answer(a, promotion_review, "--choose", f"c{candidate_seq}")
    (memory_id,) = answered["memory"]["saved"]
    finalized = promoted.ok("session", "finalize", a, "--as", "human:ann")
    assert [t["status"] for t in finalized["after_finalize"]] == ["done"], finalized
    solved = promoted.ok("memory", "list")["solved_questions"]
    assert len(solved) == 1, solved

    at_f2 = promoted.copy(base / "at_f2")
    b = at_f2.new_session(SECOND_QUESTION)
    at_f2.step(b, "disambiguation", "20-f1-year.json", "--choose", "year")
    ran = at_f2.close_f1(b)["ran"]
    assert ran["stage"] == "memory_recall" and ran["status"] == "review", ran

    snapshots = (ws, at_f8, promoted, at_f2)
    digests = [_digest(s.root) for s in snapshots]
    yield Prepared(
        at_datamart=ws,
        at_f8=at_f8,
        promoted=promoted,
        at_f2=at_f2,
        a=a,
        a2=a2,
        b=b,
        candidate_seq=candidate_seq,
        promotion_review=promotion_review,
        recall_review=int(ran["review"]),
        memory_id=str(memory_id),
        solved_id=str(solved[0]["id"]),
    )
    changed = [s.root.name for s, d in zip(snapshots, digests, strict=True) if _digest(s.root) != d]
    assert not changed, f"a test changed the prepared workspace(s) {changed}: copy them first"
