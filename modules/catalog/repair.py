"""The explicit, human-only repair of the catalog ledger (ARCHITECTURE §3.9 rule 3), as
``tht ledger verify --repair`` is for a session: an append never repairs anything, so a crash
between a line and its head anchor, a torn tail or a damaged line leaves the catalog refusing
writes until a human quarantines the damage and records it as ``ledger_repaired``."""

from __future__ import annotations

from kernel import events as ev
from kernel.errors import IntegrityError, PolicyError, UsageError
from kernel.ledger_records import repair_cut, repaired_payload
from kernel.ledger_verify import VerifyReport
from kernel.signature_rules import is_human_actor
from modules.catalog.catalog import Catalog, LoadedCatalog

__all__ = ["repair_catalog"]


def repair_catalog(
    catalog: Catalog, *, actor: str, reason: str
) -> tuple[VerifyReport, LoadedCatalog]:
    """Quarantine the torn tail and every line from the first one that fails verification,
    re-anchor, and append ``ledger_repaired`` (signed in signed mode). Returns the report
    before the repair and the catalog after it."""
    if not is_human_actor(actor):
        raise PolicyError(f"{actor} cannot repair the catalog: a repair is a human decision")
    if not reason.strip():
        raise UsageError("a repair needs a reason (--reason TEXT)")
    before = catalog.verify()
    if before.ok:
        raise PolicyError("the catalog ledger verifies: there is nothing to repair")
    if any(p.code == "missing_ledger" for p in before.problems):
        raise IntegrityError("the catalog has no ledger: it cannot be repaired (run a sync)")
    cut_seq = repair_cut(before.problems)
    if cut_seq is not None and cut_seq <= 1:
        raise IntegrityError(
            "the catalog ledger's first line fails verification: it cannot be repaired; move "
            "catalog/ aside and sync again"
        )
    if cut_seq is not None:
        # what the cut keeps must verify too: cutting the line where signed mode began (the
        # reviewer registry's record) leaves the unsigned human entries before it unwitnessed,
        # so they go to quarantine with the damage instead of failing the repair after its cut
        kept = [e for e in before.decoded if e is not None and e.seq < cut_seq]
        unwitnessed = [p.seq for p in catalog.signature_problems(kept) if p.seq is not None]
        if unwitnessed:
            cut_seq = min(cut_seq, *unwitnessed)
            if cut_seq <= 1:
                raise IntegrityError(
                    "the catalog ledger's first line would have to go: it cannot be repaired; "
                    "move catalog/ aside and sync again"
                )
    ledger = catalog.caps.ledger
    ledger.close()
    done = ledger.repair(cut_seq=cut_seq)
    loaded = catalog.load_for_write()
    payload = repaired_payload(reason, done, before.problems)
    after = catalog.append(
        loaded, [ev.EventDraft(type="ledger_repaired", actor=actor, payload=payload)]
    )
    return before, after
