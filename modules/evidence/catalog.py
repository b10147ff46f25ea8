"""Reading a workspace's evidence files: units, sources, manifest (the I/O edge of the module).

Everything here reads; nothing writes (writes go through staging.py). The bytes of every file read
are kept so an application can check that nothing changed meanwhile (optimistic concurrency).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernel.errors import UsageError
from kernel.workspace import Workspace
from modules.evidence.manifest import MANIFEST_FILE, Manifest, load_manifest
from modules.evidence.reconcile import EvidenceState, reconcile
from modules.evidence.sources import SourceDocument, list_sources, read_source
from modules.evidence.staging import recover
from modules.evidence.units import EvidenceUnit, parse_unit

__all__ = ["EvidencePaths", "LoadedEvidence", "load_evidence", "read_units"]


@dataclass(frozen=True)
class EvidencePaths:
    """Where a workspace keeps its evidence (ARCHITECTURE §3.5)."""

    root: Path

    @classmethod
    def of(cls, workspace: Workspace) -> EvidencePaths:
        return cls(workspace.root)

    @property
    def evidence_dir(self) -> Path:
        return Workspace(self.root).evidence_dir

    @property
    def sources_dir(self) -> Path:
        return Workspace(self.root).sources_dir

    @property
    def units_dir(self) -> Path:
        return Workspace(self.root).units_dir

    @property
    def manifest_file(self) -> Path:
        return self.evidence_dir / MANIFEST_FILE

    @property
    def eval_file(self) -> Path:
        return self.evidence_dir / "eval.yaml"

    @property
    def state_dir(self) -> Path:
        """``.tht/evidence/``: staging, generations, vector cache — rebuildable local state."""
        return Workspace(self.root).state_dir / "evidence"

    @property
    def staging_dir(self) -> Path:
        return self.state_dir / "staging"

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


@dataclass(frozen=True)
class LoadedEvidence:
    state: EvidenceState
    raw: dict[str, bytes | None]  # workspace-relative path → bytes as read (None: absent)


def read_units(
    units_dir: Path, root: Path
) -> tuple[dict[str, tuple[str, EvidenceUnit]], dict[str, bytes]]:
    """Every ``evidence/units/*.md``, parsed; all malformed files reported together (exit 2)."""
    units: dict[str, tuple[str, EvidenceUnit]] = {}
    raw: dict[str, bytes] = {}
    problems: list[str] = []
    if not units_dir.is_dir():
        return units, raw
    for path in sorted(units_dir.glob("*.md")):
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        raw[rel] = data
        try:
            unit = parse_unit(data.decode("utf-8"), rel)
        except UnicodeDecodeError:
            problems.append(f"{rel}: not UTF-8 text")
            continue
        except UsageError as err:
            problems.append(err.message)
            continue
        units[unit.id] = (rel, unit)
    if problems:
        shown = "\n  ".join(problems[:10])
        more = f"\n  … and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise UsageError(
            f"{len(problems)} malformed evidence unit file(s):\n  {shown}{more}",
            details={"problems": problems},
        )
    return units, raw


def load_evidence(paths: EvidencePaths, *, max_chunk_chars: int) -> LoadedEvidence:
    """Read units, sources and manifest and reconcile them (after undoing any interrupted apply)."""
    recover(paths.root, staging_root=paths.staging_dir)
    units, raw_units = read_units(paths.units_dir, paths.root)
    sources: dict[str, SourceDocument] = {}
    unreadable: dict[str, str] = {}
    for rel in list_sources(paths.sources_dir):
        try:
            sources[rel] = read_source(paths.sources_dir, rel)
        except UsageError as err:
            unreadable[rel] = err.message
    manifest_rel = paths.rel(paths.manifest_file)
    try:
        manifest_raw: bytes | None = paths.manifest_file.read_bytes()
    except FileNotFoundError:
        manifest_raw = None
    manifest = load_manifest(paths.manifest_file) if manifest_raw is not None else Manifest()
    state = reconcile(
        units=units,
        sources=sources,
        unreadable=unreadable,
        manifest=manifest,
        max_chunk_chars=max_chunk_chars,
    )
    raw: dict[str, bytes | None] = {**raw_units, manifest_rel: manifest_raw}
    return LoadedEvidence(state=state, raw=raw)
