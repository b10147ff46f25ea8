"""``tht gate check QUESTION``: the SecurityGate alone (ARCHITECTURE §6, docs/disambiguation.md).

It reads ``domain:`` of the workspace's ``workspace.yaml`` and prints the verdict:
``{"verdict": "allow" | "refuse", "masked", "entities": [{"kind", "display", "span"}],
"reason", "narrowing"}``. ``span`` is ``[start, end)`` in QUESTION as given (code points).

A check, not a command that is refused: it exits 0 for ``allow`` and for ``refuse`` alike (the
verdict is the result; a script reads ``verdict``), 2 for a bad ``workspace.yaml``, 3 outside a
workspace. It writes nothing: no session, no ledger line, no cache, no log line; this output is
the only place the refused text is ever shown (it is the person's own question).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(
    name="gate",
    help="The SecurityGate: what a question names that the workspace refuses.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@app.command("check")
def check(
    question: Annotated[str, typer.Argument(help="The question to check.")],
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run the SecurityGate on QUESTION: allow, or refuse with the masked question, the refused
    entities, the reason and what to ask instead. Exit 0 either way; nothing is written."""
    from kernel.workspace import open_workspace
    from modules.disambiguation import SecurityGate

    inv = invocation(workspace, json_, debug)
    if not question.strip():
        from kernel.errors import UsageError

        raise UsageError("QUESTION is empty")
    settings = open_workspace(inv.workspace).settings()
    verdict = SecurityGate(settings.domain_profile()).check(question)
    body: dict[str, Any] = {
        "verdict": verdict.verdict,
        "masked": verdict.masked,
        "entities": [
            {"kind": e.kind, "display": e.display, "span": list(e.span)} for e in verdict.entities
        ],
        "reason": verdict.reason,
        "narrowing": verdict.narrowing,
    }
    if not verdict.refused:
        inv.emit(body, "allow: the question names nothing the workspace refuses")
        return
    lines = [f"refuse: {verdict.reason}"]
    lines += [f"  {e.kind}: {e.display} (at {e.span[0]}–{e.span[1]})" for e in verdict.entities]
    lines += [f"masked: {verdict.masked}", f"instead: {verdict.narrowing}"]
    inv.emit(body, "\n".join(lines))
