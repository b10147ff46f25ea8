"""``tht catalog generate [--scope TABLE…] [--missing-only] [--profile P]`` and ``tht catalog
generate --unlock`` (docs/catalog.md "Description Generation Runs").

Open to anyone: a run only proposes (Generated Descriptions, recorded by ``module:catalog``,
become Descriptions only through a human's consolidation). The model is the setup-level
Metadata Generation Model Configuration (``catalog.generation_profile`` in the user config
file, docs/llm.md). Registered on the ``catalog`` app by :func:`register`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation


def register(catalog_app: typer.Typer) -> None:
    catalog_app.command("generate")(generate_cmd)


def generate_cmd(
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="TABLE",
            help="Only these tables (repeat, or a,b); default: the whole catalog.",
            show_default=False,
        ),
    ] = None,
    missing_only: Annotated[
        bool,
        typer.Option(
            "--missing-only",
            help="Only targets without a Generated Description or Description (recovery).",
        ),
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="Another selectable model than catalog.generation_profile.",
            show_default=False,
        ),
    ] = None,
    unlock: Annotated[
        bool,
        typer.Option(
            "--unlock",
            help="Description Generation Unlock: record the run a dead process left active "
            "as interrupted.",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """A Description Generation Run: Generated Descriptions of tables and columns from the
    configured model, saved as they arrive (consolidate them with `tht catalog consolidate`)."""
    from kernel.errors import UsageError
    from tht import generation_runtime
    from tht.commands._common import open_for
    from tht.commands.catalog import _names
    from tht.evidence_runtime import progress_reporter

    inv = invocation(workspace, json_, debug)
    if unlock:
        if scope or missing_only or profile:
            raise UsageError("--unlock takes no other option")
        body = generation_runtime.unlock(open_for(inv))
        inv.emit(
            body,
            f"run {body['run']} recorded interrupted: {body['generated']} generated and "
            f"{body['non_generatable']} non-generatable saved, {body['skipped']} not done; "
            "run `tht catalog generate --missing-only` for the rest",
        )
        return
    app_ = open_for(inv)
    wanted = _names(scope) if scope is not None else None
    with progress_reporter(enabled=not inv.json, label="generate") as bar:

        def progress(done: int, total: int, table: str) -> None:
            if bar is not None:
                bar(table, done, total)

        body = generation_runtime.generate(
            app_, scope=wanted, missing_only=missing_only, profile_id=profile, progress=progress
        )
    inv.emit(body, _text(body))


def _text(body: dict[str, Any]) -> str:
    if body["run"] is None:
        return f"nothing to generate: all {body['requested']} target(s) are described already"
    lines = [
        f"run {body['run']} {body['status']} ({body['profile']}, {body['language']}): "
        f"{body['generated']} generated, {body['non_generatable']} non-generatable, "
        f"{body['failed']} failed, {body['skipped']} skipped of {body['requested']}",
        f"log: {body['log']}",
    ]
    if body["failed_targets"]:
        failed = body["failed_targets"]
        more = f" and {len(failed) - 10} more" if len(failed) > 10 else ""
        shown = ", ".join(failed[:10])
        lines.append(f"failed: {shown}{more}; run again with --missing-only")
    lines.append("review them: tht catalog show; consolidate: tht catalog consolidate")
    return "\n".join(lines)
