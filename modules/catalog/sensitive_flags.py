"""Sensitive Data Flags and the Sensitive Data Suggestion Run as pure planners.

- :func:`plan_flags` — a human sets (or clears) the Sensitive Data Flag of the named Catalog
  Columns: one ``sensitive_flag_set`` per column whose flag changes, in one batch; a column
  already at that value is reported ``unchanged`` (all of them: refused, exit 5). Human-only:
  the CLI refuses an agent, the fold refuses a flag recorded by anyone but a human.
- :func:`suggest` — the offline pre-pass (:mod:`modules.catalog.sensitive`) over a scope: the
  proposals for the columns not flagged yet, shown whole, plus counts.
- :func:`plan_suggestion_run` — the run as the ledger keeps it: scope, mode and aggregate counts
  only, never a per-column proposal (glossary: the run keeps state and counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from modules.catalog.curation import resolve_column
from modules.catalog.records import CatalogState, CatalogTable
from modules.catalog.sensitive import SensitiveProposal, propose_sensitive

__all__ = [
    "SUGGESTER",
    "FlagPlan",
    "Suggestion",
    "plan_flags",
    "plan_suggestion_run",
    "suggest",
]

#: who records a Sensitive Data Suggestion Run (anyone may run one: it only proposes)
SUGGESTER = "module:catalog"


@dataclass(frozen=True)
class FlagPlan:
    drafts: list[ev.EventDraft]
    changed: list[str]  # ``table.column``, as the catalog spells them
    unchanged: list[str]


def _empty(state: CatalogState) -> None:
    if not state.tables:
        raise NotFoundError("the catalog is empty: run `tht catalog sync` first")


def plan_flags(
    state: CatalogState,
    refs: Sequence[str],
    *,
    sensitive: bool,
    reason: str | None,
    actor: str,
) -> FlagPlan:
    """The flags to record for ``refs`` (``table.column``, exact or the one case-insensitive
    match); every name is checked before anything is planned."""
    if reason is None or not reason.strip():
        raise UsageError("a Sensitive Data Flag needs a reason: pass --reason TEXT")
    if not refs:
        raise UsageError("name the columns: TABLE.COLUMN …")
    _empty(state)
    resolved: list[tuple[str, str]] = []
    for ref in refs:
        table, dot, column = ref.partition(".")
        if not dot or not table or not column:
            raise UsageError(f"{ref!r}: expected TABLE.COLUMN")
        pair = resolve_column(state, table, column)
        if pair not in resolved:
            resolved.append(pair)
    drafts: list[ev.EventDraft] = []
    changed: list[str] = []
    unchanged: list[str] = []
    for table, column in resolved:
        found = state.tables[table].column(column)
        assert found is not None
        ref = f"{table}.{column}"
        if found.sensitive == sensitive:
            unchanged.append(ref)
            continue
        changed.append(ref)
        drafts.append(
            ev.EventDraft(
                type="sensitive_flag_set",
                actor=actor,
                subject=ref,
                payload=cev.SensitiveFlagSetPayload(
                    table=table, column=column, sensitive=sensitive, reason=reason.strip()
                ),
            )
        )
    if not drafts:
        state_word = "sensitive" if sensitive else "not sensitive"
        raise PolicyError(f"nothing to change: {', '.join(unchanged)} already {state_word}")
    return FlagPlan(drafts=drafts, changed=changed, unchanged=unchanged)


@dataclass(frozen=True)
class Suggestion:
    scope: tuple[str, ...] | None  # the catalog's names; None: the whole catalog
    considered: int  # columns looked at
    already_flagged: int  # of those, flagged already (not proposed again)
    proposals: list[SensitiveProposal]  # the columns not flagged yet

    def to_json(self) -> dict[str, object]:
        return {
            "mode": "offline",
            "scope": None if self.scope is None else list(self.scope),
            "considered": self.considered,
            "already_flagged": self.already_flagged,
            "proposed": len(self.proposals),
            "proposals": [p.to_json() for p in self.proposals],
        }


def _scoped(state: CatalogState, scope: Sequence[str] | None) -> list[CatalogTable]:
    if scope is None:
        return [state.tables[name] for name in sorted(state.tables)]
    tables: list[CatalogTable] = []
    for name in scope:
        found = state.table(name)
        if found is None:
            raise NotFoundError(f"{name} is not a Catalog Table")
        if found not in tables:
            tables.append(found)
    return tables


def suggest(state: CatalogState, scope: Sequence[str] | None = None) -> Suggestion:
    """The offline pre-pass over ``scope`` (every Catalog Table when None)."""
    _empty(state)
    tables = _scoped(state, scope)
    flagged = {(t.name, c.name) for t in tables for c in t.columns if c.sensitive}
    proposals = [p for p in propose_sensitive(tables) if (p.table, p.column) not in flagged]
    return Suggestion(
        scope=None if scope is None else tuple(t.name for t in tables),
        considered=sum(len(t.columns) for t in tables),
        already_flagged=len(flagged),
        proposals=proposals,
    )


def plan_suggestion_run(run: str, suggestion: Suggestion) -> ev.EventDraft:
    """The ledger's record of the run: counts only (sanitized)."""
    return ev.EventDraft(
        type="sensitive_suggestion_run",
        actor=SUGGESTER,
        subject=run,
        payload=cev.SensitiveSuggestionRunPayload(
            run=run,
            mode="offline",
            scope=suggestion.scope,
            considered=suggestion.considered,
            proposed=len(suggestion.proposals),
        ),
    )
