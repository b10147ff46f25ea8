"""Where a reviewer's sealed key lives on this machine, and unlocking it at the terminal.

``<data dir>/keys/<reviewer with ':' as '_'>.key`` (``tht.paths.user_data_dir``; ``$THT_HOME``
overrides it), never inside a workspace: a workspace is shared and versioned, a private key is
not. The file holds the key sealed under the reviewer's passphrase (``kernel.signing``), so
reading it is not enough to sign; still, the folder is 0700 and the file 0600.

A key file is never overwritten: replacing it would silently orphan the key the registry knows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from kernel.errors import ConflictError, NotFoundError, UsageError
from kernel.signing import SigningKey, open_key
from tht.paths import user_data_dir
from tht.tty import read_passphrase

__all__ = ["delete_key", "ensure_absent", "key_path", "save_key", "unlock"]


def key_path(reviewer: str) -> Path:
    """The sealed key file of ``reviewer`` (``human:<id>``) on this machine."""
    from kernel.transitions import check_human

    check_human(reviewer)  # also keeps the file name free of separators
    return user_data_dir() / "keys" / f"{reviewer.replace(':', '_')}.key"


def ensure_absent(reviewer: str) -> None:
    """ConflictError when this machine already has a key file for ``reviewer``."""
    path = key_path(reviewer)
    if path.exists():
        raise _exists(reviewer, path)


def save_key(reviewer: str, sealed: bytes) -> Path:
    """Write a sealed key atomically, 0600 in a 0700 folder; ConflictError if one is there."""
    path = key_path(reviewer)
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.exists():
        raise _exists(reviewer, path)
    from kernel.atomic import atomic_write

    try:  # exclusive: fails when the target exists, no silent overwrite of a reviewer's key
        atomic_write(path, sealed, durable=True, mode=0o600, dir_mode=0o700, exclusive=True)
    except FileExistsError:
        raise _exists(reviewer, path) from None
    return path


def delete_key(reviewer: str) -> None:
    """Remove a key file (used when registering the key it holds failed)."""
    with contextlib.suppress(FileNotFoundError):
        key_path(reviewer).unlink()


def unlock(reviewer: str, *, read: Callable[[str], str] = read_passphrase) -> SigningKey:
    """The reviewer's key, unsealed with the passphrase ``read`` asks for at the terminal.

    NotFoundError when this machine has no key for ``reviewer``; PolicyError (from
    :func:`kernel.signing.open_key`) on a wrong passphrase.
    """
    path = key_path(reviewer)
    try:
        sealed = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(
            f"no reviewer key for {reviewer} on this machine ({path}); create one with "
            f"`tht reviewer add {reviewer}` (set THT_HOME if your keys live elsewhere)"
        ) from None
    key = open_key(sealed, read(f"Passphrase for {reviewer}: "))
    if key.reviewer != reviewer:
        raise UsageError(f"{path} holds the key of {key.reviewer}, not of {reviewer}")
    return key


def _exists(reviewer: str, path: Path) -> ConflictError:
    return ConflictError(
        f"{path} already holds a key for {reviewer}; it is never overwritten. If it is lost or "
        "compromised, have an admin revoke it (`tht reviewer revoke`) and move the file away first"
    )
