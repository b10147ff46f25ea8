"""Evidence preparation: Source Evidence → Curated Evidence Units, staged and applied atomically.

Glossary ("Evidence preparation"): deterministic extraction and normalization, at most one model
restructuring (optional, never retried), final deterministic validation; the whole set of changes
is prepared in a temporary area and applied only if every output is valid.

Per source (incremental: a source whose hash matches the manifest is skipped unless named):

1. normalize and segment it into passages, each recognized as a kind (segmentation.py);
2. optionally hand the passages to the one model restructuring (a failure applies nothing);
3. drop every passage an existing unit of the same source already covers — units written or
   edited by hand are never overwritten or duplicated — and those a curator retired;
4. give each new passage a unit: a slug assigned once, purposes from the source's front matter or
   the kind's defaults, metadata from the source's front matter;
5. mark existing units whose excerpts the source no longer supports as retirement candidates.

A full run also marks units whose source is gone as orphaned. Nothing is ever deleted. Then every
output is validated (round trip of the file format, excerpts present, formula, ids unique) and the
changes are applied together with the reconciled manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kernel.errors import UsageError
from modules.evidence.catalog import EvidencePaths, load_evidence
from modules.evidence.formula import check_formula
from modules.evidence.fragments import fragment_unit
from modules.evidence.manifest import Manifest, ManifestSource, render_manifest
from modules.evidence.recognizers import DEFAULT_PURPOSES
from modules.evidence.reconcile import EvidenceState, reconcile_manifest
from modules.evidence.review import (
    FRAGMENT_TOO_LARGE,
    ORPHANED,
    RETIREMENT_CANDIDATE,
    orphaned_item,
    retirement_item,
)
from modules.evidence.segmentation import Passage, segment
from modules.evidence.slugs import assign_slug
from modules.evidence.sources import SourceDocument
from modules.evidence.staging import apply_atomically
from modules.evidence.text import collapse_ws, excerpt_found, sha256_text
from modules.evidence.units import (
    EvidenceUnit,
    ReviewItem,
    UnitFrontMatter,
    evidence_id,
    parse_unit,
    render_unit,
)

__all__ = [
    "PreparationInvalidError",
    "PreparationPlan",
    "Restructurer",
    "SourceReport",
    "passage_key",
    "plan_preparation",
    "prepare",
]


class Restructurer(Protocol):
    """The one optional model restructuring of a source's passages (never retried)."""

    def restructure(self, source: SourceDocument, passages: Sequence[Passage]) -> list[Passage]:
        """Return the restructured passages; raise to abort the whole preparation."""
        ...


class PreparationInvalidError(UsageError):
    """An output failed the final validation; nothing was applied (exit 2)."""

    code = "evidence_invalid"


@dataclass(frozen=True)
class SourceReport:
    path: str
    status: str  # prepared | unchanged | orphaned
    created: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    retirement_candidates: tuple[str, ...] = ()
    restructured: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "status": self.status,
            "created": list(self.created),
            "kept": list(self.kept),
            "retirement_candidates": list(self.retirement_candidates),
            "restructured": self.restructured,
        }


@dataclass(frozen=True)
class PreparationPlan:
    writes: dict[str, bytes]
    reports: tuple[SourceReport, ...]
    orphaned: tuple[str, ...]
    units: dict[str, EvidenceUnit] = field(default_factory=dict)  # every unit after the change

    @property
    def created(self) -> list[str]:
        return [uid for r in self.reports for uid in r.created]


def passage_key(excerpt: str) -> str:
    """The hash a declined passage is remembered by (its collapsed excerpt)."""
    return sha256_text(collapse_ws(excerpt))


def _covered(keys: Sequence[str], existing: Sequence[str]) -> bool:
    """Is a passage (its collapsed excerpts) already covered by existing units' excerpts?

    Covered when one of its excerpts lies inside an existing excerpt, or when existing excerpts
    found inside it add up to at least half of it (a curator split it into several units).
    """
    for key in keys:
        if not key:
            continue
        if any(key in e for e in existing):
            return True
        inside = sum(len(e) for e in existing if e and e in key)
        if inside * 2 >= len(key):
            return True
    return False


def _with_review(unit: EvidenceUnit, items: Sequence[ReviewItem]) -> EvidenceUnit:
    have = {(i.code, i.field) for i in unit.front.review}
    new = [i for i in items if (i.code, i.field) not in have]
    if not new:
        return unit
    front = unit.front.model_copy(update={"review": [*unit.front.review, *new]})
    return EvidenceUnit(front=front, body=unit.body)


def _new_unit(
    passage: Passage, source: SourceDocument, slug: str, max_chunk_chars: int
) -> EvidenceUnit:
    rec = passage.recognition
    purposes = source.settings.purposes or list(DEFAULT_PURPOSES[rec.kind])
    front = UnitFrontMatter.model_validate(
        {
            "id": evidence_id(slug),
            "kind": rec.kind,
            "purposes": purposes,
            "title": rec.title or slug,
            "source": source.path,
            "excerpts": list(passage.excerpts),
            "metadata": dict(source.settings.metadata),
            "expression": rec.expression,
            "inputs": list(rec.inputs),
        }
    )
    unit = EvidenceUnit(front=front, body=passage.body)
    plan = fragment_unit(unit, max_chunk_chars)
    if plan.too_large:
        unit = _with_review(
            unit,
            [ReviewItem(code=FRAGMENT_TOO_LARGE, message=m, field="body") for m in plan.too_large],
        )
    return unit


def plan_preparation(
    state: EvidenceState,
    *,
    units_dir_rel: str,
    manifest_rel: str,
    max_chunk_chars: int,
    only: str | None = None,
    restructurer: Restructurer | None = None,
    progress: Callable[[str], None] | None = None,
) -> PreparationPlan:
    """Compute every file change of a preparation (pure apart from the restructurer)."""
    if state.unreadable and (only is None or only in state.unreadable):
        path, problem = sorted(state.unreadable.items())[0]
        raise UsageError(problem, details={"source": path})
    if only is not None and only not in state.sources:
        raise UsageError(f"evidence/sources/{only}: no such source")
    units: dict[str, EvidenceUnit] = {uid: s.unit for uid, s in state.units.items()}
    paths: dict[str, str] = {uid: s.path for uid, s in state.units.items()}
    changed: set[str] = set()
    taken = {u.slug for u in units.values()}
    taken |= {
        uid.split(":", 1)[1] for uid in state.manifest.unit_ids() | set(state.manifest.retired)
    }
    manifest_sources = dict(state.manifest.sources)
    reports: list[SourceReport] = []

    for path, source in sorted(state.sources.items()):
        if only is not None and path != only:
            continue
        entry = manifest_sources.get(path)
        if progress is not None:
            progress(path)
        if only is None and entry is not None and entry.sha256 == source.sha256:
            reports.append(SourceReport(path=path, status="unchanged"))
            continue
        passages = segment(source.text)
        restructured = False
        if restructurer is not None:
            passages = list(restructurer.restructure(source, passages))
            restructured = True
        declined = set(entry.declined) if entry else set()
        own = [uid for uid, u in sorted(units.items()) if u.front.source == path]
        existing = [collapse_ws(e) for uid in own for e in units[uid].front.excerpts]
        created: list[str] = []
        created_keys: set[tuple[str, ...]] = set()
        for passage in passages:
            keys = [collapse_ws(e) for e in passage.excerpts]
            if (
                tuple(keys) in created_keys  # the same passage twice in one source
                or _covered(keys, existing)
                or any(passage_key(k) in declined for k in keys)
            ):
                continue
            slug = assign_slug(passage.recognition.title, taken)
            taken.add(slug)
            unit = _new_unit(passage, source, slug, max_chunk_chars)
            units[unit.id] = unit
            paths[unit.id] = f"{units_dir_rel}/{unit.file_name}"
            changed.add(unit.id)
            created.append(unit.id)
            created_keys.add(tuple(keys))
        candidates: list[str] = []
        collapsed = source.collapsed
        for uid in own:
            unit = units[uid]
            missing = [
                retirement_item(i, path)
                for i, e in enumerate(unit.front.excerpts)
                if not excerpt_found(e, collapsed)
            ]
            if missing:
                candidates.append(uid)
                updated = _with_review(unit, missing)
                if updated is not unit:
                    units[uid] = updated
                    changed.add(uid)
        manifest_sources[path] = ManifestSource(
            sha256=source.sha256,
            units=entry.units if entry else (),  # reconciled below against the units present
            declined=entry.declined if entry else (),
        )
        reports.append(
            SourceReport(
                path=path,
                status="prepared",
                created=tuple(created),
                kept=tuple(u for u in own if u not in candidates),
                retirement_candidates=tuple(candidates),
                restructured=restructured,
            )
        )

    orphaned: list[str] = []
    if only is None:
        present = set(state.sources)
        for uid, unit in sorted(units.items()):
            if unit.front.source not in present:
                orphaned.append(uid)
                updated = _with_review(unit, [orphaned_item(unit.front.source)])
                if updated is not unit:
                    units[uid] = updated
                    changed.add(uid)
        gone = sorted({unit.front.source for unit in units.values()} - present)
        reports.extend(SourceReport(path=p, status="orphaned") for p in gone)

    manifest = reconcile_manifest(
        Manifest(version=1, sources=manifest_sources, retired=state.manifest.retired),
        units,
        set(state.sources),
    )
    writes = {paths[uid]: render_unit(units[uid]).encode("utf-8") for uid in sorted(changed)}
    manifest_bytes = render_manifest(manifest)
    if manifest_bytes != _current_manifest_bytes(state) or writes:
        writes[manifest_rel] = manifest_bytes
    plan = PreparationPlan(
        writes=writes, reports=tuple(reports), orphaned=tuple(orphaned), units=units
    )
    validate_plan(plan, state)
    return plan


def _current_manifest_bytes(state: EvidenceState) -> bytes:
    return render_manifest(state.manifest)


def validate_plan(plan: PreparationPlan, state: EvidenceState) -> None:
    """The final deterministic validation of every output; any problem → nothing is applied."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    for rel, data in sorted(plan.writes.items()):
        if rel.endswith("manifest.json"):
            continue
        try:
            unit = parse_unit(data.decode("utf-8"), rel)
        except UsageError as err:
            problems.append(err.message)
            continue
        if render_unit(unit).encode("utf-8") != data:
            problems.append(f"{rel}: does not round-trip through the unit format")
        if unit.id in seen:
            problems.append(f"{rel}: id {unit.id} also used by {seen[unit.id]}")
        seen[unit.id] = rel
        source = state.sources.get(unit.front.source)
        flagged = {i.field for i in unit.front.review if i.code in (RETIREMENT_CANDIDATE,)}
        orphan = any(i.code == ORPHANED for i in unit.front.review)
        if source is None and not orphan:
            problems.append(f"{rel}: source: evidence/sources/{unit.front.source} does not exist")
        if source is not None:
            collapsed = source.collapsed
            for i, excerpt in enumerate(unit.front.excerpts):
                if not excerpt_found(excerpt, collapsed) and f"excerpts[{i}]" not in flagged:
                    problems.append(f"{rel}: excerpts[{i}]: not found in the source: {excerpt!r}")
        if unit.front.kind == "formula" and unit.id not in state.units:
            check = check_formula(unit.front.expression or "", unit.front.inputs)
            problems.extend(f"{rel}: expression: {p}" for p in check.problems)
    if problems:
        raise PreparationInvalidError(
            "preparation produced invalid output; nothing was applied:\n  "
            + "\n  ".join(problems[:10]),
            details={"problems": problems},
        )


def prepare(
    paths: EvidencePaths,
    *,
    max_chunk_chars: int,
    only: str | None = None,
    restructurer: Restructurer | None = None,
    progress: Callable[[str], None] | None = None,
) -> PreparationPlan:
    """Plan, validate and atomically apply a preparation of the workspace at ``paths``."""
    loaded = load_evidence(paths, max_chunk_chars=max_chunk_chars)
    plan = plan_preparation(
        loaded.state,
        units_dir_rel=paths.rel(paths.units_dir),
        manifest_rel=paths.rel(paths.manifest_file),
        max_chunk_chars=max_chunk_chars,
        only=only,
        restructurer=restructurer,
        progress=progress,
    )
    expect = {rel: loaded.raw.get(rel) for rel in plan.writes}
    apply_atomically(paths.root, plan.writes, staging_root=paths.staging_dir, expect=expect)
    return plan
