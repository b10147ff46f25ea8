"""Source Evidence: the original documents under ``evidence/sources/``, read and never modified.

A source is Markdown or UTF-8 text (``.md``, ``.markdown``, ``.txt``). Reading applies the
mechanical normalization of text.py; the source hash is the SHA-256 of the normalized text, so a
change of line endings alone does not make a source "changed". A source may open with YAML front
matter whose ``metadata`` (merged into every unit prepared from it) and ``purposes`` (replacing
the kind defaults) are read; other keys are left to whoever wrote them.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernel.config_errors import usage_error_from_validation
from kernel.errors import UsageError
from kernel.files import FileRefused, read_regular
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


MAX_SOURCE_BYTES = 64 * 1024 * 1024


def list_sources(sources_dir: Path) -> list[str]:
    """Relative POSIX paths of every source entry, sorted; hidden files and folders skipped.

    An entry is listed by what it *is* (``lstat``), not what it points to: a symlink, FIFO or
    device with a source suffix is listed too, so :func:`read_source` refuses it by name
    instead of it being silently followed or skipped.
    """
    if not sources_dir.is_dir():
        return []
    out = []
    for path in sources_dir.rglob("*"):
        rel = path.relative_to(sources_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            continue
        if path.suffix.lower() in SOURCE_SUFFIXES or stat.S_ISLNK(mode):
            out.append(rel.as_posix())
    return sorted(out)


def _refusal(sources_dir: Path, rel: str) -> str | None:
    """Why ``rel`` is not a plain source: a symlink anywhere on its path, a resolved path outside
    ``evidence/sources/``, or not a regular file (FIFO, device, socket, folder)."""
    shown = f"evidence/sources/{rel}"
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        return f"{shown}: a source path must stay under evidence/sources/"
    current = sources_dir
    for part in parts:
        current = current / part
        try:
            mode = current.lstat().st_mode
        except FileNotFoundError:
            return None  # reported as "source not found" by the read
        except OSError as err:
            return f"{shown}: cannot read: {err.strerror}"
        if stat.S_ISLNK(mode):
            return (
                f"{shown}: is a symbolic link; a source must be a regular file under "
                "evidence/sources/ (copy the document in instead)"
            )
    try:
        resolved = (sources_dir / rel).resolve(strict=True)
        base = sources_dir.resolve(strict=True)
    except OSError as err:
        return f"{shown}: cannot read: {err.strerror}"
    if not resolved.is_relative_to(base):
        return f"{shown}: resolves outside evidence/sources/"
    if not stat.S_ISREG(mode):
        return f"{shown}: not a regular file (FIFO, device or socket); a source must be a file"
    return None


def _read_bounded(path: Path, shown: str) -> bytes:
    """Read by fd (kernel.files): no symlink followed, never blocks on a FIFO, regular files
    only, bounded."""
    try:
        return read_regular(path, limit=MAX_SOURCE_BYTES, follow_symlinks=False)
    except FileRefused as refused:
        message = {
            "missing": "source not found",
            "symlink": "is a symbolic link; a source must be a regular file",
            "not_regular": "not a regular file (FIFO, device or socket)",
            "too_large": f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB",
            "unreadable": f"cannot read: {refused.detail}",
        }[refused.reason]
        raise UsageError(f"{shown}: {message}") from refused


def read_source(sources_dir: Path, rel: str) -> SourceDocument:
    """Read and normalize one source; unreadable, non-UTF-8 or bad front matter → exit 2.

    A symlink (anywhere on the path), a path resolving outside ``evidence/sources/`` or an
    entry that is not a regular file is refused (exit 2) and never opened for reading.
    """
    import yaml

    path = sources_dir / rel
    shown = f"evidence/sources/{rel}"
    refusal = _refusal(sources_dir, rel)
    if refusal is not None:
        raise UsageError(refusal, details={"source": rel})
    raw = _read_bounded(path, shown)
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
