"""Source Evidence: the original documents under ``evidence/sources/``, read and never modified.

A source is Markdown or UTF-8 text (``.md``, ``.markdown``, ``.txt``). Reading applies the
mechanical normalization of text.py; the source hash is the SHA-256 of the normalized text, so a
change of line endings alone does not make a source "changed". A source may open with YAML front
matter whose ``metadata`` (merged into every unit prepared from it) and ``purposes`` (replacing
the kind defaults) are read; other keys are left to whoever wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernel.config_errors import usage_error_from_validation
from kernel.errors import UsageError
from modules.evidence.markdown import split_front_matter
from modules.evidence.text import collapse_ws, normalize_text, sha256_text
from modules.evidence.units import EvidencePurpose, MetadataKey, MetadataValue

__all__ = [
    "SOURCE_SUFFIXES",
    "SourceDocument",
    "SourceSettings",
    "list_sources",
    "read_source",
]

SOURCE_SUFFIXES = (".md", ".markdown", ".txt")


class SourceSettings(BaseModel):
    """What a source's own front matter may say about the units prepared from it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    metadata: dict[MetadataKey, MetadataValue] = Field(default_factory=dict)
    purposes: Annotated[list[EvidencePurpose], Field(min_length=1)] | None = None


@dataclass(frozen=True)
class SourceDocument:
    """A read source: its path relative to ``evidence/sources/``, normalized text and hash."""

    path: str
    text: str
    sha256: str
    settings: SourceSettings = field(default_factory=SourceSettings)

    @property
    def collapsed(self) -> str:
        return collapse_ws(self.text)


def list_sources(sources_dir: Path) -> list[str]:
    """Relative POSIX paths of every source file, sorted; hidden files and folders skipped."""
    if not sources_dir.is_dir():
        return []
    out = []
    for path in sources_dir.rglob("*"):
        rel = path.relative_to(sources_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file() and path.suffix.lower() in SOURCE_SUFFIXES:
            out.append(rel.as_posix())
    return sorted(out)


def read_source(sources_dir: Path, rel: str) -> SourceDocument:
    """Read and normalize one source; unreadable, non-UTF-8 or bad front matter → exit 2."""
    import yaml

    path = sources_dir / rel
    shown = f"evidence/sources/{rel}"
    try:
        raw = path.read_bytes()
    except FileNotFoundError as err:
        raise UsageError(f"{shown}: source not found") from err
    except OSError as err:
        raise UsageError(f"{shown}: cannot read: {err}") from err
    try:
        text = normalize_text(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise UsageError(
            f"{shown}: not UTF-8 text (byte {err.start}); Source Evidence must be Markdown or "
            "UTF-8 text"
        ) from err
    front, _, _ = split_front_matter(text)
    settings = SourceSettings()
    if front is not None:
        try:
            data: Any = yaml.safe_load(front)
        except yaml.YAMLError as err:
            raise UsageError(f"{shown}: front matter is not valid YAML: {err}") from err
        if isinstance(data, dict):
            try:
                settings = SourceSettings.model_validate(data)
            except ValidationError as err:
                raise usage_error_from_validation(shown, err.errors()) from err
    return SourceDocument(path=rel, text=text, sha256=sha256_text(text), settings=settings)
