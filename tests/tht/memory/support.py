"""Drive Memory end to end through the real ``tht`` command line (in-process, as the console
script runs it), on the demo database and the demo proposals (``golden/demo/``).

A :class:`Ws` is one workspace folder with the deterministic environment every command of it
runs under (``THT_CLOCK``, ``THT_SEED``, its own ``THT_HOME``; no ``THT_ACTOR`` or
``THT_SESSION``): set for the length of one command and restored after, so the prepared
workspaces of module-scoped fixtures can be driven without ``monkeypatch``. :meth:`Ws.copy`
copies a prepared workspace (``copytree_sparse``) for a test that mutates it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.sparse_copy import copytree_sparse
from tests.tht.conftest import Result, run_tht
from tht.demo_database import DEMO_QUESTION, make_demo_database

REPO = Path(__file__).resolve().parents[3]
PROPOSALS = REPO / "golden" / "demo"
GOLDEN = REPO / "golden" / "memory"
H = "human:ann"
CLOCK = "fixed:2026-11-30T09:00:00Z"
SEED = "2026"
FIRST_QUESTION = DEMO_QUESTION
#: the later question of ``make demo``'s second session, which recalls the first one
SECOND_QUESTION = "Quante ablazioni per ospedale nel 2025?"
#: a question about something no memory covers (a near miss: recalls nothing)
UNRELATED_QUESTION = "Quanti pazienti per fascia di età e sesso?"  # in scope; no memory about it


@contextlib.contextmanager
def environment(values: dict[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass
class Ws:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / ".tht" / "user-data"

    def env(self, **extra: str | None) -> dict[str, str | None]:
        return {
            "THT_WORKSPACE": str(self.root),
            "THT_CLOCK": CLOCK,
            "THT_SEED": SEED,
            "THT_HOME": str(self.home),
            "THT_ACTOR": None,
            "THT_SESSION": None,
            "NO_COLOR": "1",
            **extra,
        }

    def tht(self, *args: str, **extra_env: str | None) -> Result:
        with environment(self.env(**extra_env)):
            return run_tht(*args)

    def ok(self, *args: str, **extra_env: str | None) -> Any:
        """``tht ARGS --json``, which must succeed: its JSON body."""
        done = self.tht(*args, "--json", **extra_env)
        assert done.code == 0, f"tht {' '.join(args)}: exit {done.code}\n{done.stdout}{done.stderr}"
        return done.json()

    def copy(self, to: Path) -> Ws:
        copytree_sparse(self.root, to)  # the Qdrant shard's holes stay holes (~0.5 MB, not 220)
        return Ws(to)

    # ------------------------------------------------------------------ a session's steps

    def status(self, session: str) -> dict[str, Any]:
        body: dict[str, Any] = self.ok("session", "status", session)
        return body

    def seq_of(self, session: str, kind: str, subject: str) -> int:
        for decision in self.status(session)["effective_decisions"]:
            if decision["type"] == kind and decision["subject"] == subject:
                return int(decision["seq"])
        raise AssertionError(f"no effective {kind} for {subject!r} in {session}")

    def propose(self, session: str, stage: str, name: str) -> dict[str, Any]:
        """Propose ``golden/demo/NAME`` (its ``${type:subject}`` placeholders filled in)."""
        text = (PROPOSALS / name).read_text(encoding="utf-8")
        for kind, subject in set(re.findall(r'"\$\{(\w+):([^}]+)\}"', text)):
            seq = self.seq_of(session, kind, subject)
            text = text.replace(f'"${{{kind}:{subject}}}"', str(seq))
        path = self.root / ".tht" / f"proposal-{name}"
        path.write_text(text, encoding="utf-8")
        body: dict[str, Any] = self.ok("propose", stage, "--file", str(path), session)
        return body

    def propose_json(self, session: str, stage: str, proposal: dict[str, Any]) -> Any:
        """Propose ``proposal`` (a proposal of this test, not a demo one): the result."""
        path = self.root / ".tht" / f"proposal-{stage}.json"
        path.write_text(json.dumps(proposal), encoding="utf-8")
        return self.tht("propose", stage, "--file", str(path), session, "--json")

    def answer(self, session: str, review: int, *how: str) -> dict[str, Any]:
        body: dict[str, Any] = self.ok("review", "answer", str(review), session, *how, "--as", H)
        return body

    def step(self, session: str, stage: str, name: str, *how: str) -> dict[str, Any]:
        """Propose, then answer the review it opens."""
        review = self.propose(session, stage, name)["review"]
        assert review is not None, f"{name}: no review opened"
        return self.answer(session, int(review), *how)

    def open_review(self, session: str, stage: str) -> int:
        for review in self.ok("review", "list", session):
            if review["stage"] == stage:
                return int(review["seq"])
        raise AssertionError(f"no open review of {stage} in {session}")

    def review(self, session: str, seq: int) -> dict[str, Any]:
        body: dict[str, Any] = self.ok("review", "show", str(seq), session)
        return body

    def new_session(self, question: str) -> str:
        return str(self.ok("session", "new", question)["session"])

    def close_f1(self, session: str) -> dict[str, Any]:
        """Close F1 (its confirm): F2 runs by itself; the answer's body (``ran`` is F2's run)."""
        return self.step(session, "disambiguation", "03-f1-confirm.json", "--approve")

    def drive_f3_to_f7(self, session: str) -> dict[str, Any]:
        """F3 … F6 with the demo proposals (F4 links the tables only); approving F6 runs F7.
        The body of F6's answer (``ran`` is F7's run)."""
        self.step(session, "rewriting", "04-f3-rewrite.json", "--choose", "accept")
        self.step(session, "rewriting", "05-f3-confirm.json", "--approve")
        self.step(session, "schema_linking", "06-f4-linking.json", "--choose", "tables")
        self.step(session, "schema_linking", "07-f4-confirm.json", "--approve")
        self.step(session, "cte", "08-f5-cte.json", "--choose", "approve")
        self.step(session, "cte", "09-f5-confirm.json", "--approve")
        self.step(session, "sql", "10-f6-sql.json", "--choose", "approve")
        return self.step(session, "sql", "17-f6-confirm.json", "--approve")

    def skip_datamart(self, session: str) -> dict[str, Any]:
        """Skip F8 datamart: the memory promotion runs by itself (``ran``)."""
        body: dict[str, Any] = self.ok(
            "stage", "skip", "datamart", session, "--reason", "no datamart", "--as", H
        )
        return body

    # ------------------------------------------------------------------ files

    def ledger_lines(self, session: str) -> list[bytes]:
        return (self.root / "sessions" / session / "ledger.jsonl").read_bytes().splitlines()

    def events(self, session: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.ledger_lines(session)]

    @property
    def registry(self) -> Path:
        return self.root / "memory" / "ledger.jsonl"

    def registry_events(self) -> list[dict[str, Any]]:
        if not self.registry.exists():
            return []
        return [json.loads(line) for line in self.registry.read_bytes().splitlines()]

    def session_bytes(self, session: str) -> bytes:
        """Every file of the session (caches aside): to prove nothing was written."""
        folder = self.root / "sessions" / session
        return b"".join(
            p.name.encode() + b"\0" + p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")
        )


def make_workspace(root: Path) -> Ws:
    """A fresh workspace bound to the demo database (``data/x.db``), its catalog synced."""
    ws = Ws(root)
    assert ws.tht("workspace", "init", str(root)).code == 0
    make_demo_database(root / "data" / "x.db")
    with (root / "workspace.yaml").open("a", encoding="utf-8") as settings:
        settings.write('\ndatabase: {url: "sqlite:///data/x.db"}\n')
    ws.ok("catalog", "sync")
    return ws


def first_session_to_datamart(ws: Ws) -> str:
    """The demo's first session (F1 ablazione = flag, the year and the hospital; F2 runs by
    itself; F3 … F7) up to F8 datamart."""
    session = ws.new_session(FIRST_QUESTION)
    ws.step(session, "disambiguation", "01-f1-ablazione.json", "--choose", "flag")
    ws.step(session, "disambiguation", "02-f1-period.json", "--choose", "year,hospital")
    ws.close_f1(session)
    ws.drive_f3_to_f7(session)
    return session


def clarify(ws: Ws, session: str, subject: str, meaning: str, target: str | None) -> None:
    """F1: the reviewer clarifies ``subject`` (a one-option select of this test)."""
    payload: dict[str, Any] = {"meaning": meaning}
    if target is not None:
        payload["target"] = target
    proposal = {
        "kind": "select",
        "prompt": f"What does {subject!r} mean here?",
        "options": [
            {
                "id": "it",
                "label": meaning,
                "events": [{"type": "concept_clarified", "subject": subject, "payload": payload}],
            }
        ],
    }
    done = ws.propose_json(session, "disambiguation", proposal)
    assert done.code == 0, done.stdout + done.stderr
    ws.answer(session, int(done.json()["review"]), "--choose", "it")


def stage_lines(ws: Ws, session: str, stage: str) -> list[bytes]:
    """The ledger lines recorded in ``stage`` (byte for byte)."""
    return [line for line in ws.ledger_lines(session) if json.loads(line).get("stage") == stage]


def forge_memory_saved(
    ws: Ws,
    *,
    subject: str,
    meaning: str,
    target: str | None,
    session: str,
    seq: int,
    reviewer: str = "human:mallory",
) -> str:
    """Append a ``memory_saved`` straight into ``memory/ledger.jsonl`` (:func:`append_registry`):
    no reviewer promoted it in ``session``. Its memory id."""
    from kernel.events import EventDraft
    from kernel.memory_events import MemorySavedPayload, MemorySource
    from modules.memory.keys import memory_id

    mid = memory_id(subject, target, meaning)
    append_registry(
        ws,
        EventDraft(
            type="memory_saved",
            actor=reviewer,
            subject=subject,
            payload=MemorySavedPayload(
                memory_id=mid,
                subject=subject,
                meaning=meaning,
                target=target,
                language="it",
                source=MemorySource(session=session, seq=seq),
                reviewer=reviewer,
            ),
        ),
    )
    return mid


def append_registry(ws: Ws, draft: Any, *, drop_last: bool = False) -> None:
    """Append ``draft`` straight into ``memory/ledger.jsonl``, chained exactly as the ledger
    chains (:func:`kernel.events.stamp`, :func:`kernel.ledger_verify.line_hash`) and with its head
    anchor moved along, as anyone who can write the workspace's files could. ``drop_last``: cut
    the registry's last line first (an unsigned entry at the end can be cut: docs/security.md),
    and delete the registry's witness too, as that attacker would: the witness gives a cut line
    away (tests/adversarial/test_workspace_rollback.py), and what these tests check must hold
    without it."""
    from kernel.events import encode_event, stamp
    from kernel.ledger_verify import genesis_hash, line_hash
    from kernel.ledger_writer import write_anchor_fd
    from kernel.store.base import workspace_ledger_spec

    lines = ws.registry.read_bytes().splitlines() if ws.registry.exists() else []
    if drop_last:
        lines = lines[:-1]
        (ws.root / ".tht" / "witness" / "memory.json").unlink(missing_ok=True)
    last = json.loads(lines[-1])["seq"] if lines else 0
    prev = (
        line_hash(lines[-1]) if lines else genesis_hash(workspace_ledger_spec("memory").ledger_id)
    )
    event = stamp(draft, seq=last + 1, ts="2026-11-30T10:00:00.000Z", prev=prev)
    line = encode_event(event)
    ws.registry.parent.mkdir(parents=True, exist_ok=True)
    ws.registry.write_bytes(b"".join(kept + b"\n" for kept in lines) + line + b"\n")
    fd = os.open(ws.registry.parent / "ledger.head", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        write_anchor_fd(fd, last + 1, line_hash(line))
    finally:
        os.close(fd)
