"""Evaluator modes and the hot-path read of "is it on?" (spec 000 §17.3–17.4).

Standard library only: the hook imports this on every prompt when the evaluator is enabled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["ENV_PREFIX", "MODES", "Mode", "peek"]

ENV_PREFIX = "MCP_ROUTING_EVALUATOR_"
Mode = Literal["off", "shadow", "observe", "boost-only", "hybrid", "force-evaluate"]
MODES: tuple[Mode, ...] = ("off", "shadow", "observe", "boost-only", "hybrid", "force-evaluate")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def env_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


def peek(section: Mapping[str, Any] | None, env: Mapping[str, str]) -> tuple[bool, str]:
    """``(enabled, mode)`` cheaply. Never raises; an unknown mode reads as ``off``. Disabled
    always means mode ``off``: ``MCP_ROUTING_EVALUATOR_ENABLED=false`` (or ``enabled: false``)
    is the single rollback flag."""
    section = section if isinstance(section, Mapping) else {}
    enabled = section.get("enabled", False) is True
    env_enabled = env_bool(env.get(f"{ENV_PREFIX}ENABLED"))
    if env_enabled is not None:
        enabled = env_enabled
    mode = env.get(f"{ENV_PREFIX}MODE", "").strip() or str(section.get("mode", "shadow"))
    if mode not in MODES:
        mode = "off"
    if not enabled:
        return False, "off"
    return True, mode
