"""What F1 asks because of the question's intent (issue 14 item 5: F1 works "from the question,
the intent, the SchemaView and the Evidence glossary"). Pure.

The IntentParser's clarify policy (:func:`~modules.disambiguation.intent.assemble_intent`) says
what the DomainProfile wants settled before an answer:

- ``ask_first`` — a *required* dimension the question does not mention, whose ``clarify`` is
  ``ask_first`` (or ``assume`` with no default: nothing to assume), and each period expression
  that cannot be read as one interval ("fino al 2023"). Each is an :class:`IntentQuestion` F1
  asks after the catalog's ambiguities and unanswerable terms, one at a time, as a ``select``:
  for a missing dimension, its values when the DomainProfile binds it to a column
  (``dimensions[].column``) that holds at most :data:`MAX_VALUE_OPTIONS` of them
  (``value_grounded`` each), "every <dimension>" (``concept_clarified``: the question sets none)
  and "leave open" (``ambiguity_open``); for an unreadable period, "leave open" — the agent's
  options (``tht propose disambiguation``, checked against the catalog) name other values or
  dates.
  The question's subject is the dimension's name (or the period as written), so a decision on
  it — the agent's ``value_grounded`` for "hospital", say — settles it like any F1 term.
- ``answer_with_assumptions`` — a missing ``assume`` dimension's default (a temporal one resolved
  with the clock: "period: not in the question, assumed "last 12 months" (… to …)"), a period
  read without a year. F1 does not ask these; its closing confirm lists them, so the reviewer
  who closes F1 has seen them (F3's ``question_rewritten`` records the assumptions the answer
  makes, which ``question.md`` renders).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from kernel import events as ev
from kernel.domain_profile import Dimension, DomainProfile
from modules.disambiguation.ambiguity import LEAVE_OPEN_LABEL
from modules.disambiguation.ambiguity_records import OPEN_OPTION, FoundValue
from modules.disambiguation.ambiguity_terms import fold_text, identifier_words
from modules.disambiguation.intent import Intent

__all__ = [
    "EVERY_OPTION",
    "MAX_VALUE_OPTIONS",
    "IntentQuestion",
    "assumptions_line",
    "intent_questions",
]

#: the option of a missing dimension that records "the question sets none"
EVERY_OPTION = "every"
#: a dimension bound to a column (``dimensions[].column``) is offered its values, each as an
#: option, when the column holds at most this many (more would not be a question a reviewer
#: can answer at a glance: the agent's options then name the ones the question means)
MAX_VALUE_OPTIONS = 12


class IntentQuestion(msgspec.Struct, frozen=True, kw_only=True):
    """One thing the intent wants settled first: its subject, the prompt and F1's own options
    (the explicit "leave open" last)."""

    subject: str
    prompt: str
    options: tuple[ev.ReviewOptionPayload, ...]


def _leave_open(subject: str, prompt: str) -> ev.ReviewOptionPayload:
    opened = ev.ProposedEvent(
        type="ambiguity_open",
        subject=subject,
        payload={"question": prompt, "options": [], "unanswerable": False},
    )
    return ev.ReviewOptionPayload(id=OPEN_OPTION, label=LEAVE_OPEN_LABEL, events=(opened,))


def _value_options(dimension: Dimension, values: Sequence[str]) -> list[ev.ReviewOptionPayload]:
    if dimension.column is None or not values or len(values) > MAX_VALUE_OPTIONS:
        return []
    return [
        ev.ReviewOptionPayload(
            id=f"v{i}",
            label=f"{value} ({dimension.column})",
            events=(
                ev.ProposedEvent(
                    type="value_grounded",
                    subject=dimension.name,
                    payload={
                        "value": value,
                        "column": dimension.column,
                        "meaning": f"{dimension.name} = {value!r} ({dimension.column})",
                    },
                ),
            ),
        )
        for i, value in enumerate(values, start=1)
    ]


def _missing(
    profile: DomainProfile, name: str, column_values: Sequence[str] | None
) -> IntentQuestion:
    dimension = next((d for d in profile.dimensions if d.name == name), None)
    words = sorted(set(_synonyms(dimension))) if dimension else []
    known = f" (named by {', '.join(repr(w) for w in words)})" if words else ""
    temporal = dimension is not None and dimension.kind == "temporal"
    offered = _value_options(dimension, column_values or ()) if dimension else []
    many = (
        f" ({dimension.column} holds more than {MAX_VALUE_OPTIONS} values: the agent proposes "
        "the ones it means)"
        if dimension is not None and column_values and not offered
        else ""
    )
    prompt = (
        f"The question does not say which {name} it means{known}, and this workspace asks for "
        f"the {name} before answering: which {name}?{many}"
    )
    meaning = (
        f"every {name}: the question sets no {name} (no filter on it)"
        if not temporal
        else f"all time: the question sets no {name} (no filter on it)"
    )
    label = (
        f"every {name}: no filter on the {name}"
        if not temporal
        else f"all time: no filter on the {name}"
    )
    every = ev.ReviewOptionPayload(
        id=EVERY_OPTION,
        label=label,
        events=(
            ev.ProposedEvent(type="concept_clarified", subject=name, payload={"meaning": meaning}),
        ),
    )
    return IntentQuestion(
        subject=name, prompt=prompt, options=(*offered, every, _leave_open(name, prompt))
    )


def _unresolved(text: str) -> IntentQuestion:
    prompt = (
        f"{text!r} names a period that cannot be read as dates (no start, or no end): which "
        "period does the question mean?"
    )
    return IntentQuestion(subject=text, prompt=prompt, options=(_leave_open(text, prompt),))


def _named_by_value(dimension: Dimension, values: Sequence[FoundValue]) -> bool:
    """The question names a value the value index found in a column that the dimension's name
    or a synonym names ("cardiologia", found in ``reparti.nome_reparto``, names the
    ``reparto``): the IntentParser reads synonyms only, F1 also reads the catalog's values."""
    words = {fold_text(w).strip() for w in (dimension.name, *_synonyms(dimension))}
    words = {w for w in words if len(w) >= 3}
    for found in values:
        if dimension.column is not None:  # bound: a value of that very column, and no other
            if dimension.column.casefold() in (c.casefold() for c in found.columns):
                return True
            continue
        for column in found.columns:
            named = {fold_text(w) for w in identifier_words(column.rpartition(".")[2])}
            if any(
                n == w or (min(len(n), len(w)) >= 4 and (n.startswith(w) or w.startswith(n)))
                for n in named
                for w in words
            ):
                return True
    return False


def _synonyms(dimension: Dimension) -> list[str]:
    return [w for words in dimension.synonyms.values() for w in words]


def intent_questions(
    intent: Intent | None,
    profile: DomainProfile,
    values: Sequence[FoundValue] = (),
    column_values: Mapping[str, Sequence[str]] | None = None,
) -> list[IntentQuestion]:
    """What ``intent`` wants asked first (module docstring), in a stable order: the missing
    dimensions in the profile's order, then the unreadable periods in the question's.
    ``values``: the values the question names (the AmbiguityReport's); a dimension one of them
    names is not missing. ``column_values``: by ``table.column``, the values the value index
    holds (sensitive columns are never indexed), offered for a dimension bound to the column."""
    held = {k.casefold(): v for k, v in (column_values or {}).items()}
    if intent is None or intent.clarify != "ask_first":
        return []
    asks: list[IntentQuestion] = []
    for dimension in profile.dimensions:
        if dimension.name not in intent.missing or _named_by_value(dimension, values):
            continue
        if dimension.clarify == "ask_first" or (
            dimension.clarify == "assume" and dimension.default is None
        ):
            bound = held.get(dimension.column.casefold()) if dimension.column else None
            asks.append(_missing(profile, dimension.name, bound))
    asks += [_unresolved(text) for text in intent.unresolved]
    return asks


def assumptions_line(intent: Intent | None) -> str:
    """The assumptions F1's closing confirm lists ("" when there are none)."""
    if intent is None or not intent.assumptions:
        return ""
    return " The answer will assume: " + "; ".join(intent.assumptions) + "."
