"""``tht session show [SESSION]``: the session document before finalization, as Markdown.

Registered in tht/cli.py as ``session show`` (the document itself: tht/session_document.py).
Only typer and the standard library at top level.
"""

from __future__ import annotations

from tht.commands._common import open_for, session_for
from tht.options import DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation

__all__ = ["show"]


def show(
    session: SessionArg = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The session as a Markdown document: question, lifecycle, F1–F8 timeline, decisions
    (retracted and stale ones marked), artifacts with their verified content, open reviews.
    --json: {"session", "markdown"}."""
    from kernel.errors import ThtError
    from tht.session_document import render_session_document

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    sid = session_for(app_, session)
    loaded = app_.kernel.load(sid)
    state = loaded.state
    contents: dict[str, bytes] = {}
    errors: dict[str, str] = {}
    for record in state.artifacts:
        if record.status != "effective":
            continue
        try:  # verified against the SHA-256 the ledger recorded; a tampered file is not shown
            contents[record.name] = app_.kernel.artifact(sid, record.name)
        except ThtError as err:
            errors[record.name] = err.message
    markdown = render_session_document(state, loaded.head, contents, errors)
    inv.emit({"session": sid, "markdown": markdown}, markdown)
