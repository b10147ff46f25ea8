"""``domain:`` of ``workspace.yaml``: the DomainProfile as a person writes it (ARCHITECTURE §4.1).

The field names are the contract (``home_entity``, ``external_entities``, ``restricted``,
``dimensions``, ``languages``, ``escalate_unknown_to_restricted``). The pydantic models are built
on first use, like the rest of the settings (``kernel/workspace.py``), so every error names the
file and the field path (``domain.restricted.patterns[2]: …``, exit 2); the validated section
becomes the frozen :class:`kernel.domain_profile.DomainProfile` the Disambiguation module reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Literal, Protocol

if TYPE_CHECKING:
    from pydantic import BaseModel

    from kernel.domain_profile import DomainProfile

__all__ = [
    "DimensionSettingsView",
    "DomainSettingsView",
    "EntitySettingsView",
    "ExternalEntitySettingsView",
    "RestrictedSettingsView",
    "domain_settings_model",
]

#: a name the SecurityGate matches: long enough to mean something, short enough to be a name
MAX_NAME_CHARS = 200
_DIMENSION_NAME = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


def _name(value: str) -> str:
    text = value.strip()
    if not any(c.isalnum() for c in text):
        raise ValueError("must contain a letter or a digit")
    if len(text) > MAX_NAME_CHARS:
        raise ValueError(f"is longer than {MAX_NAME_CHARS} characters")
    return text


def _pattern(value: str) -> str:
    """A restricted pattern must compile (Python ``re``) and must not match the empty string
    (it would match everywhere and mask nothing)."""
    try:
        compiled = re.compile(value, re.IGNORECASE)
    except re.error as err:
        raise ValueError(f"not a valid regular expression: {err}") from None
    if compiled.fullmatch("") is not None:
        raise ValueError("matches the empty string (it would match every question)")
    return value


def _key(name: str) -> str:
    """How two names are compared for a conflict here (the gate folds far more)."""
    return " ".join(name.casefold().split())


def domain_settings_model() -> type[BaseModel]:
    """The pydantic model of ``domain:`` (built on first use: pydantic stays off hot paths)."""
    from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

    Name = Annotated[str, AfterValidator(_name)]
    Pattern = Annotated[str, AfterValidator(_pattern)]
    Language = Literal["it", "en"]

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

    class HomeEntitySettings(_Strict):
        display: Name
        aliases: list[Name] = Field(default_factory=list)

    class ExternalEntitySettings(_Strict):
        display: Name
        aliases: list[Name] = Field(default_factory=list)
        kind: Literal["competitor", "out_of_scope"] = "competitor"

    class RestrictedSettings(_Strict):
        keywords: list[Name] = Field(default_factory=list)
        patterns: list[Pattern] = Field(default_factory=list)

    class DimensionSettings(_Strict):
        name: str = Field(pattern=_DIMENSION_NAME)
        kind: Literal["categorical", "temporal", "measure"] = "categorical"
        synonyms: dict[Language, list[Name]] = Field(default_factory=dict)
        default: str | None = None
        required: bool = False
        clarify: Literal["ask_first", "assume", "none"] = "none"
        # the `table.column` holding its values: F1 offers them when it asks for the dimension
        column: str | None = Field(default=None, pattern=r"^[^.\s]+\.[^.\s]+$", max_length=200)

        @model_validator(mode="after")
        def _assumable(self) -> DimensionSettings:
            if self.clarify == "assume" and not (self.default or "").strip():
                raise ValueError("clarify: assume needs a default to assume")
            return self

    class DomainSettings(_Strict):
        home_entity: HomeEntitySettings | None = None
        external_entities: list[ExternalEntitySettings] = Field(default_factory=list)
        restricted: RestrictedSettings = Field(default_factory=RestrictedSettings)
        dimensions: list[DimensionSettings] = Field(default_factory=list)
        # absent: the workspace's top-level `languages`
        languages: list[Language] | None = None
        escalate_unknown_to_restricted: bool = False

        @model_validator(mode="after")
        def _consistent(self) -> DomainSettings:
            problem = _conflict(self)
            if problem is not None:
                raise ValueError(problem)
            return self

        def to_profile(self, default_languages: Sequence[str] = ("it", "en")) -> DomainProfile:
            return _profile(self, default_languages)

    return DomainSettings


def _conflict(domain: DomainSettingsView) -> str | None:
    """A name both home and external (the gate could not both allow and refuse it), or two
    dimensions with one name. Values are not echoed: the fields are named instead."""
    home: dict[str, str] = {}
    if domain.home_entity is not None:
        names = (domain.home_entity.display, *domain.home_entity.aliases)
        home = {
            _key(n): f"home_entity.{'display' if i == 0 else f'aliases[{i - 1}]'}"
            for i, n in enumerate(names)
        }
    for e, entity in enumerate(domain.external_entities):
        for i, name in enumerate((entity.display, *entity.aliases)):
            where = home.get(_key(name))
            if where is not None:
                field = "display" if i == 0 else f"aliases[{i - 1}]"
                return f"external_entities[{e}].{field} is also {where} (the home entity)"
    for k, keyword in enumerate(domain.restricted.keywords):
        where = home.get(_key(keyword))
        if where is not None:
            return f"restricted.keywords[{k}] is also {where} (the home entity)"
    seen: dict[str, int] = {}
    for d, dimension in enumerate(domain.dimensions):
        if dimension.name in seen:
            return f"dimensions[{d}].name repeats dimensions[{seen[dimension.name]}].name"
        seen[dimension.name] = d
    return None


def _profile(domain: DomainSettingsView, default_languages: Sequence[str]) -> DomainProfile:
    from kernel.domain_profile import Dimension, DomainProfile, Entity, Restricted

    home = domain.home_entity
    return DomainProfile(
        home_entity=None if home is None else Entity(home.display, tuple(home.aliases)),
        external_entities=tuple(
            Entity(e.display, tuple(e.aliases), e.kind) for e in domain.external_entities
        ),
        restricted=Restricted(tuple(domain.restricted.keywords), tuple(domain.restricted.patterns)),
        dimensions=tuple(
            Dimension(
                name=d.name,
                kind=d.kind,
                synonyms={lang: tuple(words) for lang, words in d.synonyms.items()},
                default=d.default,
                required=d.required,
                clarify=d.clarify,
                column=d.column,
            )
            for d in domain.dimensions
        ),
        languages=tuple(domain.languages if domain.languages is not None else default_languages),
        escalate_unknown_to_restricted=domain.escalate_unknown_to_restricted,
    )


# --------------------------------------------------------------------------- typed views


class EntitySettingsView(Protocol):
    @property
    def display(self) -> str: ...
    @property
    def aliases(self) -> list[str]: ...


class ExternalEntitySettingsView(EntitySettingsView, Protocol):
    @property
    def kind(self) -> Literal["competitor", "out_of_scope"]: ...


class RestrictedSettingsView(Protocol):
    @property
    def keywords(self) -> list[str]: ...
    @property
    def patterns(self) -> list[str]: ...


class DimensionSettingsView(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Literal["categorical", "temporal", "measure"]: ...
    @property
    def synonyms(self) -> Mapping[Literal["it", "en"], list[str]]: ...
    @property
    def default(self) -> str | None: ...
    @property
    def required(self) -> bool: ...
    @property
    def clarify(self) -> Literal["ask_first", "assume", "none"]: ...
    @property
    def column(self) -> str | None: ...


class DomainSettingsView(Protocol):
    """``domain:`` as the rest of the code sees it; :meth:`to_profile` is what modules get."""

    @property
    def home_entity(self) -> EntitySettingsView | None: ...
    @property
    def external_entities(self) -> Sequence[ExternalEntitySettingsView]: ...
    @property
    def restricted(self) -> RestrictedSettingsView: ...
    @property
    def dimensions(self) -> Sequence[DimensionSettingsView]: ...
    @property
    def languages(self) -> Sequence[str] | None: ...
    @property
    def escalate_unknown_to_restricted(self) -> bool: ...

    def to_profile(self, default_languages: Sequence[str] = ("it", "en")) -> DomainProfile: ...
