"""Descriptions, Generated Descriptions and Description Consolidation (glossary "Catalogo dei
metadati"): the fold's rules and the pure planners. No I/O.

- A **Description** is the curated text of a Catalog Table or Column. Only a human writes it:
  by hand (``description_set``, :func:`plan_description`) or by a **Description
  Consolidation** (``descriptions_consolidated``, :func:`plan_consolidation`), which copies the
  chosen Generated Descriptions into the Descriptions and keeps the Generated Descriptions.
- A **Generated Description** (``description_generated``) is a reviewable proposal — from a
  Description Generation Run (``model:<profile>``, by ``module:catalog``) or from an agent
  (:func:`plan_proposal`, source ``agent``). It never changes the Description; the record keeps
  the latest one. A **Non-generatable Description** is a valid Generated Description that is
  never consolidated.
- The comment observed in the database (``comment``) is neither.

A target is ``table`` or ``table.column`` (the table name ends at the first dot), spelt as the
catalog spells it in the ledger. A Generated Description is *pending* when it is newer than the
Description's last change, is not non-generatable, and its text is not the Description already;
only a pending one is consolidated (:func:`blocker` says why another is not).

:func:`apply_description` is the fold's rule for the three entries: it returns the tables it
changes, or raises :class:`DescriptionRejected` (the fold records a problem, changes nothing).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from modules.catalog.curation import resolve_column
from modules.catalog.records import (
    CatalogColumn,
    CatalogState,
    CatalogTable,
    DescriptionChange,
    GeneratedDescription,
)

__all__ = [
    "AGENT_SOURCE",
    "GENERATOR",
    "ConsolidationPlan",
    "Described",
    "DescriptionRejected",
    "apply_description",
    "blocker",
    "described_targets",
    "generated_json",
    "plan_consolidation",
    "plan_description",
    "plan_proposal",
    "resolve_target",
]

#: who records a Description Generation Run's Generated Descriptions
GENERATOR = "module:catalog"
#: the source of an agent's Generated Description
AGENT_SOURCE = "agent"

Described = CatalogTable | CatalogColumn


class DescriptionRejected(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# ----------------------------------------------------------------------------- targets


def _locate(tables: Mapping[str, CatalogTable], target: str) -> tuple[CatalogTable, str | None]:
    """The table and column (None: the table itself) a ledger target names, exactly."""
    table = tables.get(target)
    if table is not None:
        return table, None
    name, dot, column = target.partition(".")
    found = tables.get(name) if dot else None
    if found is None or found.column(column) is None:
        raise DescriptionRejected("description", f"{target} is not a Catalog Table or Column")
    return found, column


def _record(table: CatalogTable, column: str | None) -> Described:
    if column is None:
        return table
    found = table.column(column)
    assert found is not None
    return found


def resolve_target(state: CatalogState, text: str) -> str:
    """``TABLE`` or ``TABLE.COLUMN`` as the catalog spells it (exact, else the one
    case-insensitive match); exit 3 when the catalog has no such table or column."""
    if not text.strip():
        raise UsageError("name the target: TABLE or TABLE.COLUMN")
    if not state.tables:
        raise NotFoundError("the catalog is empty: run `tht catalog sync` first")
    found = state.table(text)
    if found is not None:
        return found.name
    table, dot, column = text.partition(".")
    if not dot or not table or not column:
        raise NotFoundError(f"{text} is not a Catalog Table")
    name, col = resolve_column(state, table, column)
    return f"{name}.{col}"


def described_targets(state: CatalogState) -> Iterator[tuple[str, Described]]:
    """Every table (then its columns, in position order), tables by name."""
    for name in sorted(state.tables):
        table = state.tables[name]
        yield name, table
        for column in table.columns:
            yield f"{name}.{column.name}", column


# ----------------------------------------------------------------------------- pending


def blocker(record: Described) -> str | None:
    """Why ``record``'s Generated Description cannot be consolidated, None when it can:
    ``no_generated``, ``non_generatable``, ``already_consolidated`` (a consolidation came
    after it), ``edited_after`` (a human wrote the Description after it), ``unchanged`` (its
    text is the Description already)."""
    generated = record.generated
    if generated is None:
        return "no_generated"
    if generated.non_generatable:
        return "non_generatable"
    if generated.seq < record.description_seq:
        last = next(
            (h for h in record.description_history if h.seq == record.description_seq), None
        )
        return "already_consolidated" if last and last.kind == "consolidated" else "edited_after"
    if generated.text == record.description:
        return "unchanged"
    return None


def generated_json(record: Described) -> dict[str, Any] | None:
    """What ``tht catalog show`` prints of a Generated Description (None: there is none)."""
    g = record.generated
    if g is None:
        return None
    return {
        "text": g.text,
        "language": g.language,
        "source": g.source,
        "run": g.run,
        "non_generatable": g.non_generatable,
        "reason": g.reason or None,
        "seq": g.seq,
        "pending": blocker(record) is None,
    }


# ----------------------------------------------------------------------------- the fold's rule


def _put(table: CatalogTable, column: str | None, **changes: Any) -> CatalogTable:
    if column is None:
        return msgspec.structs.replace(table, **changes)
    columns = tuple(
        msgspec.structs.replace(c, **changes) if c.name == column else c for c in table.columns
    )
    return msgspec.structs.replace(table, columns=columns)


def _history(
    record: Described, seq: int, kind: Literal["set", "generated", "consolidated"], actor: str
) -> tuple[DescriptionChange, ...]:
    return (*record.description_history, DescriptionChange(seq=seq, kind=kind, actor=actor))


def _set(tables: Mapping[str, CatalogTable], event: cev.DescriptionSet) -> dict[str, CatalogTable]:
    p = event.payload
    table, column = _locate(tables, p.target)
    record = _record(table, column)
    if not p.text.strip():
        raise DescriptionRejected("description", f"the Description of {p.target} is empty")
    if p.text == record.description:
        raise DescriptionRejected("description", f"{p.target} already has that Description")
    history = _history(record, event.seq, "set", event.actor)
    changed = _put(
        table,
        column,
        description=p.text,
        description_seq=event.seq,
        description_history=history,
    )
    return {table.name: changed}


def _check_source(event: cev.DescriptionGenerated) -> None:
    p = event.payload
    if p.source == AGENT_SOURCE:
        if event.actor != "agent" or p.run is not None:
            raise DescriptionRejected(
                "source",
                f"an agent's Generated Description is recorded by agent, not {event.actor}",
            )
    elif p.source.startswith("model:") and len(p.source) > len("model:"):
        if event.actor != GENERATOR or p.run is None:
            raise DescriptionRejected(
                "source",
                f"a model's Generated Description is recorded by {GENERATOR} in a run, "
                f"not by {event.actor}",
            )
    else:
        raise DescriptionRejected("source", f"{p.source!r} is not model:<profile> or agent")


def _generated(
    tables: Mapping[str, CatalogTable], event: cev.DescriptionGenerated
) -> dict[str, CatalogTable]:
    p = event.payload
    _check_source(event)
    table, column = _locate(tables, p.target)
    if not p.text.strip():
        raise DescriptionRejected(
            "description", f"the Generated Description of {p.target} is empty"
        )
    record = _record(table, column)
    generated = GeneratedDescription(
        text=p.text,
        language=p.language,
        source=p.source,
        run=p.run,
        non_generatable=p.non_generatable,
        reason=p.reason,
        seq=event.seq,
        actor=event.actor,
    )
    history = _history(record, event.seq, "generated", event.actor)
    return {table.name: _put(table, column, generated=generated, description_history=history)}


def _consolidated(
    tables: Mapping[str, CatalogTable], event: cev.DescriptionsConsolidated
) -> dict[str, CatalogTable]:
    p = event.payload
    if not p.targets:
        raise DescriptionRejected("consolidation", "a consolidation of nothing")
    working = dict(tables)
    seen: set[str] = set()
    changed: set[str] = set()
    for item in p.targets:
        if item.target in seen:
            raise DescriptionRejected("consolidation", f"{item.target} is named twice")
        seen.add(item.target)
        table, column = _locate(working, item.target)
        record = _record(table, column)
        generated = record.generated
        if generated is None or generated.seq != item.generated_seq:
            raise DescriptionRejected(
                "consolidation",
                f"seq {item.generated_seq} is not the Generated Description of {item.target}",
            )
        why = blocker(record)
        if why is not None:
            raise DescriptionRejected(
                "consolidation", f"the Generated Description of {item.target} is {why}"
            )
        history = _history(record, event.seq, "consolidated", event.actor)
        working[table.name] = _put(
            table,
            column,
            description=generated.text,
            description_seq=event.seq,
            description_history=history,
        )
        changed.add(table.name)
    return {name: working[name] for name in changed}


def apply_description(
    tables: Mapping[str, CatalogTable], event: ev.Event
) -> dict[str, CatalogTable]:
    """The tables a description entry changes (by name); :class:`DescriptionRejected` when the
    entry is not valid on ``tables``. Human-only entries are checked by the fold itself."""
    if isinstance(event, cev.DescriptionSet):
        return _set(tables, event)
    if isinstance(event, cev.DescriptionGenerated):
        return _generated(tables, event)
    if isinstance(event, cev.DescriptionsConsolidated):
        return _consolidated(tables, event)
    raise DescriptionRejected("description", f"{type(event).__name__} is not a description entry")


# ----------------------------------------------------------------------------- planners


def _text(text: str | None, what: str) -> str:
    if text is None or not text.strip():
        raise UsageError(f"{what} is empty: pass --text TEXT")
    return text.strip()


def _locate_state(state: CatalogState, target: str) -> Described:
    table, column = _locate(state.tables, target)
    return _record(table, column)


def plan_description(
    state: CatalogState, target: str, *, text: str | None, reason: str | None, actor: str
) -> ev.EventDraft:
    """A human's Description of ``target`` (human-only; exit 5 when it changes nothing)."""
    written = _text(text, "the Description")
    if reason is None or not reason.strip():
        raise UsageError("a Description needs a reason: pass --reason TEXT")
    name = resolve_target(state, target)
    if _locate_state(state, name).description == written:
        raise PolicyError(f"nothing to change: {name} already has that Description")
    return ev.EventDraft(
        type="description_set",
        actor=actor,
        subject=name,
        payload=cev.DescriptionSetPayload(target=name, text=written, reason=reason.strip()),
    )


def plan_proposal(
    state: CatalogState, target: str, *, text: str | None, language: str
) -> ev.EventDraft:
    """An agent's Generated Description of ``target``: a proposal for a human to consolidate."""
    written = _text(text, "the Generated Description")
    name = resolve_target(state, target)
    return ev.EventDraft(
        type="description_generated",
        actor="agent",
        subject=name,
        payload=cev.DescriptionGeneratedPayload(
            target=name, text=written, language=language, source=AGENT_SOURCE
        ),
    )


@dataclass(frozen=True)
class ConsolidationPlan:
    draft: ev.EventDraft
    consolidated: list[str]
    skipped: list[dict[str, str]]  # ``{"target", "why"}`` (a :func:`blocker` code)


def plan_consolidation(
    state: CatalogState,
    targets: Sequence[str],
    *,
    all_generated: bool,
    reason: str | None,
    actor: str,
) -> ConsolidationPlan:
    """A Description Consolidation of ``targets`` (or, with ``all_generated``, of every target
    with a Generated Description): the pending ones are consolidated, the others skipped with
    why; exit 5 when none is pending, with nothing recorded."""
    if reason is None or not reason.strip():
        raise UsageError("a consolidation needs a reason: pass --reason TEXT")
    if all_generated == bool(targets):
        raise UsageError("name the targets (TABLE or TABLE.COLUMN …) or pass --all-generated")
    if all_generated:
        chosen = [(n, r) for n, r in described_targets(state) if r.generated is not None]
    else:
        names = list(dict.fromkeys(resolve_target(state, t) for t in targets))
        chosen = [(n, _locate_state(state, n)) for n in names]
    items: list[cev.ConsolidatedTargetPayload] = []
    skipped: list[dict[str, str]] = []
    for name, record in chosen:
        why = blocker(record)
        if why is not None:
            skipped.append({"target": name, "why": why})
            continue
        assert record.generated is not None
        items.append(cev.ConsolidatedTargetPayload(target=name, generated_seq=record.generated.seq))
    if not items:
        shown = ", ".join(f"{s['target']} ({s['why']})" for s in skipped) or "none has one"
        raise PolicyError(
            f"nothing to consolidate: no pending Generated Description ({shown})",
            details={"skipped": skipped},
        )
    draft = ev.EventDraft(
        type="descriptions_consolidated",
        actor=actor,
        subject=items[0].target if len(items) == 1 else None,
        payload=cev.DescriptionsConsolidatedPayload(targets=tuple(items), reason=reason.strip()),
    )
    return ConsolidationPlan(draft=draft, consolidated=[i.target for i in items], skipped=skipped)
