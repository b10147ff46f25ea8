"""``tht catalog describe | consolidate | runs`` (docs/catalog.md "Descriptions").

- ``describe TARGET --text T --reason R --as human:ID`` — a Description written by hand
  (human-only; refused when ``THT_ACTOR=agent``; signed in signed mode).
- ``describe TARGET --propose --text T`` — a Generated Description from an agent (either): a
  proposal, never the Description; a human consolidates it.
- ``consolidate (TARGET… | --all-generated) --reason R --as human:ID`` — a Description
  Consolidation (human-only) of the pending Generated Descriptions, one batch.
- ``runs [--kind sync|generation|suggestion]`` — the catalog's runs with their logs.

A target is ``TABLE`` or ``TABLE.COLUMN``. Registered on the ``catalog`` app by
:func:`register`; command bodies import what they need (start-up time counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.options import ActorOpt, DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from tht.options import Invocation

_REINDEX_NOTE = "note: `tht catalog reindex` brings the schema index (schema linking) up to date"


def register(catalog_app: typer.Typer) -> None:
    catalog_app.command("describe")(describe_cmd)
    catalog_app.command("consolidate")(consolidate_cmd)
    catalog_app.command("runs")(runs_cmd)


def describe_cmd(
    target: Annotated[str, typer.Argument(metavar="TABLE[.COLUMN]", help="The table or column.")],
    text: Annotated[
        str | None, typer.Option("--text", help="The description.", show_default=False)
    ] = None,
    propose: Annotated[
        bool,
        typer.Option(
            "--propose",
            help="Record a Generated Description (a proposal for a human), not the Description.",
        ),
    ] = False,
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            help="With --propose: the text's language (default: the workspace's first).",
            show_default=False,
        ),
    ] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why.", show_default=False)] = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Write the Description of a table or column (human-only), or --propose a Generated
    Description (anyone: a proposal that `tht catalog consolidate` may make the Description)."""
    inv = invocation(workspace, json_, debug)
    # human-only is the form with --as (the guard's entry); --propose never takes one
    if propose and actor is None:
        _propose(inv, target, text, language)
    else:
        _describe(inv, target, text, reason, actor, propose=propose)


def _describe(
    inv: Invocation,
    target: str,
    text: str | None,
    reason: str | None,
    actor: str | None,
    *,
    propose: bool,
) -> None:
    from kernel.errors import UsageError
    from modules.catalog.descriptions import plan_description
    from tht.commands.catalog import _curate, _record

    if propose:
        raise UsageError("a proposal is not a human decision: drop --as (or drop --propose)")
    who, _, catalog, loaded = _curate(inv, actor)
    draft = plan_description(loaded.state, target, text=text, reason=reason, actor=who)
    body = {**_record(catalog, loaded, [draft]), "target": draft.subject}
    inv.note(_REINDEX_NOTE)
    inv.emit(body, f"described {draft.subject}")


def _propose(inv: Invocation, target: str, text: str | None, language: str | None) -> None:
    from kernel.errors import UsageError
    from modules.catalog.descriptions import plan_proposal
    from tht import catalog_runtime
    from tht.commands._common import open_for
    from tht.commands.catalog import _record

    if text is None or not text.strip():
        raise UsageError("the Generated Description is empty: pass --text TEXT")
    app_ = open_for(inv)
    lang = language.strip() if language and language.strip() else app_.settings.languages[0]
    catalog = catalog_runtime.open_catalog(app_)
    loaded = catalog.load_for_write()
    draft = plan_proposal(loaded.state, target, text=text, language=lang)
    body = {**_record(catalog, loaded, [draft]), "target": draft.subject}
    inv.emit(
        body,
        f"proposed a Generated Description of {draft.subject}; a human consolidates it with "
        f"`tht catalog consolidate {draft.subject} --reason TEXT --as human:ID`",
    )


def consolidate_cmd(
    targets: Annotated[
        list[str] | None,
        typer.Argument(metavar="[TARGET...]", help="Tables or columns.", show_default=False),
    ] = None,
    all_generated: Annotated[
        bool,
        typer.Option("--all-generated", help="Every target with a pending Generated Description."),
    ] = False,
    reason: Annotated[str | None, typer.Option("--reason", help="Why.", show_default=False)] = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Description Consolidation (human-only): the pending Generated Descriptions of the
    selection become their Descriptions; the others are skipped, with why."""
    from modules.catalog.descriptions import plan_consolidation
    from tht.commands.catalog import _curate, _names, _record

    inv = invocation(workspace, json_, debug)
    who, _, catalog, loaded = _curate(inv, actor)
    plan = plan_consolidation(
        loaded.state, _names(targets), all_generated=all_generated, reason=reason, actor=who
    )
    body = {
        **_record(catalog, loaded, [plan.draft]),
        "consolidated": plan.consolidated,
        "skipped": plan.skipped,
    }
    inv.note(_REINDEX_NOTE)
    human = f"consolidated {len(plan.consolidated)}: {', '.join(plan.consolidated)}"
    if plan.skipped:
        human += "\nskipped: " + ", ".join(f"{s['target']} ({s['why']})" for s in plan.skipped)
    inv.emit(body, human)


def runs_cmd(
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind", metavar="sync|generation|suggestion", help="Only runs of this kind."
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Catalog Sync Runs, Description Generation Runs and Sensitive Data Suggestion Runs: their
    status and their logs."""
    from kernel.errors import UsageError
    from modules.catalog.projections import RUN_KINDS, runs_json
    from tht import catalog_runtime
    from tht.commands._common import open_for

    inv = invocation(workspace, json_, debug)
    if kind is not None and kind not in RUN_KINDS:
        raise UsageError(f"--kind {kind!r}: expected one of {', '.join(RUN_KINDS)}")
    state = catalog_runtime.open_catalog(open_for(inv)).load().state
    body = runs_json(state, kind)
    inv.emit(body, _runs_text(body))


def _runs_text(body: dict[str, Any]) -> str:
    from tht.render import render_table

    if not body["runs"]:
        return "no runs"
    rows = [
        [r["kind"], r["run"], r["status"], r["started"], r["ended"] or "", r["log"] or ""]
        for r in body["runs"]
    ]
    return render_table(["kind", "run", "status", "started", "ended", "log"], rows)
