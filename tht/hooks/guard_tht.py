"""The ``tht`` command line itself: which invocations are human-only.

:func:`check_tht` takes the arguments given to a ``tht`` program (``tht``, ``tht-*``,
``python -m tht``, a script inside the package, code that imports it) and refuses a human-only
verb from :data:`~tht.hooks.guard_rules.HUMAN_ONLY`, or a subcommand it cannot resolve. A
``--workspace`` it names becomes one more workspace to protect. Standard library only.
"""

from __future__ import annotations

import os

from tht.hooks.guard_context import Ctx, Deny, Glob, absolute
from tht.hooks.guard_rules import HUMAN_ONLY, REASON_HUMAN


def tht_name(word: str) -> bool:
    """Whether a program word names tht (``tht``, ``tht.exe``, ``tht-…``), at any path."""
    base = os.path.basename(word)
    return base in ("tht", "tht.exe") or base.startswith("tht-")


def _split_args(args: list[str | None], ctx: Ctx) -> tuple[list[str | None], list[str | None]]:
    """The positional words (lowercased) and the flags; ``None`` where a word is unknown."""
    pos: list[str | None] = []
    flags: list[str | None] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a is None or isinstance(a, Glob):
            pos.append(None)
            flags.append(None)
        elif a.startswith("-") and a != "-":
            flags.append(a)
            if a in ("--workspace", "-w"):
                if i + 1 < len(args) and args[i + 1]:
                    ctx.workspaces.append(absolute(args[i + 1] or "", ctx.cwd))
                i += 1
            elif a.startswith("--workspace="):
                ctx.workspaces.append(absolute(a.split("=", 1)[1], ctx.cwd))
        else:
            pos.append(a.lower())
        i += 1
    return pos, flags


def check_tht(args: list[str | None], ctx: Ctx, prog: str) -> None:
    """Refuse ``prog args`` when it is (or may be) a human-only tht command."""
    pos, flags = _split_args(args, ctx)
    for verbs in HUMAN_ONLY:
        need = [v for v in verbs if not v.startswith("--")]
        head = pos[: len(need)]
        matched = True
        for got, want in zip(head, need, strict=False):
            if got is None:
                raise Deny(
                    f"tht: the subcommand of `{prog}` cannot be resolved statically; a human-only "
                    "command cannot be ruled out, so it is refused (fail closed)."
                )
            if got != want:
                matched = False
                break
        if not matched or len(head) < len(need):
            continue
        option = next((v for v in verbs if v.startswith("--")), None)
        if option and not any(
            f is None or f == option or f.startswith(option + "=") for f in flags
        ):
            continue
        raise Deny(REASON_HUMAN.format(command="tht " + " ".join(verbs)))
