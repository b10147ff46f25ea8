"""Question Admission (glossary): the preflight before F1–F8.

First release: tell a usable question from garbage input, and check it against the workspace
scope's declared refusals. Deterministic and pure: the same question and scope always give the
same verdict, with stable reason codes.

The SecurityGate comes first, before any other check: the composition root runs it on the RAW
question before the session exists (:func:`session_question` is what the session is created
with: the masked question when refused), and :func:`admit` records its refusal as
``question_refused`` with code ``competitor`` | ``out_of_scope`` | ``restricted``, the reason,
the narrowing and the masked spans — never the refused text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kernel.capabilities import DisambiguationCapabilities, WorkspaceScope
from kernel.events import ProposedEvent
from kernel.outcomes import Failure, ModuleOutcome
from kernel.transitions import MAX_QUESTION_CHARS, question_length
from modules.disambiguation.gate import GateVerdict, SecurityGate

__all__ = ["AdmissionVerdict", "admit", "judge_question", "session_question"]

_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
_VOWELS = set("aeiouyàèéìòóùáíúâêîôûäëïöü")


@dataclass(frozen=True)
class AdmissionVerdict:
    admitted: bool
    code: str
    reason: str
    checks: tuple[str, ...] = ()
    #: what the person can ask instead (recorded with the refusal)
    narrowing: str = ""


def _letters(text: str) -> list[str]:
    return [c for c in text if c.isalpha()]


def judge_question(question: str, scope: WorkspaceScope) -> AdmissionVerdict:
    """Usable and in scope, or the first reason it is not."""
    text = unicodedata.normalize("NFC", question).strip()
    letters = _letters(text)
    visible = [c for c in text if not c.isspace()]
    words = _WORD.findall(text)
    if len(letters) < 3 or not words:
        return AdmissionVerdict(False, "too_short", "the question has no words to work with")
    # The kernel refuses a longer question before a session exists (`session new` exits 2);
    # this check is the same limit, measured the same way, for any other caller.
    if question_length(text) > MAX_QUESTION_CHARS:
        return AdmissionVerdict(
            False, "too_long", f"the question is longer than {MAX_QUESTION_CHARS} characters"
        )
    if len(letters) / len(visible) < 0.5:
        return AdmissionVerdict(False, "mostly_symbols", "the input is mostly digits or symbols")
    lowered = [w.casefold() for w in words]
    if len(set("".join(lowered))) <= 2 and len(letters) >= 4:
        return AdmissionVerdict(False, "repetitive", "the input repeats one or two characters")
    latin = [w for w in lowered if all("a" <= c <= "z" or c in _VOWELS for c in w)]
    long_latin = [w for w in latin if len(w) >= 4]
    if long_latin and all(not (set(w) & _VOWELS) for w in long_latin):
        return AdmissionVerdict(False, "not_language", "the input does not read as words")
    folded = text.casefold()
    for term in scope.refuse:
        needle = term.strip().casefold()
        if needle and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", folded):
            return AdmissionVerdict(
                False,
                "out_of_scope",
                "the question is outside the workspace scope (a refused subject)",
            )
    return AdmissionVerdict(True, "admitted", "usable and in scope", ("usable", "in_scope"))


def session_question(question: str, gate: GateVerdict) -> str:
    """The text a session is created with: the question, or its masked form when the gate
    refused it (cut to the question limit should the placeholders make it longer)."""
    if not gate.refused:
        return question
    masked = gate.masked.strip()
    if question_length(masked) > MAX_QUESTION_CHARS:
        masked = masked[: MAX_QUESTION_CHARS - 1].rstrip() + "…"
    return masked


def admit(
    question: str, caps: DisambiguationCapabilities, gate: GateVerdict | None = None
) -> ModuleOutcome:
    """The admission outcome: ``question_admitted`` and completion, or refusal and failure.

    ``gate``: the SecurityGate's verdict on the raw question, when the caller ran it before
    creating the session (``question`` is then the session's masked question); without it the
    gate runs here first, on ``question``."""
    screened = gate if gate is not None else SecurityGate(caps.profile).check(question)
    if screened.refused:
        return _gate_refusal(screened, question)
    verdict = judge_question(question, caps.scope)
    if verdict.admitted:
        verdict = _relevant(question, caps, verdict)
    if verdict.admitted:
        return ModuleOutcome(
            status="completed",
            events=(
                ProposedEvent(type="question_admitted", payload={"checks": list(verdict.checks)}),
            ),
        )
    return ModuleOutcome(
        status="failed",
        events=(ProposedEvent(type="question_refused", payload=_refusal_payload(verdict)),),
        failure=Failure(code=f"refused:{verdict.code}", message=verdict.reason),
    )


def _refusal_payload(verdict: AdmissionVerdict) -> dict[str, object]:
    payload: dict[str, object] = {"code": verdict.code, "reason": verdict.reason}
    if verdict.narrowing:
        payload["narrowing"] = verdict.narrowing
    return payload


def _relevant(
    question: str, caps: DisambiguationCapabilities, verdict: AdmissionVerdict
) -> AdmissionVerdict:
    """Scope relevance (:mod:`modules.disambiguation.relevance`): a usable question that
    speaks of nothing the workspace holds — no table, column, description, scope or glossary
    word (nor its translation, through the word bridge), and no value of its database — is out
    of scope."""
    from modules.disambiguation.relevance import ScopeVocabulary, content_words, judge_relevance

    vocabulary = ScopeVocabulary.build(caps.scope_terms)
    relevance = judge_relevance(question, vocabulary)
    if relevance.in_scope is not False:
        return verdict
    words = content_words(question)
    check = caps.value_check
    if check is not None and any(check(word) for word in words):
        return verdict
    if caps.word_bridge is not None and words and caps.word_bridge(words):
        return verdict
    examples = sorted({t for s, t in caps.scope_terms if s == "table"})[:6]
    narrowing = (
        f"ask about this workspace's data ({', '.join(examples)})"
        if examples
        else "ask about what this workspace's scope describes"
    )
    return AdmissionVerdict(
        False,
        "out_of_scope",
        "the question speaks of nothing this workspace holds: no table, column, description, "
        "glossary term or value of its database matches",
        narrowing=narrowing,
    )


def _gate_refusal(gate: GateVerdict, question: str) -> ModuleOutcome:
    code = gate.code or "restricted"
    lead = len(gate.masked) - len(gate.masked.lstrip())  # the session's question is stripped
    spans = [
        {"kind": e.kind, "start": e.masked_span[0] - lead, "end": e.masked_span[1] - lead}
        for e in gate.entities
        if e.masked_span[0] >= lead and e.masked_span[1] - lead <= len(question)
    ]
    payload = {
        "code": code,
        "reason": gate.reason,
        "masked_spans": spans,
        "narrowing": gate.narrowing,
    }
    return ModuleOutcome(
        status="failed",
        events=(ProposedEvent(type="question_refused", payload=payload),),
        failure=Failure(code=f"refused:{code}", message=gate.reason),
    )
