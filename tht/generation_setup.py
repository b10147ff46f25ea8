"""The Metadata Generation Model Configuration (glossary): which model Description Generation
Runs use, set up once per user — the ``catalog`` section of the user config file
(``tht.paths.user_config_file``), never ``workspace.yaml`` (docs/llm.md).

``generation_profile`` (the default), ``profiles`` (the selectable models, provider profiles
merged over the built-ins), ``base_url`` (the explicit endpoint), ``cloud_opt_in``,
``timeout_ms``, ``batch_columns``. A model without a key is accepted only with an explicit
endpoint (``base_url``, or ``baseUrl`` in its ``profiles`` entry); a cloud profile only with
``cloud_opt_in: true``; a key only by the name of its variable. Errors name the file and field
(exit 2). Pydantic is imported on use only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.llm.profiles import ProviderProfile

__all__ = ["GenerationSetup", "load_setup"]

_OPT_IN = "set catalog.cloud_opt_in: true in the user config file"


@dataclass(frozen=True)
class GenerationSetup:
    profile: ProviderProfile
    timeout_ms: int
    batch_columns: int
    source: str  # the config file, for messages


def _section() -> tuple[dict[str, Any], str]:
    from kernel.config_errors import load_yaml_mapping, usage_error_from_validation
    from tht.paths import user_config_file

    path = user_config_file()
    source = f"{path}: catalog"
    raw: Any = load_yaml_mapping(path).get("catalog") if path.is_file() else None
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    class Section(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        generation_profile: str | None = Field(default=None, min_length=1, max_length=80)
        base_url: str | None = Field(default=None, min_length=1, max_length=2000)
        cloud_opt_in: bool = False
        timeout_ms: int = Field(default=60_000, ge=100, le=600_000)
        batch_columns: int = Field(default=20, ge=1, le=100)
        profiles: dict[str, Any] | None = None

    try:
        section = Section.model_validate(raw or {})
    except ValidationError as err:
        errors = [
            {**e, "loc": ("catalog", *tuple(e.get("loc", ())))}
            for e in err.errors(include_input=False, include_url=False)
        ]
        raise usage_error_from_validation(str(path), errors) from err
    return section.model_dump(), source


def load_setup(
    profile_id: str | None = None, env: Mapping[str, str] | None = None
) -> GenerationSetup:
    """The configured model (``profile_id`` picks another selectable one); exit 2 otherwise."""
    from kernel.errors import UsageError
    from kernel.llm.settings import ProfileOverrides, api_key_present, resolve_profile

    environ = os.environ if env is None else env
    section, source = _section()
    chosen = profile_id or section["generation_profile"]
    if not chosen:
        raise UsageError(
            f"{source}: no generation model configured: set catalog.generation_profile (a "
            "provider profile of docs/llm.md) in the user config file"
        )
    profiles = section["profiles"]
    layers = [ProfileOverrides(base_url=section["base_url"])] if section["base_url"] else []
    profile = resolve_profile(
        chosen,
        file_profiles=profiles,
        layers=layers,
        env=environ,
        source=source,
        cloud_opt_in=section["cloud_opt_in"],
        opt_in_hint=_OPT_IN,
    )
    explicit = bool(section["base_url"]) or bool(
        isinstance((profiles or {}).get(chosen), Mapping) and profiles[chosen].get("baseUrl")
    )
    if not api_key_present(profile, environ) and not explicit:
        raise UsageError(
            f"{source}: profile {chosen!r} has no key: a keyless model is accepted only with an "
            "explicit endpoint that needs no authentication (set catalog.base_url)"
        )
    return GenerationSetup(
        profile=profile,
        timeout_ms=section["timeout_ms"],
        batch_columns=section["batch_columns"],
        source=source,
    )
