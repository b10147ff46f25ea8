"""Composition root of F1 (stage ``disambiguation``): Disambiguation's own policy over the
catalog (ARCHITECTURE §4.1, issue 14 item 5).

- :func:`run_disambiguation` — ``tht stage run disambiguation``: the question's ambiguities over
  the verified catalog's SchemaView, its value index and the published Evidence glossary
  (``modules.disambiguation.detect_ambiguities``), then the next outcome of F1's policy
  (``plan_disambiguation``): the next undecided ambiguity as a ``select`` with informed options
  and an explicit "leave open", an unanswerable term, or the confirm that closes F1 — applied as
  ``module:disambiguation``.
- :func:`question_intent` — the question's Intent (the rule-based IntentParser under the
  workspace's DomainProfile): what it wants asked first (a required dimension the question does
  not name, an unreadable period) F1 asks; its assumptions F1's closing confirm lists.
- :func:`glossary_entries` — the published glossary units the question may name (Evidence's
  active generation, purpose ``disambiguation``, kind ``glossary``): a term two of them define
  differently is asked; a term one defines is not unanswerable.
- :func:`prepare_f1` — an agent's F1 proposal, when the workspace has a synced catalog: every
  option's ``concept_clarified`` / ``value_grounded`` is validated and normalized against the
  same contract as the module's own options (a target the catalog does not have: exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.errors import PolicyError

if TYPE_CHECKING:
    from kernel.domain_profile import DomainProfile
    from kernel.reviewer_tools import Proposal
    from kernel.schema_view import SchemaView
    from kernel.workflow_kernel import Applied, LoadedSession
    from modules.disambiguation.ambiguity_records import GlossaryEntry
    from modules.disambiguation.intent import Intent
    from tht.composition import App

__all__ = [
    "GLOSSARY_LIMIT",
    "glossary_entries",
    "is_f1",
    "prepare_f1",
    "question_intent",
    "run_disambiguation",
]

_ACTOR = "module:disambiguation"
#: glossary units read per question: every unit a question's terms could name ranks among the
#: first (a term is matched in the question, so a unit it names scores on its own words)
GLOSSARY_LIMIT = 20


def is_f1(owner: str, emits: tuple[str, ...]) -> bool:
    """A step whose policy is F1's: Disambiguation's, recording clarifications."""
    return owner == "disambiguation" and "concept_clarified" in emits


def _view(app: App) -> SchemaView:
    from kernel.errors import UnavailableError, UsageError
    from tht.catalog_runtime import schema_view
    from tht.schema_runtime import NOT_BOUND, NOT_SYNCED

    if getattr(app.settings, "database", None) is None:
        raise UsageError(NOT_BOUND)
    view = schema_view(app, verified=True)  # a decision: from the verified catalog ledger
    if view is None:
        raise UnavailableError(NOT_SYNCED, details={"reason": "not_synced"})
    return view


def run_disambiguation(app: App, loaded: LoadedSession, stage: str) -> Applied:
    from modules.disambiguation.ambiguity import detect_ambiguities
    from modules.disambiguation.f1_policy import plan_disambiguation

    pending = [r.seq for r in loaded.state.open_reviews if r.stage == stage]
    if pending:
        raise PolicyError(
            f"answer the open review of {stage} first ({', '.join(map(str, pending))}); "
            f"then `tht stage run {stage}` asks the next ambiguity"
        )
    from tht.value_index_runtime import value_lookup

    view = _view(app)
    question = loaded.state.question
    report = detect_ambiguities(
        question, view, glossary=glossary_entries(app, question), values=value_lookup(app)
    )
    profile = app.settings.domain_profile()
    outcome = plan_disambiguation(
        loaded.state,
        report,
        intent=question_intent(app, question, profile),
        profile=profile,
        column_values=_bound_values(app, profile),
    )
    return app.kernel.apply_outcome(loaded.session, stage, outcome, actor=_ACTOR, loaded=loaded)


def question_intent(app: App, question: str, profile: DomainProfile) -> Intent:
    """The question's Intent under the workspace's DomainProfile: the rule-based IntentParser
    (the offline default, ``tht intent parse``), dated by the workspace's clock. The question
    is the session's: F1 runs only after admission, so the SecurityGate has passed it."""
    from modules.disambiguation.intent_rules import RuleIntentParser
    from tht.composition import clock_from_env

    return RuleIntentParser().parse(question, profile, clock_from_env(app.workspace.state_dir))


def _bound_values(app: App, profile: DomainProfile) -> dict[str, tuple[str, ...]]:
    """The values of the columns the DomainProfile's dimensions are bound to
    (``dimensions[].column``), as ``column_values`` confirms them; a column that is sensitive,
    not text, not in the catalog, or without a fresh index offers nothing."""
    from modules.disambiguation.intent_questions import MAX_VALUE_OPTIONS
    from tht.value_index_runtime import column_values

    bound = [d.column for d in profile.dimensions if d.column]
    return column_values(app, bound, MAX_VALUE_OPTIONS) if bound else {}


def glossary_entries(app: App, question: str) -> tuple[GlossaryEntry, ...]:
    """The published glossary units for ``question``: none when nothing was ever published. An
    index that is published but unusable is exit 6: a broken dependency is never taken for "no
    glossary" (F1 would then call a defined term unanswerable)."""
    from kernel.errors import UnavailableError
    from modules.disambiguation.ambiguity_records import GlossaryEntry
    from modules.evidence.query_text import evidence_query_text
    from modules.evidence.recognizers import definition_text
    from modules.evidence.search import search_evidence
    from tht.evidence_runtime import open_evidence

    runtime = open_evidence(app.workspace.root, trust=lambda: app.kernel.trust)
    try:
        if runtime.active_generation() is None:
            return ()
        outcome = search_evidence(
            runtime.capabilities(),
            evidence_query_text(question),
            purpose="disambiguation",
            kinds=("glossary",),
            limit=GLOSSARY_LIMIT,
        )
    finally:
        runtime.close()
    if outcome.status == "unavailable":
        raise UnavailableError(
            f"the evidence glossary is unavailable: {outcome.warning}",
            details={"reason": "evidence"},
        )
    return tuple(
        GlossaryEntry(term=r.title, definition=definition_text(r.title, r.excerpt), unit=r.unit_id)
        for r in outcome.results
    )


def prepare_f1(app: App, stage: str, proposal: Proposal, loaded: LoadedSession) -> Proposal:
    """The agent's F1 options, each checked against the catalog (unchanged when the workspace
    has no synced catalog: there is nothing to check them against)."""
    import msgspec

    from kernel.errors import ThtError
    from kernel.reviewer_tools import ProposalEvent, ProposalOption
    from modules.disambiguation.f1_policy import F1_DECISIONS, normalize_agent_option

    step = loaded.workflow.step(stage)
    if not is_f1(step.owner, step.emits) or not proposal.options:
        return proposal
    try:
        view = _view(app)
    except ThtError:
        return proposal
    options: list[ProposalOption] = []
    for option in proposal.options:
        subjects = {e.subject for e in option.events if e.type in F1_DECISIONS}
        if len(subjects) != 1 or None in subjects:
            options.append(option)
            continue
        raw: dict[str, Any] = msgspec.to_builtins(option)
        normalized = normalize_agent_option(raw, view, subject=str(next(iter(subjects))))
        options.append(
            ProposalOption(
                id=normalized.id,
                label=normalized.label,
                events=tuple(
                    ProposalEvent(type=e.type, subject=e.subject, payload=dict(e.payload))
                    for e in normalized.events
                ),
            )
        )
    return msgspec.structs.replace(proposal, options=tuple(options))
