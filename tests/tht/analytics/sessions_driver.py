"""Real session ledgers for the analytics tests, written by the real kernel with a manual clock.

Three sessions in one workspace, every human wait chosen so the expected durations are exact.
Private text (question, meanings, rationales, artifact content, reasons, failure message, the
reviewer's id) is seeded so the privacy test can prove none of it reaches the analytics store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kernel.workspace import init_workspace
from tht.composition import App, open_app

PRIVATE = (
    "Quanti ricoveri con ablazione",
    "SECRET-MEANING",
    "SECRET-RATIONALE",
    "SECRET-QUESTION-TEXT",
    "SECRET-REASON",
    "SECRET-FAILURE",
    "alice",
    "What does",
)
START = datetime(2026, 7, 20, 9, 0, tzinfo=UTC)


class ManualClock:
    def __init__(self, start: datetime = START) -> None:
        self.now_value = start

    def now(self) -> datetime:
        return self.now_value

    def advance(self, minutes: float) -> None:
        self.now_value += timedelta(minutes=minutes)


@dataclass
class Driver:
    app: App
    clock: ManualClock
    sessions: list[str] = field(default_factory=list)

    def new(self, question: str = "Quanti ricoveri con ablazione nel 2023?") -> str:
        session = self.app.new_session(question, actor="human:alice").session
        self.sessions.append(session)
        return session

    def propose(
        self, session: str, stage: str, proposal: dict[str, object], after: float = 1
    ) -> None:
        self.clock.advance(after)
        self.app.propose(session, stage, json.dumps(proposal).encode(), "proposal.json")

    def answer(self, session: str, after: float, **choice: object) -> None:
        self.clock.advance(after)
        seq = self.app.kernel.load(session).state.open_reviews[0].seq
        self.app.kernel.answer(
            session,
            seq,
            actor="human:alice",
            rationale="SECRET-RATIONALE",
            **choice,  # type: ignore[arg-type]
        )

    def confirm(self, session: str, stage: str, wait: float, **extra: object) -> None:
        self.propose(session, stage, {"kind": "confirm", "prompt": "What does it say?", **extra})
        self.answer(session, wait, approve=True)


def make_workspace(root: Path) -> Driver:
    init_workspace(root)
    app = open_app(root)
    clock = ManualClock()
    app.kernel.clock = clock
    app.clock = clock
    return Driver(app, clock)


REWRITE = {
    "kind": "select",
    "prompt": "Rewrite?",
    "options": [
        {
            "id": "q",
            "label": "the rewriting",
            "events": [
                {"type": "question_rewritten", "payload": {"question": "SECRET-QUESTION-TEXT"}}
            ],
        }
    ],
}

SELECT = {
    "kind": "select",
    "prompt": "What does 'ablazione' mean here?",
    "options": [
        {
            "id": "flag",
            "label": "the flag column",
            "events": [
                {
                    "type": "concept_clarified",
                    "subject": "ablazione",
                    "payload": {"meaning": "SECRET-MEANING"},
                }
            ],
        }
    ],
}


def drive_three_sessions(root: Path) -> Driver:
    """A: select + confirm, skip, rewrite, reopen, confirm again. B: slow confirm, failure.
    C: a review left open."""
    d = make_workspace(root)
    a = d.new()  # 09:00
    d.propose(a, "disambiguation", SELECT)  # 09:01 stage_started + review
    d.answer(a, 7, choose=("flag",))  # 09:08: wait 7 min
    d.confirm(a, "disambiguation", 2)  # request 09:09, answer 09:11 → completed (run 10 min)
    d.clock.advance(1)
    d.app.kernel.skip(a, "memory_recall", actor="human:alice", reason="SECRET-REASON")  # 09:12
    d.propose(a, "rewriting", REWRITE, after=0)  # 09:12 the rewriting (question.md: by tht)
    d.answer(a, 0, choose=("q",))
    d.confirm(a, "rewriting", 3)  # 09:13 → 09:16 (run 09:12 → 09:16: 4 min)
    d.clock.advance(1)
    d.app.kernel.reopen(a, "disambiguation", actor="human:alice", reason="SECRET-REASON")  # 09:17
    d.confirm(a, "disambiguation", 4)  # 09:18 → 09:22 (run 4 min; total 14 min)

    b = d.new()  # 09:22
    d.confirm(b, "disambiguation", 20)  # 09:23 → 09:43 (run 20 min)
    d.propose(
        b,
        "memory_recall",
        {"kind": "fail", "failure": {"code": "memory-unavailable", "message": "SECRET-FAILURE"}},
    )  # 09:44 failed (started and failed at once)

    c = d.new()  # 09:44
    d.propose(c, "disambiguation", SELECT)  # 09:45: a review nobody answers
    return d
