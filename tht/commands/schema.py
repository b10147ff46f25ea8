"""``tht schema link QUESTION [--limit N]``: schema linking (F4; docs/schema-linking.md).

``--json`` prints exactly ``{"tables": [{"name", "score"}], "columns": [{"table", "column",
"score"}], "joins": [{"from", "to"}]}`` (ARCHITECTURE §6); people get rich tables. Exit 2 when
no database is bound, 6 when the catalog was never synced or the schema index is missing or
stale (the message names the remedy). The command body imports what it needs (start-up time is
measured against ``tht --version``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(
    name="schema",
    help="Schema linking: the tables, columns and joins a question needs.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@app.command("link")
def link_cmd(
    question: Annotated[str, typer.Argument(help="The question to link to the schema.")],
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=200, help="Tables and columns to return.")
    ] = 10,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Ranked tables and columns for QUESTION, and the join path between the chosen tables."""
    from tht.commands._common import open_for
    from tht.schema_runtime import link_schema

    inv = invocation(workspace, json_, debug)
    body = link_schema(open_for(inv), question, limit=limit)
    inv.emit(body, None if inv.json else render_link(body))


def render_link(body: dict[str, Any]) -> str:
    """The people's form: tables, columns, joins (rich, via tht.render)."""
    from tht.render import render_table

    parts = [
        render_table(
            ["table", "score"], [[t["name"], f"{t['score']:.4f}"] for t in body["tables"]]
        ),
        render_table(
            ["table", "column", "score"],
            [[c["table"], c["column"], f"{c['score']:.4f}"] for c in body["columns"]],
        ),
    ]
    joins = body["joins"]
    if joins:
        parts.append(render_table(["from", "to"], [[j["from"], j["to"]] for j in joins]))
    else:
        parts.append("joins: none (one table, or no active relationship connects them)")
    return "\n".join(p.rstrip("\n") for p in parts)
