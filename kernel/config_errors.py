"""Turn pydantic validation errors into one clear line naming the file and the field path.

Files a person edits (``workflow.yaml``, ``workspace.yaml``, provider profiles, routing config) are
validated with pydantic; their errors must say *which file*, *which field* and *what was expected*
(CONVENTIONS.md, "Data types"). Pydantic is imported lazily by the callers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kernel.errors import UsageError

__all__ = [
    "field_path",
    "load_yaml_mapping",
    "parse_yaml_mapping",
    "usage_error_from_validation",
]


def field_path(loc: Sequence[int | str]) -> str:
    """``("stages", 3, "emits", 0)`` → ``stages[3].emits[0]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def usage_error_from_validation(
    source: Path | str, errors: Iterable[Mapping[str, Any]]
) -> UsageError:
    """One ``UsageError`` whose message names the file and every failing field path."""
    problems = []
    for err in errors:
        loc = tuple(err.get("loc", ()))
        problems.append(f"{field_path(loc)}: {err.get('msg', 'invalid')}")
    shown = "; ".join(problems[:5])
    if len(problems) > 5:
        shown += f"; … and {len(problems) - 5} more"
    return UsageError(f"{source}: {shown}", details={"file": str(source), "problems": problems})


def load_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file whose top level must be a mapping; errors name the file (exit 2)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as err:
        raise UsageError(f"{path}: file not found") from err
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err}") from err
    return parse_yaml_mapping(raw, str(path))


def parse_yaml_mapping(raw: bytes, path: str) -> dict[str, Any]:
    """Parse YAML bytes whose top level must be a mapping; errors name ``path`` (exit 2)."""
    import yaml

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: not UTF-8 text: {err}") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise UsageError(f"{path}: not valid YAML{where}: {problem}") from err
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    return data
