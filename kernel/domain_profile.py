"""The workspace's DomainProfile (ARCHITECTURE §4.1): what Disambiguation knows of the domain.

Declared under ``domain:`` in ``workspace.yaml`` (validated there, errors naming the file and the
field: ``kernel/workspace.py``) and handed to the module as these frozen records through
``DisambiguationCapabilities``:

- ``home_entity``: the organisation the workspace is about (its aliases are never refused);
- ``external_entities``: competitors and out-of-scope entities the SecurityGate refuses and masks;
- ``restricted``: keywords and regular expressions of restricted subjects (refused, masked);
- ``dimensions``: the analysis dimensions the IntentParser recognises (categorical, temporal,
  measure), their synonyms per language, default, whether required, and the clarify mode;
- ``languages``; ``escalate_unknown_to_restricted``: the sensitivity policy (an entity-like term
  the profile does not know is treated as restricted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "ClarifyMode",
    "Dimension",
    "DimensionKind",
    "DomainProfile",
    "Entity",
    "EntityKind",
    "Restricted",
]

EntityKind = Literal["competitor", "out_of_scope"]
DimensionKind = Literal["categorical", "temporal", "measure"]
#: how a dimension missing from the question is handled: ask the person first, assume the
#: default (recorded as an assumption), or nothing
ClarifyMode = Literal["ask_first", "assume", "none"]


@dataclass(frozen=True)
class Entity:
    display: str
    aliases: tuple[str, ...] = ()
    kind: EntityKind = "competitor"

    @property
    def names(self) -> tuple[str, ...]:
        """The display name and every alias (what the SecurityGate matches)."""
        return (self.display, *self.aliases)


@dataclass(frozen=True)
class Restricted:
    keywords: tuple[str, ...] = ()
    #: regular expressions (Python ``re``), matched case-insensitively on the normalized text
    patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dimension:
    name: str
    kind: DimensionKind = "categorical"
    #: language → synonyms (``{"it": ("ospedale", "presidio"), "en": ("hospital",)}``)
    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default: str | None = None
    required: bool = False
    clarify: ClarifyMode = "none"
    #: the ``table.column`` holding its values (F1 offers them when it asks for the dimension)
    column: str | None = None


@dataclass(frozen=True)
class DomainProfile:
    home_entity: Entity | None = None
    external_entities: tuple[Entity, ...] = ()
    restricted: Restricted = field(default_factory=Restricted)
    dimensions: tuple[Dimension, ...] = ()
    languages: tuple[str, ...] = ("it", "en")
    escalate_unknown_to_restricted: bool = False
