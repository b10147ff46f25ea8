"""``tht catalog sensitive suggest | set`` and ``tht catalog sample`` (docs/catalog.md).

``suggest`` and ``sample`` are open to anyone: a suggestion only proposes (the offline pre-pass,
and the setup-level generation model when one is configured, tht/sensitive_model_runtime.py; its
run is recorded with aggregate counts, by ``module:catalog``), a sample shows synthetic values
for every flagged column. ``set`` is human-only curation (``--as human:<id>``; refused when
``THT_ACTOR=agent``; signed in signed mode), one batch per command. Registered on the
``catalog`` app by :func:`register`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tht.options import ActorOpt, DebugOpt, JsonOpt, WorkspaceOpt, invocation

sensitive_app = typer.Typer(
    name="sensitive",
    help="Sensitive Data Flags: suggest (offline pre-pass and model), set (human-only).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def register(catalog_app: typer.Typer) -> None:
    catalog_app.add_typer(sensitive_app, name="sensitive")
    catalog_app.command("sample")(sample_cmd)


@sensitive_app.command("suggest")
def suggest_cmd(
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="TABLE",
            help="Only these tables (repeat, or a,b); default: the whole catalog.",
            show_default=False,
        ),
    ] = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Only the deterministic pre-pass (names and types, no model), even with a "
            "generation model configured.",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """A Sensitive Data Suggestion Run: propose flags from structural metadata (the offline
    pre-pass, and the configured generation model unless --offline); nothing is saved but the
    run's counts (save a proposal with `tht catalog sensitive set`)."""
    from modules.catalog.sensitive_flags import plan_suggestion_run, suggest
    from tht import catalog_runtime
    from tht.commands._common import open_for
    from tht.commands.catalog import _names

    inv = invocation(workspace, json_, debug)
    wanted = _names(scope) if scope is not None else None
    if not offline:
        from tht.sensitive_model_runtime import configured_setup

        setup = configured_setup()
        if setup is not None:
            _suggest_with_model(inv, open_for(inv), wanted, setup)
            return
        inv.note(
            "note: no generation model configured (catalog.generation_profile in the user "
            "config file): the offline pre-pass runs (names and types only)"
        )
    app_ = open_for(inv)
    catalog = catalog_runtime.open_catalog(app_)
    loaded = catalog.load_for_write()
    suggestion = suggest(loaded.state, wanted)
    run = catalog.caps.ids.session_id(catalog.caps.clock.now())
    after = catalog.append(loaded, [plan_suggestion_run(run, suggestion)])
    body: dict[str, Any] = {"run": run, **suggestion.to_json(), "seq": after.state.last_seq}
    for proposal in body["proposals"]:  # the model run's shape: each proposal's source
        proposal["source"] = "offline"
    inv.emit(body, _suggest_text(body))


def _suggest_with_model(inv: Any, app_: Any, wanted: list[str] | None, setup: Any) -> None:
    """The model run (tht/sensitive_model_runtime.py), a warning when batches failed."""
    from tht.evidence_runtime import progress_reporter
    from tht.sensitive_model_runtime import suggest as model_suggest

    with progress_reporter(enabled=not inv.json, label="suggest") as bar:

        def progress(done: int, total: int, table: str) -> None:
            if bar is not None:
                bar(table, done, total)

        body = model_suggest(app_, wanted, setup, progress=progress)
    if body["failed_batches"] or body["skipped_batches"]:
        inv.note(
            f"warning: {body['failed_batches']} of {body['batches']} model batch(es) failed "
            f"({body['failure']}), {body['skipped_batches']} not asked: their columns have the "
            "offline pre-pass only"
        )
    inv.emit(body, _suggest_text(body))


def _suggest_text(body: dict[str, Any]) -> str:
    from tht.render import render_table

    if body["mode"] == "model":
        how = (
            f"offline pre-pass + model {body['profile']}, {body['answered_batches']}/"
            f"{body['batches']} batch(es) answered"
        )
    else:
        how = "offline pre-pass"
    lines = [
        f"run {body['run']} ({how}): {body['considered']} column(s) considered, "
        f"{body['proposed']} proposed, {body['already_flagged']} already flagged"
    ]
    proposals = body["proposals"]
    if proposals:
        rows = [
            [
                f"{p['table']}.{p['column']}",
                p["type"],
                p["rule"],
                f"{p['confidence']:.2f}",
                p["evidence"],
                " + ".join(str(s["source"]) for s in p.get("sources", [p])),
            ]
            for p in proposals
        ]
        headers = ["column", "type", "rule", "confidence", "why", "source"]
        lines.append(render_table(headers, rows))
        refs = " ".join(f"{p['table']}.{p['column']}" for p in proposals)
        lines.append(
            f"save (a human): tht catalog sensitive set {refs} --on --reason TEXT --as human:ID"
        )
    return "\n".join(lines)


@sensitive_app.command("set")
def set_cmd(
    columns: Annotated[
        list[str], typer.Argument(metavar="TABLE.COLUMN...", help="The Catalog Columns.")
    ],
    on: Annotated[
        bool | None,
        typer.Option("--on/--off", help="Sensitive (--on) or not (--off).", show_default=False),
    ] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why.", show_default=False)] = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Set (--on) or clear (--off) the Sensitive Data Flag of Catalog Columns (human-only)."""
    from kernel.errors import UsageError
    from modules.catalog.sensitive_flags import plan_flags
    from tht.commands._common import open_for as catalog_app
    from tht.commands.catalog import _curate, _names, _record

    inv = invocation(workspace, json_, debug)
    if on is None:
        raise UsageError("say what to save: --on (sensitive) or --off (not sensitive)")
    who, _, catalog, loaded = _curate(inv, actor)
    plan = plan_flags(loaded.state, _names(columns), sensitive=on, reason=reason, actor=who)
    body = {**_record(catalog, loaded, plan.drafts), "changed": plan.changed}
    body["unchanged"] = plan.unchanged
    if plan.changed:  # a flagged column's values must not stay in the value index
        from tht.value_index_runtime import refresh_after_flags

        refresh_after_flags(catalog_app(inv), inv)
    word = "sensitive" if on else "not sensitive"
    human = f"{len(plan.changed)} column(s) now {word}: {', '.join(plan.changed)}"
    if plan.unchanged:
        human += f"\nalready {word}: {', '.join(plan.unchanged)}"
    inv.emit(body, human)


def sample_cmd(
    table: Annotated[str, typer.Argument(metavar="TABLE", help="A Catalog Table.")],
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """A Catalog Sample: at most 5 rows, synthetic values for sensitive columns; never kept."""
    from tht import catalog_runtime
    from tht.commands._common import open_for

    inv = invocation(workspace, json_, debug)
    body = catalog_runtime.sample(open_for(inv), table)
    inv.emit(body, _sample_text(body))


def _sample_text(body: dict[str, Any]) -> str:
    from tht.render import render_table

    names = [c["name"] + (" (synthetic)" if c["sensitive"] else "") for c in body["columns"]]
    rows = [["NULL" if v is None else v for v in row] for row in body["rows"]]
    lines = [render_table(names, rows, title=body["table"]) if names else body["table"]]
    more = " (the table has more)" if body["truncated"] else ""
    lines.append(f"{body['row_count']} row(s){more}; not saved")
    if body["synthetic"]:
        lines.append(
            f"synthetic values (Sensitive Data Flag): {', '.join(body['synthetic'])} — "
            "shape-preserving, never the real values"
        )
    return "\n".join(lines)
