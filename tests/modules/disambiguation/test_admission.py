"""Question Admission: usable vs garbage, workspace scope refusals; deterministic verdicts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.capabilities import DisambiguationCapabilities, WorkspaceScope
from kernel.clock import FixedClock
from modules.disambiguation import admit, judge_question

SCOPE = WorkspaceScope(
    description="hospital procedures", refuse=("salary", "competitor x"), languages=("it", "en")
)


@pytest.mark.parametrize(
    "question",
    [
        "How many ablation procedures were performed in 2023 per hospital?",
        "Quante procedure di ablazione sono state eseguite nel 2023 per ospedale?",
        "Numero di ricoveri per reparto",
        "ricoveri 2023",
        "Why?",
    ],
)
def test_usable_questions_are_admitted(question: str) -> None:
    verdict = judge_question(question, SCOPE)
    assert verdict.admitted, verdict
    assert verdict.checks == ("usable", "in_scope")


@pytest.mark.parametrize(
    ("question", "code"),
    [
        ("", "too_short"),
        ("   ", "too_short"),
        ("?? !!", "too_short"),
        ("12345 67890", "too_short"),
        ("ab 2345 678 9012 $$$ %%% cd", "mostly_symbols"),
        ("aaaaaaaa aaaa", "repetitive"),
        ("sdfghjk qwrtp", "not_language"),
        ("x" * 5000, "too_long"),
        ("What is the average salary of nurses?", "out_of_scope"),
        ("Compare us with Competitor X please", "out_of_scope"),
    ],
)
def test_garbage_and_out_of_scope_are_refused_with_a_stable_code(question: str, code: str) -> None:
    verdict = judge_question(question, SCOPE)
    assert not verdict.admitted
    assert verdict.code == code


def test_refusal_never_echoes_the_refused_term() -> None:
    verdict = judge_question("What is the average salary of nurses?", SCOPE)
    assert "salary" not in verdict.reason


def test_scope_terms_match_whole_words_only() -> None:
    assert judge_question("Procedures in salaryville hospital", SCOPE).admitted


def test_admission_outcome_shapes() -> None:
    caps = DisambiguationCapabilities(clock=FixedClock(), scope=SCOPE)
    ok = admit("Ricoveri per reparto nel 2023", caps)
    assert ok.status == "completed"
    assert [e.type for e in ok.events] == ["question_admitted"]
    refused = admit("??", caps)
    assert refused.status == "failed"
    assert [e.type for e in refused.events] == ["question_refused"]
    assert refused.failure is not None and refused.failure.code == "refused:too_short"


@given(st.text(max_size=300))
def test_admission_is_deterministic_and_total(text: str) -> None:
    assert judge_question(text, SCOPE) == judge_question(text, SCOPE)
