"""Legal synthetic ledgers for the trust benchmarks: command-shaped batches the replay accepts.

After admission, the disambiguation stage (F1) repeats one cycle: the agent proposes a ``select``
review, the reviewer answers it (``review_answered`` + the chosen ``concept_clarified``), Evidence
records a receipt, and the reviewer retracts the clarification. 3 of its 5 events are human, so a
signed ledger signs 60% of its lines — more than a real session, on purpose.

The lines are stamped and chained here exactly as :class:`kernel.ledger.Ledger` does, and written
in one go (an append per command would cost one fsync each: minutes for 100,000 events).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from kernel import events as ev
from kernel.ledger_verify import genesis_hash, line_hash
from kernel.workflow import WorkflowSpec, compiled_sha256

__all__ = ["write_legal_ledger"]

_TS = "2026-01-01T00:00:00.000Z"


def _batches(workflow: WorkflowSpec, session: str, reviewer: str) -> Iterator[list[ev.EventDraft]]:
    yield [
        ev.EventDraft(
            type="session_created",
            actor="agent",
            subject=session,
            payload=ev.SessionCreatedPayload(
                question="How many ablation procedures per hospital in 2023?",
                workflow=ev.WorkflowRef(
                    name=workflow.name,
                    version=workflow.version,
                    sha256=workflow.sha256,
                    compiled=compiled_sha256(workflow),
                ),
                human_decisions="signed" if reviewer else "unsigned",
            ),
        )
    ]
    module = "module:disambiguation"
    yield [
        ev.EventDraft(
            type="stage_started",
            actor="kernel",
            stage="admission",
            invocation="admission#1",
            attempt=1,
            payload=ev.Empty(),
        ),
        ev.EventDraft(
            type="question_admitted",
            actor=module,
            stage="admission",
            invocation="admission#1",
            payload=ev.QuestionAdmittedPayload(checks=("non_empty",)),
        ),
        ev.EventDraft(
            type="stage_completed",
            actor="kernel",
            stage="admission",
            invocation="admission#1",
            payload=ev.StageCompletedPayload(via="auto"),
        ),
    ]
    f1 = {"stage": "disambiguation", "invocation": "disambiguation#1"}
    started = False
    n = 0
    while True:
        n += 1
        option = ev.ReviewOptionPayload(
            id="flag",
            label=f"the flag column (round {n})",
            events=(
                ev.ProposedEvent(
                    type="concept_clarified",
                    subject="ablazione",
                    payload={"meaning": f"flag_ablazione = 1 ({n})"},
                ),
            ),
        )
        request = ev.EventDraft(
            type="review_requested",
            actor="agent",
            payload=ev.ReviewRequestedPayload(
                kind="select", prompt="What does 'ablazione' mean?", options=(option,)
            ),
            **f1,  # type: ignore[arg-type]
        )
        if not started:
            start = ev.EventDraft(
                type="stage_started",
                actor="kernel",
                attempt=1,
                payload=ev.Empty(),
                **f1,  # type: ignore[arg-type]
            )
            yield [start, request]
            started = True
            request_at = 6
        else:
            yield [request]
        answer = [
            ev.EventDraft(
                type="review_answered",
                actor=reviewer or "human:ann",
                causation=request_at,
                payload=ev.ReviewAnsweredPayload(choice=("flag",)),
                **f1,  # type: ignore[arg-type]
            ),
            ev.EventDraft(
                type="concept_clarified",
                actor=reviewer or "human:ann",
                causation=request_at,
                subject="ablazione",
                payload=ev.ConceptClarifiedPayload(meaning=f"flag_ablazione = 1 ({n})"),
                **f1,  # type: ignore[arg-type]
            ),
        ]
        yield answer
        yield [
            ev.EventDraft(
                type="evidence_consulted",
                actor="module:evidence",
                payload=ev.EvidenceConsultedPayload(
                    purpose="disambiguation", generation="g1", returned=("evidence:a",)
                ),
                **f1,  # type: ignore[arg-type]
            )
        ]
        yield [
            ev.EventDraft(
                type="decision_retracted",
                actor=reviewer or "human:ann",
                stage="disambiguation",
                subject="ablazione",
                retracts=request_at + 2,
                payload=ev.ReasonPayload(reason="not yet"),
            )
        ]
        request_at += 5


def write_legal_ledger(
    folder: Path,
    workflow: WorkflowSpec,
    session: str,
    count: int,
    *,
    sign: Callable[[ev.Event], str] | None = None,
    reviewer: str = "",
) -> None:
    """Write ``folder/ledger.jsonl`` (and its anchor) with at least ``count`` legal events,
    ending at a batch boundary; with ``sign``, every human event is signed by ``reviewer``."""
    folder.mkdir(parents=True, exist_ok=True)
    prev = genesis_hash(session)
    seq = 0
    lines: list[bytes] = []
    for batch in _batches(workflow, session, reviewer):
        last = len(batch) - 1
        for position, draft in enumerate(batch):
            seq += 1
            event = ev.stamp(draft, seq=seq, ts=_TS, prev=prev, batch_left=last - position)
            if sign is not None and event.actor.startswith("human:"):
                event = msgspec.structs.replace(event, sig=sign(event))
            line = ev.encode_event(event)
            prev = line_hash(line)
            lines.append(line)
        if seq >= count:
            break
    (folder / "ledger.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    record = b'{"seq": %d, "head": "%s"}' % (seq, prev.encode())
    (folder / "ledger.head").write_bytes(record.ljust(127) + b"\n")
