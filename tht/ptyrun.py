"""Run a command with a fresh pseudo-terminal as its controlling terminal (tests, ``make demo``).

A scripted human at a terminal: the command runs in a new session whose controlling terminal is
a new pty, with stdin ``/dev/null`` and stdout/stderr as separate pipes (so ``--json`` output
stays parseable). Each time the terminal shows a prompt ending in ``": "``, the next string of
``typed`` is typed there followed by a newline; once they run out, a prompt gets end-of-input
(Ctrl-D), as a human who has nothing to type would give.

This is not a way around the terminal rule of :mod:`tht.tty`: it knows nothing a human would
not type, so it only helps whoever already knows the passphrase.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import signal
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["TerminalRun", "run_in_terminal"]

_PROMPT_END = b": "
_EOF = b"\x04"


@dataclass(frozen=True)
class TerminalRun:
    """What a command did: exit status (negative: killed by that signal, e.g. on timeout), its
    stdout and stderr, and everything it wrote to the terminal (prompts)."""

    returncode: int
    stdout: str
    stderr: str
    terminal: str
    timed_out: bool = False


def run_in_terminal(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None = None,
    typed: Sequence[str] = (),
    timeout: float = 60,
) -> TerminalRun:
    """Run ``argv`` at a new terminal, typing ``typed`` at its prompts; wait at most ``timeout``
    seconds (then kill its process group)."""
    master, slave = os.openpty()

    def adopt_terminal() -> None:  # in the child, after setsid (start_new_session)
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            pass_fds=(slave,),
            preexec_fn=adopt_terminal,  # the portable way to make the pty the controlling tty
        )
    finally:
        os.close(slave)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        return _drive(proc, master, list(typed), time.monotonic() + timeout)
    finally:
        os.close(master)
        proc.stdout.close()
        proc.stderr.close()


def _drive(
    proc: subprocess.Popen[bytes], master: int, typed: list[str], deadline: float
) -> TerminalRun:
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    buffers: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray(), master: bytearray()}
    open_fds = {out_fd, err_fd, master}
    answered = 0  # terminal bytes already answered: a prompt is only answered once
    timed_out = False
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            break
        ready, _, _ = select.select(list(open_fds), [], [], min(left, 0.5))
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError as err:  # EIO on the master: every slave end is closed
                if err.errno != errno.EIO:
                    raise
                chunk = b""
            if not chunk:
                open_fds.discard(fd)
                continue
            buffers[fd] += chunk
        screen = buffers[master]
        if master in open_fds and len(screen) > answered and screen.endswith(_PROMPT_END):
            answered = len(screen)
            answer = typed.pop(0).encode("utf-8") + b"\n" if typed else _EOF
            with contextlib.suppress(OSError):
                os.write(master, answer)
        if out_fd not in open_fds and err_fd not in open_fds and proc.poll() is not None:
            break  # the command is done; its terminal may stay open in a grandchild
    returncode = proc.wait()
    return TerminalRun(
        returncode=returncode,
        stdout=buffers[out_fd].decode("utf-8", "replace"),
        stderr=buffers[err_fd].decode("utf-8", "replace"),
        terminal=buffers[master].decode("utf-8", "replace"),
        timed_out=timed_out,
    )
