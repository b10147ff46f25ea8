"""The JSON bodies of ``tht session list --json`` and ``tht session status --json`` (ARCHITECTURE
§6), shared by the CLI and the web UI's JSON API (``GET /api/sessions[/{id}]``, §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.workflow_kernel import LoadedSession
    from tht.composition import App

__all__ = ["session_rows", "status_body"]


def session_rows(app: App) -> list[dict[str, Any]]:
    """Sessions with lifecycle, current stage and last seq (oldest first)."""
    rows: list[dict[str, Any]] = []
    for session in app.kernel.session_ids():
        loaded, problems = app.kernel.load_for_display(session)
        state = loaded.state
        rows.append(
            {
                "session": session,
                "lifecycle": state.lifecycle,
                "current_stage": state.current_stage,
                "blocked": state.blocked,
                "last_seq": state.last_seq,
                "derived_from": state.derived_from,
                "question": state.question,
                "integrity_ok": not problems,
            }
        )
    return rows


def status_body(
    app: App, session: str, *, at: int | None = None
) -> tuple[dict[str, Any], LoadedSession]:
    """The folded ``SessionState`` (``at``: only up to that seq). Its ``integrity`` is always
    there: ``ok`` false, with the problems, when the ledger does not verify (display only:
    nothing can be appended then)."""
    from tht.projections import status_json

    if at is not None:
        loaded = app.kernel.load(session, at=at)
        problems: list[Any] = []
    else:
        loaded, problems = app.kernel.load_for_display(session)
    body = status_json(loaded.state, loaded.head)
    if at is not None:
        body["session"] = session
        body["at"] = at
    if problems:
        body["integrity"] = {
            "ok": False,
            "problems": [{"code": p.code, "message": p.message, "seq": p.seq} for p in problems],
        }
    return body, loaded
