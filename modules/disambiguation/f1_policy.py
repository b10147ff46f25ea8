"""F1's policy (stage ``disambiguation``): one ambiguity at a time, then close. Pure.

:func:`plan_disambiguation` turns an :class:`~modules.disambiguation.ambiguity_records.
AmbiguityReport` and the session's folded state into the stage's next outcome:

1. the first ambiguity of the report not yet decided, as a ``select`` review: its readings,
   any agent proposals for it, and the explicit "leave open" option last;
2. when every ambiguity is decided, the first unanswerable term not yet decided, as a ``select``
   review: record it as unanswerable (``ambiguity_open`` with ``unanswerable`` true), or leave it
   open and answer without it;
3. then what the question's intent wants asked first (a required dimension it does not name, a
   period that cannot be read as dates: :mod:`modules.disambiguation.intent_questions`), one at
   a time, as a ``select``;
4. when everything is decided, a ``confirm`` review that closes F1, listing the assumptions the
   answer will make (the intent's).

A term is *decided* when the session holds an effective ``concept_clarified``,
``ambiguity_open`` or ``value_grounded`` whose subject is the term (case, accents and spacing
folded). A retracted decision, or one made stale by reopening F1, is not effective: the term
is asked again.

:func:`normalize_agent_option`: an option the agent proposes for the current term, validated and
normalized against the same contract as the module's own options (exit 2 otherwise): F1's event
types only, payloads matching their schemas, every ``target``/``alternatives`` an existing
``table`` or ``table.column`` of the catalog and every ``column`` an existing ``table.column``
(spelled as the catalog spells them), the subject the term.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kernel import events as ev
from kernel.domain_profile import DomainProfile
from kernel.errors import UsageError
from kernel.fold import SessionState
from kernel.outcomes import ModuleOutcome, ReviewRequest
from kernel.schema_view import SchemaView
from modules.disambiguation.ambiguity import LEAVE_OPEN_LABEL
from modules.disambiguation.ambiguity_records import (
    OPEN_OPTION,
    Ambiguity,
    AmbiguityReport,
    UnanswerableTerm,
)
from modules.disambiguation.ambiguity_terms import fold_text
from modules.disambiguation.ambiguity_values import canonical_column, canonical_target
from modules.disambiguation.intent import Intent
from modules.disambiguation.intent_questions import assumptions_line, intent_questions

__all__ = [
    "F1_DECISIONS",
    "UNANSWERABLE_OPTION",
    "decided_subjects",
    "normalize_agent_option",
    "plan_disambiguation",
    "subject_key",
]

#: the decisions that settle a term in F1
F1_DECISIONS = ("concept_clarified", "ambiguity_open", "value_grounded")
UNANSWERABLE_OPTION = "unanswerable"
_RESERVED = frozenset({OPEN_OPTION, UNANSWERABLE_OPTION})


def subject_key(subject: str) -> str:
    """A subject as decisions are matched: case, accents and spacing folded."""
    return " ".join(fold_text(subject).split())


def decided_subjects(state: SessionState) -> frozenset[str]:
    """The subjects (folded) of the session's effective F1 decisions."""
    return frozenset(
        subject_key(d.subject)
        for d in state.effective_decisions()
        if d.type in F1_DECISIONS and d.subject
    )


def plan_disambiguation(
    state: SessionState,
    report: AmbiguityReport,
    *,
    proposals: Sequence[ev.ReviewOptionPayload] = (),
    intent: Intent | None = None,
    profile: DomainProfile | None = None,
    column_values: Mapping[str, Sequence[str]] | None = None,
) -> ModuleOutcome:
    """F1's next outcome (module docstring). ``proposals``: the agent's options for the term
    asked now, already normalized (:func:`normalize_agent_option`); exit 2 when one reuses an
    option id. ``intent`` and ``profile``: the question's Intent under the workspace's
    DomainProfile (none: nothing asked for it); ``column_values``: the value index's values by
    ``table.column``, offered for a dimension bound to its column."""
    decided = decided_subjects(state)
    pending = [a for a in report.ambiguities if subject_key(a.term) not in decided]
    if pending:
        return _ask(_ambiguity_prompt(pending[0], len(pending)), pending[0], proposals)
    unanswerable = [u for u in report.unanswerable if subject_key(u.term) not in decided]
    if unanswerable:
        return _ask_unanswerable(unanswerable[0], proposals)
    asks = (
        intent_questions(intent, profile, report.values, column_values)
        if profile is not None
        else []
    )
    undecided = [q for q in asks if subject_key(q.subject) not in decided]
    if undecided:
        first = undecided[0]
        *own, leave_open = first.options
        options = _with_proposals(own, proposals, leave_open)
        review = ReviewRequest(kind="select", prompt=first.prompt, options=options)
        return ModuleOutcome(status="awaiting_review", review=review)
    return _close(report, len(asks), assumptions_line(intent))


def _ambiguity_prompt(ambiguity: Ambiguity, pending: int) -> str:
    more = f" ({pending - 1} more after this one)" if pending > 1 else ""
    return f"{ambiguity.prompt}{more}"


def _with_proposals(
    own: Sequence[ev.ReviewOptionPayload],
    proposals: Sequence[ev.ReviewOptionPayload],
    last: ev.ReviewOptionPayload,
) -> tuple[ev.ReviewOptionPayload, ...]:
    options = (*own, *proposals, last)
    ids = [o.id for o in options]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise UsageError(f"proposed option {duplicated[0]!r} is already an option of F1's review")
    return options


def _ask(
    prompt: str, ambiguity: Ambiguity, proposals: Sequence[ev.ReviewOptionPayload]
) -> ModuleOutcome:
    own = [o.review_option() for o in ambiguity.readings]
    leave_open = next(o for o in ambiguity.options if o.reading == "open").review_option()
    review = ReviewRequest(
        kind="select", prompt=prompt, options=_with_proposals(own, proposals, leave_open)
    )
    return ModuleOutcome(status="awaiting_review", review=review)


def _ask_unanswerable(
    term: UnanswerableTerm, proposals: Sequence[ev.ReviewOptionPayload]
) -> ModuleOutcome:
    prompt = (
        f"{term.term!r} names nothing in the catalog, the glossary or the known values: "
        "can the question be answered without it?"
    )

    def opened(unanswerable: bool) -> ev.ProposedEvent:
        payload = {"question": prompt, "options": [], "unanswerable": unanswerable}
        return ev.ProposedEvent(type="ambiguity_open", subject=term.term, payload=payload)

    own = [
        ev.ReviewOptionPayload(
            id=UNANSWERABLE_OPTION,
            label="no: the database cannot answer it (recorded as unanswerable)",
            events=(opened(True),),
        )
    ]
    leave_open = ev.ReviewOptionPayload(
        id=OPEN_OPTION, label=LEAVE_OPEN_LABEL, events=(opened(False),)
    )
    review = ReviewRequest(
        kind="select", prompt=prompt, options=_with_proposals(own, proposals, leave_open)
    )
    return ModuleOutcome(status="awaiting_review", review=review)


def _close(report: AmbiguityReport, asked: int = 0, assumptions: str = "") -> ModuleOutcome:
    found = len(report.ambiguities) + len(report.unanswerable)
    if found or asked:
        intent = f", {asked} asked for the DomainProfile" if asked else ""
        prompt = (
            f"Every ambiguity F1 found is decided ({len(report.ambiguities)} ambiguous, "
            f"{len(report.unanswerable)} unanswerable{intent}): approve to close disambiguation."
        )
    else:
        prompt = (
            "F1 found no ambiguous or unanswerable term in the question over the catalog: "
            "approve to close disambiguation."
        )
    return ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(kind="confirm", prompt=prompt + assumptions),
    )


# --------------------------------------------------------------------------- agent proposals


def normalize_agent_option(
    option: Mapping[str, Any] | ev.ReviewOptionPayload, view: SchemaView, *, subject: str
) -> ev.ReviewOptionPayload:
    """The agent's option for ``subject``, validated and normalized (module docstring)."""
    try:
        parsed = (
            option
            if isinstance(option, ev.ReviewOptionPayload)
            else msgspec.convert(option, ev.ReviewOptionPayload)
        )
    except msgspec.ValidationError as err:
        raise UsageError(f"proposed F1 option: {err}") from err
    option_id, label = parsed.id.strip(), " ".join(parsed.label.split())
    if not option_id or not label:
        raise UsageError("a proposed F1 option needs an option identifier and a label")
    if option_id in _RESERVED:
        raise UsageError(f"option {option_id!r} is F1's own; choose another identifier")
    if parsed.unchosen is not msgspec.UNSET or parsed.selected is not msgspec.UNSET:
        raise UsageError("a proposed F1 option has no unchosen events and no preselection")
    if not parsed.events:
        raise UsageError(f"proposed F1 option {option_id!r} records no event")
    events = tuple(_normalize_event(e, view, subject, option_id) for e in parsed.events)
    return ev.ReviewOptionPayload(id=option_id, label=label, events=events)


def _normalize_event(
    proposed: ev.ProposedEvent, view: SchemaView, subject: str, option_id: str
) -> ev.ProposedEvent:
    where = f"proposed F1 option {option_id!r}"
    if proposed.type not in F1_DECISIONS:
        raise UsageError(f"{where}: F1 records {', '.join(F1_DECISIONS)}, not {proposed.type!r}")
    if proposed.subject is not None and subject_key(proposed.subject) != subject_key(subject):
        raise UsageError(
            f"{where} is about {proposed.subject!r}, but F1 is asking about {subject!r}"
        )
    try:
        payload = ev.payload_from_builtins(proposed.type, proposed.payload)
    except msgspec.ValidationError as err:
        raise UsageError(
            f"{where}: {proposed.type} payload does not match its schema: {err}"
        ) from err
    if isinstance(payload, ev.ConceptClarifiedPayload):
        payload = _clarified(payload, view, where)
    elif isinstance(payload, ev.ValueGroundedPayload):
        column = canonical_column(view, payload.column)
        if column is None:
            raise UsageError(
                f"{where}: column {payload.column!r} is not a table.column of the catalog"
            )
        if not payload.value.strip():
            raise UsageError(f"{where}: value_grounded needs a value")
        payload = msgspec.structs.replace(
            payload, column=column, value=payload.value.strip(), meaning=payload.meaning.strip()
        )
    elif isinstance(payload, ev.AmbiguityOpenPayload):
        if not payload.question.strip():
            raise UsageError(f"{where}: ambiguity_open needs the question it leaves open")
        payload = msgspec.structs.replace(
            payload,
            question=payload.question.strip(),
            options=tuple(dict.fromkeys(o.strip() for o in payload.options if o.strip())),
        )
    return ev.ProposedEvent(
        type=proposed.type,
        subject=" ".join(subject.split()),
        payload=msgspec.json.decode(msgspec.json.encode(payload)),  # JSON's shapes: lists
    )


def _clarified(
    payload: ev.ConceptClarifiedPayload, view: SchemaView, where: str
) -> ev.ConceptClarifiedPayload:
    if not payload.meaning.strip():
        raise UsageError(f"{where}: concept_clarified needs a meaning")

    def element(name: str, field: str) -> str:
        found = canonical_target(view, name)
        if found is None:
            raise UsageError(
                f"{where}: {field} {name!r} is not a table or table.column of the catalog"
            )
        return found

    target = element(payload.target, "target") if payload.target is not None else None
    alternatives = tuple(
        dict.fromkeys(
            a for a in (element(n, "alternative") for n in payload.alternatives) if a != target
        )
    )
    return msgspec.structs.replace(
        payload, meaning=payload.meaning.strip(), target=target, alternatives=alternatives
    )
