"""An attacker in the same shell forges, truncates, deletes and poisons a session's files; the
real CLI (a subprocess) must detect it (``tht ledger verify`` exit 7 naming seq and rule), refuse
every append (exit 7, files byte-identical) and never launder the damage; only an explicit,
human-attributed ``--repair`` does (ARCHITECTURE §3.9)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import pytest

from kernel import events as ev
from kernel.ledger_verify import genesis_hash, line_hash
from kernel.status_cache import StatusCache
from kernel.workflow import WorkflowSpec
from tests.golden import scenarios as sc

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "golden" / "demo"
F1_PROPOSAL = str(DEMO / "01-f1-ablazione.json")
ANCHOR_SIZE = 128


# --------------------------------------------------------------------------- helpers (shared)


def cli_env(ws: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    return {
        **base,
        "THT_WORKSPACE": str(ws),
        "THT_HOME": str(ws.parent / "home"),
        "THT_CLOCK": "fixed:2026-01-01T00:00:00Z",
        "THT_SEED": "1",
    }


def tht(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        env=env or cli_env(ws),
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        timeout=60,
    )


def verify_json(ws: Path, session: str) -> tuple[int, dict]:
    done = tht(ws, "ledger", "verify", session, "--json")
    return done.returncode, json.loads(done.stdout)


def codes(body: dict) -> list[tuple[str, int | None]]:
    return [(p["code"], p["seq"]) for p in body["problems"]]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of a session folder (locks excluded) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def read_events(ledger: Path) -> list[ev.Event]:
    return [ev.decode_event(line) for line in ledger.read_bytes().splitlines() if line]


def anchor_bytes(seq: int, head: str) -> bytes:
    return json.dumps({"seq": seq, "head": head}).encode().ljust(ANCHOR_SIZE - 1) + b"\n"


def write_chained(
    session_dir: Path,
    session: str,
    events: Sequence[ev.Event],
    sign: Callable[[ev.Event], ev.Event | None] | None = None,
) -> bytes:
    """The strongest attacker: rewrite the whole ledger with every ``prev`` recomputed and the
    head anchor moved to match (``sign`` may re-sign an event once chained, returning the event
    to write or None to keep it). Returns the ledger bytes written."""
    prev = genesis_hash(session)
    lines = []
    for event in events:
        event = msgspec.structs.replace(event, prev=prev)
        if sign is not None:
            event = sign(event) or event
        line = ev.encode_event(event)
        lines.append(line)
        prev = line_hash(line)
    data = b"".join(line + b"\n" for line in lines)
    (session_dir / "ledger.jsonl").write_bytes(data)
    (session_dir / "ledger.head").write_bytes(anchor_bytes(len(lines), prev) if lines else b"")
    return data


def append_forged(
    session_dir: Path,
    session: str,
    drafts: Sequence[ev.EventDraft],
    sign: Callable[[ev.Event], ev.Event | None] | None = None,
) -> list[int]:
    """Append ``drafts`` as one well-formed batch (next seqs, batch_left, same ts, chained),
    re-anchored. Returns the forged seqs."""
    events = read_events(session_dir / "ledger.jsonl")
    ts = "2026-01-01T01:00:00.000Z"
    forged = [
        ev.stamp(d, seq=len(events) + i + 1, ts=ts, prev="", batch_left=len(drafts) - i - 1)
        for i, d in enumerate(drafts)
    ]
    write_chained(session_dir, session, [*events, *forged], sign)
    return [e.seq for e in forged]


def draft(
    kind: str, actor: str, stage: str | None, payload: dict, **extra: object
) -> ev.EventDraft:
    body = msgspec.convert(payload, ev.EVENT_TYPES[kind].payload)
    return ev.EventDraft(type=kind, actor=actor, stage=stage, payload=body, **extra)


# --------------------------------------------------------------------------- fixtures

#: open confirm review on the disambiguation stage of the "active" base
_BASES: dict[str, tuple[Path, str, int]] = {}


def _build_active(root: Path) -> tuple[str, int]:
    run = sc.make_kernel(root)
    sc.start(run)
    sc.stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="flag")
    applied = run.kernel.apply_outcome(run.session, "disambiguation", sc._confirm(), actor="agent")
    return run.session, sc._review_seq(applied)


def _build_finalized(root: Path) -> tuple[str, int]:
    run = sc.make_kernel(root)
    sc.happy_path(run)
    return run.session, 0


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, int]]:
    top = tmp_path_factory.mktemp("bases")
    out = {}
    for name, build in (("active", _build_active), ("finalized", _build_finalized)):
        ws = top / name / "ws"
        session, review = build(ws)
        out[name] = (ws, session, review)
    return out


class Case:
    def __init__(self, ws: Path, session: str, review: int) -> None:
        self.ws, self.session, self.review = ws, session, review
        self.dir = ws / "sessions" / session
        self.ledger = self.dir / "ledger.jsonl"
        self.head = self.dir / "ledger.head"

    def propose(self, stage: str = "disambiguation", file: str = F1_PROPOSAL):
        return tht(self.ws, "propose", stage, "--file", file, self.session, "--json")

    def answer(self):
        return tht(
            self.ws,
            "review",
            "answer",
            str(self.review),
            self.session,
            "--approve",
            "--as",
            "human:ann",
            "--json",
        )


def _copy(bases: dict, name: str, tmp_path: Path) -> Case:
    ws, session, review = bases[name]
    dest = tmp_path / name / "ws"
    shutil.copytree(ws, dest)
    return Case(dest, session, review)


@pytest.fixture
def active(bases: dict, tmp_path: Path) -> Case:
    return _copy(bases, "active", tmp_path)


@pytest.fixture
def finalized(bases: dict, tmp_path: Path) -> Case:
    return _copy(bases, "finalized", tmp_path)


def assert_refused(case: Case, *, commands: tuple[str, ...] = ("propose", "answer")) -> None:
    """Every appending command exits 7 and changes no file of the session."""
    before = snapshot(case.dir)
    existed = case.head.exists(), case.ledger.exists()
    for name in commands:
        done = getattr(case, name)()
        assert done.returncode == 7, (name, done.returncode, done.stdout, done.stderr)
        assert snapshot(case.dir) == before, name
        assert (case.head.exists(), case.ledger.exists()) == existed
        assert not (case.dir / "ledger.quarantine.jsonl").exists()


# --------------------------------------------------------------------------- sanity


def test_the_untouched_bases_verify_and_accept_appends(active: Case, finalized: Case) -> None:
    assert verify_json(active.ws, active.session)[0] == 0
    assert verify_json(finalized.ws, finalized.session)[0] == 0
    assert active.answer().returncode == 0
    assert finalized.propose("datamart").returncode == 5  # finalized is immutable


# --------------------------------------------------------------------------- forged events


def test_forged_answer_to_a_closed_review_with_stage_completed_is_caught(active: Case) -> None:
    closed = next(e.seq for e in read_events(active.ledger) if isinstance(e, ev.ReviewAnswered))
    closed_request = next(
        e.causation for e in read_events(active.ledger) if isinstance(e, ev.ReviewAnswered)
    )
    assert closed and closed_request
    seqs = append_forged(
        active.dir,
        active.session,
        [
            draft(
                "review_answered",
                "human:boss",
                "disambiguation",
                {"approved": True},
                causation=closed_request,
            ),
            draft(
                "stage_completed",
                "kernel",
                "disambiguation",
                {"via": "review"},
                causation=closed_request,
            ),
        ],
    )
    code, body = verify_json(active.ws, active.session)
    assert code == 7
    assert body["problems"] and body["problems"][0]["seq"] == seqs[0]
    codes = {p["code"] for p in body["problems"]}
    assert codes <= {"review", "answer", "stage_completed", "batch", "causation"}
    assert_refused(active)


def test_stage_completed_without_an_answer_is_caught(active: Case) -> None:
    (seq,) = append_forged(
        active.dir,
        active.session,
        [
            draft(
                "stage_completed",
                "kernel",
                "disambiguation",
                {"via": "review"},
                causation=active.review,
            )
        ],
    )
    code, body = verify_json(active.ws, active.session)
    assert code == 7 and body["problems"][0]["seq"] == seq
    assert_refused(active)


@pytest.mark.parametrize("stage", ["sql", "disambiguation"])
def test_sql_approved_written_directly_by_the_agent_is_caught(active: Case, stage: str) -> None:
    (seq,) = append_forged(active.dir, active.session, [draft("sql_approved", "agent", stage, {})])
    code, body = verify_json(active.ws, active.session)
    assert code == 7
    assert [p["seq"] for p in body["problems"]] == [seq]
    assert body["problems"][0]["code"] in {"human_decision", "actor", "stage", "emits"}
    assert_refused(active)


@pytest.mark.parametrize(
    "forged",
    [
        lambda: draft("session_paused", "human:ann", None, {"reason": "again"}),
        lambda: draft("concept_clarified", "agent", "datamart", {"meaning": "x"}, subject="s"),
    ],
    ids=["human_pause", "agent_decision"],
)
def test_an_event_after_session_finalized_is_caught(finalized: Case, forged) -> None:
    (seq,) = append_forged(finalized.dir, finalized.session, [forged()])
    code, body = verify_json(finalized.ws, finalized.session)
    assert code == 7
    assert ("after_finalize", seq) in codes(body)
    assert_refused(finalized, commands=("propose",))


# --------------------------------------------------------------------------- file damage


def test_a_torn_tail_is_reported_and_never_quarantined_by_an_append(active: Case) -> None:
    subprocess.run(["truncate", "-s", "-1", str(active.ledger)], check=True)
    code, body = verify_json(active.ws, active.session)
    assert code == 7
    problems = {p["code"]: p for p in body["problems"]}
    assert problems["torn_tail"]["repairable"] is True
    assert problems["torn_tail"]["line"] == len(active.ledger.read_bytes().splitlines())
    assert set(problems) <= {"torn_tail", "head_anchor"}
    assert_refused(active)


def test_lines_past_the_anchor_are_refused(active: Case) -> None:
    anchor_before = active.head.read_bytes()
    append_forged(
        active.dir,
        active.session,
        [
            ev.EventDraft(
                type="evidence_consulted",
                actor="agent",
                stage="disambiguation",
                subject="x",
                payload=msgspec.convert(
                    {"purpose": "disambiguation", "generation": "g1", "returned": []},
                    ev.EVENT_TYPES["evidence_consulted"].payload,
                ),
            )
        ],
    )
    active.head.write_bytes(anchor_before)  # the anchor was not moved
    code, body = verify_json(active.ws, active.session)
    assert code == 7 and "unanchored" in [p["code"] for p in body["problems"]]
    assert_refused(active)


def test_deleting_the_last_batch_and_reanchoring_is_undetectable_but_harmless(
    active: Case,
) -> None:
    """Honest limit: with no anchor outside the attacker's reach, removing the final
    (agent-level) batch and re-anchoring leaves a ledger a legal history could have produced.
    The product can only guarantee it folds to exactly that earlier, legal state."""
    events = read_events(active.ledger)
    assert events[-1].actor == "agent" and events[-1].batch_left == 0
    cut = len(events) - 1
    while cut and events[cut - 1].batch_left:
        cut -= 1
    write_chained(active.dir, active.session, events[:cut])
    code, body = verify_json(active.ws, active.session)
    assert code == 0, body
    assert body["events"] == cut
    # the removed review is gone: answering it is an unknown review, not a forgery
    assert active.answer().returncode not in (0, 7)


def test_deleting_a_human_batch_in_the_middle_is_caught(finalized: Case) -> None:
    """Removing a human answer (and renumbering to keep seqs gapless) breaks replay."""
    events = read_events(finalized.ledger)
    start = next(i for i, e in enumerate(events) if isinstance(e, ev.ReviewAnswered))
    end = start
    while events[end].batch_left:
        end += 1
    kept = events[:start] + events[end + 1 :]
    renumbered = [msgspec.structs.replace(e, seq=i) for i, e in enumerate(kept, start=1)]
    write_chained(finalized.dir, finalized.session, renumbered)
    code, body = verify_json(finalized.ws, finalized.session)
    assert code == 7 and body["problems"], body


def test_a_deleted_anchor_is_refused_and_not_recreated(active: Case) -> None:
    active.head.unlink()
    code, body = verify_json(active.ws, active.session)
    assert code == 7 and [p["code"] for p in body["problems"]] == ["head_anchor"]
    assert_refused(active)
    assert not active.head.exists()


@pytest.mark.parametrize("how", ["empty", "delete"])
def test_an_emptied_or_deleted_ledger_is_refused(active: Case, how: str) -> None:
    if how == "empty":
        active.ledger.write_bytes(b"")
    else:
        active.ledger.unlink()
    code, body = verify_json(active.ws, active.session)
    assert code == 7, body
    assert_refused(active)
    assert active.ledger.exists() == (how == "empty")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda t: t + "\n# edited\n", id="comment"),
        pytest.param(lambda t: t.replace("skip: never", "skip: human"), id="skippable"),
        pytest.param(
            lambda t: t.replace("completion: review_required", "completion: automatic"),
            id="invalid_all_automatic",
        ),
    ],
)
def test_an_edited_session_workflow_is_refused(active: Case, edit) -> None:
    wf = active.dir / "workflow.yaml"
    wf.write_text(edit(wf.read_text()))
    code, body = verify_json(active.ws, active.session)
    assert code == 7
    assert "workflow_snapshot" in [p["code"] for p in body["problems"]]
    assert_refused(active)


def test_a_workspace_workflow_whose_automatic_stage_emits_a_human_decision_is_refused(
    active: Case,
) -> None:
    text = (REPO / "workflow.yaml").read_text()
    text = text.replace("emits: [result_verified]", "emits: [result_verified, sql_approved]")
    assert "sql_approved]" in text
    (active.ws / "workflow.yaml").write_text(text)
    done = tht(active.ws, "session", "new", sc.QUESTION, "--json")
    assert done.returncode == 2, (done.stdout, done.stderr)


# --------------------------------------------------------------------------- poisoned caches


def _status_cache(case: Case) -> Path:
    return case.ws / ".tht" / "cache" / "status" / f"{case.session}.msgpack"


def _workflow_caches(case: Case) -> list[Path]:
    return sorted((case.ws / ".tht" / "cache").glob("workflow-*.msgpack"))


def test_random_bytes_in_the_status_cache_change_no_decision(finalized: Case) -> None:
    rng = random.Random(7)
    _status_cache(finalized).write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    assert finalized.propose("datamart").returncode == 5
    assert verify_json(finalized.ws, finalized.session)[0] == 0


def test_a_crafted_status_cache_cannot_reopen_a_finalized_session(finalized: Case) -> None:
    path = _status_cache(finalized)
    real = msgspec.msgpack.decode(path.read_bytes(), type=StatusCache)
    assert real.state.lifecycle == "finalized"
    lie = msgspec.structs.replace(real.state, lifecycle="active", current_stage="datamart")
    path.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(real, state=lie)))
    before = finalized.ledger.read_bytes()
    done = finalized.propose("datamart")
    assert done.returncode == 5, (done.stdout, done.stderr)
    assert finalized.ledger.read_bytes() == before
    status = json.loads(tht(finalized.ws, "session", "status", finalized.session, "--json").stdout)
    assert status["lifecycle"] == "finalized" or status.get("problems")


def test_random_bytes_in_the_workflow_cache_are_ignored(active: Case) -> None:
    (cache,) = _workflow_caches(active)
    cache.write_bytes(os.urandom(2048))
    assert active.answer().returncode == 0
    assert verify_json(active.ws, active.session)[0] == 0


def test_a_crafted_all_automatic_workflow_cache_cannot_auto_approve(active: Case) -> None:
    (cache,) = _workflow_caches(active)
    spec = msgspec.msgpack.decode(cache.read_bytes(), type=WorkflowSpec)
    lax = msgspec.structs.replace(
        spec,
        steps=tuple(msgspec.structs.replace(s, completion="automatic") for s in spec.steps),
    )
    cache.write_bytes(msgspec.msgpack.encode(lax))
    # close the open review first with a rejection so the stage stays open without a review
    answered = tht(
        active.ws,
        "review",
        "answer",
        str(active.review),
        active.session,
        "--reject",
        "--as",
        "human:ann",
        "--json",
    )
    assert answered.returncode == 0, answered.stderr
    auto = active.ws.parent / "auto.json"
    auto.write_text(
        json.dumps(
            {
                "kind": "auto",
                "events": [
                    {
                        "type": "value_grounded",
                        "subject": "2023",
                        "payload": {"value": "2023", "column": "procedure_date"},
                    }
                ],
            }
        )
    )
    before = active.ledger.read_bytes()
    done = active.propose("disambiguation", str(auto))
    state = json.loads(tht(active.ws, "session", "status", active.session, "--json").stdout)
    stage = next(s for s in state["stages"] if s["id"] == "disambiguation")
    assert stage["state"] != "completed", (done.returncode, done.stdout)
    if done.returncode == 0:
        assert active.ledger.read_bytes() != before  # it may record a receipt, never completion
    assert verify_json(active.ws, active.session)[0] == 0


# --------------------------------------------------------------------------- explicit repair


def test_repair_needs_a_human_and_a_reason_then_appends_work_again(active: Case) -> None:
    subprocess.run(["truncate", "-s", "-1", str(active.ledger)], check=True)
    before = snapshot(active.dir)
    no_as = tht(active.ws, "ledger", "verify", active.session, "--repair", "--reason", "r")
    assert no_as.returncode not in (0, 7) and snapshot(active.dir) == before
    no_reason = tht(active.ws, "ledger", "verify", active.session, "--repair", "--as", "human:x")
    assert no_reason.returncode not in (0, 7) and snapshot(active.dir) == before
    agent_env = {**cli_env(active.ws), "THT_ACTOR": "agent"}
    as_agent = tht(
        active.ws,
        "ledger",
        "verify",
        active.session,
        "--repair",
        "--reason",
        "r",
        "--as",
        "human:x",
        env=agent_env,
    )
    assert as_agent.returncode == 5 and snapshot(active.dir) == before

    done = tht(
        active.ws,
        "ledger",
        "verify",
        active.session,
        "--repair",
        "--reason",
        "r",
        "--as",
        "human:x",
        "--json",
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert (active.dir / "ledger.quarantine.jsonl").read_bytes()
    last = read_events(active.ledger)[-1]
    assert isinstance(last, ev.LedgerRepaired) and last.actor == "human:x"
    assert verify_json(active.ws, active.session)[0] == 0
    # the quarantined torn line was the open review request: the stage accepts a proposal again
    assert active.propose().returncode == 0
    assert verify_json(active.ws, active.session)[0] == 0
