"""The Description Generation Run as pure functions (glossary "Description Generation Run").

A run asks a model, through ``kernel/llm``, for Generated Descriptions of Catalog Tables and
Columns, one bounded batch at a time. Everything it decides is here, with no I/O; the shell
(``tht/generation_runtime.py``) holds the lock, calls the provider and appends.

- :func:`select_targets` — the targets of a scope (each table, then its columns by position);
  ``missing_only`` keeps those without a Generated Description or Description (the manual
  recovery after an interruption).
- :func:`plan_batches` — one table per batch, at most ``max_columns`` columns per request (the
  table itself rides in its first batch).
- :func:`build_prompt` — what one request says: the table's name, kind, observed comment and
  Description; each column's name, type, key and nullability, observed comment and Description.
  **Never a value**: no row, no example, no sample of any column, sensitive or not.
- :data:`ANSWER_SCHEMA` — the structured answer: ``{"descriptions": [{"target", "description",
  "non_generatable", "reason"}]}``.
- :func:`validate_answer` — local validation, whatever the server claims to enforce: not JSON,
  the wrong shape, an unknown or repeated target, an empty or over-long text are invalid and
  their targets count as failed. A Non-generatable Description is a valid outcome: its text is
  the standard sentence in the workspace's language (:data:`NON_GENERATABLE_TEXT`).
- :func:`plan_started` / :func:`plan_generated` / :func:`plan_finished` — the ledger entries,
  by ``module:catalog``: counts only, never a prompt or a raw response.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.errors import NotFoundError, UsageError
from modules.catalog.records import CatalogColumn, CatalogState, CatalogTable

__all__ = [
    "ANSWER_SCHEMA",
    "GENERATOR",
    "MAX_COLUMNS",
    "MAX_DESCRIPTION_CHARS",
    "NON_GENERATABLE_TEXT",
    "BatchOutcome",
    "GeneratedResult",
    "GenerationBatch",
    "GenerationPrompt",
    "GenerationTarget",
    "RunCounts",
    "Status",
    "TargetSelection",
    "answer_items",
    "build_prompt",
    "column_metadata",
    "finish_status",
    "plan_batches",
    "plan_finished",
    "plan_generated",
    "plan_started",
    "select_targets",
    "table_metadata",
    "validate_answer",
]

#: who records a run and its results (anyone may start one: it only proposes)
GENERATOR = "module:catalog"
#: at most this many columns in one request (the default batch size)
MAX_COLUMNS = 20
#: a longer description is invalid (counted failed), never cut
MAX_DESCRIPTION_CHARS = 600
_MAX_REASON_CHARS = 200
_MAX_CONTEXT_CHARS = 500  # an observed comment or a Description, as the prompt shows it

#: the Non-generatable Description's standard text, in each workspace language
NON_GENERATABLE_TEXT: dict[str, str] = {
    "it": "Descrizione non generabile: le informazioni disponibili non bastano a descrivere "
    "questo elemento.",
    "en": "Description not generatable: the available information is not enough to describe "
    "this element.",
}
_LANGUAGE_NAMES = {"it": "Italian", "en": "English"}

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "descriptions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "target": {"type": "string"},
                    "description": {"type": "string"},
                    "non_generatable": {"type": "boolean"},
                    "reason": {"type": "string"},
                },
                "required": ["target", "description", "non_generatable", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["descriptions"],
    "additionalProperties": False,
}


@dataclass(frozen=True, order=True)
class GenerationTarget:
    table: str
    column: str | None = None

    @property
    def ref(self) -> str:
        """``table`` or ``table.column`` (the ``description_generated`` target)."""
        return self.table if self.column is None else f"{self.table}.{self.column}"


@dataclass(frozen=True)
class TargetSelection:
    scope: tuple[str, ...] | None  # the catalog's names; None: the whole catalog
    requested: tuple[GenerationTarget, ...]  # every target in the scope
    wanted: tuple[GenerationTarget, ...]  # those to ask for (all, or the missing ones)

    @property
    def already_described(self) -> int:
        return len(self.requested) - len(self.wanted)


@dataclass(frozen=True)
class GenerationBatch:
    table: str
    targets: tuple[GenerationTarget, ...]


@dataclass(frozen=True)
class GenerationPrompt:
    system: str
    user: str
    max_tokens: int


@dataclass(frozen=True)
class GeneratedResult:
    target: GenerationTarget
    text: str
    non_generatable: bool = False
    reason: str = ""


@dataclass(frozen=True)
class BatchOutcome:
    results: tuple[GeneratedResult, ...]
    failed: tuple[GenerationTarget, ...]
    #: why the whole answer was refused (``invalid-json``, ``invalid-shape``), else ""
    problem: str = ""
    invalid_items: int = 0


@dataclass
class RunCounts:
    requested: int
    generated: int = 0
    non_generatable: int = 0
    failed: int = 0
    skipped: int = 0
    failed_targets: list[str] = field(default_factory=list)
    #: the kind of the last failure (a provider error kind, ``invalid-json``, …), for the reason
    last_failure: str = ""

    def to_json(self) -> dict[str, int]:
        return {
            "requested": self.requested,
            "generated": self.generated,
            "non_generatable": self.non_generatable,
            "failed": self.failed,
            "skipped": self.skipped,
        }


# ----------------------------------------------------------------------------- targets


def _has_description(item: CatalogTable | CatalogColumn) -> bool:
    """A Description, or a Generated Description (a Non-generatable one included: the model
    already said it cannot; only a run without ``missing_only`` asks again)."""
    return bool(item.description.strip()) or item.generated is not None


def _scoped(state: CatalogState, scope: Sequence[str] | None) -> list[CatalogTable]:
    if scope is None:
        return [state.tables[name] for name in sorted(state.tables)]
    tables: list[CatalogTable] = []
    for name in scope:
        if not name.strip():
            raise UsageError("--scope takes table names")
        found = state.table(name.strip())
        if found is None:
            raise NotFoundError(f"{name} is not a Catalog Table")
        if found not in tables:
            tables.append(found)
    if not tables:
        raise UsageError("--scope takes table names")
    return tables


def select_targets(
    state: CatalogState, scope: Sequence[str] | None = None, *, missing_only: bool = False
) -> TargetSelection:
    """Every table of ``scope`` (the whole catalog when None) and its columns."""
    if not state.tables:
        raise NotFoundError("the catalog is empty: run `tht catalog sync` first")
    tables = _scoped(state, scope)
    requested: list[GenerationTarget] = []
    wanted: list[GenerationTarget] = []
    for table in tables:
        items: list[tuple[GenerationTarget, CatalogTable | CatalogColumn]] = [
            (GenerationTarget(table.name), table)
        ]
        for column in sorted(table.columns, key=lambda c: (c.position, c.name)):
            items.append((GenerationTarget(table.name, column.name), column))
        for target, item in items:
            requested.append(target)
            if not (missing_only and _has_description(item)):
                wanted.append(target)
    return TargetSelection(
        scope=None if scope is None else tuple(t.name for t in tables),
        requested=tuple(requested),
        wanted=tuple(wanted),
    )


def plan_batches(
    targets: Sequence[GenerationTarget], max_columns: int = MAX_COLUMNS
) -> list[GenerationBatch]:
    """Consecutive targets of one table, at most ``max_columns`` columns per batch."""
    if max_columns < 1:
        raise UsageError("a batch holds at least one column")
    batches: list[GenerationBatch] = []
    current: list[GenerationTarget] = []
    columns = 0
    for target in targets:
        full = columns >= max_columns and target.column is not None
        if current and (current[0].table != target.table or full):
            batches.append(GenerationBatch(current[0].table, tuple(current)))
            current, columns = [], 0
        current.append(target)
        columns += target.column is not None
    if current:
        batches.append(GenerationBatch(current[0].table, tuple(current)))
    return batches


# ----------------------------------------------------------------------------- the request


def _clip(text: str, limit: int = _MAX_CONTEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def table_metadata(table: CatalogTable) -> dict[str, Any]:
    """What a model may see of a Catalog Table: structure only, never a value."""
    return {
        "name": table.name,
        "kind": table.kind,
        "comment": _clip(table.comment),
        "description": _clip(table.description),
        "primary_key": list(table.primary_key),
        "column_count": len(table.columns),
    }


def column_metadata(table: CatalogTable, wanted: set[str]) -> list[dict[str, Any]]:
    """What a model may see of the ``wanted`` columns of ``table`` (in their order): name,
    type, key, nullability, the observed comment and the Description — never a value."""
    return [
        {
            "name": c.name,
            "type": c.type,
            "primary_key": c.pk,
            "nullable": c.nullable,
            "comment": _clip(c.comment),
            "description": _clip(c.description),
        }
        for c in sorted(table.columns, key=lambda c: (c.position, c.name))
        if c.name in wanted
    ]


def build_prompt(state: CatalogState, batch: GenerationBatch, language: str) -> GenerationPrompt:
    """The request for one batch: structural metadata only, never a value."""
    table = state.tables[batch.table]
    wanted = {t.column for t in batch.targets if t.column is not None}
    request = {
        "table": table_metadata(table),
        "columns": column_metadata(table, wanted),
        "targets": [t.ref for t in batch.targets],
    }
    name = _LANGUAGE_NAMES.get(language, language)
    system = (
        "You write short descriptions of database tables and columns for a metadata catalog, "
        f"in {name}. You see structural metadata only: names, types, keys, the comment observed "
        "in the database and any existing description; no data. For each target, answer one "
        "item: a description of one or two sentences (at most "
        f"{MAX_DESCRIPTION_CHARS} characters) saying what the table holds or what the column "
        "means. When the metadata is not enough to say, set non_generatable to true, leave "
        "description empty and give a short reason. Answer only with JSON: "
        '{"descriptions": [{"target": "...", "description": "...", "non_generatable": false, '
        '"reason": ""}]}, one item per target, targets spelled exactly as given.'
    )
    user = json.dumps(request, ensure_ascii=False, sort_keys=False)
    return GenerationPrompt(
        system=system, user=user, max_tokens=min(4000, 200 + 160 * len(batch.targets))
    )


# ----------------------------------------------------------------------------- the answer

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _flat(text: str) -> str:
    """One line: control characters and runs of whitespace become one space."""
    return " ".join(_CONTROL.sub(" ", text).split())


def answer_items(raw: str, key: str) -> list[Any] | None:
    """The list a model's structured answer holds under ``key`` (``{"<key>": [...]}``), or the
    bare list a prompt-json answer may be; None when the answer is neither."""
    try:
        decoded = json.loads(raw)
    except ValueError:
        return None
    if isinstance(decoded, dict) and isinstance(decoded.get(key), list):
        return list(decoded[key])
    if isinstance(decoded, list):
        return decoded
    return None


def validate_answer(raw: str, batch: GenerationBatch, language: str) -> BatchOutcome:
    """The valid results of one answer; every target without one is failed."""
    items = answer_items(raw, "descriptions")
    if items is None:
        shape = "invalid-shape"
        try:
            json.loads(raw)
        except ValueError:
            shape = "invalid-json"
        return BatchOutcome(results=(), failed=batch.targets, problem=shape)
    by_ref = {t.ref: t for t in batch.targets}
    folded = {t.ref.lower(): t for t in batch.targets}
    results: dict[GenerationTarget, GeneratedResult] = {}
    invalid = 0
    for item in items:
        result = _result(item, by_ref, folded, language)
        if result is None or result.target in results:
            invalid += 1
            continue
        results[result.target] = result
    ordered = tuple(results[t] for t in batch.targets if t in results)
    failed = tuple(t for t in batch.targets if t not in results)
    return BatchOutcome(results=ordered, failed=failed, invalid_items=invalid)


def _result(
    item: Any,
    by_ref: dict[str, GenerationTarget],
    folded: dict[str, GenerationTarget],
    language: str,
) -> GeneratedResult | None:
    if not isinstance(item, dict):
        return None
    ref, text = item.get("target"), item.get("description", "")
    flag, reason = item.get("non_generatable", False), item.get("reason", "")
    if not isinstance(ref, str) or not isinstance(text, str) or not isinstance(reason, str):
        return None
    if not isinstance(flag, bool):
        return None
    target = by_ref.get(ref.strip()) or folded.get(ref.strip().lower())
    if target is None:
        return None
    reason = _flat(reason)[:_MAX_REASON_CHARS]
    if flag:
        standard = NON_GENERATABLE_TEXT.get(language, NON_GENERATABLE_TEXT["en"])
        return GeneratedResult(target, standard, True, reason or "insufficient information")
    flat = _flat(text)
    if not flat or len(flat) > MAX_DESCRIPTION_CHARS:
        return None
    return GeneratedResult(target, flat)


# ----------------------------------------------------------------------------- the ledger


def plan_started(
    run: str,
    selection: TargetSelection,
    *,
    profile: str,
    model: str,
    missing_only: bool,
    language: str,
) -> ev.EventDraft:
    return ev.EventDraft(
        type="description_generation_started",
        actor=GENERATOR,
        subject=run,
        payload=cev.DescriptionGenerationStartedPayload(
            run=run,
            profile=profile,
            model=model,
            scope=selection.scope,
            missing_only=missing_only,
            requested=len(selection.requested),
            language=language,
        ),
    )


def plan_generated(
    run: str, results: Sequence[GeneratedResult], *, profile: str, language: str
) -> list[ev.EventDraft]:
    """One ``description_generated`` per valid result (source ``model:<profile>``)."""
    return [
        ev.EventDraft(
            type="description_generated",
            actor=GENERATOR,
            subject=r.target.ref,
            payload=cev.DescriptionGeneratedPayload(
                target=r.target.ref,
                text=r.text,
                language=language,
                source=f"model:{profile}",
                run=run,
                non_generatable=r.non_generatable,
                reason=r.reason,
            ),
        )
        for r in results
    ]


Status = Literal["completed", "interrupted", "failed"]


def finish_status(counts: RunCounts, stopped: str) -> Status:
    """``failed`` when the run stopped early (``stopped``: why) or nothing it asked for came
    back valid; ``completed`` otherwise (some targets may have failed: rerun --missing-only)."""
    if stopped:
        return "interrupted" if stopped == "interrupted" else "failed"
    if counts.failed and not (counts.generated or counts.non_generatable):
        return "failed"
    return "completed"


def plan_finished(run: str, counts: RunCounts, status: Status, reason: str = "") -> ev.EventDraft:
    return ev.EventDraft(
        type="description_generation_finished",
        actor=GENERATOR,
        subject=run,
        payload=cev.DescriptionGenerationFinishedPayload(
            run=run,
            status=status,
            requested=counts.requested,
            generated=counts.generated,
            non_generatable=counts.non_generatable,
            failed=counts.failed,
            skipped=counts.skipped,
            reason=reason,
        ),
    )
