"""``CatalogCapabilities``: everything the Metadata Catalog is given, and nothing more.

Built by the composition root (``tht/catalog_runtime.py``), never by the module (spec 003 §11).
The Workspace Database arrives as :class:`DatabaseAccess` — the binding's redacted display and
dialect plus the three calls a Catalog Sync Run makes (reachability, structure version,
introspection) — so tests hand the module a fake database and the module never sees a URL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from kernel.clock import Clock, IdFactory
from kernel.database.types import Introspection
from kernel.ledger_records import Signer
from kernel.signature_rules import HumanCheck
from kernel.store.base import LedgerPort

__all__ = ["CatalogCapabilities", "DatabaseAccess", "Progress", "RunLog"]

#: ``(done, total, table)`` while introspecting
Progress = Callable[[int, int, str], None]
#: ``(run, line)``: one line of a run's log (``catalog/runs/<run>.log``)
RunLog = Callable[[str, str], None]


@dataclass(frozen=True)
class DatabaseAccess:
    """The Workspace Database as a Catalog Sync Run uses it (kernel.database behind it)."""

    display: str  # the binding, redacted: safe to print and to record
    dialect: str  # "sqlite" | "postgresql"
    check_reachable: Callable[[], None]  # DatabaseUnavailable (exit 6) when it is not
    structure_version: Callable[[], str]
    introspect: Callable[[Sequence[str] | None, Progress | None], Introspection]


def _no_signer(actor: str) -> Signer | None:
    return None


def _no_lock() -> AbstractContextManager[None]:
    from contextlib import nullcontext

    return nullcontext()


def _no_log(run: str, line: str) -> None:
    return None


def _unsigned() -> bool:
    return False


@dataclass(frozen=True)
class CatalogCapabilities:
    ledger: LedgerPort  # the workspace-level ledger "catalog"
    put_object: Callable[[bytes], str]  # content-addressed snapshots (SHA-256)
    get_object: Callable[[str], bytes]  # verified; NotFoundError / IntegrityError
    clock: Clock
    ids: IdFactory  # run ids (time-sortable)
    database: DatabaseAccess | None = None  # None: workspace.yaml binds no database
    read_cache: Callable[[], bytes | None] = lambda: None
    write_cache: Callable[[bytes], None] = lambda data: None
    #: held for a whole run (an exclusive, non-blocking OS lock): ConflictError when held
    sync_lock: Callable[[], AbstractContextManager[None]] = _no_lock
    run_log: RunLog = _no_log
    #: signed mode: the signer of a human's entries (unlocking their key), else None
    signer_for: Callable[[str], Signer | None] = _no_signer
    #: the reviewer registry's signature check (verify), None without a registry
    human_check: HumanCheck | None = None
    #: whether the workspace is in signed mode (asked when the catalog is read for display):
    #: then what is shown comes from the verified ledger, never from the fold cache
    signed: Callable[[], bool] = _unsigned
