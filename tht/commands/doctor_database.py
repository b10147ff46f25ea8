"""``tht doctor``'s checks of the Workspace Database and the workspace-level ledgers beside it.

``database``: the Database Binding parses (else a configuration failure, exit 2) and the
database answers (else ``fail``: exit unchanged, the workspace is usable offline). ``catalog``:
its ledger verifies (else an integrity failure, exit 7; a catalog deleted since this
workspace's tht verified it is one too: its witness says so), it was synced, and it is fresh
against the binding's current structure version (else ``warn``). ``memory registry``: it
verifies, witness included (else exit 7)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["check_catalog", "check_database", "check_memory"]


class Report(Protocol):
    def add(self, name: str, verdict: str, detail: str, fix: str = "", kind: str = "") -> None: ...


_SYNC = "tht catalog sync"


def check_database(report: Report, ws: Any, *, config: str) -> Any:
    """The binding, when the workspace has one and it reaches its database; else None."""
    from kernel.database import binding_from_settings, check_reachable
    from kernel.errors import ThtError, UnavailableError
    from kernel.workspace import load_settings

    try:
        settings = load_settings(ws.settings_file)
        import os

        bound = binding_from_settings(ws.root, ws.settings_file, settings.database, os.environ)
    except ThtError as err:
        report.add("database", "fail", err.message, "fix database: in workspace.yaml", config)
        return None
    if bound is None:
        report.add(
            "database",
            "warn",
            "no database bound: schema linking, SQL checks and F7 verification need one",
            'add database: {url: "sqlite:///data/your.db"} to workspace.yaml (docs/database.md)',
        )
        return None
    try:
        check_reachable(bound)
    except UnavailableError as err:
        # unreachable is not a configuration error: `ok` is false, the exit code unchanged
        report.add(
            "database",
            "fail",
            f"{bound.display}: {err.message}",
            "check the binding",
            "unavailable",
        )
        return None
    report.add("database", "ok", f"{bound.display} ({bound.dialect}), read only")
    return bound


def check_catalog(report: Report, ws: Any, bound: Any, *, integrity: str) -> None:
    from kernel.errors import ThtError
    from tht.composition import open_app

    try:
        from modules.catalog.projections import freshness
        from tht.catalog_runtime import current_version, open_catalog

        app = open_app(ws.root)
        catalog = open_catalog(app)
        if not catalog.caps.ledger.exists() and not _deleted(catalog.caps.ledger):
            if bound is not None:
                report.add("catalog", "warn", "the catalog was never synced", _SYNC)
            else:
                report.add("catalog", "ok", "no database bound, no catalog")
            return
        verified = catalog.verify()
        if not verified.ok:
            rolled = [p for p in verified.problems if p.code == "rolled_back"]
            first = (rolled or verified.problems)[0]
            report.add(
                "catalog",
                "fail",
                f"the catalog ledger does not verify: {first.code}: {first.message}",
                "tht catalog verify",
                integrity,
            )
            return
        state = catalog.load().state
        if not state.synced:
            if bound is not None:
                report.add("catalog", "warn", "the catalog was never synced", _SYNC)
            else:
                report.add("catalog", "ok", "no database bound, no catalog")
            return
        fresh = freshness(state, current_version(app) if bound is not None else None)
    except ThtError as err:
        report.add("catalog", "fail", err.message, "tht catalog verify", integrity)
        return
    detail = f"{len(state.tables)} table(s), freshness {fresh['state']}"
    verdict = "ok" if fresh["state"] == "fresh" else "warn"
    report.add("catalog", verdict, detail, "" if verdict == "ok" else _SYNC)


def _deleted(ledger: Any) -> bool:
    """A ledger with no line whose witness says this workspace's tht verified some."""
    from kernel.ledger_witness import WitnessedLedger

    return isinstance(ledger, WitnessedLedger) and ledger.problem(0) is not None


def check_memory(report: Report, ws: Any, *, integrity: str) -> None:
    from kernel.errors import ThtError
    from tht.composition import open_app
    from tht.memory_runtime import open_registry

    try:
        verified = open_registry(open_app(ws.root)).verify()
    except ThtError as err:
        report.add("memory registry", "fail", err.message, "tht memory verify", integrity)
        return
    if not verified.ok:
        rolled = [p for p in verified.problems if p.code == "rolled_back"]
        first = (rolled or verified.problems)[0]
        fix = (
            "restore memory/ from a backup, or: tht memory verify --accept-rollback --as human:ID"
            if rolled
            else "tht memory verify"
        )
        detail = f"the memory registry does not verify: {first.code}: {first.message}"
        report.add("memory registry", "fail", detail, fix, integrity)
        return
    report.add("memory registry", "ok", f"{verified.events} entries; the registry verifies")
