"""Programs that write files: which of their arguments are write targets.

:func:`check_writer` is called for every program of
:data:`~tht.hooks.guard_rules.WRITERS` (``cp``, ``rm``, ``tee``, ``sed -i``, ``tar -x``,
``git checkout``, ``find -delete``, …) and checks each target it may write with
:func:`tht.hooks.guard_paths.check_path`; a destructive writer also may not remove or move a
folder that contains a workspace. Standard library only.
"""

from __future__ import annotations

import os

from tht.hooks import guard_programs
from tht.hooks.guard_context import Ctx, absolute
from tht.hooks.guard_paths import check_path
from tht.hooks.guard_rules import DESTRUCTIVE, FIND_ACTIONS, WRITERS

# filters write their files only when run in place (`sed -i`, `jq -o`, …)
_FILTERS = ("sed", "perl", "awk", "gawk", "sort", "jq", "yq", "sd", "sqlite3")
_GIT_WRITES = ("checkout", "restore", "clean", "rm", "mv", "reset", "apply", "am", "stash")
_ARCHIVERS = ("tar", "bsdtar", "unzip", "7z", "cpio")
_COPIERS = ("cp", "mv", "ln", "install", "rsync", "scp")


def check_writer(name: str, args: list[str | None], ctx: Ctx) -> None:
    """Refuse when writer ``name`` run with ``args`` may write one of tht's files."""
    if name in _FILTERS and not _in_place(name, args):
        return
    if name == "find":
        _check_find(args, ctx)
        return
    if name == "git":
        _check_git(args, ctx)
        return
    destructive = name in DESTRUCTIVE
    values = _targets(name, args)
    if name in _ARCHIVERS and _extracts(name, args):
        dest = next(
            (
                args[i + 1]
                for i, a in enumerate(args[:-1])
                if a in ("-C", "--directory", "-d", "-o")
            ),
            ".",
        )
        check_path(dest, ctx, destructive=True)
    for v in values:
        check_path(v, ctx, destructive=destructive)
    if name in _COPIERS:
        _check_copy_into(args, ctx)


def _in_place(name: str, args: list[str | None]) -> bool:
    """Whether a filter (``sed``, ``jq``, …) writes its files in place."""
    return any(
        a is None
        or a.startswith(("-i", "--in-place", "-pi", "-o"))
        or (a[:1] == "-" and "i" in a[1:] and not a.startswith("--"))
        for a in args
    ) or (name in ("sd", "sqlite3"))


def _targets(name: str, args: list[str | None]) -> list[str | None]:
    """The words a writer may write to: its operands, option values and ``dd of=``."""
    values: list[str | None] = []
    for a in args:
        if a is None:
            values.append(None)
        elif name == "dd":
            if a.startswith("of="):
                values.append(a[3:])
        elif a.startswith("-"):
            if "=" in a:
                values.append(a.split("=", 1)[1])
        elif "://" not in a:
            values.append(a)
    return values


def _check_find(args: list[str | None], ctx: Ctx) -> None:
    """``find``: the commands it runs (``-exec``, …), and its start folders when it writes."""
    starts: list[str] = []
    for a in args:
        if a is None or a.startswith(("-", "(", "!")):
            break
        starts.append(a)
    acts = [i for i, a in enumerate(args) if a in FIND_ACTIONS]
    writes = "-delete" in args or any(a and a.startswith(("-fprint", "-fls")) for a in args)
    for i in acts:
        cmd = args[
            i + 1 : i
            + 1
            + next((k for k, a in enumerate(args[i + 1 :]) if a in (";", "+")), len(args))
        ]
        writes = writes or bool(cmd and cmd[0] and os.path.basename(cmd[0]) in WRITERS)
        if cmd:
            guard_programs.check_argv(cmd, ctx, 1)
    if writes:
        for start in starts or ["."]:
            check_path(start, ctx, destructive=True)


def _check_git(args: list[str | None], ctx: Ctx) -> None:
    """``git``: the paths of a subcommand that overwrites or removes work-tree files."""
    k = 0
    while k < len(args) and args[k] is not None and args[k].startswith("-"):  # type: ignore[union-attr]
        k += 2 if args[k] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    sub = args[k] if k < len(args) else None
    if sub not in _GIT_WRITES and not (k < len(args) and sub is None):
        return
    if "-C" in args[:k]:
        ctx = ctx.child()
        ctx.cwds.append(absolute(args[args.index("-C") + 1] or ".", ctx.cwd))
    paths: list[str | None] = [a for a in args[k + 1 :] if a is None or not a.startswith("-")]
    if sub == "clean" and not paths:
        paths = ["."]
    for p in paths:
        check_path(p, ctx, destructive=True)


def _check_copy_into(args: list[str | None], ctx: Ctx) -> None:
    """``cp a b dir/``: each source lands at ``dir/<name>``, which must not be protected."""
    plain = [a for a in args if a is not None and not a.startswith("-")]
    if len(plain) < 2:
        return
    dest = plain[-1]
    if os.path.isdir(absolute(dest, ctx.cwd)):
        for src in plain[:-1]:
            base = os.path.basename(os.path.normpath(src))
            child = dest if src.endswith("/") or base in ("", ".") else os.path.join(dest, base)
            check_path(child, ctx, destructive=True)


def _extracts(name: str, args: list[str | None]) -> bool:
    """Whether an archiver run with ``args`` extracts (writes files)."""
    if name in ("unzip", "cpio"):
        return True
    if name == "7z":
        return bool(args) and args[0] in ("x", "e")
    first = args[0] if args else ""
    return any(
        a is not None
        and (
            a in ("--extract", "--get")
            or (a.startswith("-") and not a.startswith("--") and "x" in a)
        )
        for a in args
    ) or bool(first and not first.startswith("-") and "x" in first)
