"""Module loggers that cost nothing until ``--debug`` turns them on.

I/O code writes ``logger = get_logger(__name__)`` and logs what it swallows (a cache it could not
write, a checkpoint it did not trust) with ``logger.debug(...)``. The standard ``logging`` package
is imported only once debugging is enabled: ``tht session status`` is measured against
``tht --version``, and importing ``logging`` alone costs a few milliseconds there.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["enable_debug", "get_logger"]

_enabled = False


class _Logger:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def debug(self, message: str, *args: Any) -> None:
        if _enabled:
            import logging

            logging.getLogger(self.name).debug(message, *args)

    def warning(self, message: str, *args: Any) -> None:
        if _enabled:
            import logging

            logging.getLogger(self.name).warning(message, *args)


def get_logger(name: str) -> _Logger:
    return _Logger(name)


def enable_debug() -> None:
    """Send every tht logger's records to stderr (``--debug``)."""
    global _enabled
    import logging

    if not _enabled:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("debug %(name)s: %(message)s"))
        for name in ("kernel", "modules", "tht"):
            root = logging.getLogger(name)
            root.setLevel(logging.DEBUG)
            root.addHandler(handler)
    _enabled = True
