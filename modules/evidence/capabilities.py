"""``EvidenceCapabilities``: everything the Evidence module is given, and nothing more.

Built by the composition root (``tht/evidence_runtime.py``), never by the module (spec 003 §11:
one capability object per module, no universal context). Heavy things — the vector store, the
embedder, the BM25 encoder, the model transport — are factories, so a command that does not need
them (``status``, ``resolve``) never opens or loads them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from modules.evidence.catalog import EvidencePaths
from modules.evidence.fusion import DEFAULT_FUSION, FusionSettings

if TYPE_CHECKING:
    from kernel.trust import ReviewerSigner
    from kernel.vectors import Embedder, SparseVector, VectorStore
    from modules.evidence.approval import SignatureCheck
    from modules.evidence.preparation import Restructurer

__all__ = ["EvidenceCapabilities", "EvidenceSettings", "SparseEncoder"]


class SparseEncoder(Protocol):
    """The BM25 encoder (kernel.vectors.bm25.Bm25Encoder)."""

    @property
    def identity(self) -> str: ...

    def embed_document(self, text: str) -> SparseVector: ...

    def embed_query(self, text: str) -> SparseVector: ...


@dataclass(frozen=True)
class EvidenceSettings:
    """The ``evidence:`` section of ``workspace.yaml`` as the module uses it."""

    max_chunk_chars: int = 4000
    rrf_k: int = 60
    prefetch_limit: int = 50
    # how hybrid search fuses dense and BM25 (modules/evidence/fusion.py); every generation
    # records the one it was evaluated with
    fusion: FusionSettings = DEFAULT_FUSION


@dataclass(frozen=True)
class EvidenceCapabilities:
    paths: EvidencePaths
    settings: EvidenceSettings
    clock: Callable[[], datetime]
    vector_store: Callable[[], VectorStore]
    embedder: Callable[[], Embedder]
    bm25: Callable[[], SparseEncoder]
    restructurer: Callable[[], Restructurer | None] = lambda: None
    progress: Callable[[str, int, int], None] | None = None  # (stage, done, total)
    # a nonce for generation ids (generations.new_generation_id): random unless the composition
    # root runs deterministically (THT_CLOCK / THT_SEED)
    nonce: Callable[[], str] = lambda: uuid.uuid4().hex
    # signed mode (ARCHITECTURE §3.9, modules/evidence/approval.py): a generation is activated
    # only with a reviewer's approval, and searched only while that approval verifies
    approval_required: bool = False
    # the reviewer registry's check of a signature over raw bytes (None: no registry verifies)
    check_signature: SignatureCheck | None = None
    # publish in signed mode: the approving reviewer's unlocked key (unlocked before the build)
    approver: ReviewerSigner | None = None

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)
