"""``workflow.yaml``: the ordered workflow, loaded into an immutable :class:`WorkflowSpec`.

The file (a contract people edit) is validated with pydantic; every error names the file and the
field path (exit 2). The validated spec is a frozen ``msgspec.Struct``: the fold and the kernel use
it, and it is cached compiled (keyed by the file's SHA-256) so ``tht session status`` never imports
pydantic or yaml.

The workflow is a flat, ordered list of *steps*: the admission preflight, the stages F1–F8, the
contributions of each extension point (inserted after the stage they follow) and finalization. The
order is explicit; the workflow is not a general DAG.
"""

import hashlib
import re
from pathlib import Path
from typing import Any, Literal

import msgspec

from kernel.atomic import atomic_write
from kernel.config_errors import parse_yaml_mapping, usage_error_from_validation
from kernel.errors import NotFoundError, UsageError
from kernel.events import (
    EVENT_TYPES,
    HUMAN_DECISION_TYPES,
    MODULE_DECISION_TYPES,
    WORKSPACE_CATEGORIES,
)
from kernel.log import get_logger

__all__ = [
    "StepSpec",
    "WorkflowSpec",
    "compiled_sha256",
    "default_workflow_path",
    "load_workflow",
    "load_workflow_bytes",
    "parse_workflow",
    "parse_workflow_bytes",
]

StepKind = Literal["preflight", "stage", "contribution", "finalize"]
Completion = Literal["automatic", "review_required"]
SkipPolicy = Literal["human", "never"]
ContributionPolicy = Literal["required", "best_effort"]

_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_DISPLAY = re.compile(r"^[A-Z][0-9]+$")
_ARTIFACT = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*(/\*)?$")


class StepSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One step of the ordered workflow (a stage, the preflight, a contribution or finalize)."""

    id: str
    kind: StepKind
    display: str | None = None
    owner: str
    emits: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    completion: Completion = "review_required"
    skip: SkipPolicy = "never"
    policy: ContributionPolicy = "required"
    extension_point: str | None = None

    def allows_artifact(self, name: str) -> bool:
        """``cte/*`` allows ``cte/1.sql``; other entries must match exactly."""
        for pattern in self.artifacts:
            if pattern.endswith("/*"):
                prefix = pattern[:-1]
                rest = name[len(prefix) :]
                if name.startswith(prefix) and rest and "/" not in rest:
                    return True
            elif name == pattern:
                return True
        return False

    @property
    def blocks_when_failed(self) -> bool:
        return self.policy == "required"


class WorkflowSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    version: int
    sha256: str
    steps: tuple[StepSpec, ...]
    receipts: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(step.id for step in self.steps)

    def index(self, step_id: str) -> int:
        for i, step in enumerate(self.steps):
            if step.id == step_id:
                return i
        raise NotFoundError(f"unknown stage {step_id!r}; stages: {', '.join(self.ids)}")

    def step(self, step_id: str) -> StepSpec:
        return self.steps[self.index(step_id)]

    def has(self, step_id: str) -> bool:
        return any(step.id == step_id for step in self.steps)


def default_workflow_path() -> Path:
    """The built-in ``workflow.yaml`` (packaged copy in a wheel, the repository's in a checkout)."""
    here = Path(__file__).resolve().parent
    packaged = here / "_contracts" / "workflow.yaml"
    return packaged if packaged.is_file() else here.parent / "workflow.yaml"


logger = get_logger(__name__)
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(WorkflowSpec)


def load_workflow(path: Path | None = None, *, cache_dir: Path | None = None) -> WorkflowSpec:
    """Load and validate a workflow file; with ``cache_dir``, reuse the compiled spec."""
    path = path or default_workflow_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError as err:
        raise UsageError(f"{path}: workflow file not found") from err
    return load_workflow_bytes(raw, str(path), cache_dir=cache_dir)


def load_workflow_bytes(
    raw: bytes,
    source: str,
    *,
    cache_dir: Path | None = None,
    compiled_sha256: str | None = None,
) -> WorkflowSpec:
    """Like :func:`load_workflow` for bytes already read (e.g. a session's snapshot).

    The compiled cache is a file anyone with the user's account can write, so it is never
    trusted by itself (ARCHITECTURE §3.9 rule 4): it is used only when the SHA-256 of its bytes
    equals ``compiled_sha256``, the digest recorded in the session's ledger when the session was
    created. Otherwise the spec is compiled from the source bytes (and the cache refreshed).
    """
    digest = hashlib.sha256(raw).hexdigest()
    cached = cache_dir / f"workflow-{digest}.msgpack" if cache_dir else None
    if cached is not None and compiled_sha256 is not None:
        try:
            data = cached.read_bytes()
            if hashlib.sha256(data).hexdigest() == compiled_sha256:
                spec = _DECODER.decode(data)
                if spec.sha256 == digest:
                    return spec
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            pass
    spec = parse_workflow_bytes(raw, source, digest)
    if cached is not None:
        try:
            atomic_write(cached, _ENCODER.encode(spec), durable=False)
        except OSError as err:  # a cache is an optimisation only
            logger.debug("compiled workflow %s not cached: %s", digest[:12], err)
    return spec


def compiled_sha256(spec: WorkflowSpec) -> str:
    """The digest of a compiled spec's cache bytes (recorded at session creation)."""
    return hashlib.sha256(_ENCODER.encode(spec)).hexdigest()


def parse_workflow(path: Path) -> WorkflowSpec:
    """Validate ``path`` with pydantic and the workflow rules; errors name file and field path."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as err:
        raise UsageError(f"{path}: workflow file not found") from err
    return parse_workflow_bytes(raw, str(path))


def parse_workflow_bytes(raw: bytes, source: str, digest: str | None = None) -> WorkflowSpec:
    from pydantic import ValidationError

    path = source
    data = parse_yaml_mapping(raw, source)
    digest = digest or hashlib.sha256(raw).hexdigest()
    try:
        model = _model().model_validate(data)
    except ValidationError as err:
        raise usage_error_from_validation(path, err.errors()) from err
    spec, problems = _compile(model, digest)
    if problems:
        raise usage_error_from_validation(path, [{"loc": loc, "msg": msg} for loc, msg in problems])
    return spec


def _model() -> Any:
    from pydantic import BaseModel, ConfigDict, Field

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

    class StepModel(_Strict):
        id: str
        owner: str
        emits: list[str] = Field(default_factory=list)
        artifacts: list[str] = Field(default_factory=list)
        completion: Completion = "review_required"
        skip: SkipPolicy = "never"

    class StageModel(StepModel):
        display: str

    class ContributionModel(StepModel):
        policy: ContributionPolicy

    class ExtensionPointModel(_Strict):
        id: str
        after: str
        contributions: list[ContributionModel] = Field(min_length=1)

    class FinalizeModel(_Strict):
        id: str = "finalize"
        owner: str = "kernel"
        emits: list[str] = Field(default_factory=list)
        artifacts: list[str] = Field(default_factory=list)

    class WorkflowModel(_Strict):
        version: Literal[1]
        name: str
        preflight: list[StepModel] = Field(default_factory=list)
        stages: list[StageModel] = Field(min_length=1)
        extension_points: list[ExtensionPointModel] = Field(default_factory=list)
        finalize: FinalizeModel = Field(default_factory=FinalizeModel)
        receipts: list[str] = Field(default_factory=lambda: ["evidence_consulted"])

    return WorkflowModel


def _compile(model: Any, digest: str) -> tuple[WorkflowSpec, list[tuple[tuple[Any, ...], str]]]:
    problems: list[tuple[tuple[Any, ...], str]] = []
    steps: list[StepSpec] = []

    def check_step(loc: tuple[Any, ...], step: Any) -> None:
        if not _ID.match(step.id):
            problems.append(((*loc, "id"), f"{step.id!r} is not a lowercase identifier"))
        for i, name in enumerate(step.emits):
            info = EVENT_TYPES.get(name)
            if info is None:
                problems.append(((*loc, "emits", i), f"unknown event type {name!r}"))
            elif info.category in ("kernel", *WORKSPACE_CATEGORIES):
                problems.append(((*loc, "emits", i), f"{name!r} is a {info.category} event type"))
            elif name in HUMAN_DECISION_TYPES and getattr(step, "completion", None) == "automatic":
                problems.append(
                    (
                        (*loc, "emits", i),
                        f"{name!r} is a human decision: a step that emits it must be "
                        "completion: review_required, not automatic",
                    )
                )
            elif (
                name in MODULE_DECISION_TYPES
                and MODULE_DECISION_TYPES[name] != f"module:{getattr(step, 'owner', '')}"
            ):
                problems.append(
                    (
                        (*loc, "emits", i),
                        f"{name!r} is recorded by {MODULE_DECISION_TYPES[name]}'s own run: a "
                        f"step that emits it must be owned by that module, not "
                        f"{getattr(step, 'owner', '')!r}",
                    )
                )
        for i, name in enumerate(step.artifacts):
            if not _ARTIFACT.match(name) or ".." in name.split("/"):
                problems.append(((*loc, "artifacts", i), f"{name!r} is not a relative file name"))

    for i, pre in enumerate(model.preflight):
        check_step(("preflight", i), pre)
        steps.append(_step(pre, "preflight"))
    after: dict[str, list[StepSpec]] = {}
    stage_ids = {stage.id for stage in model.stages}
    for i, point in enumerate(model.extension_points):
        if not _ID.match(point.id):
            problems.append((("extension_points", i, "id"), f"{point.id!r} is not an identifier"))
        if point.after not in stage_ids:
            problems.append(
                (("extension_points", i, "after"), f"{point.after!r} is not a stage id")
            )
        for j, contribution in enumerate(point.contributions):
            check_step(("extension_points", i, "contributions", j), contribution)
            after.setdefault(point.after, []).append(
                _step(contribution, "contribution", extension_point=point.id)
            )
    displays: set[str] = set()
    for i, stage in enumerate(model.stages):
        check_step(("stages", i), stage)
        if not _DISPLAY.match(stage.display):
            problems.append((("stages", i, "display"), f"{stage.display!r} is not like F1"))
        elif stage.display in displays:
            problems.append((("stages", i, "display"), f"display {stage.display} is used twice"))
        displays.add(stage.display)
        steps.append(_step(stage, "stage"))
        steps.extend(after.get(stage.id, []))
    fin = model.finalize
    check_step(("finalize",), fin)
    steps.append(
        StepSpec(
            id=fin.id,
            kind="finalize",
            owner=fin.owner,
            emits=tuple(fin.emits),
            artifacts=tuple(fin.artifacts),
            completion="automatic",
        )
    )
    seen: set[str] = set()
    for step in steps:
        if step.id in seen:
            problems.append((("id",), f"step id {step.id!r} is used twice"))
        seen.add(step.id)
    for i, name in enumerate(model.receipts):
        info = EVENT_TYPES.get(name)
        if info is None or info.category != "receipt":
            problems.append((("receipts", i), f"{name!r} is not a receipt event type"))
    spec = WorkflowSpec(
        name=model.name,
        version=model.version,
        sha256=digest,
        steps=tuple(steps),
        receipts=tuple(model.receipts),
    )
    return spec, problems


def _step(model: Any, kind: StepKind, extension_point: str | None = None) -> StepSpec:
    return StepSpec(
        id=model.id,
        kind=kind,
        display=getattr(model, "display", None),
        owner=model.owner,
        emits=tuple(model.emits),
        artifacts=tuple(model.artifacts),
        completion=model.completion,
        skip=model.skip,
        policy=getattr(model, "policy", "required"),
        extension_point=extension_point,
    )
