"""Small-file helpers shared by the breaker and the cache: read a JSON file, replace it atomically.

Both are best effort by design (spec 000 §19.3): a failure to read means "no state", a failure to
write is ignored — the caller's decision never depends on the file system working.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel.atomic import atomic_write
from kernel.log import get_logger

__all__ = ["read_json", "replace_json"]

logger = get_logger(__name__)


def read_json(path: Path) -> Any:
    """The file's JSON value, or ``None`` when absent, unreadable or not JSON."""
    try:
        with path.open("rb") as handle:
            return json.load(handle)
    except (OSError, ValueError, RecursionError):
        return None


def replace_json(path: Path, value: Any) -> bool:
    """Write ``value`` to a temporary file beside ``path``, flush and fsync it (best effort),
    then rename it over ``path``. Returns whether the file was replaced; never raises OSError."""
    try:
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        atomic_write(path, data, durable=True, mode=0o600)
        return True
    except (OSError, TypeError, ValueError) as err:
        logger.debug("%s not written: %s", path, err)
        return False
