"""Curated Evidence Units: the ``evidence/units/<slug>.md`` file format (ARCHITECTURE §6).

A unit is Markdown with YAML front matter::

    ---
    id: evidence:<slug>
    kind: formula
    purposes: [schema_linking, sql_generation]
    title: Eligible free meal rate
    source: california-schools.md
    excerpts: ["Eligible free rate = Free Meal Count / Enrollment"]
    metadata: {db: california_schools}
    expression: "free_meal_count / NULLIF(enrollment, 0)"   # formula only
    inputs: [free_meal_count, enrollment]                  # formula only
    review: []
    ---
    Body in Markdown.

The front matter is what a curator edits, so it is a pydantic model and every error names the file
and the field path (exit 2). :func:`render_unit` writes the canonical form (fixed key order, one
line per key, flow lists) so that diffs a curator reviews stay small and stable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from kernel.config_errors import usage_error_from_validation
from kernel.errors import UsageError
from modules.evidence.markdown import split_front_matter
from modules.evidence.text import normalize_text

__all__ = [
    "EVIDENCE_KINDS",
    "EVIDENCE_PURPOSES",
    "EvidenceKind",
    "EvidencePurpose",
    "EvidenceUnit",
    "ReviewItem",
    "UnitFrontMatter",
    "evidence_id",
    "parse_unit",
    "render_unit",
    "slug_of",
]

EvidenceKind = Literal[
    "glossary", "domain", "enum", "example", "mapping", "normalization", "formula", "reference"
]
EvidencePurpose = Literal["disambiguation", "rewriting", "schema_linking", "sql_generation"]
EVIDENCE_KINDS: tuple[str, ...] = (
    "glossary",
    "domain",
    "enum",
    "example",
    "mapping",
    "normalization",
    "formula",
    "reference",
)
EVIDENCE_PURPOSES: tuple[str, ...] = (
    "disambiguation",
    "rewriting",
    "schema_linking",
    "sql_generation",
)

SLUG_PATTERN = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_ID = re.compile(rf"evidence:({SLUG_PATTERN})")
MetadataValue = str | int | float | bool
MetadataKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")]
Code = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]


class ReviewItem(BaseModel):
    """A blocking review item: stable code, human message, optional field. Git keeps its history."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: Code
    message: Annotated[str, StringConstraints(min_length=1)]
    field: str | None = None


class UnitFrontMatter(BaseModel):
    """The front matter of a Curated Evidence Unit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(pattern=rf"^evidence:{SLUG_PATTERN}$")]
    kind: EvidenceKind
    purposes: Annotated[list[EvidencePurpose], Field(min_length=1)]
    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
    source: Annotated[str, StringConstraints(min_length=1)]
    excerpts: Annotated[list[Annotated[str, StringConstraints(min_length=1)]], Field(min_length=1)]
    metadata: dict[MetadataKey, MetadataValue] = Field(default_factory=dict)
    expression: str | None = None
    inputs: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    review: list[ReviewItem] = Field(default_factory=list)

    @field_validator("purposes")
    @classmethod
    def _unique_purposes(cls, value: list[EvidencePurpose]) -> list[EvidencePurpose]:
        if len(set(value)) != len(value):
            raise ValueError("purposes must not repeat")
        return value

    @field_validator("source")
    @classmethod
    def _relative_source(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or "\\" in value:
            raise ValueError("must be a path relative to evidence/sources/, without '..'")
        return str(path)

    @property
    def slug(self) -> str:
        return slug_of(self.id)


@dataclass(frozen=True)
class EvidenceUnit:
    """A parsed unit: front matter plus Markdown body (normalized, outer blank lines removed)."""

    front: UnitFrontMatter
    body: str

    @property
    def id(self) -> str:
        return self.front.id

    @property
    def slug(self) -> str:
        return self.front.slug

    @property
    def file_name(self) -> str:
        return f"{self.slug}.md"


def evidence_id(slug: str) -> str:
    return f"evidence:{slug}"


def slug_of(unit_id: str) -> str:
    """``evidence:<slug>`` (or ``evidence:<slug>#<fragment>``) → ``<slug>``; else a usage error."""
    match = _ID.fullmatch(unit_id.split("#", 1)[0])
    if match is None:
        raise UsageError(f"{unit_id!r} is not an evidence id (evidence:<slug>[#<fragment>])")
    return match.group(1)


def parse_unit(text: str, source: Path | str) -> EvidenceUnit:
    """Parse one unit file; every problem names ``source`` (and the field) and exits 2."""
    import yaml

    text = normalize_text(text)
    front, body, _ = split_front_matter(text)
    if front is None:
        raise UsageError(f"{source}: no front matter (the file must start with a '---' line)")
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise UsageError(f"{source}: front matter is not valid YAML{where}: {problem}") from err
    if not isinstance(data, dict):
        raise UsageError(f"{source}: front matter must be a mapping")
    try:
        model = UnitFrontMatter.model_validate(data)
    except ValidationError as err:
        raise usage_error_from_validation(source, err.errors()) from err
    name = Path(str(source)).name
    if name.endswith(".md") and name != f"{model.slug}.md":
        raise UsageError(
            f"{source}: id: {model.id} does not match the file name (expected {model.slug}.md)",
            details={"file": str(source), "problems": ["id: does not match the file name"]},
        )
    return EvidenceUnit(front=model, body=body.strip("\n"))


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*(?: [A-Za-z0-9_./()-]+)*")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none", "y", "n", "~"})


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _flow_list(values: list[Any]) -> str:
    return "[" + ", ".join(_scalar(v) for v in values) + "]"


def _flow_map(values: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{_scalar(k)}: {_scalar(v)}" for k, v in values.items()) + "}"


def render_unit(unit: EvidenceUnit) -> str:
    """The canonical file text of a unit (fixed key order; optional keys only when set)."""
    f = unit.front
    lines = [
        "---",
        f"id: {f.id}",
        f"kind: {f.kind}",
        f"purposes: {_flow_list(list(f.purposes))}",
        f"title: {_scalar(f.title)}",
        f"source: {_scalar(f.source)}",
        f"excerpts: {_flow_list(list(f.excerpts))}",
        f"metadata: {_flow_map(dict(f.metadata))}",
    ]
    if f.expression is not None:
        lines.append(f"expression: {_scalar(f.expression)}")
    if f.inputs:
        lines.append(f"inputs: {_flow_list(list(f.inputs))}")
    if f.review:
        lines.append("review:")
        for item in f.review:
            entry: dict[str, Any] = {"code": item.code, "message": item.message}
            if item.field is not None:
                entry["field"] = item.field
            lines.append(f"  - {_flow_map(entry)}")
    else:
        lines.append("review: []")
    lines.append("---")
    text = "\n".join(lines) + "\n"
    body = unit.body.strip("\n")
    if body:
        text += "\n" + body + "\n"
    return text
