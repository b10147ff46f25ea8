"""Reconciliation: the units present, the sources present and the manifest, brought together.

Pure: given what was read from the workspace, compute each unit's blocking review items (written
and computed), which units are orphaned or retirement candidates, which sources are new, changed
or unreadable, and the manifest as it should be — every unit present recorded under its source
(hand-written units are first-class), ids whose files were deleted moved to ``retired``. ``status``
reports this; ``publish`` and ``prepare`` record the reconciled manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modules.evidence.manifest import Manifest, ManifestSource
from modules.evidence.review import (
    ORPHANED,
    RETIREMENT_CANDIDATE,
    computed_review_items,
    merge_review,
)
from modules.evidence.sources import SourceDocument
from modules.evidence.units import EvidenceUnit, ReviewItem

__all__ = ["EvidenceState", "UnitState", "reconcile", "reconcile_manifest"]


@dataclass(frozen=True)
class UnitState:
    unit: EvidenceUnit
    path: str  # workspace-relative
    review: tuple[ReviewItem, ...]
    recorded: bool

    @property
    def publishable(self) -> bool:
        return not self.review

    @property
    def orphaned(self) -> bool:
        return any(item.code == ORPHANED for item in self.review)

    @property
    def retirement_candidate(self) -> bool:
        return any(item.code == RETIREMENT_CANDIDATE for item in self.review)


@dataclass(frozen=True)
class EvidenceState:
    units: dict[str, UnitState]
    sources: dict[str, SourceDocument]
    unreadable: dict[str, str]
    manifest: Manifest
    reconciled: Manifest
    unprepared: tuple[str, ...]  # sources never prepared
    changed: tuple[str, ...]  # sources whose hash differs from the one prepared
    removed: tuple[str, ...]  # ids in the manifest whose unit file is gone

    @property
    def publishable(self) -> list[EvidenceUnit]:
        return [s.unit for _, s in sorted(self.units.items()) if s.publishable]

    @property
    def blocked(self) -> list[UnitState]:
        return [s for _, s in sorted(self.units.items()) if not s.publishable]


def reconcile_manifest(
    manifest: Manifest, units: Mapping[str, EvidenceUnit], present_sources: set[str]
) -> Manifest:
    """The manifest with every present unit recorded under its source and deleted ids retired.

    An entry is dropped when its source is gone and no unit cites it any more.
    """
    by_source: dict[str, list[str]] = {}
    for uid, unit in units.items():
        by_source.setdefault(unit.front.source, []).append(uid)
    sources: dict[str, ManifestSource] = {}
    for path in sorted(set(manifest.sources) | set(by_source)):
        old = manifest.sources.get(path)
        ids = tuple(sorted(by_source.get(path, [])))
        if old is None and not ids:
            continue
        if not ids and path not in present_sources:
            continue
        if old is not None and old.sha256 is None and not ids and not old.declined:
            continue
        sources[path] = ManifestSource(
            sha256=old.sha256 if old else None,
            units=ids,
            declined=old.declined if old else (),
        )
    removed = manifest.unit_ids() - set(units)
    return Manifest(
        version=1,
        sources=sources,
        retired=tuple(sorted(set(manifest.retired) | removed)),
    )


def reconcile(
    *,
    units: Mapping[str, tuple[str, EvidenceUnit]],
    sources: Mapping[str, SourceDocument],
    unreadable: Mapping[str, str],
    manifest: Manifest,
    max_chunk_chars: int,
) -> EvidenceState:
    recorded = manifest.unit_ids()
    states: dict[str, UnitState] = {}
    collapsed = {path: doc.collapsed for path, doc in sources.items()}
    for uid, (path, unit) in sorted(units.items()):
        computed = computed_review_items(
            unit,
            collapsed.get(unit.front.source),
            source_problem=unreadable.get(unit.front.source),
            max_chunk_chars=max_chunk_chars,
        )
        states[uid] = UnitState(
            unit=unit,
            path=path,
            review=merge_review(unit.front.review, computed),
            recorded=uid in recorded,
        )
    unprepared = tuple(
        sorted(
            p for p in sources if p not in manifest.sources or manifest.sources[p].sha256 is None
        )
    )
    changed = tuple(
        sorted(
            p
            for p, doc in sources.items()
            if p in manifest.sources
            and manifest.sources[p].sha256 is not None
            and manifest.sources[p].sha256 != doc.sha256
        )
    )
    plain_units = {uid: unit for uid, (_, unit) in units.items()}
    return EvidenceState(
        units=states,
        sources=dict(sources),
        unreadable=dict(unreadable),
        manifest=manifest,
        reconciled=reconcile_manifest(manifest, plain_units, set(sources) | set(unreadable)),
        unprepared=unprepared,
        changed=changed,
        removed=tuple(sorted(recorded - set(units))),
    )
