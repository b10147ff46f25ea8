"""Properties of F8's promotion over real sessions (the Workflow Kernel writes every ledger):
a retracted or stale clarification is never a candidate, every clarification is either a
candidate or counted by why it is not, promoting twice saves nothing, and a declined candidate
never comes back in the same session."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.outcomes import ModuleOutcome
from modules.memory import (
    MemoryState,
    PromotionCandidate,
    fold_registry,
    fold_registry_from,
    memory_key,
    plan_saves,
    promotion_candidates,
    promotion_review,
)
from modules.memory.candidates import NONE_OPTION
from tests.modules.memory.registry_support import ANA, Session, saved, stamped

# every kernel operation folds the whole ledger: a few dozen sessions per property suffice
KERNEL_EXAMPLES = settings(max_examples=40, deadline=None)

_SUBJECTS = ("ablazione", "Ablazione", "anno", "ospedale")
_MEANINGS = ("flag", "free text")
_TARGETS = (None, "procedures.flag", "procedures.note")

_clarify = st.tuples(
    st.just("clarify"),
    st.sampled_from(_SUBJECTS),
    st.sampled_from(_MEANINGS),
    st.sampled_from(_TARGETS),
)
_retract = st.tuples(st.just("retract"), st.integers(0, 5))
_ops = st.lists(st.one_of(_clarify, _clarify, _retract), max_size=6)
_memory = st.lists(
    st.tuples(st.sampled_from(_SUBJECTS), st.sampled_from(_MEANINGS), st.sampled_from(_TARGETS)),
    max_size=3,
)


def _run(s: Session, ops: list[tuple[object, ...]]) -> None:
    for op in ops:
        if op[0] == "clarify":
            _, subject, meaning, target = op
            s.clarify(str(subject), str(meaning), target if target is None else str(target))
        else:
            live = [d.seq for d in s.state.effective_decisions() if d.type == "concept_clarified"]
            if live:
                s.retract(live[int(str(op[1])) % len(live)])


def _registry(items: list[tuple[str, str, str | None]]) -> MemoryState:
    drafts, seen = [], set()
    for subject, meaning, target in items:
        draft = saved(subject, meaning, target, session="S0")
        if draft.payload.memory_id not in seen:  # type: ignore[attr-defined]
            seen.add(draft.payload.memory_id)  # type: ignore[attr-defined]
            drafts.append(draft)
    return fold_registry(stamped(drafts))


@KERNEL_EXAMPLES
@given(_ops, st.booleans(), _ops, _memory)
def test_candidates_are_effective_and_every_clarification_is_accounted_for(
    before: list[tuple[object, ...]],
    reopen: bool,
    after: list[tuple[object, ...]],
    items: list[tuple[str, str, str | None]],
) -> None:
    s = Session()
    _run(s, before)
    if reopen:
        s.close("disambiguation")
        s.skip("memory_recall")
        s.reopen("disambiguation")
    _run(s, after)
    state, memory = s.state, _registry(items)
    report = promotion_candidates(state, memory, language="it")
    clarified = [d for d in state.decisions if d.type == "concept_clarified"]
    for c in report.candidates:
        record = state.decision(c.seq)
        assert record is not None and record.status == "effective"
        assert memory.live_key(memory_key(c.subject, c.target, c.meaning)) is None
    not_effective = {d.seq for d in clarified if d.status != "effective"}
    assert not not_effective & {c.seq for c in report.candidates}
    assert sum(report.excluded.values()) + len(report.candidates) == len(clarified)
    assert report.excluded.get("retracted", 0) == sum(d.status == "retracted" for d in clarified)
    assert report.excluded.get("stale", 0) == sum(d.status == "stale" for d in clarified)
    ids = [c.memory_id for c in report.candidates]
    assert len(ids) == len(set(ids))  # one candidate per memory


@KERNEL_EXAMPLES
@given(_ops, _memory, st.data())
def test_promoting_twice_is_promoting_once(
    ops: list[tuple[object, ...]], items: list[tuple[str, str, str | None]], data: st.DataObject
) -> None:
    s = Session()
    _run(s, ops)
    memory = _registry(items)
    report = promotion_candidates(s.state, memory, language="it")
    chosen: list[PromotionCandidate] = data.draw(
        st.lists(st.sampled_from(report.candidates), unique=True)
        if report.candidates
        else st.just([])
    )
    first = plan_saves(memory, chosen, session=s.id, reviewer=ANA)
    once = fold_registry_from(memory, stamped(first.drafts, start=memory.last_seq + 1))
    assert once.problems == ()  # nothing the fold refuses
    second = plan_saves(once, chosen, session=s.id, reviewer=ANA)
    assert second.drafts == [] and second.saved == ()
    assert set(second.already) == {c.memory_id for c in chosen} - set(first.replaced)
    # and the saved ones are no longer candidates: they are in memory
    left = promotion_candidates(s.state, once, language="it")
    assert not {c.memory_id for c in left.candidates} & set(first.saved)
    keys = [m.key for m in once.live()]
    assert len(keys) == len(set(keys))


@KERNEL_EXAMPLES
@given(_ops, st.data())
def test_a_declined_candidate_never_comes_back_in_the_same_session(
    ops: list[tuple[object, ...]], data: st.DataObject
) -> None:
    s = Session()
    _run(s, ops)
    s.close("disambiguation")
    s.skip("memory_recall")
    s.advance_to("memory_promotion")
    report = promotion_candidates(s.state, MemoryState(), language="")
    if not report.candidates:
        return
    kept = data.draw(st.lists(st.sampled_from(report.candidates), unique=True))
    review = promotion_review(report)
    asked = s.run_module("memory_promotion", ModuleOutcome(status="awaiting_review", review=review))
    assert asked is not None
    s.answer(asked, *([f"c{c.seq}" for c in kept] or [NONE_OPTION]))
    declined = [c for c in report.candidates if c not in kept]
    assert promotion_candidates(s.state, MemoryState(), language="").candidates == ()
    # reopened and clarified again with the same content: still not a candidate
    s.reopen("disambiguation")
    for c in declined:
        s.clarify(c.subject, c.meaning, c.target)
    again = promotion_candidates(s.state, MemoryState(), language="")
    assert not {c.memory_id for c in again.candidates} & {c.memory_id for c in declined}
