"""``tht evidence status``: units, review items, orphans, retirement candidates, sources.

Read-only: it reports the reconciliation (reconcile.py) without writing anything; the manifest
changes it shows are recorded by the next ``prepare`` or ``publish``.
"""

from __future__ import annotations

from collections import Counter

from modules.evidence.reconcile import EvidenceState

__all__ = ["status_report"]


def status_report(state: EvidenceState) -> dict[str, object]:
    """The JSON body of ``tht evidence status`` (without the generation, added by the caller)."""
    review = [
        {"id": uid, **item.model_dump(exclude_none=True)}
        for uid, s in sorted(state.units.items())
        for item in s.review
    ]
    kinds = Counter(s.unit.front.kind for s in state.units.values())
    return {
        "units": len(state.units),
        "publishable": len(state.publishable),
        "blocked": [s.unit.id for s in state.blocked],
        "kinds": dict(sorted(kinds.items())),
        "review_items": review,
        "orphans": sorted(uid for uid, s in state.units.items() if s.orphaned),
        "retirement_candidates": sorted(
            uid for uid, s in state.units.items() if s.retirement_candidate
        ),
        "sources": {
            "total": len(state.sources) + len(state.unreadable),
            "unprepared": list(state.unprepared),
            "changed": list(state.changed),
            "unreadable": sorted(state.unreadable),
        },
        "manifest": {
            "unrecorded": sorted(uid for uid, s in state.units.items() if not s.recorded),
            "removed": list(state.removed),
            "up_to_date": state.reconciled == state.manifest,
        },
    }
