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
      semantic: {enabled: true, endpoint: ...}             # the semantic rescue (optional)

Standard library only, except for that one-time YAML parse.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["load_routing_section"]


_MAX_BYTES = 1 << 20  # a routing config (or its cached section) is small; more is not one


def _read_regular(path: str) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of sane size, else None — never blocks
    (a FIFO or a device planted where a file is expected is refused, not opened for reading)."""
    from kernel.files import FileRefused, read_regular

    try:
        return read_regular(path, limit=_MAX_BYTES)
    except FileRefused:
        return None


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
    raw = _read_regular(cache)
    try:
        cached = json.loads(raw) if raw is not None else None
        if isinstance(cached, dict) and cached.get("key") == key:
            section = cached.get("routing")
            return section if isinstance(section, dict) else {}
    except ValueError:
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
    raw = _read_regular(config_file)
    if raw is None:
        return {}
    try:
        import yaml

        data = yaml.safe_load(raw.decode("utf-8"))
    except Exception:  # a broken config never breaks the hook
        return {}
    section = data.get("routing") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return {}
    copied: dict[str, Any] = json.loads(json.dumps(section, default=str))
    return copied
