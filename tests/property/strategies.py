"""Hypothesis strategies for kernel inputs: proposals, payloads, actors, reasons.

Mostly well-formed inputs (so sessions make progress through the workflow) mixed with inputs the
kernel must reject whole: event types a stage may not emit, kernel event types, payloads that do
not match their schema, undeclared or unsafe artifact names, bad option ids, non-human actors.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kernel.events import EVENT_TYPES, KERNEL_TYPES, REGISTRY_TYPES
from kernel.workflow import StepSpec, WorkflowSpec

__all__ = [
    "PAYLOADS",
    "agent_actors",
    "human_actors",
    "invalid_payloads",
    "mostly",
    "proposals",
    "reasons",
    "valid_artifact_name",
    "words",
]

# Printable text without surrogates (the kernel's input is UTF-8 JSON) but with non-ASCII.
text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=0, max_size=10
)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzàé_", min_size=1, max_size=8)
# Integers across the whole range: the ledger and every cache must hold what a payload declares.
integers = st.one_of(st.integers(min_value=-3, max_value=1000), st.integers())
str_list = st.lists(words, max_size=3)

PAYLOADS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "question_admitted": st.fixed_dictionaries({}, optional={"checks": str_list}),
    "question_refused": st.fixed_dictionaries({"code": words, "reason": text}),
    "concept_clarified": st.fixed_dictionaries(
        {"meaning": text},
        optional={"target": st.none() | words, "alternatives": str_list},
    ),
    "ambiguity_open": st.fixed_dictionaries(
        {"question": text}, optional={"options": str_list, "unanswerable": st.booleans()}
    ),
    "value_grounded": st.fixed_dictionaries(
        {"value": text, "column": words}, optional={"meaning": text}
    ),
    "memory_applied": st.fixed_dictionaries({"memory_id": words}, optional={"content": text}),
    "memory_rejected": st.fixed_dictionaries({"memory_id": words}, optional={"reason": text}),
    "question_rewritten": st.fixed_dictionaries(
        {"question": text}, optional={"assumptions": str_list}
    ),
    "schema_linked": st.fixed_dictionaries(
        {"tables": str_list}, optional={"columns": str_list, "evidence": str_list}
    ),
    "evidence_accepted": st.fixed_dictionaries({"evidence_id": words}, optional={"reason": text}),
    "evidence_rejected": st.fixed_dictionaries({"evidence_id": words}, optional={"reason": text}),
    "concept_formula_approved": st.fixed_dictionaries(
        {"formula": text}, optional={"evidence_id": st.none() | words, "inputs": str_list}
    ),
    "concept_formula_rejected": st.fixed_dictionaries({"formula": text}),
    "evidence_consulted": st.fixed_dictionaries(
        {
            "purpose": st.sampled_from(
                ["disambiguation", "rewriting", "schema_linking", "sql_generation"]
            ),
            "generation": words,
        },
        optional={"returned": str_list},
    ),
    "cte_approved": st.fixed_dictionaries({"name": words, "artifact": words}),
    "sql_approved": st.fixed_dictionaries({}, optional={"dialect": words}),
    "result_verified": st.fixed_dictionaries(
        {"rows": integers}, optional={"checks": str_list, "ok": st.booleans()}
    ),
    "datamart_defined": st.fixed_dictionaries({"name": words}),
    "datamart_skipped": st.fixed_dictionaries({"reason": text}),
    "memory_promoted": st.fixed_dictionaries(
        {"source_seq": integers}, optional={"memory_id": words, "content": text}
    ),
    "memory_promotion_declined": st.fixed_dictionaries(
        {"source_seq": integers}, optional={"reason": text}
    ),
    "memory_nothing_recalled": st.fixed_dictionaries(
        {"reason": text}, optional={"searched": integers, "considered": integers}
    ),
    "memory_nothing_to_promote": st.fixed_dictionaries({"reason": text}),
}

invalid_payloads = st.sampled_from(
    [{"no_such_field": 1}, {"meaning": 3}, {"tables": "not-a-list"}, {"rows": "many"}]
)


def mostly(
    valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any], one_in: int = 12
) -> st.SearchStrategy[Any]:
    """``valid``, except one time in ``one_in`` (so operations mostly get through)."""
    return st.integers(1, one_in).flatmap(lambda n: invalid if n == 1 else valid)


human_actors = mostly(
    st.sampled_from(["human:ana", "human:bo.b"]),
    st.sampled_from(["agent", "module:memory", "kernel", "human:", "human:a b", "ana", None]),
)
agent_actors = mostly(st.just("agent"), st.sampled_from(["module:disambiguation", "human:ana"]))
reasons = mostly(st.just("because the reviewer said so"), st.sampled_from([None, "", "  "]))


def valid_artifact_name(pattern: str, n: int) -> str:
    return pattern[:-1] + f"{n}.sql" if pattern.endswith("/*") else pattern


@st.composite
def proposed_events(draw: st.DrawFn, step: StepSpec, workflow: WorkflowSpec) -> dict[str, Any]:
    """An event for a proposal: usually one the step may emit, with a valid payload."""
    allowed = sorted({*step.emits, *workflow.receipts})
    domain = sorted(set(EVENT_TYPES) - KERNEL_TYPES - REGISTRY_TYPES)
    kind = draw(st.integers(0, 39))
    if kind <= 36:
        etype = draw(st.sampled_from(allowed))
    elif kind == 37:
        etype = draw(st.sampled_from(domain))
    elif kind == 38:
        etype = draw(st.sampled_from([*sorted(KERNEL_TYPES), "no_such_type"]))
    else:
        etype = draw(st.sampled_from(allowed))
        return {"type": etype, "payload": draw(invalid_payloads)}
    payload = draw(PAYLOADS[etype]) if etype in PAYLOADS else {}
    event: dict[str, Any] = {"type": etype, "payload": payload}
    subject = draw(st.none() | words)
    if subject is not None:
        event["subject"] = subject
    return event


@st.composite
def artifacts(draw: st.DrawFn, step: StepSpec) -> list[dict[str, str]]:
    names: list[str] = []
    for _ in range(draw(st.integers(0, 2))):
        choice = draw(st.integers(0, 19))
        if step.artifacts and choice <= 18:
            pattern = draw(st.sampled_from(step.artifacts))
            names.append(valid_artifact_name(pattern, draw(st.integers(1, 3))))
        else:
            names.append(draw(st.sampled_from(["../escape.md", "other.md", "/abs.sql", "a//b"])))
    return [{"name": n, "content": draw(text)} for n in names]


@st.composite
def proposals(
    draw: st.DrawFn,
    step: StepSpec,
    workflow: WorkflowSpec,
    kinds: tuple[str, ...] = ("select", "decide", "confirm", "auto", "revision", "fail"),
) -> dict[str, Any]:
    """A proposal file (ARCHITECTURE §6 + the revision and fail kinds) for ``step``."""
    kind = draw(st.sampled_from(kinds))
    proposal: dict[str, Any] = {"kind": kind}
    if draw(st.integers(0, 9)) > 0:
        proposal["prompt"] = draw(st.sampled_from(["Which one?", "Approve?"]))
    if kind in ("select", "decide") or draw(st.integers(0, 19)) == 0:
        ids = draw(
            mostly(
                st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
                st.sampled_from([[], ["a", "a"], [" "]]),
            )
        )
        proposal["options"] = [
            {
                "id": option_id,
                "label": f"option {option_id}",
                "events": draw(st.lists(proposed_events(step, workflow), max_size=2)),
            }
            for option_id in ids
        ]
    if kind == "auto" or draw(st.integers(0, 19)) == 0:
        proposal["events"] = draw(st.lists(proposed_events(step, workflow), max_size=3))
    written = draw(artifacts(step))
    if written:
        proposal["artifacts"] = written
    if kind == "revision":
        proposal["target"] = draw(st.sampled_from([*workflow.ids, "no_such_stage"]))
        proposal["reason"] = draw(mostly(st.just("redo it"), st.just("")))
    if kind == "fail":
        proposal["failure"] = {"code": "boom", "message": "the module could not finish"}
    if draw(st.integers(0, 19)) == 0:
        proposal["invocation"] = draw(st.sampled_from([f"{step.id}#1", f"{step.id}#2", "x#1"]))
    return proposal
