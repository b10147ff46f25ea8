"""Session stores: where ledgers, artifacts and caches live.

``SessionStore`` is the contract every backend passes (``tests/contract/test_session_store.py``);
``FileSystemStore`` is the embedded default (ARCHITECTURE §3.5).
"""

from kernel.store.base import SessionStore
from kernel.store.fs import FileSystemStore

__all__ = ["FileSystemStore", "SessionStore"]
