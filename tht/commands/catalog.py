"""``tht catalog …``: the Metadata Catalog (docs/catalog.md; ARCHITECTURE §6).

``sync``, ``show``, ``relationships``, ``status``, ``runs``, ``verify``, ``sample``, ``sensitive
suggest`` and ``describe --propose`` are open to anyone (an agent may sync and read the catalog,
and propose Generated Descriptions); ``relationship add | delete | restore | reconstruct``,
``cleanup``, ``sensitive set``, ``describe --as`` and ``consolidate`` are human-only curation
(``--as human:<id>``; refused when ``THT_ACTOR=agent``; signed with the reviewer's key in signed
mode). Command bodies import what they need (start-up time counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.commands._common import human_actor, open_for
from tht.commands.catalog_describe import register as register_describe
from tht.commands.catalog_generate import register as register_generate
from tht.commands.catalog_sensitive import register as register_sensitive
from tht.commands.catalog_values import register as register_values
from tht.options import AcceptRollbackOpt, ActorOpt, DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from kernel.events import EventDraft
    from modules.catalog import Catalog, LoadedCatalog
    from tht.composition import App
    from tht.options import Invocation

app = typer.Typer(
    name="catalog",
    help="The Metadata Catalog of the workspace database: sync, show, relationships, curation.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
relationship_app = typer.Typer(
    name="relationship",
    help="Logical Relationships: add, delete, restore, reconstruct (human-only).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(relationship_app, name="relationship")
register_sensitive(app)  # sensitive suggest | set, sample (tht/commands/catalog_sensitive.py)
register_values(app)  # values rebuild | find (tht/commands/catalog_values.py)
register_describe(app)  # describe, consolidate, runs (tht/commands/catalog_describe.py)
register_generate(app)  # generate [--unlock] (tht/commands/catalog_generate.py)

ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Why.", show_default=False)]


def _names(values: list[str] | None) -> list[str]:
    """Repeated options, each possibly a comma-separated list."""
    return [n.strip() for v in values or [] for n in v.split(",") if n.strip()]


def _rows(entries: list[dict[str, str]]) -> str:
    from tht.render import render_table

    if not entries:
        return "no relationships"
    rows = [[e["id"], e["from"], e["to"], e["origin"], e["state"]] for e in entries]
    return render_table(["id", "from", "to", "origin", "state"], rows)


# --------------------------------------------------------------------------- reading


@app.command("sync")
def sync_cmd(
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="TABLE",
            help="Synchronize only these tables (repeat, or a,b); default: Synchronize All.",
            show_default=False,
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """A Catalog Sync Run: observe the database, follow it, generate relationships."""
    from tht import catalog_runtime
    from tht.evidence_runtime import progress_reporter

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    wanted = _names(scope) if scope is not None else None
    # one bar (rich allows one live display): the tables introspected, then the index's stages
    with progress_reporter(enabled=not inv.json, label="sync") as bar:

        def progress(done: int, total: int, table: str) -> None:
            if bar is not None:
                bar(table, done, total)

        report = catalog_runtime.sync(app_, scope=wanted, progress=progress, index_progress=bar)
    for run in report.interrupted:
        inv.note(f"note: run {run} had been left active by a process that ended: interrupted")
    body = report.to_json()
    caps = ", ".join(f"{k} {v}" for k, v in body["capabilities"].items())
    how = " (structure unchanged: introspection skipped)" if report.run.unchanged else ""
    human = (
        f"run {body['run']} {body['status']}{how}: {body['tables']} table(s), "
        f"{body['columns']} column(s), {body['relationships']} active relationship(s)\n"
        f"capabilities: {caps}"
    )
    inv.emit(body, human)


@app.command("show")
def show_cmd(
    table: Annotated[
        str | None, typer.Argument(metavar="[TABLE]", help="One Catalog Table.", show_default=False)
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Catalog Tables and Columns, with Catalog Freshness."""
    from modules.catalog import show_json
    from tht import catalog_runtime

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    state = catalog_runtime.open_catalog(app_).load().state
    body = show_json(state, table, catalog_runtime.current_version(app_))
    # the tables are rendered only for people (1,000 tables: ~8 s of rich under --json)
    inv.emit(body, None if inv.json else _show_text(body))


def _show_text(body: dict[str, Any]) -> str:
    from tht.render import render_table, visible

    fresh = body["freshness"]
    if not body["tables"]:
        return f"the catalog is empty (freshness: {fresh['state']}); run `tht catalog sync`"
    parts = []
    for table in body["tables"]:
        state = fresh["tables"].get(table["name"], {}).get("state", "unknown")
        title = f"{table['name']} ({state})"
        if table["description"]:
            title += f": {table['description']}"
        if table["generated"] is not None:
            title += f" [generated: {_generated_text(table['generated'])}]"
        rows = [
            [
                c["name"],
                c["type"],
                "pk" if c["pk"] else "",
                "sensitive" if c["sensitive"] else "",
                c["description"],
                _generated_text(c["generated"]),
            ]
            for c in table["columns"]
        ]
        parts.append(visible(title))
        parts.append(
            render_table(["column", "type", "key", "flags", "description", "generated"], rows)
        )
    parts.append(f"freshness: {fresh['state']}")
    return "\n".join(parts)


def _generated_text(generated: dict[str, Any] | None) -> str:
    if generated is None:
        return ""
    mark = " (non-generatable)" if generated["non_generatable"] else ""
    mark += " (pending)" if generated["pending"] else ""
    return f"{generated['text']}{mark}"


@app.command("relationships")
def relationships_cmd(
    include_deleted: Annotated[
        bool,
        typer.Option("--include-deleted", help="Also the logically deleted ones (exclusions)."),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The Effective Relationship Map."""
    from modules.catalog import relationship_map
    from tht import catalog_runtime

    inv = invocation(workspace, json_, debug)
    state = catalog_runtime.open_catalog(open_for(inv)).load().state
    entries = relationship_map(state, include_deleted=include_deleted)
    inv.emit(entries, _rows(entries))


@app.command("status")
def status_cmd(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Catalog Sync Runs and Catalog Freshness."""
    from modules.catalog import status_json
    from tht import catalog_runtime
    from tht.render import render_table

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    state = catalog_runtime.open_catalog(app_).load().state
    body = status_json(state, catalog_runtime.current_version(app_))
    rows = [
        [
            r["run"],
            r["status"] + (" (unchanged)" if r["unchanged"] else ""),
            "all" if r["scope"] is None else ",".join(r["scope"]),
            r["started"],
            r["reason"] or "",
        ]
        for r in body["runs"]
    ]
    fresh = body["freshness"]
    lines = [render_table(["run", "status", "scope", "started", "reason"], rows)] if rows else []
    lines.append(f"freshness: {fresh['state']}")
    if fresh["stale_tables"]:
        lines.append("stale: " + ", ".join(fresh["stale_tables"]))
    inv.emit(body, "\n".join(lines))


@app.command("verify")
def verify_cmd(
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Human-only: quarantine the damage, re-anchor; recorded as ledger_repaired.",
        ),
    ] = False,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (with --repair).")] = None,
    accept_rollback: AcceptRollbackOpt = False,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Verify the catalog ledger (chain, anchor, snapshots, fold, signatures, and the witness of
    the longest ledger this workspace's tht verified: a rollback is ``rolled_back``); exit 7 on
    damage. ``--repair --reason T --as human:ID`` is the explicit repair (never done by a
    write); ``--accept-rollback --as human:ID`` accepts a rollback without recording it."""
    from kernel.errors import NotFoundError, UsageError
    from kernel.ledger_witness import WitnessedLedger
    from tht import catalog_runtime

    inv = invocation(workspace, json_, debug)
    if repair and accept_rollback:
        raise UsageError("--repair and --accept-rollback are two ways out: choose one")
    who = None
    if repair:
        who = human_actor(actor)
    if accept_rollback:
        who = human_actor(actor)
    app_ = open_for(inv)
    catalog = catalog_runtime.open_catalog(app_)
    ledger = catalog.caps.ledger
    assert isinstance(ledger, WitnessedLedger)
    if not ledger.exists() and ledger.read_anchor() is None and ledger.problem(0) is None:
        raise NotFoundError("this workspace has no Metadata Catalog yet: run `tht catalog sync`")
    if accept_rollback:
        from tht.witness_runtime import accept_rollback as accept
        from tht.witness_runtime import signed_human

        assert who is not None
        report = accept(ledger, catalog.verify, signed_human(app_, who))
        inv.emit(
            {**report.to_json(), "accepted": True},
            f"accepted by {who}: {report.events} event(s), head {report.head}",
        )
        if not report.ok:
            raise typer.Exit(7)
        return
    if repair:
        from modules.catalog.repair import repair_catalog

        assert who is not None
        before, after = repair_catalog(catalog, actor=who, reason=reason or "")
        body = {
            "repaired": True,
            "problems": [p.to_json() for p in before.problems],
            "last_seq": after.state.last_seq,
            "head": after.head,
        }
        inv.emit(
            body,
            f"repaired: {len(before.problems)} problem(s) recorded as ledger_repaired at seq "
            f"{after.state.last_seq}",
        )
        return
    report = catalog.verify()
    body = report.to_json()
    lines = [f"{'ok' if report.ok else 'DAMAGED'}: {report.events} event(s), head {report.head}"]
    lines += [f"  {p.code} (seq {p.seq}): {p.message}" for p in report.problems]
    inv.emit(body, "\n".join(lines))
    if not report.ok:
        raise typer.Exit(7)


@app.command("reindex")
def reindex_cmd(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Rebuild the schema index (schema linking's projection) from the catalog."""
    from kernel.errors import UsageError
    from tht import catalog_runtime
    from tht.evidence_runtime import progress_reporter
    from tht.schema_runtime import reindex_schema

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    # a projection is written from the verified ledger, never the fold cache (exit 7 if damaged)
    view = catalog_runtime.schema_view(app_, verified=True)
    if view is None:
        raise UsageError("catalog not synced: run `tht catalog sync` first")
    with progress_reporter(enabled=not inv.json, label="indexing") as bar:
        body = reindex_schema(app_, view, progress=bar)
    inv.emit(body, ", ".join(f"{k} {v}" for k, v in body.items()))


# --------------------------------------------------------------------------- curation


def _curate(inv: Invocation, actor: str | None) -> tuple[str, App, Catalog, LoadedCatalog]:
    """The human actor, checked before anything is read; the catalog verified for a write."""
    from tht import catalog_runtime

    who = human_actor(actor)
    app_ = open_for(inv)
    catalog = catalog_runtime.open_catalog(app_)
    return who, app_, catalog, catalog.load_for_write()


@relationship_app.command("add")
def add_cmd(
    from_: Annotated[str, typer.Argument(metavar="FROM", help="table.column (or table.(a,b))")],
    to: Annotated[str, typer.Argument(metavar="TO", help="table.column (or table.(a,b))")],
    rationale: Annotated[
        str, typer.Option("--rationale", help="Why the join holds.", show_default=False)
    ] = "",
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Add a Manual Relationship between two Catalog Columns."""
    from modules.catalog import plan_add

    inv = invocation(workspace, json_, debug)
    who, _, catalog, loaded = _curate(inv, actor)
    draft = plan_add(loaded.state, from_, to, rationale=rationale, actor=who)
    body = _record(catalog, loaded, [draft])
    rid = draft.subject
    inv.emit({**body, "id": rid}, f"added relationship {rid} (manual)")


@relationship_app.command("delete")
def delete_cmd(
    rid: Annotated[str, typer.Argument(metavar="ID", help="A Logical Relationship id.")],
    permanent: Annotated[
        bool,
        typer.Option(
            "--permanent", help="Remove it completely (a reconstruction may recreate it)."
        ),
    ] = False,
    reason: ReasonOpt = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Logical (default: kept as an exclusion) or Permanent Relationship Deletion."""
    from modules.catalog import plan_delete

    inv = invocation(workspace, json_, debug)
    who, _, catalog, loaded = _curate(inv, actor)
    draft = plan_delete(loaded.state, rid, permanent=permanent, reason=reason, actor=who)
    body = _record(catalog, loaded, [draft])
    mode = "permanently" if permanent else "logically"
    inv.emit({**body, "id": rid}, f"deleted relationship {rid} {mode}")


@relationship_app.command("restore")
def restore_cmd(
    rid: Annotated[str, typer.Argument(metavar="ID", help="A logically deleted relationship.")],
    reason: ReasonOpt = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Relationship Restore: reactivate a logically deleted relationship."""
    from modules.catalog import plan_restore

    inv = invocation(workspace, json_, debug)
    who, _, catalog, loaded = _curate(inv, actor)
    draft = plan_restore(loaded.state, rid, reason=reason or "", actor=who)
    body = _record(catalog, loaded, [draft])
    inv.emit({**body, "id": rid}, f"restored relationship {rid}")


@relationship_app.command("reconstruct")
def reconstruct_cmd(
    reason: ReasonOpt = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Relationship Reconstruction: add the missing generated relationships."""
    from modules.catalog import plan_reconstruct

    inv = invocation(workspace, json_, debug)
    who, _, catalog, loaded = _curate(inv, actor)
    drafts = plan_reconstruct(loaded.state, reason=reason or "", actor=who)
    body = _record(catalog, loaded, drafts)
    added = [d.subject for d in drafts[1:]]
    inv.emit({**body, "generated": added}, f"reconstruction: {len(added)} relationship(s) added")


@app.command("cleanup")
def cleanup_cmd(
    table: Annotated[
        list[str] | None,
        typer.Option("--table", metavar="T", help="A Catalog Table (repeat).", show_default=False),
    ] = None,
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column", metavar="T.C", help="A Catalog Column (repeat).", show_default=False
        ),
    ] = None,
    relationship: Annotated[
        list[str] | None,
        typer.Option(
            "--relationship",
            metavar="ID",
            help="A Catalog Relationship (repeat).",
            show_default=False,
        ),
    ] = None,
    reason: ReasonOpt = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Catalog Metadata Cleanup: remove selected tables, columns, Catalog Relationships."""
    from modules.catalog import plan_cleanup

    inv = invocation(workspace, json_, debug)
    who, _, catalog, loaded = _curate(inv, actor)
    draft = plan_cleanup(
        loaded.state,
        tables=_names(table),
        columns=_names(column),
        relationships=_names(relationship),
        reason=reason,
        actor=who,
    )
    body = _record(catalog, loaded, [draft])
    inv.emit(body, "cleaned up; the next `tht catalog sync` observes the database again")


def _record(catalog: Catalog, loaded: LoadedCatalog, drafts: list[EventDraft]) -> dict[str, Any]:
    after = catalog.append(loaded, drafts)
    first = loaded.state.last_seq + 1
    return {
        "seq": after.state.last_seq,
        "events": [{"seq": first + i, "type": d.type} for i, d in enumerate(drafts)],
        "head": after.head,
    }
