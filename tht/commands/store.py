"""``tht store init | status | migrate``: the session store a workspace uses (docs/operations.md).

``init`` and ``migrate`` change infrastructure every reviewer shares (the server's tables, the
store ``workspace.yaml`` points at), so they are human-only: ``--as human:ID``, refused when
``THT_ACTOR=agent`` (exit 5). Nothing is recorded in a ledger for them — a migration copies
ledgers verbatim and adds nothing. ``status`` only reads and is open to anyone. No command here
ever prints the store's URL: only the name of the variable that holds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.commands._common import human_actor
from tht.options import ActorOpt, DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from kernel.store.base import SessionStore
    from kernel.workspace import Workspace
    from tht.store_runtime import StoreChoice

app = typer.Typer(
    help="The session store: schema (init), status, migration between fs and postgres.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

ToOpt = Annotated[
    str,
    typer.Option(
        "--to", help="The store to move the workspace to: postgres or fs.", show_default=False
    ),
]
UrlEnvOpt = Annotated[
    str | None,
    typer.Option(
        "--url-env",
        help="postgres: the environment variable with the server URL (default: store.url_env, "
        "else THT_STORE_URL).",
        show_default=False,
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Verify and count, copy and switch nothing.")
]


def _workspace(path: Any) -> Workspace:
    from kernel.workspace import open_workspace

    return open_workspace(path)


@app.command("init")
def init(
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Apply the store's schema migrations (postgres; idempotent) and print the versions
    applied. The fs store has no schema. Human-only."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    from tht.store_runtime import store_choice, store_url

    ws = _workspace(inv.workspace)
    choice = store_choice(ws)
    if choice.kind == "fs":
        body: dict[str, Any] = {"kind": "fs", "applied": [], "schema_version": None, "by": who}
        inv.emit(body, "fs store: nothing to initialize (sessions live in this folder)")
        return
    from kernel.store.postgres import init_schema, schema_version

    url = store_url(ws, choice)
    applied = init_schema(url)
    version = schema_version(url)
    body = {"kind": choice.kind, "applied": applied, "schema_version": version, "by": who}
    shown = ", ".join(applied) if applied else "none (already current)"
    inv.emit(
        body,
        f"postgres store (${choice.url_env}): migrations applied: {shown}; "
        f"schema version {version}",
    )


@app.command("status")
def status(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The store's kind, whether it is reachable, its schema version, its sessions and events.
    After the report: exit 6 when the postgres server cannot be reached, 2 when its schema is
    not the current one (`tht store init`)."""
    inv = invocation(workspace, json_, debug)
    from kernel.errors import UnavailableError, UsageError
    from tht.store_runtime import close_store, open_store, store_choice, store_url

    ws = _workspace(inv.workspace)
    choice = store_choice(ws)
    body: dict[str, Any] = {"kind": choice.kind, "reachable": True, "schema_version": None}
    code, url = 0, ""
    if choice.kind != "fs":
        body.update(url_env=choice.url_env, workspace=choice.namespace)
        url = store_url(ws, choice)  # unset: exit 2 naming the variable, as every command
    try:
        if choice.kind != "fs":
            from kernel.store.postgres import schema_version

            body["schema_version"] = schema_version(url)
        store = open_store(ws, choice)
        try:
            body.update(_counts(store))
        finally:
            close_store(store)
    except UnavailableError as err:
        body.update(reachable=False, error=err.message)
        code = 6
    except UsageError as err:  # the tables are missing or of another version
        body.update(error=err.message)
        code = 2
    inv.emit(body, _status_text(body))
    if code:
        raise typer.Exit(code)


def _counts(store: SessionStore) -> dict[str, Any]:
    sessions = store.session_ids()
    events = sum(store.ledger(sid).tail().last_seq for sid in sessions)
    ledgers = {name: store.workspace_ledger(name).tail().last_seq for name in ("catalog", "memory")}
    return {"sessions": len(sessions), "events": events, "workspace_ledgers": ledgers}


def _status_text(body: dict[str, Any]) -> str:
    where = f" (${body['url_env']}, workspace {body['workspace']!r})" if "url_env" in body else ""
    if not body["reachable"]:
        return f"{body['kind']} store{where}: NOT reachable: {body['error']}"
    if "error" in body:
        return f"{body['kind']} store{where}: reachable, but {body['error']}"
    schema = "" if body["schema_version"] is None else f", schema version {body['schema_version']}"
    ledgers = ", ".join(f"{k} {v}" for k, v in body["workspace_ledgers"].items())
    return (
        f"{body['kind']} store{where}: reachable{schema}; {body['sessions']} session(s), "
        f"{body['events']} event(s); workspace ledgers: {ledgers} event(s)"
    )


@app.command("migrate")
def migrate(
    to: ToOpt,
    url_env: UrlEnvOpt = None,
    dry_run: DryRunOpt = False,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Copy every ledger, object and artifact to the other store, verify every chain there,
    then switch workspace.yaml's store.kind. Resumable: run it again after an interruption.
    Human-only. Exit 7: a source ledger does not verify; 4: the target diverges."""
    inv = invocation(workspace, json_, debug)
    who = human_actor(actor)
    from kernel.errors import UsageError
    from kernel.workspace import ENV_NAME, check_store
    from tht.evidence_runtime import progress_reporter
    from tht.store_runtime import close_store, open_store, store_choice
    from tht.store_runtime import migrate as copy_all
    from tht.store_switch import switch_store

    if to not in ("fs", "postgres"):
        raise UsageError(f"--to {to!r}: expected postgres or fs")
    if url_env is not None and not ENV_NAME.match(url_env):
        raise UsageError("--url-env: expected the NAME of an environment variable, not a value")
    ws = _workspace(inv.workspace)
    current = check_store(ws)
    if current == to:
        raise UsageError(f"the workspace already uses the {to} store (store.kind: {to})")
    source_choice = store_choice(ws)
    target_choice = store_choice(ws, to, url_env=url_env)
    switch_store(ws, *_switch_args(target_choice), write=False)  # editable: checked first
    source = open_store(ws, source_choice)
    try:
        target = _target(ws, target_choice, dry_run=dry_run)
        try:
            with progress_reporter(enabled=not inv.json, label="migrating") as report:
                summary = copy_all(
                    source, target, names=(current, to), dry_run=dry_run, progress=report
                )
            if not dry_run:
                switch_store(ws, *_switch_args(target_choice))
                summary.switched = True
        finally:
            close_store(target)
    finally:
        close_store(source)
    body = {**summary.to_json(), "by": who}
    inv.emit(body, _migrate_text(body))


def _switch_args(choice: StoreChoice) -> tuple[str, str, str]:
    if choice.kind == "fs":
        return ("fs", "", "")
    return (choice.kind, choice.url_env, choice.namespace)


def _target(ws: Workspace, choice: StoreChoice, *, dry_run: bool) -> SessionStore:
    """The target store; postgres gets its schema first (``store init``'s work). A dry run
    writes nothing: against a server without the schema it counts against an empty store."""
    from tht.store_runtime import fs_store, open_store, store_url

    if choice.kind == "fs":
        return fs_store(ws)
    # unset: exit 2 naming the variable, before any connection
    url = store_url(ws, choice, purpose=f"--to {choice.kind}")
    from kernel.store.postgres import init_schema, schema_version

    if dry_run:
        if schema_version(url) == 0:
            from kernel.store.memory import MemoryStore

            return MemoryStore()
    else:
        init_schema(url)
    return open_store(ws, choice)


def _migrate_text(body: dict[str, Any]) -> str:
    copied = body["copied"]
    now = "to copy" if body["dry_run"] else "copied now"
    text = (
        f"{body['from']} → {body['to']}: {body['sessions']} session(s), {body['events']} "
        f"event(s) ({copied['events']} {now}), {body['objects']} object(s) "
        f"({copied['objects']} {now}), {body['workspace_ledgers']} workspace ledger(s)"
    )
    if body["dry_run"]:
        return f"would migrate {text}; every source ledger verifies; nothing was written"
    return (
        f"migrated {text}; every chain verified on the target; workspace.yaml now says "
        f"store.kind: {body['to']}"
    )
