"""Evidence resolution: citable id → unit, source and fragment; retire or relink a unit.

Glossary ("Evidence resolution"): the explicit operation by which a curator retires a unit or
relinks it to an existing Source Evidence. It updates the unit and the manifest together, leaves a
reviewable Git diff, and neither publishes nor commits.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel.errors import NotFoundError, UsageError
from modules.evidence.catalog import EvidencePaths, LoadedEvidence, load_evidence
from modules.evidence.fragments import EvidenceFragment, fragment_unit
from modules.evidence.manifest import Manifest, ManifestSource, render_manifest
from modules.evidence.preparation import passage_key
from modules.evidence.reconcile import UnitState, reconcile_manifest
from modules.evidence.review import ORPHANED, RETIREMENT_CANDIDATE, SOURCE_UNREADABLE
from modules.evidence.staging import apply_atomically
from modules.evidence.text import collapse_ws, excerpt_found
from modules.evidence.units import EvidenceUnit, evidence_id, render_unit, slug_of

__all__ = ["Resolution", "relink_unit", "resolve_id", "retire_unit"]


@dataclass(frozen=True)
class Resolution:
    id: str
    unit: UnitState
    fragment: EvidenceFragment | None

    def to_json(self) -> dict[str, object]:
        front = self.unit.unit.front
        body: dict[str, object] = {
            "id": self.id,
            "unit": front.id,
            "file": self.unit.path,
            "kind": front.kind,
            "title": front.title,
            "source": f"evidence/sources/{front.source}",
            "excerpts": list(front.excerpts),
            "review": [i.model_dump(exclude_none=True) for i in self.unit.review],
        }
        if self.fragment is not None:
            body["fragment"] = {"id": self.fragment.id, "text": self.fragment.text}
        return body


def _find(loaded: LoadedEvidence, citable: str) -> tuple[UnitState, str | None]:
    slug = slug_of(citable)
    fragment = citable.split("#", 1)[1] if "#" in citable else None
    state = loaded.state.units.get(evidence_id(slug))
    if state is None:
        retired = evidence_id(slug) in loaded.state.manifest.retired
        why = " (it was retired)" if retired else ""
        raise NotFoundError(f"{citable}: no such evidence unit{why}")
    return state, fragment


def resolve_id(paths: EvidencePaths, citable: str, *, max_chunk_chars: int) -> Resolution:
    """``evidence:<slug>`` or ``evidence:<slug>#<n>`` → the unit file, source and fragment."""
    loaded = load_evidence(paths, max_chunk_chars=max_chunk_chars)
    state, fragment_name = _find(loaded, citable)
    fragment = None
    if fragment_name is not None:
        plan = fragment_unit(state.unit, max_chunk_chars)
        matches = [f for f in plan.fragments if str(f.index) == fragment_name]
        if not matches:
            raise NotFoundError(
                f"{citable}: {state.unit.id} has no fragment #{fragment_name} "
                f"(it has {len(plan.fragments)})"
            )
        fragment = matches[0]
    return Resolution(id=citable, unit=state, fragment=fragment)


def retire_unit(paths: EvidencePaths, citable: str, *, max_chunk_chars: int) -> dict[str, object]:
    """Delete the unit file, retire its id and decline its passages, together."""
    loaded = load_evidence(paths, max_chunk_chars=max_chunk_chars)
    state, fragment = _find(loaded, citable)
    if fragment is not None:
        raise UsageError("retire a whole unit (evidence:<slug>), not a fragment")
    unit = state.unit
    old = loaded.state.manifest
    sources = dict(old.sources)
    entry = sources.get(unit.front.source, ManifestSource())
    declined = {*entry.declined, *(passage_key(e) for e in unit.front.excerpts)}
    sources[unit.front.source] = ManifestSource(
        sha256=entry.sha256, units=entry.units, declined=tuple(sorted(declined))
    )
    remaining = {uid: s.unit for uid, s in loaded.state.units.items() if uid != unit.id}
    manifest = reconcile_manifest(
        Manifest(version=1, sources=sources, retired=(*old.retired, unit.id)),
        remaining,
        set(loaded.state.sources) | set(loaded.state.unreadable),
    )
    manifest_rel = paths.rel(paths.manifest_file)
    apply_atomically(
        paths.root,
        {manifest_rel: render_manifest(manifest)},
        deletes=[state.path],
        staging_root=paths.staging_dir,
        expect={state.path: loaded.raw.get(state.path), manifest_rel: loaded.raw.get(manifest_rel)},
    )
    return {"id": unit.id, "retired": True, "deleted": state.path, "manifest": manifest_rel}


def relink_unit(
    paths: EvidencePaths, citable: str, source: str, *, max_chunk_chars: int
) -> dict[str, object]:
    """Point the unit at another existing source whose text supports all of its excerpts."""
    loaded = load_evidence(paths, max_chunk_chars=max_chunk_chars)
    state, fragment = _find(loaded, citable)
    if fragment is not None:
        raise UsageError("relink a whole unit (evidence:<slug>), not a fragment")
    rel = source.removeprefix("evidence/sources/")
    doc = loaded.state.sources.get(rel)
    if doc is None:
        raise UsageError(f"--relink: evidence/sources/{rel} is not an existing source")
    unit = state.unit
    collapsed = doc.collapsed
    missing = [i for i, e in enumerate(unit.front.excerpts) if not excerpt_found(e, collapsed)]
    if missing:
        shown = ", ".join(f"excerpts[{i}]" for i in missing)
        raise UsageError(
            f"--relink: {shown} of {unit.id} not found in evidence/sources/{rel}; edit the "
            "excerpts so the new source supports them, then relink",
            details={"missing": [collapse_ws(unit.front.excerpts[i]) for i in missing]},
        )
    stale = {ORPHANED, RETIREMENT_CANDIDATE, SOURCE_UNREADABLE}
    front = unit.front.model_copy(
        update={"source": rel, "review": [i for i in unit.front.review if i.code not in stale]}
    )
    updated = EvidenceUnit(front=front, body=unit.body)
    units = {uid: s.unit for uid, s in loaded.state.units.items()}
    units[unit.id] = updated
    manifest = reconcile_manifest(
        loaded.state.manifest, units, set(loaded.state.sources) | set(loaded.state.unreadable)
    )
    manifest_rel = paths.rel(paths.manifest_file)
    apply_atomically(
        paths.root,
        {state.path: render_unit(updated).encode("utf-8"), manifest_rel: render_manifest(manifest)},
        staging_root=paths.staging_dir,
        expect={state.path: loaded.raw.get(state.path), manifest_rel: loaded.raw.get(manifest_rel)},
    )
    return {"id": unit.id, "source": f"evidence/sources/{rel}", "previous": unit.front.source}
