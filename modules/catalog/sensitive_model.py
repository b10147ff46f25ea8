"""The Sensitive Data Suggestion Run with a model, as pure functions (docs/catalog.md).

The model proposes Sensitive Data Flags from structural metadata only, one bounded batch at a
time (the Description Generation Run's batches: :func:`modules.catalog.generation_run.
plan_batches`, one table per batch, at most N columns); the shell
(``tht/sensitive_model_runtime.py``) calls the provider.

- :func:`plan_model_batches` — the columns of a scope that are not flagged yet, in batches.
- :func:`build_prompt` — the table's name, kind, observed comment and Description; each
  column's name, type, key, observed comment and Description. **Never a value**, never a
  sample.
- :data:`ANSWER_SCHEMA` — ``{"flags": [{"column": "t.c", "sensitive", "category",
  "confidence"}]}`` (a bare list is accepted too).
- :func:`validate_answer` — local validation: not JSON or the wrong shape fails the batch; an
  unknown or repeated column, a category outside :data:`CATEGORIES`, a confidence outside 0..1
  is an invalid item (counted).
- :func:`merge` — the offline pre-pass and the model's proposals, one per column (a column
  either flags), each with every source that flagged it.
- :func:`plan_model_run` — the ledger's record: aggregate counts only (sanitized).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kernel import catalog_events as cev
from kernel import events as ev
from modules.catalog.generation_run import (
    GenerationBatch,
    GenerationPrompt,
    GenerationTarget,
    answer_items,
    column_metadata,
    plan_batches,
    table_metadata,
)
from modules.catalog.records import CatalogState, CatalogTable
from modules.catalog.sensitive import SensitiveProposal
from modules.catalog.sensitive_flags import SUGGESTER, Suggestion

__all__ = [
    "ANSWER_SCHEMA",
    "CATEGORIES",
    "ModelCounts",
    "ModelFlag",
    "ModelOutcome",
    "build_prompt",
    "merge",
    "plan_model_batches",
    "plan_model_run",
    "validate_answer",
]

CATEGORIES = (
    "email",
    "phone",
    "fiscal_code",
    "iban",
    "name",
    "birth_date",
    "address",
    "health",
    "other",
)
_NOT_SENSITIVE = ("none", "")  # also accepted for a column the model says is not sensitive

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "flags": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "column": {"type": "string"},
                    "sensitive": {"type": "boolean"},
                    "category": {"type": "string", "enum": [*CATEGORIES, "none"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["column", "sensitive", "category", "confidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["flags"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class ModelFlag:
    """One column as the model judged it."""

    target: GenerationTarget
    sensitive: bool
    category: str
    confidence: float


@dataclass(frozen=True)
class ModelOutcome:
    flags: tuple[ModelFlag, ...]  # the valid items, in the batch's order
    #: why the whole answer was refused (``invalid-json``, ``invalid-shape``), else ""
    problem: str = ""
    invalid_items: int = 0


@dataclass
class ModelCounts:
    """The run's aggregate counts (what the ledger keeps)."""

    batches: int
    failed_batches: int = 0
    skipped_batches: int = 0
    invalid_items: int = 0
    failure: str = ""  # the last failure's kind

    @property
    def answered(self) -> int:
        return self.batches - self.failed_batches - self.skipped_batches

    def to_json(self) -> dict[str, object]:
        return {
            "batches": self.batches,
            "answered_batches": self.answered,
            "failed_batches": self.failed_batches,
            "skipped_batches": self.skipped_batches,
            "invalid_items": self.invalid_items,
            "failure": self.failure or None,
        }


# ----------------------------------------------------------------------------- the request


def plan_model_batches(tables: Sequence[CatalogTable], max_columns: int) -> list[GenerationBatch]:
    """The columns not flagged yet, one table per batch, at most ``max_columns`` each."""
    targets = [
        GenerationTarget(table.name, column.name)
        for table in tables
        for column in sorted(table.columns, key=lambda c: (c.position, c.name))
        if not column.sensitive
    ]
    return plan_batches(targets, max_columns)


def build_prompt(state: CatalogState, batch: GenerationBatch) -> GenerationPrompt:
    """The request for one batch: structural metadata only, never a value (the same view of a
    table as the Description Generation Run's), each column named ``table.column``."""
    table = state.tables[batch.table]
    wanted = {str(t.column) for t in batch.targets}
    columns = [{"column": f"{table.name}.{c['name']}", **c} for c in column_metadata(table, wanted)]
    request = {"table": table_metadata(table), "columns": columns}
    system = (
        "You review the structure of a database for personal and sensitive data. You see "
        "structural metadata only: table and column names, types, keys, the comment observed in "
        "the database and any description; no data. For each column, say whether its values are "
        "likely personal or sensitive data (a person's e-mail, phone, fiscal code or national "
        "id, IBAN or card, name, birth date, postal address, health data, or other personal "
        f"data). Categories: {', '.join(CATEGORIES)}; use none when not sensitive. Answer only "
        'with JSON: {"flags": [{"column": "table.column", "sensitive": true, "category": '
        '"email", "confidence": 0.9}]}, one item per column, columns spelled exactly as given.'
    )
    user = json.dumps(request, ensure_ascii=False)
    return GenerationPrompt(
        system=system, user=user, max_tokens=min(4000, 200 + 60 * len(batch.targets))
    )


# ----------------------------------------------------------------------------- the answer


def validate_answer(raw: str, batch: GenerationBatch) -> ModelOutcome:
    """The valid items of one answer; the rest are counted invalid."""
    items = answer_items(raw, "flags")
    if items is None:
        try:
            json.loads(raw)
            problem = "invalid-shape"
        except ValueError:
            problem = "invalid-json"
        return ModelOutcome(flags=(), problem=problem)
    by_ref = {t.ref: t for t in batch.targets}
    folded = {t.ref.lower(): t for t in batch.targets}
    found: dict[GenerationTarget, ModelFlag] = {}
    invalid = 0
    for item in items:
        flag = _flag(item, by_ref, folded)
        if flag is None or flag.target in found:
            invalid += 1
            continue
        found[flag.target] = flag
    ordered = tuple(found[t] for t in batch.targets if t in found)
    return ModelOutcome(flags=ordered, invalid_items=invalid)


def _flag(
    item: Any, by_ref: dict[str, GenerationTarget], folded: dict[str, GenerationTarget]
) -> ModelFlag | None:
    if not isinstance(item, dict):
        return None
    ref, sensitive = item.get("column"), item.get("sensitive")
    category, confidence = item.get("category"), item.get("confidence")
    if not isinstance(ref, str) or not isinstance(sensitive, bool):
        return None
    if not isinstance(category, str) or isinstance(confidence, bool):
        return None
    if not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        return None
    category = category.strip().lower()
    if category not in CATEGORIES and not (not sensitive and category in _NOT_SENSITIVE):
        return None
    target = by_ref.get(ref.strip()) or folded.get(ref.strip().lower())
    if target is None:
        return None
    return ModelFlag(target, sensitive, category, round(float(confidence), 3))


# ----------------------------------------------------------------------------- the proposal


@dataclass
class _Merged:
    table: str
    column: str
    type: str
    sources: list[dict[str, object]] = field(default_factory=list)
    offline: SensitiveProposal | None = None


def merge(
    state: CatalogState,
    offline: Sequence[SensitiveProposal],
    flags: Sequence[ModelFlag],
    profile: str,
) -> list[dict[str, object]]:
    """One proposal per column that either source flags, by table then column position; the
    offline pre-pass's rule, confidence and evidence lead when it fired, every source that
    flagged it in ``sources``."""
    merged: dict[tuple[str, str], _Merged] = {}
    for p in offline:
        entry = merged.setdefault((p.table, p.column), _Merged(p.table, p.column, p.type))
        entry.offline = p
        entry.sources.append(
            {
                "source": "offline",
                "rule": p.rule,
                "confidence": p.confidence,
                "evidence": p.evidence,
            }
        )
    source = f"model:{profile}"
    for flag in flags:
        if not flag.sensitive:
            continue
        table, column = flag.target.table, flag.target.column or ""
        found = state.tables[table].column(column)
        kind = found.type if found is not None else ""
        entry = merged.setdefault((table, column), _Merged(table, column, kind))
        entry.sources.append(
            {
                "source": source,
                "rule": flag.category,
                "confidence": flag.confidence,
                "evidence": f"model: {flag.category}",
            }
        )
    return [_proposal(merged[key]) for key in sorted(merged, key=_order(state))]


def _order(state: CatalogState) -> Any:
    def key(pair: tuple[str, str]) -> tuple[str, int, str]:
        found = state.tables[pair[0]].column(pair[1])
        return (pair[0], found.position if found is not None else 0, pair[1])

    return key


def _proposal(entry: _Merged) -> dict[str, object]:
    lead = entry.sources[0]
    return {
        "table": entry.table,
        "column": entry.column,
        "type": entry.type,
        "rule": lead["rule"],
        "confidence": lead["confidence"],
        "evidence": lead["evidence"],
        "offline": entry.offline is not None,
        "source": lead["source"],
        "sources": entry.sources,
    }


# ----------------------------------------------------------------------------- the ledger


def plan_model_run(
    run: str,
    suggestion: Suggestion,
    proposed: int,
    model_proposed: int,
    counts: ModelCounts,
    *,
    profile: str,
    model: str,
) -> ev.EventDraft:
    """The ledger's record of a model run: counts only — never a column, a prompt or an answer."""
    return ev.EventDraft(
        type="sensitive_suggestion_run",
        actor=SUGGESTER,
        subject=run,
        payload=cev.SensitiveSuggestionRunPayload(
            run=run,
            mode="model",
            scope=suggestion.scope,
            considered=suggestion.considered,
            proposed=proposed,
            profile=profile,
            model=model,
            offline_proposed=len(suggestion.proposals),
            model_proposed=model_proposed,
            batches=counts.batches,
            failed_batches=counts.failed_batches,
            skipped_batches=counts.skipped_batches,
            invalid_items=counts.invalid_items,
            failure=counts.failure,
        ),
    )
