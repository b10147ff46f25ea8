"""F3's ``question.md`` is tht's, not the agent's (ARCHITECTURE §4.1, issue 14 item 7).

On a step that declares ``question.md`` (F3 ``rewriting``), a proposal that carries it is refused
(exit 5): the document is rendered by Disambiguation from the session's verified decisions
(:func:`modules.disambiguation.question_document.render_question_document`) and added by tht to
the step's confirm, so the reviewer approves exactly what the ledger says — the rewritten question,
the clarified concepts with their targets, the assumptions, the open ambiguities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.errors import PolicyError

if TYPE_CHECKING:
    from kernel.reviewer_tools import Proposal
    from kernel.workflow_kernel import LoadedSession

__all__ = ["prepare_rewriting"]


def prepare_rewriting(stage: str, proposal: Proposal, loaded: LoadedSession) -> Proposal:
    """The proposal as the step's owner turns it into an outcome: unchanged, or a confirm of
    F3 with the rendered ``question.md``."""
    import msgspec

    from kernel.reviewer_tools import ProposalArtifact
    from modules.disambiguation.question_document import (
        QUESTION_DOCUMENT,
        render_question_document,
    )

    step = loaded.workflow.step(stage)
    if QUESTION_DOCUMENT not in step.artifacts:
        return proposal
    if any(a.name == QUESTION_DOCUMENT for a in proposal.artifacts):
        raise PolicyError(
            f"{QUESTION_DOCUMENT} is rendered by tht from the session's decisions; a proposal "
            f"cannot carry it (remove it from artifacts: the confirm of {stage} gets it)"
        )
    if proposal.kind != "confirm":
        return proposal
    content = render_question_document(loaded.state).decode("utf-8")
    document = ProposalArtifact(name=QUESTION_DOCUMENT, content=content)
    return msgspec.structs.replace(proposal, artifacts=(*proposal.artifacts, document))
