"""What ``tht catalog show`` and ``tht catalog status`` print: projections of the fold. Pure.

Catalog Freshness (glossary): a synced table is ``fresh`` when the structure version it was
synced at is the binding's current one, else ``stale`` (still shown: a stale scope remains
consultable); ``unknown`` when the current version could not be read (no binding, or the
database unreachable). The catalog's overall state is ``never_synced`` before any completed run,
else ``stale`` if any table is, ``unknown`` without a current version, ``fresh`` otherwise.
"""

from __future__ import annotations

from typing import Any

from kernel.errors import NotFoundError
from modules.catalog.descriptions import generated_json
from modules.catalog.records import (
    CatalogState,
    CatalogSyncRun,
    CatalogTable,
    DescriptionGenerationRun,
    SensitiveSuggestionRun,
)

__all__ = ["RUN_KINDS", "freshness", "run_json", "runs_json", "show_json", "status_json"]

#: the kinds of catalog runs ``tht catalog runs --kind`` lists
RUN_KINDS = ("sync", "generation", "suggestion")


def _table_state(table: CatalogTable, current: str | None) -> str:
    if current is None:
        return "unknown"
    return "fresh" if table.synced_version == current else "stale"


def freshness(
    state: CatalogState, current: str | None, tables: list[CatalogTable] | None = None
) -> dict[str, Any]:
    shown = list(state.tables.values()) if tables is None else tables
    per_table = {
        t.name: {"synced_version": t.synced_version, "state": _table_state(t, current)}
        for t in shown
    }
    if not state.synced:
        overall = "never_synced"
    elif current is None:
        overall = "unknown"
    elif any(t.synced_version != current for t in state.tables.values()):
        overall = "stale"
    else:
        overall = "fresh"
    return {"binding_version": current, "state": overall, "tables": per_table}


def show_json(state: CatalogState, table: str | None, current: str | None) -> dict[str, Any]:
    """``{"tables": [{"name", "description", "columns": [{"name", "type", "pk", "sensitive",
    "description", "generated"}], "generated"}], "freshness"}`` (ARCHITECTURE §6);
    ``generated`` is the latest Generated Description (``{"text", "language", "source", "run",
    "non_generatable", "reason", "seq", "pending"}``) or null."""
    if table is not None:
        found = state.table(table)
        if found is None:
            raise NotFoundError(f"{table} is not a Catalog Table")
        tables = [found]
    else:
        tables = [state.tables[name] for name in sorted(state.tables)]
    return {
        "tables": [
            {
                "name": t.name,
                "description": t.description,
                "columns": [
                    {
                        "name": c.name,
                        "type": c.type,
                        "pk": c.pk,
                        "sensitive": c.sensitive,
                        "description": c.description,
                        "generated": generated_json(c),
                    }
                    for c in t.columns
                ],
                "generated": generated_json(t),
            }
            for t in tables
        ],
        "freshness": freshness(state, current, tables),
    }


def run_json(run: CatalogSyncRun) -> dict[str, Any]:
    return {
        "run": run.id,
        "status": run.status,
        "scope": list(run.scope) if run.scope is not None else None,
        "started": run.started_ts,
        "ended": run.ended_ts,
        "unchanged": run.unchanged,
        "version": run.version,
        "snapshot": run.snapshot,
        "tables": run.tables,
        "columns": run.columns,
        "relationships": run.relationships,
        "capabilities": dict(run.capabilities),
        "failure": run.failure or None,
        "reason": run.reason or None,
        "log": f"catalog/runs/{run.id}.log",
    }


def status_json(state: CatalogState, current: str | None) -> dict[str, Any]:
    """``tht catalog status``: the runs (oldest first), the active one, Catalog Freshness."""
    fresh = freshness(state, current)
    stale = sorted(n for n, f in fresh["tables"].items() if f["state"] == "stale")
    return {
        "runs": [run_json(r) for r in state.runs.values()],
        "active_run": state.active_run,
        "last_completed": state.last_completed,
        "freshness": {
            "binding_version": fresh["binding_version"],
            "state": fresh["state"],
            "stale_tables": stale,
        },
        "last_seq": state.last_seq,
    }


def _generation_json(run: DescriptionGenerationRun) -> dict[str, Any]:
    return {
        "kind": "generation",
        "run": run.id,
        "status": run.status,
        "scope": list(run.scope) if run.scope is not None else None,
        "started": run.started_ts,
        "ended": run.ended_ts,
        "log": f"catalog/runs/{run.id}.log",
        "profile": run.profile,
        "model": run.model or None,
        "missing_only": run.missing_only,
        "language": run.language or None,
        "requested": run.requested,
        "generated": run.generated,
        "non_generatable": run.non_generatable,
        "failed": run.failed,
        "skipped": run.skipped,
        "reason": run.reason or None,
    }


def _suggestion_json(run: SensitiveSuggestionRun) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "suggestion",
        "run": run.id,
        "status": "completed",  # recorded once it has shown its proposal
        "scope": list(run.scope) if run.scope is not None else None,
        "started": run.ts,
        "ended": run.ts,
        "log": None,  # it keeps counts only: no log
        "mode": run.mode,
        "considered": run.considered,
        "proposed": run.proposed,
    }
    if run.mode == "model":  # which model, and how many of its batches failed or were not asked
        body.update(profile=run.profile, batches=run.batches, failed_batches=run.failed_batches)
    return body


def runs_json(state: CatalogState, kind: str | None = None) -> dict[str, Any]:
    """``tht catalog runs``: Catalog Sync Runs, Description Generation Runs and Sensitive Data
    Suggestion Runs (each kind oldest first), with their status and their logs' paths
    (relative to the workspace): ``{"runs": [{"kind", "run", "status", "scope", "started",
    "ended", "log", …}], "active": {"sync", "generation"}}``."""
    runs: list[dict[str, Any]] = []
    if kind in (None, "sync"):
        runs += [{"kind": "sync", **run_json(r)} for r in state.runs.values()]
    if kind in (None, "generation"):
        runs += [_generation_json(r) for r in state.generation_runs.values()]
    if kind in (None, "suggestion"):
        runs += [_suggestion_json(r) for r in state.suggestion_runs.values()]
    return {
        "runs": runs,
        "active": {"sync": state.active_run, "generation": state.active_generation},
    }
