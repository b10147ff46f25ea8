"""The state of one guard analysis, and the fail-closed fallback.

:class:`Ctx` carries what the analysis of one tool call has learnt so far: the variables the
command assigned, the working directories it moved through, the workspaces it named, the files
already read and a step counter that bounds the work. :class:`Deny` carries a refusal out of
any depth; :class:`Glob` marks an argument whose value is a pattern. :func:`fallback` is the
rule for whatever cannot be followed: refuse when its text mentions a human-only command or a
protected path. Standard library only.
"""

from __future__ import annotations

import os
import re

from tht.hooks.guard_rules import MAX_DEPTH, MAX_STEPS, RAW_HUMAN, RAW_PROTECTED, REASON_CLOSED


class Deny(Exception):
    """Raised with the refusal reason; stops the analysis."""


class Glob(str):
    """An argument with unquoted glob or brace characters (its value is a pattern)."""


class Ctx:
    """What the analysis of one tool call knows; :meth:`child` scopes a subshell's changes."""

    def __init__(self, cwd: str, raw: str) -> None:
        self.vars: dict[str, list[str | None]] = {}
        self.cwds = [cwd]
        self.cwd_unknown = False
        self.raw = raw
        ws = os.environ.get("THT_WORKSPACE")
        self.workspaces = [absolute(ws, cwd) if ws else cwd]
        self.steps = 0
        self.seen_files: set[str] = set()

    @property
    def cwd(self) -> str:
        return self.cwds[-1]

    def child(self) -> Ctx:
        new = Ctx.__new__(Ctx)
        new.__dict__.update(self.__dict__)
        new.vars = {k: list(v) for k, v in self.vars.items()}
        new.cwds = list(self.cwds)
        return new

    def tick(self, depth: int) -> None:
        self.steps += 1
        if depth > MAX_DEPTH or self.steps > MAX_STEPS:
            raise Deny("tht: the command is nested too deeply to inspect; refused (fail closed).")


def absolute(path: str, cwd: str) -> str:
    """``path`` made absolute against ``cwd`` (``~`` expanded, lexically normalised)."""
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def suspicious(text: str) -> bool:
    """Whether raw text mentions a human-only command or a protected path (quotes ignored)."""
    flat = re.sub(r"[\"'\\`]", "", text)
    return bool(RAW_HUMAN.search(flat) or RAW_PROTECTED.search(flat))


def fallback(text: str, ctx: Ctx, why: str) -> None:
    """Fail closed on what cannot be followed: refuse when ``text`` is :func:`suspicious`."""
    if suspicious(text):
        raise Deny(REASON_CLOSED.format(why=why))
