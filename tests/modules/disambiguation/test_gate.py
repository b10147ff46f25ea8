"""The SecurityGate on examples: what it refuses, what it masks, what it never refuses."""

from __future__ import annotations

import re

import pytest

from kernel.capabilities import DisambiguationCapabilities, WorkspaceScope
from kernel.clock import FixedClock
from kernel.domain_profile import DomainProfile, Entity, Restricted
from modules.disambiguation import SecurityGate, admit, session_question
from modules.disambiguation.gate import REFUSED_KINDS

PROFILE = DomainProfile(
    home_entity=Entity("Ospedale San Carlo", ("San Carlo", "OSC")),
    external_entities=(
        Entity("Clinica Rivale", ("Rivale", "Clinica Rivale SpA"), "competitor"),
        Entity("Mario Rossi", ("M. Rossi",), "out_of_scope"),
    ),
    restricted=Restricted(("stipendi", "salaries"), (r"\bIBAN\b", r"\d{4}-\d{4}")),
)
GATE = SecurityGate(PROFILE)


@pytest.mark.parametrize(
    ("question", "masked"),
    [
        ("Ricoveri della Clinica Rivale nel 2023", "Ricoveri della [competitor] nel 2023"),
        ("Ricoveri della Rivale nel 2023", "Ricoveri della [competitor] nel 2023"),
        ("rivale: quanti ricoveri?", "[competitor]: quanti ricoveri?"),
        ("Confronto con R i v a l e", "Confronto con [competitor]"),
        ("Confronto con R.I.V.A.L.E.", "Confronto con [competitor]."),
        ("Confronto con R-i-v-a-l-e", "Confronto con [competitor]"),
        ("Confronto con Riv_ale", "Confronto con [competitor]"),
        ("Confronto con Ｒｉｖａｌｅ", "Confronto con [competitor]"),
        ("Confronto con Rіvаle", "Confronto con [competitor]"),  # Cyrillic і, а
        ("Confronto con Ri\u200bva\u200dle", "Confronto con [competitor]"),
        ("Confronto con RIVALÉ", "Confronto con [competitor]"),
        ("Confronto con Rivale\u0301", "Confronto con [competitor]"),
        ("Confronto con 𝐑𝐢𝐯𝐚𝐥𝐞", "Confronto con [competitor]"),
        ("Visite di M. Rossi", "Visite di [out_of_scope]"),
        ("Visite di M Rossi", "Visite di [out_of_scope]"),
        ("Visite di Mario  ROSSI", "Visite di [out_of_scope]"),
        ("Gli stipendi dei medici", "Gli [restricted] dei medici"),
        ("average salaries per ward", "average [restricted] per ward"),
        ("il mio IBAN è", "il mio [restricted] è"),
        ("il mio I\u200bBAN è", "il mio [restricted] è"),
        ("codice 1234-5678 del paziente", "codice [restricted] del paziente"),
        ("Rivale2023 ricoveri", "[competitor]2023 ricoveri"),
    ],
)
def test_refused_names_are_masked_in_the_raw_question(question: str, masked: str) -> None:
    verdict = GATE.check(question)
    assert verdict.verdict == "refuse"
    assert verdict.masked == masked
    assert verdict.reason and verdict.narrowing


@pytest.mark.parametrize(
    "question",
    [
        "Quanti ricoveri all'Ospedale San Carlo nel 2023?",
        "Ricoveri OSC per reparto",
        "ci rivalerebbe un altro reparto?",  # a name matches whole words only
        "le rivali del reparto",  # an inflection is another word (list it as an alias)
        "Rivalese è un comune",
        "Carlo e Mario sono medici",
        "stipendiati e salariati",
        "Il libano e l'ibanez",
        "numero 12345678",
        "",
    ],
)
def test_questions_that_name_nothing_refused_are_allowed_unchanged(question: str) -> None:
    verdict = GATE.check(question)
    assert verdict.verdict == "allow"
    assert verdict.masked == question
    assert verdict.entities == () and verdict.narrowing == ""


def test_every_occurrence_is_masked_and_listed_with_its_raw_span() -> None:
    question = "Rivale, poi RIVALE e infine r i v a l e"
    verdict = GATE.check(question)
    assert verdict.masked == "[competitor], poi [competitor] e infine [competitor]"
    spans = [e.span for e in verdict.entities]
    assert [question[a:b] for a, b in spans] == ["Rivale", "RIVALE", "r i v a l e"]
    for entity in verdict.entities:
        start, end = entity.masked_span
        assert verdict.masked[start:end] == "[competitor]"
        assert entity.display == "Clinica Rivale" and entity.kind == "competitor"


def test_the_longest_alias_wins_and_leaves_nothing_of_it_unmasked() -> None:
    verdict = GATE.check("Dati della Clinica Rivale SpA di Milano")
    assert verdict.masked == "Dati della [competitor] di Milano"
    assert len(verdict.entities) == 1
    assert verdict.entities[0].span == (11, 29)


def test_overlapping_names_of_different_entities_are_masked_as_one_span() -> None:
    profile = DomainProfile(
        external_entities=(
            Entity("Alfa Beta", kind="competitor"),
            Entity("Beta Gamma Delta", kind="out_of_scope"),
        )
    )
    verdict = SecurityGate(profile).check("x Alfa Beta Gamma Delta y")
    assert verdict.masked == "x [out_of_scope] y"  # the longer match gives the kind
    assert [e.span for e in verdict.entities] == [(2, 23)]


def test_the_home_entity_is_never_refused_even_when_it_contains_a_refused_name() -> None:
    profile = DomainProfile(
        home_entity=Entity("Ospedale San Carlo", ("San Carlo",)),
        external_entities=(Entity("Carlo", kind="out_of_scope"),),
    )
    gate = SecurityGate(profile)
    assert gate.check("Ricoveri all'Ospedale San Carlo").verdict == "allow"
    assert gate.check("Ricoveri al S. A. N. Carlo").verdict == "allow"
    # the refused name alone, outside the home entity's mention, is still refused
    refused = gate.check("Ospedale San Carlo e Carlo")
    assert refused.masked == "Ospedale San Carlo e [out_of_scope]"


def test_a_refused_name_longer_than_the_home_mention_is_refused() -> None:
    profile = DomainProfile(
        home_entity=Entity("San Carlo"),
        external_entities=(Entity("San Carlo Clinic", kind="competitor"),),
    )
    verdict = SecurityGate(profile).check("the San Carlo Clinic ward")
    assert verdict.masked == "the [competitor] ward"


def test_reason_and_narrowing_name_the_kinds_and_never_the_refused_text() -> None:
    verdict = GATE.check("Gli stipendi di M. Rossi alla Clinica Rivale")
    assert verdict.code == "restricted"  # the first kind in REFUSED_KINDS order
    assert REFUSED_KINDS[0] == "restricted"
    assert "restricted subject" in verdict.reason and "competitor" in verdict.reason
    assert "outside the workspace scope" in verdict.reason
    for text in (verdict.reason, verdict.narrowing):
        for name in ("stipendi", "rossi", "rivale"):
            assert name not in text.casefold()
    assert "Ospedale San Carlo" in verdict.narrowing  # what to ask about instead


def test_patterns_match_the_folded_text_case_insensitively() -> None:
    gate = SecurityGate(DomainProfile(restricted=Restricted(patterns=(r"\bdiagnos[ie]\b",))))
    assert gate.check("le DIAGNOSI dei pazienti").masked == "le [restricted] dei pazienti"
    assert gate.check("le diagnósi").verdict == "refuse"
    assert gate.check("diagnostica").verdict == "allow"


def test_an_empty_profile_allows_everything() -> None:
    gate = SecurityGate(DomainProfile())
    verdict = gate.check("Rivale stipendi IBAN")
    assert verdict.verdict == "allow" and verdict.masked == "Rivale stipendi IBAN"


def test_unspaced_scripts_need_no_word_boundary() -> None:
    gate = SecurityGate(DomainProfile(external_entities=(Entity("竞争者"), Entity("Acme"))))
    assert gate.check("比较竞争者的收入").masked == "比较[competitor]的收入"
    assert gate.check("在Acme公司").masked == "在[competitor]公司"


def test_the_gate_is_final_and_cannot_be_extended() -> None:
    with pytest.raises(TypeError, match="never replaced"):

        class _Lenient(SecurityGate):  # type: ignore[misc]
            pass


def test_the_verdict_is_a_pure_function_of_profile_and_question() -> None:
    question = "Gli stipendi della Rivale e di M. Rossi"
    first = SecurityGate(PROFILE).check(question)
    assert first == SecurityGate(PROFILE).check(question) == GATE.check(question)
    assert GATE.check("altro") != first  # not a constant


# --------------------------------------------------------------------------- admission


def _caps(profile: DomainProfile = PROFILE) -> DisambiguationCapabilities:
    scope = WorkspaceScope(description="", refuse=(), languages=("it", "en"))
    return DisambiguationCapabilities(clock=FixedClock(), scope=scope, profile=profile)


def test_admission_records_the_gate_refusal_with_masked_spans_and_no_refused_text() -> None:
    raw = "Confronta i ricoveri con la Clinica Rivale"
    gate = GATE.check(raw)
    question = session_question(raw, gate)
    assert question == "Confronta i ricoveri con la [competitor]"
    outcome = admit(question, _caps(), gate)
    assert outcome.status == "failed" and outcome.failure is not None
    assert outcome.failure.code == "refused:competitor"
    (event,) = outcome.events
    assert event.type == "question_refused"
    assert event.payload["code"] == "competitor"
    spans = event.payload["masked_spans"]
    assert [question[s["start"] : s["end"]] for s in spans] == ["[competitor]"]
    assert "rivale" not in repr(outcome).casefold()


def test_admission_runs_the_gate_first_when_no_verdict_is_given() -> None:
    # garbage-looking but naming a restricted subject: the gate's code, not "too_short"
    outcome = admit("IBAN", _caps())
    assert outcome.events[0].payload["code"] == "restricted"
    allowed = admit("Quanti ricoveri nel 2023 al San Carlo?", _caps())
    assert allowed.status == "completed"
    assert allowed.events[0].type == "question_admitted"


def test_an_allowed_question_goes_through_the_other_checks_unchanged() -> None:
    gate = GATE.check("zzzz")
    assert session_question("zzzz", gate) == "zzzz"
    outcome = admit("zzzz", _caps(), gate)
    assert outcome.events[0].payload["code"] == "repetitive"
    assert "masked_spans" not in outcome.events[0].payload


def test_a_masked_question_longer_than_the_limit_is_cut_to_it() -> None:
    from kernel.transitions import MAX_QUESTION_CHARS, check_question

    gate = SecurityGate(DomainProfile(external_entities=(Entity("Ab"),)))
    raw = " ".join(["Ab"] * 1300)  # 3899 characters; masked: 1300 × "[competitor]"
    verdict = gate.check(raw)
    question = session_question(raw, verdict)
    assert len(question) <= MAX_QUESTION_CHARS and check_question(question) == question
    assert not re.search(r"(?i)\bab\b", question)
    outcome = admit(question, _caps(gate.profile), verdict)
    spans = outcome.events[0].payload["masked_spans"]
    assert spans and all(question[s["start"] : s["end"]] == "[competitor]" for s in spans)
