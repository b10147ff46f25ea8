"""Helpers shared by the kernel's command groups (standard library only at import time)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kernel.errors import PolicyError, UsageError
from tht.options import Invocation, session_or_env

if TYPE_CHECKING:
    from kernel.workflow_kernel import Applied
    from tht.composition import App

__all__ = ["applied_json", "human_actor", "open_for", "session_for"]


def open_for(inv: Invocation) -> App:
    from tht.composition import open_app

    return open_app(inv.workspace)


def session_for(app: App, session: str | None) -> str:
    from tht.composition import resolve_session

    return resolve_session(app, session_or_env(session))


def human_actor(actor: str | None, *, label: str = "--as") -> str:
    """Human-only commands: refused when the environment says an agent is calling (exit 5).
    ``label`` names where the id was given, for the error (``--as``, or an argument)."""
    if os.environ.get("THT_ACTOR", "").strip().lower() == "agent":
        raise PolicyError(
            "this is a human-only decision and THT_ACTOR=agent says an agent is calling; "
            "a human must run it"
        )
    if actor is None:
        raise UsageError("this decision is human-only: pass --as human:<id>")
    from kernel.transitions import check_human

    return check_human(actor, label=label)


def applied_json(applied: Applied, **extra: Any) -> dict[str, Any]:
    from tht.reviewer_actions import applied_json as body_of

    return body_of(applied, **extra)
