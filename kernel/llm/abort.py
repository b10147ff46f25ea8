"""``AbortSignal``: lets one thread cancel a call another thread is making (spec 000 §15.2, §25).

The transport registers a listener while a call is in flight; :meth:`AbortSignal.abort` (from any
thread, e.g. a host-budget watchdog) cancels the call at once and it fails with
``ProviderError("aborted")``. A signal that is already aborted makes the call fail before any
connection is opened.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable

__all__ = ["AbortSignal"]


class AbortSignal:
    """A one-shot, thread-safe cancellation flag with listeners."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()  # no `threading` import: hooks start fast
        self._aborted = False
        self._listeners: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        """Fire the signal; every listener runs once. Later calls do nothing."""
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Run ``listener`` on abort (at once if already aborted). Returns a remover."""
        with self._lock:
            if not self._aborted:
                self._listeners.append(listener)
                return lambda: self._remove(listener)
        listener()
        return lambda: None

    def _remove(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
