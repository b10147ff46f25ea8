"""``tht doctor``: is this workspace healthy? Each check has a verdict, a one-line detail, a fix.

Read-only: it verifies, never repairs or writes. Exit codes (docs/cli.md): 2 when the
configuration is invalid (no workspace, workspace.yaml or workflow.yaml that does not load, an
unusable store kind, a postgres store whose URL variable is unset or whose schema is not
current), else 7 when the reviewer registry or a session does not verify, else 0 (``warn``
verdicts never change the exit code; nor does an unreachable database or store server, as
``ok: false``).
Details name files relative to the workspace, so the output is the same wherever the workspace
lives; a postgres store is named by the variable that holds its URL, never by the URL.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

__all__ = ["doctor"]

_CONFIG = "config"
_UNAVAILABLE = "unavailable"  # a server that is down: `ok` false, the exit code unchanged
_INTEGRITY = "integrity"


class _Report:
    def __init__(self) -> None:
        self.checks: list[dict[str, str]] = []
        self.failed: set[str] = set()

    def add(self, name: str, verdict: str, detail: str, fix: str = "", kind: str = "") -> None:
        self.checks.append({"name": name, "verdict": verdict, "detail": detail, "fix": fix})
        if verdict == "fail":
            self.failed.add(kind or _CONFIG)


def doctor(workspace: WorkspaceOpt = None, json_: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Check the workspace: settings, workflow, store, signed mode and reviewer keys, vector
    index, database, hooks, catalog, memory registry, and that every session verifies. Exit 2:
    configuration invalid; 7: a registry, the catalog or a session does not verify; else 0 (an
    unreachable server makes ``ok`` false only)."""
    inv = invocation(workspace, json_, debug)
    report = _Report()
    ws = _check_workspace(report, inv.workspace)
    if ws is not None:
        _check_workflow(report, ws)
        usable = _check_store(report, ws)
        _check_reviewers(report, ws)
        _check_vector_index(report, ws)
        from tht.commands.doctor_database import check_catalog, check_database, check_memory

        bound = check_database(report, ws, config=_CONFIG)
        _check_hooks(report, ws.root)
        if usable:
            check_catalog(report, ws, bound, integrity=_INTEGRITY)
            check_memory(report, ws, integrity=_INTEGRITY)
            _check_sessions(report, ws)
        else:
            skipped = "not checked: the session store is not usable (see the store check)"
            for name in ("catalog", "memory registry", "sessions"):
                report.add(name, "warn", skipped)
    body = {"ok": not report.failed, "checks": report.checks}
    inv.emit(body, _text(report.checks))
    if _CONFIG in report.failed:
        raise typer.Exit(2)
    if _INTEGRITY in report.failed:
        raise typer.Exit(7)


def _text(checks: list[dict[str, str]]) -> str:
    from tht.render import render_table

    rows = [[c["verdict"], c["name"], c["detail"], c["fix"]] for c in checks]
    return render_table(["verdict", "check", "detail", "fix"], rows)


def _check_workspace(report: _Report, root: Path) -> Any:
    from kernel.errors import ThtError
    from kernel.workspace import open_workspace

    try:
        ws = open_workspace(root)
    except ThtError as err:
        report.add("workspace", "fail", err.message, f"tht workspace init {root}")
        return None
    try:
        ws.settings()
    except ThtError as err:
        report.add("workspace", "fail", err.message, "fix workspace.yaml (the field named above)")
        return None
    report.add("workspace", "ok", "workspace.yaml found and valid")
    return ws


def _check_workflow(report: _Report, ws: Any) -> None:
    from kernel.errors import ThtError
    from kernel.ledger_verify import line_hash
    from kernel.workflow import parse_workflow

    custom = ws.root / "workflow.yaml"
    if not custom.is_file():
        report.add("workflow", "ok", "packaged workflow.yaml")
        return
    try:
        spec = parse_workflow(custom)
    except ThtError as err:
        report.add("workflow", "fail", err.message, "fix workflow.yaml, or remove it")
        return
    detail = f"custom workflow.yaml ({spec.name} v{spec.version})"
    if not _signed(ws):
        report.add("workflow", "ok", detail)
        return
    approved = _registry_state(ws)
    digest = line_hash(custom.read_bytes())
    if approved is not None and digest in approved.approved_workflows:
        report.add("workflow", "ok", f"{detail}, approved by a reviewer")
    else:
        report.add(
            "workflow",
            "warn",
            f"{detail} is not approved: signed sessions cannot use it",
            "tht reviewer approve-workflow --reason T --as human:ID",
        )


def _check_store(report: _Report, ws: Any) -> bool:
    """The store check; whether the store can be opened (else the checks that read it are
    skipped: they would only repeat its failure under another name)."""
    from kernel.errors import ThtError
    from kernel.workspace import check_store

    try:
        kind = check_store(ws)
    except ThtError as err:
        report.add("store", "fail", err.message, "set store.kind to fs or postgres")
        return False
    if kind == "postgres":
        return _check_postgres(report, ws)
    sessions = ws.sessions_dir
    if not sessions.is_dir():
        report.add("store", "fail", "sessions/ is missing", f"tht workspace init {ws.root}")
        return False
    if not os.access(sessions, os.W_OK | os.X_OK):
        report.add("store", "fail", "sessions/ is not writable", "chmod u+rwx sessions")
        return False
    mode = sessions.stat().st_mode & 0o777
    if mode != 0o700:
        report.add(
            "store",
            "warn",
            f"fs store writable; sessions/ is mode {mode:04o}, not 0700 (other users may read)",
            "chmod 700 sessions",
        )
        return True
    report.add("store", "ok", "fs store writable; sessions/ is mode 0700")
    return True


def _check_postgres(report: _Report, ws: Any) -> bool:
    """Reachable, and its schema is the one this tht writes (never the URL in a detail)."""
    from kernel.errors import ThtError, UnavailableError
    from tht.store_runtime import store_choice, store_url

    try:
        choice = store_choice(ws)
        url = store_url(ws, choice)
    except ThtError as err:
        report.add("store", "fail", err.message, "export the variable store.url_env names")
        return False
    where = f"postgres store (${choice.url_env}, workspace {choice.namespace!r})"
    try:
        from kernel.store.postgres import schema_version
        from kernel.store.postgres_schema import LATEST

        version = schema_version(url)
    except UnavailableError as err:
        report.add("store", "fail", err.message, "start the server, or fix the URL", _UNAVAILABLE)
        return False
    except ThtError as err:
        report.add("store", "fail", err.message, "tht store status", _CONFIG)
        return False
    if version != LATEST:
        fix = "tht store init --as human:ID" if version < LATEST else "upgrade tht"
        report.add("store", "fail", f"{where}: schema version {version}, not {LATEST}", fix)
        return False
    report.add("store", "ok", f"{where}: reachable, schema version {version}")
    return True


def _signed(ws: Any) -> bool:
    from kernel.reviewer_registry import ReviewerRegistry
    from tht.composition import _signed_setting

    return _signed_setting(ws) or ReviewerRegistry(ws.reviewers_dir).exists()


def _registry_state(ws: Any) -> Any:
    from kernel.errors import ThtError
    from kernel.reviewer_registry import ReviewerRegistry

    registry = ReviewerRegistry(ws.reviewers_dir)
    if not registry.exists():
        return None
    try:
        return registry.state()
    except ThtError:
        return None


def _check_reviewers(report: _Report, ws: Any) -> None:
    from kernel.errors import ThtError
    from kernel.reviewer_registry import ReviewerRegistry
    from tht.composition import _signed_setting
    from tht.reviewer_keys import key_path
    from tht.witness_runtime import witness_path

    registry = ReviewerRegistry(ws.reviewers_dir, witness=witness_path(ws, "reviewers"))
    if not registry.exists() and not registry.witnessed():
        if _signed_setting(ws):
            report.add(
                "signed mode",
                "warn",
                "human_decisions: signed, but the reviewer registry is empty",
                "tht reviewer add human:ID",
            )
        else:
            report.add("signed mode", "ok", "unsigned (solo mode): human decisions are not signed")
        return
    try:
        verified = registry.verify()
        state = registry.state()
    except ThtError as err:
        report.add("reviewer registry", "fail", err.message, "restore reviewers/", _INTEGRITY)
        return
    if not verified.ok:
        codes = ", ".join(sorted({p.code for p in verified.problems}))
        report.add(
            "reviewer registry",
            "fail",
            f"does not verify ({len(verified.problems)} problem(s): {codes})",
            "tht reviewer verify; restore reviewers/ from a backup",
            _INTEGRITY,
        )
        return
    reviewers = state.reviewers()
    report.add(
        "reviewer registry", "ok", f"signed mode; {len(reviewers)} reviewer(s); registry verifies"
    )
    missing = [r for r in reviewers if not key_path(r).is_file()]
    if missing:
        report.add(
            "reviewer keys",
            "warn",
            f"no key on this machine for {', '.join(missing)}",
            "they sign on their own machine, or: tht reviewer add human:ID --by human:ADMIN",
        )
    else:
        report.add("reviewer keys", "ok", "this machine has a key for every reviewer")


def _check_vector_index(report: _Report, ws: Any) -> None:
    from kernel.errors import ThtError

    try:
        from tht.evidence_runtime import open_evidence

        runtime = open_evidence(ws.root)
        generation = runtime.active_generation()
        unapproved = runtime.approval_problem() if generation is not None else None
    except ThtError as err:
        report.add("vector index", "fail", err.message, "fix workspace.yaml (evidence)")
        return
    if generation is None:
        report.add(
            "vector index",
            "warn",
            "no active evidence generation: search and evidence packs are unavailable",
            "tht evidence prepare && tht evidence publish",
        )
    elif generation.get("error"):
        report.add(
            "vector index", "warn", str(generation["error"]), "tht evidence publish", _INTEGRITY
        )
    elif unapproved is not None:
        report.add(
            "vector index",
            "warn",
            f"{unapproved}; evidence search and packs are unavailable",
            "a reviewer: tht evidence publish --as human:ID",
            _INTEGRITY,
        )
    else:
        report.add("vector index", "ok", f"active evidence generation {generation.get('id')}")


def _check_hooks(report: _Report, root: Path) -> None:
    """Read-only: Claude Code's user and project settings files, for tht's two hooks."""
    explicit = os.environ.get("CLAUDE_CONFIG_DIR")
    home = Path(explicit).expanduser() if explicit else Path.home() / ".claude"
    # `tht hooks install --project` writes into the project the agent works in (the current
    # folder), not into the workspace; a workspace-level file is still read if there is one
    files = {
        "user": home / "settings.json",
        "project": Path.cwd() / ".claude" / "settings.json",
        "workspace": root / ".claude" / "settings.json",
    }
    found: list[str] = []
    seen: set[Path] = set()
    for where, path in files.items():
        if path.absolute() in seen:  # the workspace is the current folder
            continue
        seen.add(path.absolute())
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        text = json.dumps(settings.get("hooks", {})) if isinstance(settings, dict) else ""
        if "tht-route-hook" in text and "tht-guard-hook" in text:
            found.append(where)
    if found:
        report.add("hooks", "ok", f"Claude Code hooks installed ({', '.join(found)} settings)")
        _check_routing_catalog(report)
    else:
        report.add(
            "hooks",
            "warn",
            "Claude Code settings have no tht hooks (routing hints and the guard are off)",
            "tht hooks install --project",
        )


def _check_routing_catalog(report: _Report) -> None:
    """Read-only, when the hooks are installed: the catalog the route hook would read
    (``$THT_ROUTING_CATALOG``, else ``routing.catalog`` of the user config), opened and its
    fingerprint recomputed. Without one the hook answers nothing, silently to the user."""
    from kernel.errors import ThtError
    from modules.routing.pack import CatalogError, open_pack, verify_pack
    from tht.commands.route import configured_catalog

    build = "tht route catalog build --skills DIR --out FILE"
    try:
        path = configured_catalog()
    except ThtError as err:
        report.add("routing catalog", "warn", err.message, "fix the user config file")
        return
    if not path:
        report.add(
            "routing catalog",
            "warn",
            "no routing catalog: the route hook gives no hints (routing.catalog in the user "
            "config, or $THT_ROUTING_CATALOG)",
            build,
        )
        return
    try:
        pack = open_pack(path)
    except CatalogError as err:
        report.add("routing catalog", "warn", str(err), build)
        return
    if not verify_pack(pack):
        detail = f"{path}: its content does not match its fingerprint (edited or damaged)"
        report.add("routing catalog", "warn", detail, build)
        return
    report.add("routing catalog", "ok", f"{path}: {pack.target_count} target(s), verified")


def _check_sessions(report: _Report, ws: Any) -> None:
    from kernel.errors import ThtError
    from tht.composition import open_app

    try:
        app_ = open_app(ws.root)
        sessions = app_.kernel.session_ids()
    except ThtError as err:
        report.add("sessions", "fail", err.message, "tht ledger verify --all", _INTEGRITY)
        return
    bad: list[str] = []
    for sid in sessions:
        try:
            ok = app_.kernel.verify(sid).ok
        except ThtError:
            ok = False
        if not ok:
            bad.append(sid)
    if bad:
        report.add(
            "sessions",
            "fail",
            f"{len(bad)} of {len(sessions)} session(s) do not verify: {', '.join(bad)}",
            "tht ledger verify SESSION; a human repairs: --repair --reason T --as human:ID",
            _INTEGRITY,
        )
    else:
        report.add("sessions", "ok", f"{len(sessions)} session(s), every one verifies")
