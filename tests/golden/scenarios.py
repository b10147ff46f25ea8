"""Golden session scenarios: each drives the real kernel API with a fixed clock and seeded ids.

``golden/sessions/<name>/ledger.jsonl`` is what a scenario writes; ``status.json`` is the folded
state's ``tht session status --json`` projection. Both are regenerated only with
``pytest --update-golden`` (tests/golden/test_golden_sessions.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.outcomes import ArtifactChange, Failure, ModuleOutcome, ReviewRequest, RevisionRequest
from kernel.store.fs import FileSystemStore
from kernel.workflow_kernel import WorkflowKernel
from kernel.workspace import Workspace, init_workspace

H = "human:ann"
QUESTION = "How many ablation procedures were performed in 2023 per hospital?"


@dataclass
class Run:
    kernel: WorkflowKernel
    workspace: Workspace
    session: str = ""

    def last(self) -> int:
        return self.kernel.load(self.session).state.last_seq


def make_kernel(root: Path) -> Run:
    ws, _ = init_workspace(root)
    kernel = WorkflowKernel(
        FileSystemStore(ws.sessions_dir, ws.cache_dir),
        clock=FixedClock(),
        ids=SeededIds(42),
        workflow_cache=ws.cache_dir,
    )
    return Run(kernel, ws)


def _event(kind: str, subject: str | None = None, **payload: object) -> ev.ProposedEvent:
    return ev.ProposedEvent(type=kind, subject=subject, payload=dict(payload))


def _select(prompt: str, *options: tuple[str, str, tuple[ev.ProposedEvent, ...]]) -> ModuleOutcome:
    return ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(
            kind="select",
            prompt=prompt,
            options=tuple(
                ev.ReviewOptionPayload(id=i, label=label, events=events)
                for i, label, events in options
            ),
        ),
    )


def _confirm(prompt: str = "Close the stage?", artifacts: tuple[ArtifactChange, ...] = ()) -> ModuleOutcome:
    return ModuleOutcome(
        status="awaiting_review",
        artifacts=artifacts,
        review=ReviewRequest(kind="confirm", prompt=prompt, artifacts=tuple(a.name for a in artifacts)),
    )


def _review_seq(applied: object) -> int:
    for event in applied.events:  # type: ignore[attr-defined]
        if isinstance(event, ev.ReviewRequested | ev.RevisionRequested):
            return event.seq
    raise AssertionError("no review requested")


def start(run: Run) -> None:
    created = run.kernel.create_session(QUESTION, actor="agent")
    run.session = created.session
    run.kernel.apply_outcome(
        run.session,
        "admission",
        ModuleOutcome(status="completed", events=(_event("question_admitted", checks=["usable", "in_scope"]),)),
        actor="module:disambiguation",
    )


def stage_by_select(run: Run, stage: str, kind: str, subject: str | None, **payload: object) -> None:
    k = run.kernel
    seq = _review_seq(
        k.apply_outcome(
            run.session,
            stage,
            _select(f"{stage}: choose", ("a", "option a", (_event(kind, subject, **payload),))),
            actor="agent",
        )
    )
    k.answer(run.session, seq, actor=H, choose=("a",))


def close(run: Run, stage: str, artifacts: tuple[ArtifactChange, ...] = ()) -> None:
    seq = _review_seq(run.kernel.apply_outcome(run.session, stage, _confirm(artifacts=artifacts), actor="agent"))
    run.kernel.answer(run.session, seq, actor=H, approve=True)


def f1(run: Run) -> None:
    stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="flag_ablazione")
    close(run, "disambiguation")


def through_f4(run: Run) -> None:
    f1(run)
    run.kernel.skip(run.session, "memory_recall", actor=H, reason="no memory yet")
    stage_by_select(run, "rewriting", "question_rewritten", None, question="Ablations in 2023 per facility")
    close(run, "rewriting", (ArtifactChange(name="question.md", content=b"# Ablations in 2023\n"),))
    stage_by_select(run, "schema_linking", "schema_linked", None, tables=["procedures", "facilities"])
    close(run, "schema_linking")


def through_f6(run: Run) -> None:
    through_f4(run)
    stage_by_select(run, "cte", "cte_approved", "a2023", name="a2023", artifact="cte/1.sql")
    close(run, "cte", (ArtifactChange(name="cte/1.sql", content=b"a2023 AS (SELECT 1)\n"),))
    stage_by_select(run, "sql", "sql_approved", None)
    close(run, "sql", (ArtifactChange(name="sql_final.sql", content=b"SELECT 1;\n"),))


def through_f7(run: Run) -> None:
    through_f6(run)
    run.kernel.apply_outcome(
        run.session,
        "verification",
        ModuleOutcome(status="completed", events=(_event("result_verified", rows=3, checks=["non-empty"]),)),
        actor="module:core",
    )


def to_finalize(run: Run) -> None:
    through_f7(run)
    run.kernel.skip(run.session, "datamart", actor=H, reason="one-off question")
    clarified = next(
        d.seq
        for d in run.kernel.load(run.session).state.effective_decisions()
        if d.type == "concept_clarified"
    )
    promote(run, clarified)


def promote(run: Run, clarified: int, *, choose: bool = True) -> None:
    """The memory promotion contribution as Memory's own run asks it: a closing decide, the
    candidate pre-selected; not choosing it records memory_promotion_declined."""
    option = ev.ReviewOptionPayload(
        id=f"c{clarified}",
        label="ablazione = flag_ablazione",
        events=(
            _event(
                "memory_promoted",
                "ablazione",
                source_seq=clarified,
                memory_id="mem-0123456789abcdef",
                content="ablazione = flag_ablazione",
            ),
        ),
        unchosen=(
            _event(
                "memory_promotion_declined",
                "ablazione",
                source_seq=clarified,
                reason="not promoted by the reviewer",
            ),
        ),
        selected=True,
    )
    extra = ev.ReviewOptionPayload(id="none", label="promote nothing")
    outcome = ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(
            kind="decide", prompt="Promote 1 clarification?", options=(option, extra), closes=True
        ),
    )
    seq = _review_seq(run.kernel.apply_outcome(run.session, "memory_promotion", outcome, actor="module:memory"))
    run.kernel.answer(run.session, seq, actor=H, choose=(option.id,) if choose else ("none",))


# ---------------------------------------------------------------------------- scenarios


def happy_path(run: Run) -> None:
    start(run)
    to_finalize(run)
    run.kernel.finalize(run.session, actor=H)


def retraction(run: Run) -> None:
    start(run)
    stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="flag")
    stage_by_select(run, "disambiguation", "value_grounded", "2023", value="2023", column="procedure_date")
    clarified = run.kernel.load(run.session).state.effective_decisions()[1].seq
    run.kernel.retract(run.session, clarified, actor=H, reason="the flag is not what was meant")
    stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="free text")


def reopen_stale(run: Run) -> None:
    start(run)
    through_f4(run)
    stage_by_select(run, "cte", "cte_approved", "a2023", name="a2023", artifact="cte/1.sql")
    close(run, "cte", (ArtifactChange(name="cte/1.sql", content=b"a2023 AS (SELECT 1)\n"),))
    k = run.kernel
    seq = _review_seq(
        k.apply_outcome(
            run.session,
            "sql",
            ModuleOutcome(
                status="revision_requested",
                revision=RevisionRequest(target="rewriting", reason="the rewriting lost the year"),
            ),
            actor="agent",
        )
    )
    k.answer(run.session, seq, actor=H, approve=True, rationale="rewrite again")


def skip_and_fail(run: Run) -> None:
    start(run)
    run.kernel.skip(run.session, "disambiguation", actor=H, reason="nothing ambiguous")
    run.kernel.skip(run.session, "memory_recall", actor=H, reason="no memory yet")
    run.kernel.apply_outcome(
        run.session,
        "rewriting",
        ModuleOutcome(status="failed", failure=Failure(code="model_unavailable", message="no rewrite")),
        actor="agent",
    )


def pause_resume(run: Run) -> None:
    start(run)
    stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="flag")
    run.kernel.pause(run.session, actor=H, reason="lunch")
    run.kernel.resume(run.session, actor=H)
    close(run, "disambiguation")
    run.kernel.pause(run.session, actor=H, reason="end of day")


def finalize_derive(run: Run) -> None:
    happy_path(run)
    derived = run.kernel.derive(run.session, actor=H, reason="the count must exclude cancelled")
    run.session = derived.session


def torn_tail(run: Run) -> None:
    start(run)
    stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="flag")
    ledger = run.workspace.sessions_dir / run.session / "ledger.jsonl"
    with ledger.open("ab") as fh:
        fh.write(b'{"type":"concept_clarified","seq":9,"ts":"2026-01-01T00:00')


def _refusal(code: str, reason: str) -> ModuleOutcome:
    """Question Admission's refusal, as modules/disambiguation/admission.py records it."""
    return ModuleOutcome(
        status="failed",
        events=(_event("question_refused", code=code, reason=reason),),
        failure=Failure(code=f"refused:{code}", message=reason),
    )


_TOO_SHORT = ("too_short", "the question has no words to work with")
_ADMITTED = ModuleOutcome(
    status="completed", events=(_event("question_admitted", checks=["usable", "in_scope"]),)
)


def _refused_start(run: Run) -> None:
    created = run.kernel.create_session("ablations?", actor="agent")
    run.session = created.session
    run.kernel.apply_outcome(
        run.session, "admission", _refusal(*_TOO_SHORT), actor="module:disambiguation"
    )


def rephrase_admitted(run: Run) -> None:
    """Refused, rephrased (by the person asking), admitted: F1 is the current stage."""
    _refused_start(run)
    run.kernel.rephrase(run.session, QUESTION, _ADMITTED, actor=H)


def refused_closed(run: Run) -> None:
    """Refused three times (the default attempts): the kernel closes the session."""
    _refused_start(run)
    run.kernel.rephrase(
        run.session,
        "ablations in [competitor]?",
        _refusal("competitor", "the question names a competitor"),
        actor="agent",
    )
    run.kernel.rephrase(run.session, "ablations??", _refusal(*_TOO_SHORT), actor=H)


SCENARIOS: dict[str, Callable[[Run], None]] = {
    "happy_path": happy_path,
    "retraction": retraction,
    "reopen_stale": reopen_stale,
    "skip_and_fail": skip_and_fail,
    "pause_resume": pause_resume,
    "finalize_derive": finalize_derive,
    "torn_tail": torn_tail,
    "rephrase_admitted": rephrase_admitted,
    "refused_closed": refused_closed,
}
