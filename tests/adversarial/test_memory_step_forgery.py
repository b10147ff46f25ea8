"""An agent in the same shell tries to decide F2 and the memory promotion itself (ARCHITECTURE
§3.9, §4.3): they are Memory's own work. Through the kernel the agent's outcomes are refused
(exit 5, nothing written); appended to the ledger directly, with a perfect hash chain, every
forgery is caught by the replay (exit 7) — the closing decide, its ``unchosen`` events, a
``memory_nothing_recalled`` by the agent, a stage closed with no module decision."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import events as ev
from kernel.errors import PolicyError
from kernel.outcomes import ModuleOutcome, ReviewRequest
from tests.adversarial.test_ledger_forgery import append_forged, draft, tht, verify_json
from tests.golden import scenarios as sc

H = sc.H


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def at_f2(tmp_path: Path) -> sc.Run:
    run = sc.make_kernel(tmp_path / "ws")
    sc.start(run)
    sc.f1(run)
    assert run.kernel.load(run.session).state.current_stage == "memory_recall"
    return run


def _applied_option(memory_id: str = "mem-0123456789abcdef") -> ev.ReviewOptionPayload:
    return ev.ReviewOptionPayload(
        id=f"m:{memory_id}",
        label="ablazione = flag_ablazione",
        events=(
            ev.ProposedEvent(
                type="memory_applied",
                subject="ablazione",
                payload={"memory_id": memory_id, "kind": "memory", "meaning": "flag_ablazione"},
            ),
        ),
        unchosen=(
            ev.ProposedEvent(
                type="memory_rejected",
                subject="ablazione",
                payload={"memory_id": memory_id, "reason": "not applied by the reviewer"},
            ),
        ),
    )


def _closing(*options: ev.ReviewOptionPayload) -> ModuleOutcome:
    none = ev.ReviewOptionPayload(id="none", label="apply none of them")
    return ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(
            kind="decide", prompt="Recalled:", options=(*options, none), closes=True
        ),
    )


@pytest.mark.parametrize(
    "outcome",
    [
        _closing(_applied_option()),
        ModuleOutcome(
            status="awaiting_review",
            review=ReviewRequest(kind="decide", prompt="Recalled:", options=(_applied_option(),)),
        ),
        ModuleOutcome(status="awaiting_review", review=ReviewRequest(kind="confirm", prompt="?")),
        ModuleOutcome(
            status="completed",
            events=(ev.ProposedEvent(type="memory_nothing_recalled", payload={"reason": "x"}),),
        ),
    ],
    ids=["closing_decide", "plain_decide", "confirm", "nothing_recalled"],
)
def test_the_agent_cannot_decide_f2(at_f2: sc.Run, outcome: ModuleOutcome) -> None:
    before = _files(at_f2.workspace.root)
    with pytest.raises(PolicyError):
        at_f2.kernel.apply_outcome(at_f2.session, "memory_recall", outcome, actor="agent")
    assert _files(at_f2.workspace.root) == before


def test_a_closing_review_is_only_asked_by_the_steps_own_module(at_f2: sc.Run) -> None:
    with pytest.raises(PolicyError, match="only module:memory"):
        at_f2.kernel.apply_outcome(
            at_f2.session, "memory_recall", _closing(_applied_option()), actor="module:routing"
        )


def test_answering_the_closing_decide_records_chosen_unchosen_and_completes(
    at_f2: sc.Run,
) -> None:
    k = at_f2.kernel
    other = _applied_option("mem-fedcba9876543210")
    applied = k.apply_outcome(
        at_f2.session, "memory_recall", _closing(_applied_option(), other), actor="module:memory"
    )
    seq = sc._review_seq(applied)
    answered = k.answer(at_f2.session, seq, actor=H, choose=("m:mem-0123456789abcdef",))
    types = [ev.info_of(e).type for e in answered.events]
    assert types == ["review_answered", "memory_applied", "memory_rejected", "stage_completed"]
    rejected = answered.events[2]
    assert isinstance(rejected, ev.MemoryRejected)
    assert rejected.payload.memory_id == "mem-fedcba9876543210" and rejected.actor == H
    state = k.load(at_f2.session).state
    assert state.stage("memory_recall").state == "completed"  # type: ignore[union-attr]
    assert state.current_stage == "rewriting" and not state.integrity


def test_nothing_recalled_by_memory_completes_f2(at_f2: sc.Run) -> None:
    outcome = ModuleOutcome(
        status="completed",
        events=(
            ev.ProposedEvent(
                type="memory_nothing_recalled", payload={"reason": "the workspace memory is empty"}
            ),
        ),
    )
    at_f2.kernel.apply_outcome(at_f2.session, "memory_recall", outcome, actor="module:memory")
    state = at_f2.kernel.load(at_f2.session).state
    assert state.current_stage == "rewriting" and not state.integrity


def _forged_closing(actor: str) -> list[ev.EventDraft]:
    option = msgspec_builtins(_applied_option())
    return [
        draft(
            "stage_started", "kernel", "memory_recall", {}, invocation="memory_recall#1", attempt=1
        ),
        draft(
            "review_requested",
            actor,
            "memory_recall",
            {
                "kind": "decide",
                "prompt": "Recalled:",
                "options": [option, {"id": "none", "label": "none"}],
                "closes": True,
            },
            invocation="memory_recall#1",
        ),
    ]


def msgspec_builtins(option: ev.ReviewOptionPayload) -> dict:
    import msgspec

    return msgspec.to_builtins(option)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("batch", "rule"),
    [
        # the agent asks F2's closing review itself
        (lambda: _forged_closing("agent"), "actor"),
        # the agent records "nothing recalled" and closes F2
        (
            lambda: [
                draft(
                    "stage_started",
                    "kernel",
                    "memory_recall",
                    {},
                    invocation="memory_recall#1",
                    attempt=1,
                ),
                draft(
                    "memory_nothing_recalled",
                    "agent",
                    "memory_recall",
                    {"reason": "nothing"},
                    invocation="memory_recall#1",
                ),
                draft(
                    "stage_completed",
                    "kernel",
                    "memory_recall",
                    {"via": "auto"},
                    invocation="memory_recall#1",
                ),
            ],
            "module_decision",
        ),
        # …or closes F2 with no module decision and no review at all
        (
            lambda: [
                draft(
                    "stage_started",
                    "kernel",
                    "memory_recall",
                    {},
                    invocation="memory_recall#1",
                    attempt=1,
                ),
                draft(
                    "stage_completed",
                    "kernel",
                    "memory_recall",
                    {"via": "auto"},
                    invocation="memory_recall#1",
                ),
            ],
            "stage_completed",
        ),
    ],
    ids=["agent_closing_review", "agent_nothing_recalled", "no_decision"],
)
def test_forged_f2_lines_are_caught(at_f2: sc.Run, batch, rule: str) -> None:
    ws, session = at_f2.workspace.root, at_f2.session
    seqs = append_forged(ws / "sessions" / session, session, batch())
    code, body = verify_json(ws, session)
    assert code == 7, body
    problems = {(p["seq"], p["code"]) for p in body["problems"]}
    assert problems & {(s, rule) for s in seqs}, body["problems"]
    done = tht(ws, "session", "pause", session, "--as", H, "--json")
    assert done.returncode == 7  # no append on a ledger that does not verify


def test_an_answer_that_drops_the_unchosen_events_is_caught(at_f2: sc.Run) -> None:
    """The module's closing decide is real; the forged answer records the chosen memory and
    closes the stage but leaves out the memory_rejected of the option not chosen."""
    k = at_f2.kernel
    other = _applied_option("mem-fedcba9876543210")
    applied = k.apply_outcome(
        at_f2.session, "memory_recall", _closing(_applied_option(), other), actor="module:memory"
    )
    seq = sc._review_seq(applied)
    ws, session = at_f2.workspace.root, at_f2.session
    chosen = "m:mem-0123456789abcdef"
    payload = {"memory_id": "mem-0123456789abcdef", "kind": "memory", "meaning": "flag_ablazione"}
    seqs = append_forged(
        ws / "sessions" / session,
        session,
        [
            draft(
                "review_answered",
                H,
                "memory_recall",
                {"choice": [chosen]},
                invocation="memory_recall#1",
                causation=seq,
            ),
            draft(
                "memory_applied",
                H,
                "memory_recall",
                payload,
                invocation="memory_recall#1",
                causation=seq,
                subject="ablazione",
            ),
            draft(
                "stage_completed",
                "kernel",
                "memory_recall",
                {"via": "review"},
                invocation="memory_recall#1",
                causation=seq,
            ),
        ],
    )
    code, body = verify_json(ws, session)
    assert code == 7, body
    assert any(p["seq"] in seqs for p in body["problems"]), body["problems"]
