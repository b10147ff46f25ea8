"""``tht reviewer``: the real CLI in a subprocess, passphrases typed at a real pseudo-terminal
(``tht.ptyrun``), and the attacks an agent in the same account can try."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kernel.clock import FixedClock
from kernel.events import EventDraft, ReviewAnsweredPayload, stamp
from kernel.ledger import line_hash
from kernel.reviewer_events import ReviewerAddedPayload
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import SigningKey, generate_signing_key, proof_message
from tht.ptyrun import TerminalRun, run_in_terminal

REPO = Path(__file__).resolve().parents[2]
ANN_PW, BOB_PW = "ann's long passphrase", "bob's long passphrase"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    ws = tmp_path / "ws"
    subprocess.run(
        [sys.executable, "-m", "tht", "workspace", "init", str(ws)],
        check=True,
        capture_output=True,
        env=base,
        cwd=REPO,
    )
    return {
        **base,
        "THT_HOME": str(tmp_path / "home"),
        "THT_WORKSPACE": str(ws),
        "THT_CLOCK": "fixed:2026-01-01T00:00:00Z",
    }


def _ws(env: dict[str, str]) -> Path:
    return Path(env["THT_WORKSPACE"])


def _key_file(env: dict[str, str], reviewer: str) -> Path:
    return Path(env["THT_HOME"]) / "keys" / f"{reviewer.replace(':', '_')}.key"


def tht(env: dict[str, str], *args: str, typed: tuple[str, ...] = ()) -> TerminalRun:
    """Run ``tht`` at a fresh terminal, typing ``typed`` at its prompts."""
    return run_in_terminal(
        [sys.executable, "-m", "tht", *args], env=env, cwd=REPO, typed=typed, timeout=60
    )


def tht_no_terminal(env: dict[str, str], *args: str, stdin: bytes = b""):
    """What an agent's shell does: a new session (no controlling terminal), stdin piped."""
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=REPO,
        start_new_session=True,
        timeout=60,
    )


def _add_ann(env: dict[str, str]) -> dict[str, object]:
    run = tht(env, "reviewer", "add", "human:ann", "--json", typed=(ANN_PW, ANN_PW))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _add_bob(env: dict[str, str]) -> dict[str, object]:
    run = tht(
        env,
        "reviewer",
        "add",
        "human:bob",
        "--by",
        "human:ann",
        "--json",
        typed=(ANN_PW, BOB_PW, BOB_PW),
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _registry_bytes(env: dict[str, str]) -> bytes:
    path = _ws(env) / "reviewers" / "ledger.jsonl"
    return path.read_bytes() if path.exists() else b""


# --------------------------------------------------------------------------- the human's path


def test_first_reviewer_adds_themselves_and_gets_a_key_id_to_note(env: dict[str, str]) -> None:
    body = _add_ann(env)
    assert set(body) == {"reviewer", "key_id", "public_key", "seq"}
    assert (body["reviewer"], body["seq"]) == ("human:ann", 1)
    key_file = _key_file(env, "human:ann")
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert oct(key_file.parent.stat().st_mode & 0o777) == "0o700"
    assert ANN_PW.encode() not in key_file.read_bytes()

    listed = tht(env, "reviewer", "list", "--json")
    assert listed.returncode == 0 and listed.terminal == ""  # reading needs no passphrase
    assert json.loads(listed.stdout) == {
        "reviewers": [
            {
                "reviewer": "human:ann",
                "key_id": body["key_id"],
                "public_key": body["public_key"],
                "added_seq": 1,
                "revoked": False,
            }
        ],
        "ok": True,
    }
    verified = tht(env, "reviewer", "verify", "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True

    human = tht(env, "reviewer", "list")
    assert body["key_id"] in human.stdout


def test_human_output_tells_the_reviewer_what_to_note(env: dict[str, str]) -> None:
    run = tht(env, "reviewer", "add", "human:ann", typed=(ANN_PW, ANN_PW))
    assert run.returncode == 0, run.stderr
    assert "key id:" in run.stdout and "Note the key id" in run.stdout
    assert "New passphrase for human:ann: " in run.terminal
    assert ANN_PW not in run.terminal  # echo was off


def test_a_second_reviewer_is_added_by_an_existing_one(env: dict[str, str]) -> None:
    _add_ann(env)
    alone = tht(env, "reviewer", "add", "human:bob", typed=(BOB_PW, BOB_PW))
    assert alone.returncode == 5 and "--by human:<id>" in alone.stderr
    assert alone.terminal == ""  # refused before asking for anything
    bob = _add_bob(env)
    assert bob["seq"] == 2
    listed = json.loads(tht(env, "reviewer", "list", "--json").stdout)
    assert [r["reviewer"] for r in listed["reviewers"]] == ["human:ann", "human:bob"]


def test_mismatched_or_short_passphrases_write_nothing(env: dict[str, str]) -> None:
    differ = tht(env, "reviewer", "add", "human:ann", typed=(ANN_PW, ANN_PW + "x"))
    short = tht(env, "reviewer", "add", "human:ann", typed=("short", "short"))
    assert (differ.returncode, short.returncode) == (2, 2)
    assert not _key_file(env, "human:ann").exists() and _registry_bytes(env) == b""


def test_revoke_and_approve_workflow_are_signed_by_the_reviewer(env: dict[str, str]) -> None:
    _add_ann(env)
    bob = _add_bob(env)
    revoked = tht(
        env,
        "reviewer",
        "revoke",
        "human:bob",
        "--key",
        str(bob["key_id"]),
        "--reason",
        "left the team",
        "--as",
        "human:ann",
        "--json",
        typed=(ANN_PW,),
    )
    assert revoked.returncode == 0, revoked.stderr
    assert json.loads(revoked.stdout)["seq"] == 3
    assert json.loads(revoked.stdout)["compromised"] is False
    listed = json.loads(tht(env, "reviewer", "list", "--json").stdout)
    assert [r["revoked"] for r in listed["reviewers"]] == [False, True]
    line = _registry_bytes(env).splitlines()[2]
    assert b"compromised" not in line  # an ordinary revocation's line is as it always was

    def revoke_again(*extra: str) -> TerminalRun:
        return tht(
            env,
            "reviewer",
            "revoke",
            "human:bob",
            "--key",
            str(bob["key_id"]),
            "--reason",
            "the laptop was stolen, not lost",
            *extra,
            "--as",
            "human:ann",
            "--json",
            typed=(ANN_PW,),
        )

    again = revoke_again()
    assert again.returncode == 5 and "--compromised" in again.stderr
    marked = revoke_again("--compromised")
    assert marked.returncode == 0, marked.stderr
    assert json.loads(marked.stdout) == {
        "reviewer": "human:bob",
        "key_id": bob["key_id"],
        "seq": 4,
        "compromised": True,
    }
    assert revoke_again("--compromised").returncode == 5  # once
    assert json.loads(tht(env, "reviewer", "verify", "--json").stdout)["ok"] is True

    missing = tht(
        env, "reviewer", "approve-workflow", "--reason", "ok", "--as", "human:ann", typed=(ANN_PW,)
    )
    assert missing.returncode == 3 and "workflow.yaml" in missing.stderr
    approved = tht(
        env,
        "reviewer",
        "approve-workflow",
        str(REPO / "workflow.yaml"),
        "--reason",
        "reviewed",
        "--as",
        "human:ann",
        "--json",
        typed=(ANN_PW,),
    )
    assert approved.returncode == 0, approved.stderr
    body = json.loads(approved.stdout)
    assert body["sha256"] == hashlib.sha256((REPO / "workflow.yaml").read_bytes()).hexdigest()
    state = ReviewerRegistry(_ws(env) / "reviewers").state()
    assert state.approved_workflows == frozenset({body["sha256"]})
    assert tht(env, "reviewer", "verify").returncode == 0


# --------------------------------------------------------------------------- attacks


def test_no_terminal_is_refused_even_with_the_passphrase_on_stdin(env: dict[str, str]) -> None:
    done = tht_no_terminal(
        env, "reviewer", "add", "human:ann", "--json", stdin=f"{ANN_PW}\n{ANN_PW}\n".encode()
    )
    assert done.returncode == 5
    assert b"typed at a terminal" in done.stderr
    assert json.loads(done.stdout)["error"]["exit_code"] == 5  # --json stays pristine
    assert not _key_file(env, "human:ann").exists()
    assert _registry_bytes(env) == b""


def test_a_passphrase_in_the_environment_is_ignored(env: dict[str, str]) -> None:
    _add_ann(env)
    before = _registry_bytes(env)
    leaked = {**env, **dict.fromkeys(("THT_PASSPHRASE", "THT_REVIEWER_PASSPHRASE"), ANN_PW)}
    args = (
        "reviewer",
        "approve-workflow",
        str(REPO / "workflow.yaml"),
        "--reason",
        "x",
        "--as",
        "human:ann",
    )
    assert tht_no_terminal(leaked, *args).returncode == 5
    at_terminal = tht(leaked, *args, typed=("not it",))  # the variable does not stand in
    assert at_terminal.returncode == 5 and "wrong passphrase" in at_terminal.stderr
    assert _registry_bytes(env) == before


def test_a_wrong_passphrase_changes_nothing(env: dict[str, str]) -> None:
    _add_ann(env)
    before = _registry_bytes(env)
    run = tht(
        env,
        "reviewer",
        "add",
        "human:bob",
        "--by",
        "human:ann",
        "--json",
        typed=("guess", BOB_PW, BOB_PW),
    )
    assert run.returncode == 5
    assert json.loads(run.stdout)["error"]["message"].startswith("wrong passphrase for human:ann")
    assert _registry_bytes(env) == before
    assert not _key_file(env, "human:bob").exists()


def test_thtactor_agent_is_refused_before_any_prompt(env: dict[str, str]) -> None:
    _add_ann(env)
    before = _registry_bytes(env)
    agent = {**env, "THT_ACTOR": "agent"}
    for args in (
        ("reviewer", "add", "human:bob", "--by", "human:ann"),
        (
            "reviewer",
            "revoke",
            "human:ann",
            "--key",
            "0" * 32,
            "--reason",
            "x",
            "--as",
            "human:ann",
        ),
        (
            "reviewer",
            "approve-workflow",
            str(REPO / "workflow.yaml"),
            "--reason",
            "x",
            "--as",
            "human:ann",
        ),
    ):
        run = tht(agent, *args, typed=(ANN_PW, BOB_PW, BOB_PW))
        assert run.returncode == 5, args
        assert run.terminal == ""
    assert _registry_bytes(env) == before


def _forge_member(env: dict[str, str]) -> SigningKey:
    """An agent writes its own key pair straight into the registry: next seq, chained to the
    head, ``added_by`` human:ann, signed by its own key, and the head anchor moved to match."""
    registry = ReviewerRegistry(_ws(env) / "reviewers")
    mine = generate_signing_key("human:mallory")
    payload = ReviewerAddedPayload(
        reviewer=mine.reviewer,
        key_id=mine.key_id,
        public_key=mine.public_key,
        proof=mine.sign(proof_message(mine.reviewer, mine.key_id)),
        added_by="human:ann",
    )
    tail = registry.ledger.tail()
    draft = EventDraft(type="reviewer_added", actor="human:ann", payload=payload)
    event = stamp(draft, seq=tail.last_seq + 1, ts="2026-01-01T00:05:00.000Z", prev=tail.head)
    line = msgspec.json.encode(msgspec.structs.replace(event, sig=mine.sign_event(event)))
    with registry.ledger.path.open("ab") as fh:
        fh.write(line + b"\n")
    anchor = json.dumps({"seq": event.seq, "head": line_hash(line)})
    registry.ledger.head_path.write_text(anchor)
    return mine


def test_an_agent_that_writes_itself_into_the_registry_is_caught(env: dict[str, str]) -> None:
    _add_ann(env)
    mine = _forge_member(env)
    verified = tht(env, "reviewer", "verify", "--json")
    assert verified.returncode == 7
    problems = json.loads(verified.stdout)["problems"]
    assert [(p["code"], p["seq"]) for p in problems] == [("registry_signature", 2)]
    listed = json.loads(tht(env, "reviewer", "list", "--json").stdout)
    assert listed["ok"] is False and [r["reviewer"] for r in listed["reviewers"]] == ["human:ann"]

    state = ReviewerRegistry(_ws(env) / "reviewers").state()
    for actor in ("human:mallory", "human:ann"):
        draft = EventDraft(
            type="review_answered", actor=actor, payload=ReviewAnsweredPayload(choice=("x",))
        )
        decision = stamp(draft, seq=9, ts="2026-01-02T00:00:00.000Z", prev="0" * 64)
        signed = msgspec.structs.replace(decision, sig=mine.sign_event(decision))
        assert "unknown key" in (state.check_human_event(signed) or "")


def test_a_failed_registry_append_leaves_no_key_file(env: dict[str, str]) -> None:
    _add_ann(env)
    _forge_member(env)  # the registry now fails verification: no append may follow it
    run = tht(
        env,
        "reviewer",
        "add",
        "human:bob",
        "--by",
        "human:ann",
        typed=(ANN_PW, BOB_PW, BOB_PW),
    )
    assert run.returncode == 7, run.stderr
    assert not _key_file(env, "human:bob").exists()


def test_a_recreated_registry_is_caught_by_the_witness_else_only_by_the_noted_key_id(
    env: dict[str, str],
) -> None:
    """Deleting the registry and starting a new one with the agent's own root: the witness of
    the registry this workspace's tht verified gives it away (``rolled_back``: its line 1 is
    another one). Known limit (documented): an agent that deletes the witness too gets a
    registry that verifies, which the human recognises only by the key id they noted at
    `add`."""
    noted = _add_ann(env)["key_id"]
    folder = _ws(env) / "reviewers"
    for path in folder.iterdir():
        path.unlink()
    impostor = generate_signing_key("human:ann")
    ReviewerRegistry(folder).add_reviewer(impostor, by=None, clock=FixedClock())
    caught = tht(env, "reviewer", "verify", "--json")
    assert caught.returncode == 7
    codes = [p["code"] for p in json.loads(caught.stdout)["problems"]]
    assert codes == ["rolled_back"]
    (_ws(env) / ".tht" / "witness" / "reviewers.json").unlink()
    assert tht(env, "reviewer", "verify").returncode == 0
    listed = json.loads(tht(env, "reviewer", "list", "--json").stdout)
    assert [r["key_id"] for r in listed["reviewers"]] == [impostor.key_id] != [noted]
