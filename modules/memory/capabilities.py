"""``MemoryCapabilities``: everything the Memory registry is given, and nothing more.

Built by the composition root, never by the module (spec 003 §11): the workspace-level ledger
``memory`` (``store.workspace_ledger("memory")``), the clock that stamps its entries, its fold
cache, and in signed mode the signer of a reviewer's entries and the reviewer registry's check.
The search index (the ``memory`` and ``solved_question`` vector kinds) is a projection with
capabilities of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernel.clock import Clock
from kernel.ledger_records import Signer
from kernel.signature_rules import HumanCheck
from kernel.store.base import LedgerPort

__all__ = ["MemoryCapabilities"]


def _no_signer(actor: str) -> Signer | None:
    return None


def _no_cache() -> bytes | None:
    return None


def _drop_cache(data: bytes) -> None:
    return None


@dataclass(frozen=True)
class MemoryCapabilities:
    ledger: LedgerPort  # the workspace-level ledger "memory"
    clock: Clock
    read_cache: Callable[[], bytes | None] = _no_cache
    write_cache: Callable[[bytes], None] = _drop_cache
    #: signed mode: the signer of a human's entries (unlocking their key), else None
    signer_for: Callable[[str], Signer | None] = _no_signer
    #: the reviewer registry's signature check (verify), None without a registry
    human_check: HumanCheck | None = None
