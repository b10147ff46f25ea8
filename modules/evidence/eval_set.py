"""The Evidence evaluation set: ``evidence/eval.yaml`` (ARCHITECTURE §6, a contract).

::

    cases:
      - question: "eligible free meal rate of K-12 schools"
        purpose: schema_linking
        where: {db: california_schools}      # optional metadata filter
        expected: [evidence:eligible-free-rate]
        type: semantic                       # lexical | semantic | mixed

Glossary: the baseline passes when every question retrieves at least one expected result in the
top 10 of the RRF fusion; top 5 is informative; the set comprises at least one lexical, one
semantic and one mixed case. A file missing one of the three types is malformed (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from kernel.config_errors import load_yaml_mapping, usage_error_from_validation
from modules.evidence.units import SLUG_PATTERN, EvidencePurpose, MetadataKey, MetadataValue

__all__ = ["EvalCase", "EvalSet", "load_eval_set"]

CaseType = Literal["lexical", "semantic", "mixed"]
EvidenceId = Annotated[str, StringConstraints(pattern=rf"^evidence:{SLUG_PATTERN}$")]


class EvalCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    question: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    purpose: EvidencePurpose
    where: dict[MetadataKey, MetadataValue] = Field(default_factory=dict)
    kind: list[str] = Field(default_factory=list)
    expected: Annotated[list[EvidenceId], Field(min_length=1)]
    type: CaseType


class EvalSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: Annotated[list[EvalCase], Field(min_length=1)]

    @model_validator(mode="after")
    def _all_types(self) -> EvalSet:
        missing = [
            t for t in ("lexical", "semantic", "mixed") if t not in {c.type for c in self.cases}
        ]
        if missing:
            raise ValueError(
                "the evaluation set needs at least one lexical, one semantic and one mixed case; "
                "missing: " + ", ".join(missing)
            )
        return self


def load_eval_set(path: Path, shown: str = "evidence/eval.yaml") -> EvalSet | None:
    """The evaluation set, or None when the file does not exist; malformed → exit 2."""
    if not path.exists():
        return None
    data = load_yaml_mapping(path)
    try:
        return EvalSet.model_validate(data)
    except ValidationError as err:
        raise usage_error_from_validation(shown, err.errors()) from err
