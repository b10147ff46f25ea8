"""Per-module capability objects (spec 003 §11): narrow, made for one module, built by the
composition root. There is no universal context, and no module ever receives the ledger writer:
a module returns a ``ModuleOutcome`` and the kernel applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kernel.clock import Clock
from kernel.domain_profile import DomainProfile
from kernel.fold import DecisionRecord

__all__ = ["DisambiguationCapabilities", "SessionView", "WorkspaceScope"]


@dataclass(frozen=True)
class WorkspaceScope:
    """What the workspace database is for (glossary "Workspace scope")."""

    description: str
    refuse: tuple[str, ...]
    languages: tuple[str, ...]


@dataclass(frozen=True)
class SessionView:
    """A read-only projection of one session at one stage."""

    session: str
    question: str
    stage: str
    invocation: str
    effective_decisions: tuple[DecisionRecord, ...]


@dataclass(frozen=True)
class DisambiguationCapabilities:
    """What Question Admission and the clarification policy may use."""

    clock: Clock
    scope: WorkspaceScope
    #: ``domain:`` of workspace.yaml: what the SecurityGate refuses and masks, the dimensions
    profile: DomainProfile = field(default_factory=DomainProfile)
    #: what the workspace holds, as ``(source, text)`` pairs (catalog tables and columns, their
    #: descriptions, the scope's description, the glossary's titles): scope relevance's
    #: vocabulary; empty → relevance is not judged
    scope_terms: tuple[tuple[str, str], ...] = ()
    #: whether a word is a value of the Workspace Database (the catalog's value index,
    #: confirmed against the database); None when there is no fresh index
    value_check: Callable[[str], bool] | None = None
    #: the question's words that mean a vocabulary word in another language (a multilingual
    #: embedder's word similarity above its floor: "hospital" ~ "ospedali"); None: no bridge
    word_bridge: Callable[[Sequence[str]], Sequence[str]] | None = None
