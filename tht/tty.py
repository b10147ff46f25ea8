"""Reading a reviewer's passphrase from the controlling terminal, and from nowhere else.

Why only ``/dev/tty``: the agent tht constrains runs in the same account and can set environment
variables, pipe stdin and read files. A passphrase accepted from any of those would soon be kept
in one (a script, a ``.env``, a shell history) where the agent can read it. An agent's
non-interactive shell has no controlling terminal, so opening ``/dev/tty`` fails there and a
human-only decision is refused. ``getpass`` is not used because it falls back to stdin.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import termios

from kernel.errors import PolicyError, UsageError

__all__ = ["read_passphrase"]

_TTY = "/dev/tty"
_MAX_BYTES = 4096
_NO_TERMINAL = {errno.ENXIO, errno.ENOENT, errno.EACCES, errno.ENODEV, errno.ENOTTY, errno.EPERM}


def read_passphrase(prompt: str, *, confirm: bool = False) -> str:
    """One line typed at the controlling terminal with echo off (twice with ``confirm``).

    Raises :class:`~kernel.errors.PolicyError` (exit 5) when this process has no controlling
    terminal, :class:`~kernel.errors.UsageError` (exit 2) for an empty passphrase or when the
    two entries differ.
    """
    fd = _open_tty()
    try:
        first = _read_line(fd, prompt)
        if not first:
            raise UsageError("empty passphrase; type the reviewer's passphrase")
        if confirm and _read_line(fd, "Repeat the passphrase: ") != first:
            raise UsageError("the two passphrases differ; nothing was changed, run it again")
        return first
    finally:
        os.close(fd)


def _open_tty() -> int:
    try:
        return os.open(_TTY, os.O_RDWR | os.O_NOCTTY)
    except OSError as err:
        if err.errno in _NO_TERMINAL:
            raise PolicyError(
                "a human-only decision needs the reviewer's passphrase typed at a terminal, and "
                "this process has none (agents never do); run the command yourself in a terminal"
            ) from err
        raise


def _read_line(fd: int, prompt: str) -> str:
    """Echo off *before* the prompt appears, so nothing typed after it is ever shown."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error as err:
        raise PolicyError(
            f"{_TTY} is not a terminal; a human-only decision needs the reviewer's passphrase "
            "typed at a terminal"
        ) from err
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
    try:
        os.write(fd, prompt.encode("utf-8"))
        data = _read_until_newline(fd)
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, saved)
        with contextlib.suppress(OSError):
            os.write(fd, b"\n")  # the typed newline was not echoed
    if not data.endswith(b"\n"):
        raise UsageError("no passphrase was typed (end of input at the terminal)")
    try:
        return data.rstrip(b"\r\n").decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError("the passphrase is not valid UTF-8") from err


def _read_until_newline(fd: int) -> bytes:
    data = b""
    while not data.endswith(b"\n") and len(data) < _MAX_BYTES:
        chunk = os.read(fd, _MAX_BYTES - len(data))
        if not chunk:  # end of input (Ctrl-D on an empty line)
            break
        data += chunk
    return data
