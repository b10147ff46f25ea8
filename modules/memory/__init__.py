"""The Memory module (ARCHITECTURE §4.3; glossary "Memoria").

The **Memory registry** is a workspace-level ledger (``memory/ledger.jsonl``, same envelope,
hash chain and store as sessions) of the clarifications reviewers promoted in F8
(``memory_saved``, ``memory_superseded``, ``memory_forgotten``) and of the finalized sessions'
solved questions (``solved_question_saved``), folded into :class:`MemoryState`. Imports only
``kernel``; the ledger, the clock, the fold cache and the signer arrive through
:class:`MemoryCapabilities`.

Entry points: :class:`MemoryRegistry` (registry.py: load, append, verify),
:func:`fold_registry` (fold.py), the identities (keys.py), F8's candidates and review
(candidates.py) and registry writes (promotion.py), F2's recall plan (recall.py).

Nothing heavy is imported here: the search index is a projection beside it.
"""

from modules.memory.candidates import (
    CandidateReport,
    PromotionCandidate,
    nothing_to_promote,
    promotion_candidates,
    promotion_review,
)
from modules.memory.capabilities import MemoryCapabilities
from modules.memory.fold import fold_registry, fold_registry_from
from modules.memory.keys import (
    memory_id,
    memory_key,
    normalize_text,
    solved_id,
    subject_key,
    subject_target_key,
)
from modules.memory.promotion import SavePlan, plan_forget, plan_saves, plan_solved
from modules.memory.recall import RecallHit, plan_recall, recall_texts
from modules.memory.records import FoldProblem, MemoryRecord, MemoryState, SolvedQuestion
from modules.memory.registry import LoadedRegistry, MemoryRegistry

__all__ = [
    "CandidateReport",
    "FoldProblem",
    "LoadedRegistry",
    "MemoryCapabilities",
    "MemoryRecord",
    "MemoryRegistry",
    "MemoryState",
    "PromotionCandidate",
    "RecallHit",
    "SavePlan",
    "SolvedQuestion",
    "fold_registry",
    "fold_registry_from",
    "memory_id",
    "memory_key",
    "normalize_text",
    "nothing_to_promote",
    "plan_forget",
    "plan_recall",
    "plan_saves",
    "plan_solved",
    "promotion_candidates",
    "promotion_review",
    "recall_texts",
    "solved_id",
    "subject_key",
    "subject_target_key",
]
