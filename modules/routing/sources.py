"""Catalog sources (spec 000 §10–11, work package 5A): what ``tht route catalog build`` reads.

- skill folders: ``<dir>/<skill>/SKILL.md`` with YAML frontmatter ``name``, ``description``,
  optional ``when_to_use``, then a Markdown body;
- the semantic overrides file, keyed by id (§10.2–10.3), with the curated routing rules;
- MCP manifests (§11.2) and an optional agents source (5A).

Files people edit are validated with pydantic; every error names the file and the field path and
is a :class:`kernel.errors.UsageError` (exit 2). Not on the hook's hot path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kernel.config_errors import load_yaml_mapping, usage_error_from_validation
from kernel.errors import UsageError
from modules.routing.hotwords import is_reserved

__all__ = [
    "ID_PATTERN",
    "AgentsFile",
    "McpManifest",
    "OverridesFile",
    "SkillSource",
    "load_agents",
    "load_mcp_manifest",
    "load_overrides",
    "read_skills",
]

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")
RoutingRole = Literal["orchestrator", "specialist", "sidecar", "utility"]
Availability = Literal["configured", "unknown", "unavailable"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_id(value: str) -> str:
    if not ID_PATTERN.match(value):
        raise ValueError("must be lower case letters, digits, '.', '_' or '-' (at most 120)")
    if is_reserved(value):
        raise ValueError(_RESERVED_MESSAGE.format(id=value))
    return value


#: ``!light``, ``!full``, ``!agents`` and ``!none`` are the prompt's mode hotwords (spec 000
#: §8.1): a target with one of those ids could never be chosen explicitly with ``!id``
_RESERVED_MESSAGE = "{id!r} is a reserved hotword (!{id} sets a mode): choose another id"


class SemanticFields(_Strict):
    """The compact, stable card of a target (§10.2)."""

    category: str | None = None
    semanticSummary: str | None = Field(default=None, max_length=400)
    capabilities: list[str] = Field(default_factory=list)
    notFor: list[str] = Field(default_factory=list)
    compatibleWith: list[str] = Field(default_factory=list)
    routingRole: RoutingRole | None = None


Phrases = list[str]


class IntentRule(_Strict):
    id: str
    phrases: Phrases = Field(min_length=1)
    priority: int = Field(default=1, ge=0, le=100)
    boost: float = Field(default=3.0, ge=0, le=10)


class LockRule(_Strict):
    phrases: Phrases = Field(min_length=1)
    priority: int = Field(default=10, ge=1, le=100)


class SuppressionRule(_Strict):
    phrases: Phrases = Field(min_length=1)
    mode: Literal["soft", "hard"] = "soft"
    penalty: float = Field(default=2.0, ge=0, le=10)


class ExclusionRule(_Strict):
    phrases: Phrases = Field(min_length=1)


class Override(SemanticFields):
    """Semantic card plus curated routing rules for one id (§10.3, §2.1)."""

    keywords: Phrases = Field(default_factory=list)
    patterns: Phrases = Field(default_factory=list)
    antiPatterns: Phrases = Field(default_factory=list)
    intents: list[IntentRule] = Field(default_factory=list)
    locks: list[LockRule] = Field(default_factory=list)
    suppressions: list[SuppressionRule] = Field(default_factory=list)
    exclusions: list[ExclusionRule] = Field(default_factory=list)


class OverridesFile(_Strict):
    version: Literal[1] = 1
    overrides: dict[str, Override] = Field(default_factory=dict)


class McpServer(SemanticFields):
    id: str
    kind: Literal["mcp"] = "mcp"
    riskClass: Literal["read", "write", "mixed"] = "mixed"
    suggestOnly: bool = True
    availability: Availability = "unknown"

    _id = field_validator("id")(_check_id)


class McpManifest(_Strict):
    version: Literal[1] = 1
    servers: list[McpServer] = Field(default_factory=list)


class Agent(_Strict):
    id: str
    semanticSummary: str | None = Field(default=None, max_length=400)
    skills: list[str] = Field(default_factory=list)
    availability: Availability = "unknown"
    generic: bool = False

    _id = field_validator("id")(_check_id)


class AgentsFile(_Strict):
    version: Literal[1] = 1
    agents: list[Agent] = Field(default_factory=list)


class SkillSource:
    """One skill as read from its ``SKILL.md``."""

    __slots__ = ("body", "description", "file", "id", "license", "when_to_use")

    def __init__(
        self,
        *,
        id: str,
        description: str,
        when_to_use: str,
        body: str,
        file: str,
        license: str | None,
    ) -> None:
        self.id = id
        self.description = description
        self.when_to_use = when_to_use
        self.body = body
        self.file = file
        self.license = license


def _read_data(path: Path) -> dict[str, Any]:
    if path.suffix.lower() in (".yaml", ".yml"):
        return load_yaml_mapping(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise UsageError(f"{path}: file not found") from err
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read: {err}") from err
    except json.JSONDecodeError as err:
        raise UsageError(f"{path}: not valid JSON (line {err.lineno}): {err.msg}") from err
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the top level must be an object")
    return data


def _validate(model: type[BaseModel], path: Path) -> Any:
    try:
        return model.model_validate(_read_data(path))
    except ValidationError as err:
        raise usage_error_from_validation(path, err.errors()) from err


def load_overrides(path: Path) -> OverridesFile:
    found: OverridesFile = _validate(OverridesFile, path)
    for key in found.overrides:
        if not ID_PATTERN.match(key):
            raise UsageError(f"{path}: overrides.{key}: not a valid id")
    return found


def load_mcp_manifest(path: Path) -> McpManifest:
    found: McpManifest = _validate(McpManifest, path)
    return found


def load_agents(path: Path) -> AgentsFile:
    found: AgentsFile = _validate(AgentsFile, path)
    return found


_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def _parse_skill(file: Path, label: str) -> SkillSource:
    import yaml

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{label}: cannot read: {err}") from err
    match = _FRONTMATTER.match(text)
    if not match:
        raise UsageError(f"{label}: no YAML frontmatter (a '---' block at the top)")
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as err:
        raise UsageError(f"{label}: frontmatter is not valid YAML: {err}") from err
    if not isinstance(meta, dict):
        raise UsageError(f"{label}: frontmatter must be a mapping")
    name = meta.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{label}: frontmatter.name: required (a non-empty string)")
    if not ID_PATTERN.match(name):
        raise UsageError(f"{label}: frontmatter.name: {name!r} is not a valid skill id")
    if is_reserved(name):
        raise UsageError(f"{label}: frontmatter.name: {_RESERVED_MESSAGE.format(id=name)}")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise UsageError(f"{label}: frontmatter.description: required (a non-empty string)")
    when = meta.get("when_to_use", "")
    if when is None:
        when = ""
    if not isinstance(when, str):
        raise UsageError(f"{label}: frontmatter.when_to_use: must be a string")
    licence = meta.get("license")
    return SkillSource(
        id=name,
        description=description.strip(),
        when_to_use=when.strip(),
        body=text[match.end() :],
        file=label,
        license=licence if isinstance(licence, str) else None,
    )


def read_skills(root: Path) -> list[SkillSource]:
    """Every ``SKILL.md`` directly in ``root`` or one folder below it, ordered by id."""
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder of skills")
    files = sorted(root.glob("*/SKILL.md"))
    if (root / "SKILL.md").is_file():
        files.insert(0, root / "SKILL.md")
    if not files:
        raise UsageError(f"{root}: no SKILL.md found (expected <skill>/SKILL.md folders)")
    skills: dict[str, SkillSource] = {}
    for file in files:
        label = file.relative_to(root.parent).as_posix()
        skill = _parse_skill(file, label)
        if skill.id in skills:
            raise UsageError(
                f"{label}: frontmatter.name: {skill.id!r} is also the name of "
                f"{skills[skill.id].file}"
            )
        skills[skill.id] = skill
    return [skills[key] for key in sorted(skills)]
