"""Signed mode, as a property: no sequence of agent-level operations yields a valid human event.

After a legitimate reviewer has signed a few decisions, the agent — no terminal, so no key —
runs random operations: human-only kernel calls in the reviewer's name (refused, the ledger
unchanged), its own proposals (agent-level, allowed), and direct writes of human events that
are re-chained and re-anchored like the strongest attacker would (unsigned, a made-up
signature, one by its own key, or a genuine signature copied from another line). Afterwards
``verify --full`` names every human event the agent added.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import ThtError
from kernel.ledger_verify import line_hash
from kernel.outcomes import ModuleOutcome
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import generate_signing_key
from kernel.trust import Trust
from tests.golden import scenarios

REVIEWER = "human:ann"
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
_KEY = generate_signing_key(REVIEWER)
_AGENT_KEY = generate_signing_key(REVIEWER)  # a key the agent made itself, same reviewer id


class _NoTerminal(ThtError):
    exit_code = 5


def _agent_unlock(reviewer: str) -> object:
    raise _NoTerminal(f"{reviewer}: no controlling terminal")


def _signed_run(root: Path) -> scenarios.Run:
    run = scenarios.make_kernel(root)
    registry = ReviewerRegistry(run.workspace.reviewers_dir)
    registry.add_reviewer(_KEY, by=None, clock=FixedClock())
    state = registry.state()
    run.kernel._trust = Trust(
        signed=True,
        human_check=state.check_human_event,
        check_signature=state.signature_valid,
        unlock=lambda reviewer: _KEY,
    )
    scenarios.start(run)
    scenarios.f1(run)  # the reviewer's own, signed decisions
    run.kernel._trust = Trust(  # from here on only the agent acts: it has no terminal
        signed=True,
        human_check=state.check_human_event,
        check_signature=state.signature_valid,
        unlock=_agent_unlock,  # type: ignore[arg-type]
    )
    return run


_HUMAN_CALLS = ("pause", "resume", "retract", "skip", "reopen", "answer", "finalize")
_FORGED = st.sampled_from(
    ["session_paused", "stage_skipped", "decision_retracted", "review_answered", "ledger_repaired"]
)
_SIG = st.sampled_from(["none", "junk", "agent_key", "copied"])

operation = st.one_of(
    st.tuples(st.just("human_call"), st.sampled_from(_HUMAN_CALLS)),
    st.tuples(st.just("propose"), st.sampled_from(["disambiguation", "memory_recall"])),
    st.tuples(st.just("forge"), st.tuples(_FORGED, _SIG)),
)


def _human_call(run: scenarios.Run, name: str) -> None:
    k, s = run.kernel, run.session
    state = k.load(s).state
    calls = {
        "pause": lambda: k.pause(s, actor=REVIEWER),
        "resume": lambda: k.resume(s, actor=REVIEWER),
        "retract": lambda: k.retract(
            s, state.decisions[0].seq if state.decisions else 1, actor=REVIEWER, reason="r"
        ),
        "skip": lambda: k.skip(
            s, state.current_stage or "disambiguation", actor=REVIEWER, reason="r"
        ),
        "reopen": lambda: k.reopen(s, "disambiguation", actor=REVIEWER, reason="r"),
        "answer": lambda: k.answer(
            s,
            state.open_reviews[0].seq if state.open_reviews else 1,
            actor=REVIEWER,
            approve=True,
        ),
        "finalize": lambda: k.finalize(s, actor=REVIEWER),
    }
    calls[name]()


def _forge(run: scenarios.Run, kind: str, how: str) -> None:
    ledger = run.kernel.store.ledger(run.session)
    events = ledger.read().events
    last = events[-1]
    payloads: dict[str, ev.Payload] = {
        "session_paused": ev.OptionalReasonPayload(),
        "stage_skipped": ev.ReasonPayload(reason="forged"),
        "decision_retracted": ev.ReasonPayload(reason="forged"),
        "review_answered": ev.ReviewAnsweredPayload(approved=True),
        "ledger_repaired": ev.LedgerRepairedPayload(reason="forged"),
    }
    draft = ev.EventDraft(
        type=kind,
        actor=REVIEWER,
        stage=None if kind in ("session_paused", "ledger_repaired") else "disambiguation",
        payload=payloads[kind],
    )
    event = ev.stamp(draft, seq=last.seq + 1, ts=last.ts, prev=ledger.tail().head)
    if how == "junk":
        junk = base64.b64encode(b"\x00" * 64).decode()
        event = msgspec.structs.replace(event, sig=f"ed25519:{_KEY.key_id}:{junk}")
    elif how == "agent_key":
        event = msgspec.structs.replace(event, sig=_AGENT_KEY.sign_event(event))
    elif how == "copied":
        genuine = next(e.sig for e in reversed(events) if e.sig is not None)
        event = msgspec.structs.replace(event, sig=genuine)
    line = ev.encode_event(event)
    with ledger.path.open("ab") as fh:
        fh.write(line + b"\n")
    record = b'{"seq": %d, "head": "%s"}' % (event.seq, line_hash(line).encode())
    ledger.head_path.write_bytes(record.ljust(127) + b"\n")
    ledger.close()


@SETTINGS
@given(ops=st.lists(operation, min_size=1, max_size=6))
def test_no_agent_operation_yields_a_valid_human_event(ops: list[tuple[str, object]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="tht-signed-props-"))
    try:
        run = _signed_run(root / "ws")
        ledger = run.kernel.store.ledger(run.session)
        genuine = {e.seq for e in ledger.read().events if e.actor.startswith("human:")}
        assert genuine and run.kernel.verify(run.session, full=True).ok
        for kind, arg in ops:
            before = ledger.read_bytes()
            if kind == "human_call":
                try:
                    _human_call(run, str(arg))
                except ThtError:
                    pass
                else:
                    raise AssertionError(f"{arg} in the reviewer's name succeeded without a key")
                assert ledger.read_bytes() == before, f"a refused {arg} changed the ledger"
            elif kind == "propose":
                try:
                    run.kernel.apply_outcome(
                        run.session, str(arg), ModuleOutcome(status="applied"), actor="agent"
                    )
                except ThtError:
                    assert ledger.read_bytes() == before
            else:
                forged_kind, how = arg  # type: ignore[misc]
                _forge(run, forged_kind, how)
        events = ledger.read().events
        added = {e.seq for e in events if e.actor.startswith("human:")} - genuine
        report = run.kernel.verify(run.session, full=True)
        flagged = {p.seq for p in report.problems if p.seq is not None}
        assert added <= flagged, (sorted(added - flagged), report.problems)
        default = run.kernel.verify(run.session)  # the witnessed check says the same
        assert added <= {p.seq for p in default.problems if p.seq is not None}
    finally:
        shutil.rmtree(root, ignore_errors=True)
