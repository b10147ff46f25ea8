"""Signed mode: a reviewer's decisions are signed with a key only a passphrase typed at a terminal
unlocks. An agent in the same shell (no terminal; the passphrase on stdin or in the environment;
its own key; a copied valid signature) can neither record nor forge a human decision."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kernel import events as ev
from kernel.signing import generate_signing_key
from tests.adversarial.test_ledger_forgery import (
    DEMO,
    F1_PROPOSAL,
    REPO,
    append_forged,
    cli_env,
    draft,
    read_events,
    snapshot,
    tht,
    verify_json,
    write_chained,
)
from tht.ptyrun import run_in_terminal

ANN_PW = "ann's long signing passphrase"
QUESTION = "How many ablation procedures were performed in 2023?"


def at_terminal(ws: Path, *args: str, typed: tuple[str, ...] = (), env=None):
    return run_in_terminal(
        [sys.executable, "-m", "tht", *args],
        env=env or cli_env(ws),
        cwd=REPO,
        typed=typed,
        timeout=60,
    )


def _ok(done) -> dict:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout)


class Signed:
    """Workspace with reviewer human:ann; session ``one`` has a signed answer (F1 select) and
    an open confirm review; session ``two`` has an open F1 select review."""

    def __init__(self, ws: Path, one: str, two: str, confirm: int, select_two: int) -> None:
        self.ws, self.one, self.two = ws, one, two
        self.confirm, self.select_two = confirm, select_two

    def dir(self, session: str) -> Path:
        return self.ws / "sessions" / session

    def ledger(self, session: str) -> Path:
        return self.dir(session) / "ledger.jsonl"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    ws = tmp_path_factory.mktemp("signed") / "ws"
    assert tht(ws, "workspace", "init", str(ws)).returncode == 0
    added = at_terminal(ws, "reviewer", "add", "human:ann", "--json", typed=(ANN_PW, ANN_PW))
    assert added.returncode == 0, added.stderr
    one = _ok(tht(ws, "session", "new", QUESTION, "--json"))["session"]
    review = _ok(tht(ws, "propose", "disambiguation", "--file", F1_PROPOSAL, one, "--json"))
    answered = at_terminal(
        ws,
        "review",
        "answer",
        str(review["review"]),
        one,
        "--choose",
        "flag",
        "--as",
        "human:ann",
        "--json",
        typed=(ANN_PW,),
    )
    assert answered.returncode == 0, answered.stderr
    assert "Passphrase for human:ann: " in answered.terminal
    confirm = _ok(
        tht(
            ws,
            "propose",
            "disambiguation",
            "--file",
            str(DEMO / "03-f1-confirm.json"),
            one,
            "--json",
        )
    )["review"]
    two = _ok(tht(ws, "session", "new", QUESTION, "--json", env={**cli_env(ws), "THT_SEED": "2"}))[
        "session"
    ]
    assert two != one
    select_two = _ok(tht(ws, "propose", "disambiguation", "--file", F1_PROPOSAL, two, "--json"))[
        "review"
    ]
    return Signed(ws, one, two, confirm, select_two)


@pytest.fixture
def signed(base: Signed, tmp_path: Path) -> Signed:
    dest = tmp_path / "ws"
    shutil.copytree(base.ws, dest)
    home = base.ws.parent / "home"
    if home.exists():
        shutil.copytree(home, tmp_path / "home")
    return Signed(dest, base.one, base.two, base.confirm, base.select_two)


def _human_events(ledger: Path) -> list[ev.Event]:
    return [e for e in read_events(ledger) if e.actor.startswith("human:")]


# --------------------------------------------------------------------------- the human's path


def test_an_answer_typed_at_the_terminal_is_signed_and_verifies(signed: Signed) -> None:
    humans = _human_events(signed.ledger(signed.one))
    assert humans and all(e.sig and e.sig.startswith("ed25519:") for e in humans)
    for session in (signed.one, signed.two):
        code, body = verify_json(signed.ws, session)
        assert code == 0, body
    done = at_terminal(
        signed.ws,
        "review",
        "answer",
        str(signed.confirm),
        signed.one,
        "--approve",
        "--as",
        "human:ann",
        "--json",
        typed=(ANN_PW,),
    )
    assert done.returncode == 0, done.stderr
    assert verify_json(signed.ws, signed.one)[0] == 0


def test_a_wrong_passphrase_at_the_terminal_appends_nothing(signed: Signed) -> None:
    before = snapshot(signed.dir(signed.one))
    done = at_terminal(
        signed.ws,
        "review",
        "answer",
        str(signed.confirm),
        signed.one,
        "--approve",
        "--as",
        "human:ann",
        typed=("guess",),
    )
    assert done.returncode == 5
    assert snapshot(signed.dir(signed.one)) == before


# --------------------------------------------------------------------------- agent attacks


@pytest.mark.parametrize(
    "args",
    [
        lambda s: ("review", "answer", str(s.confirm), s.one, "--approve", "--as", "human:ann"),
        lambda s: ("session", "pause", s.one, "--reason", "x", "--as", "human:ann"),
        lambda s: ("stage", "skip", "disambiguation", s.one, "--reason", "x", "--as", "human:ann"),
    ],
    ids=["answer", "pause", "skip"],
)
def test_without_a_terminal_a_human_command_is_refused(signed: Signed, args) -> None:
    before = snapshot(signed.dir(signed.one))
    leaked = {
        **cli_env(signed.ws),
        "THT_PASSPHRASE": ANN_PW,
        "THT_REVIEWER_PASSPHRASE": ANN_PW,
    }
    done = subprocess.run(
        [sys.executable, "-m", "tht", *args(signed)],
        input=f"{ANN_PW}\n{ANN_PW}\n".encode(),
        capture_output=True,
        env=leaked,
        cwd=REPO,
        start_new_session=True,
        timeout=60,
    )
    assert done.returncode == 5, (done.stdout, done.stderr)
    assert snapshot(signed.dir(signed.one)) == before


def _forge_confirm(signed: Signed, sign) -> int:
    seqs = append_forged(
        signed.dir(signed.one),
        signed.one,
        [
            draft(
                "review_answered",
                "human:ann",
                "disambiguation",
                {"approved": True},
                causation=signed.confirm,
                invocation="disambiguation#2",
            ),
            draft(
                "stage_completed",
                "kernel",
                "disambiguation",
                {"via": "review"},
                causation=signed.confirm,
                invocation="disambiguation#2",
            ),
        ],
        sign,
    )
    return seqs[0]


def _invocation_of(signed: Signed, seq: int) -> str | None:
    return next(e.invocation for e in read_events(signed.ledger(signed.one)) if e.seq == seq)


@pytest.mark.parametrize("how", ["unsigned", "made_up_sig", "own_key"])
def test_an_agent_written_answer_for_ann_is_caught(signed: Signed, how: str) -> None:
    key_id = _human_events(signed.ledger(signed.one))[0].sig.split(":")[1]
    mine = generate_signing_key("human:ann")
    invocation = _invocation_of(signed, signed.confirm)

    def sign(event: ev.Event) -> ev.Event | None:
        if event.invocation == "disambiguation#2":
            event = msgspec.structs.replace(event, invocation=invocation)
        if event.actor != "human:ann" or not isinstance(event, ev.ReviewAnswered):
            return event
        if how == "made_up_sig":
            return msgspec.structs.replace(event, sig=f"ed25519:{key_id}:" + "A" * 86 + "==")
        if how == "own_key":
            return msgspec.structs.replace(event, sig=mine.sign_event(event))
        return event

    seq = _forge_confirm(signed, sign)
    code, body = verify_json(signed.ws, signed.one)
    assert code == 7, body
    assert ("signature", seq) in [(p["code"], p["seq"]) for p in body["problems"]], body
    before = snapshot(signed.dir(signed.one))
    done = tht(
        signed.ws,
        "propose",
        "rewriting",
        "--file",
        str(DEMO / "04-f3-rewrite.json"),
        signed.one,
        "--json",
    )
    assert done.returncode == 7
    assert snapshot(signed.dir(signed.one)) == before


def test_a_valid_signed_answer_copied_into_another_session_is_caught(signed: Signed) -> None:
    source = read_events(signed.ledger(signed.one))
    answer = next(e for e in source if isinstance(e, ev.ReviewAnswered) and e.sig)
    batch = [answer, next(e for e in source if e.seq == answer.seq + 1)]
    target = read_events(signed.ledger(signed.two))
    assert target[-1].seq == signed.select_two == answer.causation  # same shape, same seqs
    write_chained(signed.dir(signed.two), signed.two, [*target, *batch])
    code, body = verify_json(signed.ws, signed.two)
    assert code == 7, body
    assert ("signature", answer.seq) in [(p["code"], p["seq"]) for p in body["problems"]]
    before = snapshot(signed.dir(signed.two))
    done = at_terminal(
        signed.ws,
        "review",
        "answer",
        str(signed.select_two),
        signed.two,
        "--choose",
        "flag",
        "--as",
        "human:ann",
        typed=(ANN_PW,),
    )
    assert done.returncode == 7
    assert snapshot(signed.dir(signed.two)) == before


def test_a_valid_signed_answer_moved_to_another_seq_is_caught(signed: Signed) -> None:
    events = read_events(signed.ledger(signed.one))
    answer = next(e for e in events if isinstance(e, ev.ReviewAnswered) and e.sig)
    moved = msgspec.structs.replace(
        answer, seq=len(events) + 1, causation=signed.confirm, batch_left=0
    )
    write_chained(signed.dir(signed.one), signed.one, [*events, moved])
    code, body = verify_json(signed.ws, signed.one)
    assert code == 7, body
    assert moved.seq in [p["seq"] for p in body["problems"]]
