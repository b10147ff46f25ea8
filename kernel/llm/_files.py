"""Small-file helpers shared by the breaker and the cache: read a JSON file, replace it atomically.

Both are best effort by design (spec 000 §19.3): a failure to read means "no state", a failure to
write is ignored — the caller's decision never depends on the file system working.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["read_json", "replace_json"]


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
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(value, handle, ensure_ascii=False, separators=(",", ":"))
            handle.flush()
            with contextlib.suppress(OSError):
                os.fsync(handle.fileno())
        Path(tmp).replace(path)
        return True
    except (OSError, TypeError, ValueError):
        if tmp is not None:
            with contextlib.suppress(OSError):
                Path(tmp).unlink()
        return False
