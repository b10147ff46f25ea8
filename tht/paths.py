"""Where tht keeps per-user files (never inside the repository, never a hard-coded machine path).

- data folder: ``$THT_HOME`` if set, else ``$XDG_DATA_HOME/tht``, else ``~/.local/share/tht``.
  Holds the routing hook log, the analytics database and its HMAC key, evaluator breaker and cache.
- config file: ``$THT_CONFIG`` if set, else ``$XDG_CONFIG_HOME/tht/config.yaml``, else
  ``~/.config/tht/config.yaml``.

Standard library only: the routing hook imports this on its hot path.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["hook_log_file", "user_config_file", "user_data_dir"]


def user_data_dir() -> Path:
    explicit = os.environ.get("THT_HOME")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_DATA_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".local" / "share"
    return root / "tht"


def user_config_file() -> Path:
    explicit = os.environ.get("THT_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".config"
    return root / "tht" / "config.yaml"


def hook_log_file() -> Path:
    """The JSONL log the routing hook appends one ``RoutingEvaluator`` event per prompt to.

    ``$THT_HOOK_LOG`` overrides it. ``tht analytics scan`` imports it by default.
    """
    explicit = os.environ.get("THT_HOOK_LOG")
    if explicit:
        return Path(explicit).expanduser()
    return user_data_dir() / "logs" / "route-hook.jsonl"
