"""Hint rendering (spec 000 §8.7, §7.3 ``renderRoutingHints``): local, versioned templates only.

The text the agent reads is built from ``data/templates.json`` (Italian or English, by the
prompt's language) and catalog ids, which the catalog build restricts to ``[a-z0-9._-]``. No text
from a model, a provider or the prompt is ever rendered. Standard library only (hot path).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from modules.routing.policy import Hint

__all__ = ["MAX_CONTEXT_CHARS", "TEMPLATES", "render_hints"]

MAX_CONTEXT_CHARS = 10_000

with open(os.path.join(os.path.dirname(__file__), "data", "templates.json"), "rb") as _f:
    TEMPLATES: dict[str, Any] = json.load(_f)


def render_hints(
    hints: Sequence[Hint], *, language: str, context_mode: str = "full", explicit: bool = False
) -> str:
    """The ``additionalContext`` text for at most two hints ("" when there is none)."""
    if not hints:
        return ""
    table = TEMPLATES.get(language) or TEMPLATES["en"]
    shown = list(hints)[:2]
    if context_mode == "light":
        items = ", ".join(table[f"item.{h.kind}"].format(id=h.id) for h in shown)
        return str(table["light"].format(items=items))[:MAX_CONTEXT_CHARS]
    lines = [table["header"]]
    for index, hint in enumerate(shown):
        if hint.kind == "mcp":
            lines.append(table["mcp.supporting"].format(id=hint.id))
        elif index == 0 and explicit:
            lines.append(table["explicit"].format(id=hint.id))
        else:
            key = "skill.primary" if hint.role == "primary" else "skill.secondary"
            lines.append(table[key].format(id=hint.id))
        if hint.agent:
            lines.append(table["agent"].format(agent=hint.agent))
    return "\n".join(lines)[:MAX_CONTEXT_CHARS]
