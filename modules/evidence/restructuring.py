"""The one optional model restructuring of Evidence preparation.

Glossary ("Evidence preparation"): deterministic extraction, *a single* model-assisted
restructuring, then deterministic validation; a failed model call is never retried. Here the model
sees the deterministic candidate passages of one source (index, kind, title, text) and may only:
re-kind a passage, retitle it, merge passages of the same source into one unit, and give a formula
passage its PostgreSQL expression and inputs. It cannot invent text: every output unit is made of
whole input passages (their verbatim excerpts), and every passage must appear in exactly one unit.

Everything the model returns is validated locally; any transport failure or invalid answer raises
:class:`RestructuringFailedError` (exit 6) and the preparation applies nothing. The transport is
``kernel.llm``'s OpenAI-compatible client (one call per source, no retry); this module has no HTTP
code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kernel.errors import UnavailableError
from modules.evidence.formula import check_formula
from modules.evidence.recognizers import Recognition
from modules.evidence.segmentation import Passage
from modules.evidence.sources import SourceDocument
from modules.evidence.units import EVIDENCE_KINDS

__all__ = [
    "OUTPUT_SCHEMA",
    "ChatFunction",
    "ModelRestructurer",
    "RestructuringFailedError",
    "apply_restructuring",
]

_TEXT_LIMIT = 1200

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["units"],
    "properties": {
        "units": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["passages", "kind", "title"],
                "properties": {
                    "passages": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
                    "kind": {"type": "string", "enum": list(EVIDENCE_KINDS)},
                    "title": {"type": "string", "minLength": 1, "maxLength": 200},
                    "expression": {"type": ["string", "null"]},
                    "inputs": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}

_SYSTEM = (
    "You restructure curated evidence for analysts of a database. You receive the candidate "
    "passages of ONE source document, each with an index, a kind guessed by rules, a title and "
    'its text. Return JSON {"units": [...]}, one entry per evidence unit, each with: '
    '"passages" (indices of the passages it is made of; every index exactly once overall; merge '
    'only passages that describe the same thing), "kind" (one of: '
    + ", ".join(EVIDENCE_KINDS)
    + '), "title" (short, in the language of the text), and for kind formula "expression" '
    '(ONE composable PostgreSQL expression, not a query) and "inputs" (exactly the columns it '
    "reads). Never invent facts; do not rewrite the passages."
)


class ChatFunction(Protocol):
    """One chat call: messages in, the model's text out (raises on any transport failure)."""

    def __call__(self, system: str, user: str, schema: dict[str, Any]) -> str: ...


class RestructuringFailedError(UnavailableError):
    """The model restructuring failed or answered invalidly; nothing was applied (exit 6)."""

    code = "restructuring_failed"


def _payload(source: SourceDocument, passages: Sequence[Passage]) -> str:
    return json.dumps(
        {
            "source": source.path,
            "passages": [
                {
                    "index": i,
                    "kind": p.recognition.kind,
                    "title": p.recognition.title,
                    "section": " › ".join(p.headings),
                    "text": p.body[:_TEXT_LIMIT],
                }
                for i, p in enumerate(passages)
            ],
        },
        ensure_ascii=False,
    )


def apply_restructuring(
    source: SourceDocument, passages: Sequence[Passage], answer: str
) -> list[Passage]:
    """Validate the model's answer and build the restructured passages (pure)."""

    def fail(why: str) -> RestructuringFailedError:
        return RestructuringFailedError(
            f"model restructuring of evidence/sources/{source.path} returned an invalid answer "
            f"({why}); nothing was applied — run again, or without the model",
            details={"source": source.path, "reason": why},
        )

    try:
        data = json.loads(answer)
    except json.JSONDecodeError as err:
        raise fail("not JSON") from err
    units = data.get("units") if isinstance(data, dict) else None
    if not isinstance(units, list) or not units:
        raise fail("no `units` list")
    seen: list[int] = []
    out: list[Passage] = []
    for n, unit in enumerate(units):
        if not isinstance(unit, dict):
            raise fail(f"units[{n}] is not an object")
        indices, kind, title = unit.get("passages"), unit.get("kind"), unit.get("title")
        if (
            not isinstance(indices, list)
            or not indices
            or not all(isinstance(i, int) and 0 <= i < len(passages) for i in indices)
        ):
            raise fail(f"units[{n}].passages: indices of the given passages expected")
        if kind not in EVIDENCE_KINDS:
            raise fail(f"units[{n}].kind: {kind!r} is not an Evidence kind")
        if not isinstance(title, str) or not title.strip() or len(title) > 200:
            raise fail(f"units[{n}].title: a short non-empty title expected")
        seen.extend(indices)
        group = [passages[i] for i in sorted(set(indices))]
        expression: str | None = None
        inputs: tuple[str, ...] = ()
        if kind == "formula":
            expression = unit.get("expression")
            raw_inputs = unit.get("inputs") or []
            if not isinstance(expression, str) or not isinstance(raw_inputs, list):
                raise fail(f"units[{n}]: a formula needs `expression` and `inputs`")
            inputs = tuple(str(i) for i in raw_inputs)
            check = check_formula(expression, inputs)
            if not check.ok:
                raise fail(f"units[{n}].expression: {check.problems[0]}")
        out.append(
            Passage(
                body="\n\n".join(p.body for p in group),
                excerpts=tuple(e for p in group for e in p.excerpts),
                headings=group[0].headings,
                recognition=Recognition(kind, title.strip(), expression, inputs),
                line=group[0].line,
            )
        )
    if sorted(seen) != list(range(len(passages))):
        raise fail("every passage must belong to exactly one unit")
    return out


@dataclass(frozen=True)
class ModelRestructurer:
    """The restructuring through one chat call per source (no retry)."""

    chat: ChatFunction
    describe: str = "model"  # for messages: the profile id

    def restructure(self, source: SourceDocument, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        try:
            answer = self.chat(_SYSTEM, _payload(source, passages), OUTPUT_SCHEMA)
        except RestructuringFailedError:
            raise
        except Exception as err:  # the transport's ProviderError, or anything it raised
            kind = getattr(err, "kind", type(err).__name__)
            raise RestructuringFailedError(
                f"model restructuring of evidence/sources/{source.path} failed ({kind}, "
                f"{self.describe}); it is never retried and nothing was applied — run again, or "
                "without the model (evidence.restructure_profile: null)",
                details={"source": source.path, "reason": str(kind)},
            ) from err
        return apply_restructuring(source, passages, answer)
