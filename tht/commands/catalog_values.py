"""``tht catalog values rebuild | find TEXT`` — the value index (docs/catalog.md, issue 14 item 6).

Both are open to anyone: the index is a projection of the database's distinct text values
(sensitive columns never indexed), rebuilt by every sync; ``find`` shows where a value occurs,
as F1's value grounding sees it (each column confirmed against the database).
"""

from __future__ import annotations

from typing import Annotated

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

values_app = typer.Typer(
    name="values",
    help="The value index: which columns hold a value (value grounding for F1).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def register(catalog_app: typer.Typer) -> None:
    catalog_app.add_typer(values_app, name="values")


@values_app.command("rebuild")
def rebuild_cmd(
    workspace: WorkspaceOpt = None, json_: JsonOpt = False, debug: DebugOpt = False
) -> None:
    """Read every indexable column's distinct values (read-only) and write the index."""
    from tht.commands._common import open_for
    from tht.value_index_runtime import rebuild_value_index

    inv = invocation(workspace, json_, debug)
    body = rebuild_value_index(open_for(inv))
    human = (
        f"value index: {body['columns']} column(s), {body['values']} value(s); "
        f"{len(body['skipped_sensitive'])} sensitive column(s) left out"
    )
    if body["truncated"]:
        human += f"\ncapped (more distinct values than kept): {', '.join(body['truncated'])}"
    inv.emit(body, human)


@values_app.command("find")
def find_cmd(
    text: Annotated[str, typer.Argument(help="The value to look up (exact, normalized, fuzzy).")],
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Where TEXT occurs: the index's matches and the columns confirmed in the database."""
    import msgspec

    from kernel.errors import UnavailableError
    from tht.commands._common import open_for
    from tht.value_index_runtime import load_value_index, value_lookup

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    index = load_value_index(app_)
    lookup = value_lookup(app_)
    if index is None or lookup is None:
        raise UnavailableError(
            "no fresh value index (never built, or the catalog changed since): run "
            "`tht catalog values rebuild`",
            details={"reason": "stale_or_missing"},
        )
    matches = [msgspec.to_builtins(m) for m in index.finder().find(text)]
    body = {"text": text, "matches": matches, "columns": list(lookup(text))}
    if not matches:
        inv.emit(body, f"{text!r} occurs in no indexed column")
        return
    lines = [
        f"{m['value']!r} ({m['kind']}, {m['score']:g}): {', '.join(m['columns'])}" for m in matches
    ]
    inv.emit(
        body,
        "\n".join(lines) + f"\nconfirmed in the database: {', '.join(body['columns']) or 'none'}",
    )
