"""Stage ownership made real (spec 003 §4.1): each ``owner`` a workflow names has its proposal
policy here, in one static map — the stage's owner module, not the caller, turns an agent's
proposal into the ``ModuleOutcome`` the kernel validates.

Today every owner uses the kernel's generic reviewer tools (``kernel.reviewer_tools``); the
Disambiguation and Memory issues replace their entries with their modules' own policies (e.g.
F1 options computed from the catalog, F2 recall). A workflow whose step names an owner with no
policy here is refused when a proposal reaches that step (exit 5), and a test fails when the
packaged workflow names one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from kernel.errors import PolicyError
from kernel.events import MODULE_DECISION_TYPES
from kernel.fold import SessionState
from kernel.outcomes import ModuleOutcome
from kernel.reviewer_tools import Proposal, outcome_from_proposal
from kernel.workflow import StepSpec

__all__ = ["PROPOSAL_POLICIES", "ProposalPolicy", "policy_for"]

#: (the agent's proposal, the step it is for, the verified state) → the owner's outcome
ProposalPolicy = Callable[[Proposal, StepSpec, SessionState], ModuleOutcome]


def _generic(proposal: Proposal, step: StepSpec, state: SessionState) -> ModuleOutcome:
    """The kernel's generic reviewer tools: select / decide / confirm / auto / fail."""
    return outcome_from_proposal(proposal, step.id)


PROPOSAL_POLICIES: Mapping[str, ProposalPolicy] = MappingProxyType(
    {
        "disambiguation": _generic,  # admission itself is decided by the module only (kernel)
        "memory": _generic,
        "core": _generic,
        "datamart": _generic,
    }
)

#: owners that take no proposal: finalization is a human decision (`tht session finalize`)
NO_PROPOSALS = frozenset({"kernel"})


#: what an agent may still propose on a step whose decision is its module's own run (F7): ask a
#: human to reopen an earlier stage, or fail it — never a result, never its completion
_MODULE_RUN_KINDS = frozenset({"revision", "fail"})


def _module_run(policy: ProposalPolicy) -> ProposalPolicy:
    def checked(proposal: Proposal, step: StepSpec, state: SessionState) -> ModuleOutcome:
        if proposal.kind not in _MODULE_RUN_KINDS:
            owned = ", ".join(t for t in step.emits if t in MODULE_DECISION_TYPES)
            raise PolicyError(
                f"{step.id} is tht's own work: `tht stage run {step.id}` records {owned}; a "
                f"{proposal.kind} proposal cannot (only revision or fail may be proposed here)"
            )
        return policy(proposal, step, state)

    return checked


def policy_for(step: StepSpec) -> ProposalPolicy:
    policy = _policy_for(step)
    if any(t in MODULE_DECISION_TYPES for t in step.emits):
        return _module_run(policy)
    return policy


def _policy_for(step: StepSpec) -> ProposalPolicy:
    policy = PROPOSAL_POLICIES.get(step.owner)
    if policy is None:
        if step.owner in NO_PROPOSALS:
            raise PolicyError(f"{step.id} takes no proposal (owner {step.owner})")
        raise PolicyError(
            f"stage {step.id} is owned by {step.owner!r}, which has no proposal policy in this "
            f"version of tht (owners: {', '.join(sorted(PROPOSAL_POLICIES))})"
        )
    return policy
