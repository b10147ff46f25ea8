"""The witnesses of the workspace-level ledgers (kernel/ledger_witness.py): where they live, the
ledgers that carry them, and a human's acceptance of a rollback (``--accept-rollback`` of
``tht reviewer|memory|catalog verify``; the reviewer registry's own is in
``tht.commands.reviewer``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel.ledger_verify import VerifyReport
    from kernel.ledger_witness import WitnessedLedger
    from kernel.store.base import WorkspaceLedgerName
    from kernel.workspace import Workspace
    from tht.composition import App

__all__ = ["accept_rollback", "signed_human", "witness_path", "witnessed_ledger"]

#: what each workspace-level ledger is called in a rollback's message, and how a human accepts it
_WITNESSED: Mapping[str, tuple[str, str]] = {
    "memory": ("the memory registry", "tht memory verify --accept-rollback --as human:<id>"),
    "catalog": (
        "the catalog ledger",
        "tht catalog verify --accept-rollback --as human:<id>` (or record it with `tht catalog "
        "verify --repair --reason T --as human:<id>",
    ),
}


def witness_path(workspace: Workspace, name: str) -> Path:
    """A workspace-level ledger's witness, the longest history of it this workspace's tht has
    verified (kernel/ledger_witness.py): ``.tht/witness/<name>.json``."""
    return workspace.state_dir / "witness" / f"{name}.json"


def witnessed_ledger(app: App, name: WorkspaceLedgerName) -> WitnessedLedger:
    """The store's workspace-level ledger ``name`` (``memory``, ``catalog``) with its witness:
    a rollback of it is ``rolled_back`` (exit 7) wherever it is verified."""
    from kernel.ledger_witness import WitnessedLedger, WitnessFile

    ledger = app.kernel.store.workspace_ledger(name)
    label, remedy = _WITNESSED[name]
    witness = WitnessFile(witness_path(app.workspace, name), ledger.session_id)
    return WitnessedLedger(ledger, witness, label=label, remedy=remedy)


#: problems a rollback brings with it (the ledger cut to nothing has no file, no anchor)
_PART_OF_A_ROLLBACK = frozenset({"rolled_back", "missing_ledger", "empty"})


def accept_rollback(
    ledger: WitnessedLedger,
    verify: Callable[[], VerifyReport],
    confirm: Callable[[], None],
) -> VerifyReport:
    """A human accepts ``ledger`` as it is now after a rollback: its witness moves to its end
    (also backwards; away when no line is left) and the report after it is returned.
    ``confirm`` proves the human (raises otherwise), called once nothing else stands in the
    way. Refused when there is no rollback to accept, or when the ledger has any other problem
    (a repair, or a backup, comes first)."""
    from kernel.errors import IntegrityError, PolicyError

    before = verify()
    if not any(p.code == "rolled_back" for p in before.problems):
        raise PolicyError(f"{ledger.label} shows no rollback: there is nothing to accept")
    # a ledger deleted whole is a rollback to nothing: its missing file is part of it
    others = [p for p in before.problems if p.code not in _PART_OF_A_ROLLBACK]
    if others:
        raise IntegrityError(
            f"{ledger.label} has other problems ({others[0].code}: {others[0].message}); "
            "nothing was accepted"
        )
    confirm()
    ledger.record(reset=True)
    return verify()


def signed_human(app: App, who: str) -> Callable[[], None]:
    """``accept_rollback``'s ``confirm`` for a ledger the reviewer registry vouches for: in
    signed mode ``who``'s key, unlocked at the terminal (exit 5 without one)."""
    from kernel.errors import PolicyError

    def confirm() -> None:
        trust = app.kernel.trust
        if not trust.signed:
            return
        if trust.unlock is None:
            raise PolicyError("signed mode: no way to unlock a reviewer key here")
        key = trust.unlock(who)
        if key.reviewer != who:
            raise PolicyError(f"the key unlocked is {key.reviewer}'s, not {who}'s")

    return confirm
