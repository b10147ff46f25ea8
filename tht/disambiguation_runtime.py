"""Composition root of F1 (stage ``disambiguation``): Disambiguation's own policy over the
catalog (ARCHITECTURE §4.1, issue 14 item 5).

- :func:`run_disambiguation` — ``tht stage run disambiguation``: the question's ambiguities over
  the verified catalog's SchemaView (``modules.disambiguation.detect_ambiguities``), then the next
  outcome of F1's policy (``plan_disambiguation``): the next undecided ambiguity as a ``select``
  with informed options and an explicit "leave open", an unanswerable term, or the confirm that
  closes F1 — applied as ``module:disambiguation``.
- :func:`prepare_f1` — an agent's F1 proposal, when the workspace has a synced catalog: every
  option's ``concept_clarified`` / ``value_grounded`` is validated and normalized against the
  same contract as the module's own options (a target the catalog does not have: exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.errors import PolicyError

if TYPE_CHECKING:
    from kernel.reviewer_tools import Proposal
    from kernel.schema_view import SchemaView
    from kernel.workflow_kernel import Applied, LoadedSession
    from tht.composition import App

__all__ = ["is_f1", "prepare_f1", "run_disambiguation"]

_ACTOR = "module:disambiguation"


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
    report = detect_ambiguities(loaded.state.question, view, values=value_lookup(app))
    outcome = plan_disambiguation(loaded.state, report)
    return app.kernel.apply_outcome(loaded.session, stage, outcome, actor=_ACTOR, loaded=loaded)


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
