"""The ``routing:`` section of the user config file, read on the hook's hot path.

``tht.paths.user_config_file()`` is YAML, and importing a YAML parser costs more than the whole
hook. So the hook reads a JSON copy of the section from the data folder
(``<data>/cache/routing-config.json``), keyed by the config file's size and modification time;
when the key no longer matches, it parses the YAML once (slow path) and rewrites the copy.

Keys used here (the evaluator adds ``routing.evaluator`` on its side)::

    routing:
      catalog: ~/.local/share/tht/routing/catalog.pack   # compiled catalog
      telemetry:
        enabled: true                                      # append the RoutingEvaluator event
      evaluator: {...}                                     # owned by modules/routing/evaluator

Standard library only, except for that one-time YAML parse.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["load_routing_section"]


def _cache_file(data_dir: str) -> str:
    return os.path.join(data_dir, "cache", "routing-config.json")


def load_routing_section(config_file: str, data_dir: str) -> dict[str, Any]:
    """The ``routing`` mapping of the user config ({} when absent or unreadable)."""
    try:
        stat = os.stat(config_file)
    except OSError:
        return {}
    key = f"{stat.st_size}:{stat.st_mtime_ns}:{config_file}"
    cache = _cache_file(data_dir)
    try:
        with open(cache, encoding="utf-8") as handle:
            cached = json.load(handle)
        if isinstance(cached, dict) and cached.get("key") == key:
            section = cached.get("routing")
            return section if isinstance(section, dict) else {}
    except (OSError, ValueError):
        pass
    section = _parse(config_file)
    try:
        from pathlib import Path

        from kernel.atomic import atomic_write

        data = json.dumps({"key": key, "routing": section}).encode("utf-8")
        atomic_write(Path(cache), data, durable=False)
    except (OSError, TypeError, ValueError):
        pass
    return section


def _parse(config_file: str) -> dict[str, Any]:
    try:
        import yaml

        with open(config_file, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except Exception:  # a broken config never breaks the hook
        return {}
    section = data.get("routing") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return {}
    copied: dict[str, Any] = json.loads(json.dumps(section, default=str))
    return copied
