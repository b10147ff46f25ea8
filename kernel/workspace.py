"""The workspace: ``workspace.yaml`` (edited by people) and the folder layout (ARCHITECTURE §3.5).

Layout of a workspace folder::

    workspace.yaml          scope, domain profile, evidence and vector-store settings
    sessions/<id>/          one folder per session: ledger.jsonl, artifacts/, objects/
    evidence/sources/       Source Evidence (never modified by tht)
    evidence/units/         Curated Evidence Units (<slug>.md)
    .tht/                   local state that can be rebuilt: vector data, caches, outbox

Its settings (the pydantic model and the typed views of ``workspace.yaml``) are
:mod:`kernel.workspace_settings`; the names the rest of tht imported from here still are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kernel.atomic import atomic_write
from kernel.errors import NotFoundError, UsageError
from kernel.workspace_settings import (
    DEFAULT_STORE_URL_ENV,
    ENV_NAME,
    STORE_KINDS,
    WorkspaceSettingsView,
    load_settings,
    parse_settings,
    store_kind_problem,
)

__all__ = [
    "DEFAULT_STORE_URL_ENV",
    "ENV_NAME",
    "STORE_KINDS",
    "WORKSPACE_FILE",
    "Workspace",
    "check_store",
    "init_workspace",
    "load_settings",
    "open_workspace",
    "parse_settings",
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

# Question Admission's attempts policy: a refused question may be rephrased in the same session
# (`tht session rephrase`) until this many questions were asked (1-10); the refusal of the last
# one closes the session. Each session keeps the number it was created with.
admission:
  attempts: 3

# Languages of questions and evidence (stemming, rendering): it, en.
languages: [it, en]

# The DomainProfile (docs/disambiguation.md). The SecurityGate reads every question before
# anything else: it refuses and masks the external entities and the restricted subjects
# (matched whatever the case, accents, spacing, invisible or look-alike characters); the home
# entity is never refused. Dimensions feed the IntentParser. Example:
#   domain:
#     home_entity: {{display: "Ospedale San Carlo", aliases: ["San Carlo", "OSC"]}}
#     external_entities:
#       - {{display: "Clinica Rivale", aliases: ["Rivale"], kind: competitor}}
#       - {{display: "Mario Rossi", aliases: ["M. Rossi"], kind: out_of_scope}}
#     restricted: {{keywords: ["stipendi", "salaries"], patterns: ['\\bIBAN\\b']}}
#     dimensions:
#       - {{name: hospital, kind: categorical, synonyms: {{it: [ospedale], en: [hospital]}},
#          clarify: ask_first}}
#       - {{name: period, kind: temporal, default: "last 12 months", clarify: assume}}
#     languages: [it, en]
#     escalate_unknown_to_restricted: false

evidence:
  max_chunk_chars: 4000

vector_store:
  kind: edge            # edge: embedded Qdrant Edge under .tht/ ; server: a Qdrant server by url
                        # (shared deployments: url_env: THT_QDRANT_URL, api_key_env: THT_QDRANT_KEY)

# Where sessions and the catalog/memory ledgers live: fs (this folder, the default) or a shared
# PostgreSQL server whose URL is in an environment variable, never in this file
# (docs/operations.md; `tht store init`, `tht store migrate --to postgres`):
#   store: {{kind: postgres, url_env: THT_STORE_URL}}

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

# The Workspace Database (docs/database.md), read only, never written. A SQLite file relative to
# this folder, or a PostgreSQL URL kept in an environment variable (never in this file):
#   database: {{url: "sqlite:///data/shop.db"}}
#   database: {{url_env: THT_DATABASE_URL, schema: public, row_limit: 1000, timeout_ms: 30000}}
"""


_STORE_KEY = re.compile(r"(?m)^store[ \t]*:[ \t]*(?P<rest>[^\n]*)$")
_FLOW_KIND = re.compile(r"""^\{[^}#]*?\bkind[ \t]*:[ \t]*['"]?(?P<kind>[^,}'"\s]+)['"]?[^}#]*\}""")
_BLOCK_KIND = re.compile(r"""^[ \t]+kind[ \t]*:[ \t]*['"]?(?P<kind>[^'"\s#]+)['"]?[ \t]*(#.*)?$""")
_UNCLEAR = object()


def _store_kind(text: str) -> object:
    """``store.kind`` read from the text without YAML or pydantic: None without a top-level
    ``store:`` key, the kind (``fs`` when the mapping names none), or ``_UNCLEAR`` when the
    text is not one of the two plain shapes (then the settings are validated in full)."""
    found = _STORE_KEY.search(text)
    if found is None:
        return None
    rest = found.group("rest").split(" #")[0].strip()
    if rest.startswith("{"):
        flow = _FLOW_KIND.match(rest)
        if flow is not None:
            return flow.group("kind")
        return "fs" if re.fullmatch(r"\{[^:}]*\}", rest) else _UNCLEAR
    if rest and not rest.startswith("#"):
        return _UNCLEAR
    kind: object = "fs"
    for line in text[found.end() :].split("\n")[1:]:
        if line.strip() and not line[:1].isspace():
            break  # the next top-level key
        block = _BLOCK_KIND.match(line)
        if block is not None:
            kind = block.group("kind")
        elif re.match(r"^[ \t]+kind[ \t]*:", line):
            return _UNCLEAR
    return kind


def check_store(workspace: Workspace) -> str:
    """Every command that opens the session store checks ``store.kind`` first (exit 2, nothing
    written) and gets it back: a text test on the hot path, as ``human_decisions`` is read (no
    pydantic for ``tht session status`` on the fs store); a ``store:`` in an unusual shape gets
    the full validation."""
    try:
        text = workspace.settings_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return workspace.settings().store.kind  # reports the file's own problem
    kind = _store_kind(text)
    if kind is _UNCLEAR:
        return workspace.settings().store.kind
    if kind is None:
        return "fs"
    problem = store_kind_problem(kind)
    if problem is not None:
        path = workspace.settings_file
        raise UsageError(
            f"{path}: store.kind: {problem}",
            details={"file": str(path), "problems": [f"store.kind: {problem}"]},
        )
    return str(kind)


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

    def settings(self) -> WorkspaceSettingsView:
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
    """Create the layout; idempotent. Returns the workspace and whether anything was created.

    Every OS error a user can cause (a file where a folder belongs, permission denied, a
    read-only or virtual file system such as ``/proc``) is a ``UsageError`` naming the path, and
    whatever this call had created is removed again: nothing is left half-created.
    """
    import errno

    root = root.expanduser()
    try:
        resolved = root.resolve()
    except (OSError, RuntimeError) as err:
        raise UsageError(f"{root}: cannot use this path as a workspace: {err}") from err
    virtual = next((v for v in ("/proc", "/sys") if resolved.is_relative_to(v)), None)
    if virtual is not None:
        raise UsageError(
            f"{root}: is under {virtual}, a virtual file system; choose another folder"
        )
    blocker = _first_non_folder(resolved)
    if blocker is not None:
        shown = "exists" if blocker == resolved else f"is inside {blocker}, which exists"
        raise UsageError(f"{root}: {shown} and is not a folder")
    ws = Workspace(resolved)
    made: list[Path] = []  # what this call created, parents first: removed again on failure
    private = (ws.sessions_dir, ws.state_dir)  # questions, SQL, keys' registry: the user's only
    try:
        for folder in (ws.sessions_dir, ws.sources_dir, ws.units_dir, ws.state_dir):
            _make_folders(folder, 0o700 if folder in private else 0o777, made)
        if not ws.settings_file.exists():
            label = name or ws.root.name or "workspace"
            text = _TEMPLATE.format(name=_yaml_scalar(label))
            atomic_write(ws.settings_file, text.encode("utf-8"), durable=True, exclusive=True)
            made.append(ws.settings_file)
    except OSError as err:
        _remove_created(made)
        where = err.filename or root
        reason = {
            errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted",
            errno.EROFS: "read-only file system",
            errno.ENOTDIR: "a part of the path is not a folder",
            errno.EEXIST: "exists and is not a folder",
            errno.ENOSPC: "no space left on the device",
        }.get(err.errno or 0, err.strerror or type(err).__name__)
        raise UsageError(f"{root}: cannot create the workspace ({where}: {reason})") from err
    ws.settings()  # an existing file must still be valid
    return ws, bool(made)


def _first_non_folder(path: Path) -> Path | None:
    """The path itself or the nearest existing ancestor when it is not a folder, else None."""
    for candidate in (path, *path.parents):
        try:
            if candidate.exists() or candidate.is_symlink():
                return None if candidate.is_dir() else candidate
        except OSError:
            return None  # unreadable: the creation below reports it, with its path
    return None


def _make_folders(folder: Path, mode: int, made: list[Path]) -> None:
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            break
        missing.append(candidate)
    for index, candidate in enumerate(reversed(missing)):
        last = index == len(missing) - 1
        candidate.mkdir(mode=mode if last else 0o777)
        made.append(candidate)


def _remove_created(made: list[Path]) -> None:
    import contextlib

    for path in reversed(made):
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink()


def _yaml_scalar(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)
