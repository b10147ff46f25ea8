"""Programs: from an expanded argv to what actually runs, and what it is given to run.

:func:`check_argv` takes one command's expanded argument vector. It looks for tht anywhere in
the words (``find -exec tht …``, ``python -m tht``) and analyses any word with shell syntax,
strips wrappers (``env``, ``sudo``, ``timeout``, ``nohup``, …), then dispatches on the program:
builtins that change the analysis state (``cd``, ``export``, ``read``, ``for … in``), builtins
and tools that run other text (``eval``, ``alias``, ``source``, ``xargs``, ``uv run``), shells
(``bash -c``, ``bash f.sh``, ``bash <``), Python (``-m``, ``-c``, a script), other
interpreters (``perl -e``, ``node -e``, ``awk``), writers (:mod:`tht.hooks.guard_writers`),
``apply_patch``, and any other program file on the path (:mod:`tht.hooks.guard_scripts`).
Standard library only.
"""

from __future__ import annotations

import os
import re

from tht.hooks import guard_scripts, guard_shell, guard_writers
from tht.hooks.guard_context import Ctx, Glob, absolute, fallback
from tht.hooks.guard_paths import check_patch
from tht.hooks.guard_rules import (
    ASSIGN,
    CODE_RUNNERS,
    NON_COMMAND,
    PYTHON,
    RAW_PROTECTED,
    SHELLS,
    THT_WORD,
    WRAPPER_POSITIONALS,
    WRAPPER_VALUE_OPTS,
    WRAPPERS,
    WRITERS,
)
from tht.hooks.guard_tht import check_tht, tht_name

Stdin = list[tuple[str, str]]  # (kind, text|path): what a shell would read as a script

_RUNNERS = ("uv", "uvx", "pipx", "poetry", "pdm", "hatch", "rye", "conda", "npx", "pixi")
_XARGS_VALUE_OPTS = ("-I", "-i", "-L", "-l", "-n", "-P", "-s", "-d", "-E", "-a", "-e")
_SCRIPT_RUNNERS = ("perl", "ruby", "node", "nodejs", "php", "lua", "julia")  # `perl f.pl`


def check_argv(argv: list[str | None], ctx: Ctx, depth: int, stdin: Stdin | None = None) -> None:
    """Check one command's argument vector (already expanded)."""
    ctx.tick(depth)
    stdin = stdin or []
    if not argv:
        return
    _check_words(argv, ctx, depth)
    argv = _unwrap(argv, ctx, depth)
    if not argv:
        return
    prog = argv[0]
    if prog is None or isinstance(prog, Glob):
        fallback(ctx.raw, ctx, "the program name cannot be resolved")
        return
    if tht_name(prog):
        check_tht(argv[1:], ctx, prog)
        return
    name = os.path.basename(prog)
    if _check_state_builtin(name, argv, ctx) or _check_indirection(name, argv[1:], ctx, depth):
        return
    _check_program(prog, name, argv[1:], ctx, depth, stdin)


def _check_words(argv: list[str | None], ctx: Ctx, depth: int) -> None:
    """Before unwrapping: tht anywhere in the words (find -exec, watch, strace, unknown
    wrappers, …), and any word with shell syntax, which may be a command string."""
    for i, arg in enumerate(argv):
        if arg and i and tht_name(arg):
            check_tht(argv[i + 1 :], ctx, arg)
        if (
            arg
            and arg.startswith("-m")
            and i
            and PYTHON.search(os.path.basename(argv[0] or "")) is None
        ):
            mod = arg[2:] or (argv[i + 1] if i + 1 < len(argv) else "") or ""
            if mod == "tht" or mod.startswith("tht."):
                check_tht(argv[i + (1 if arg[2:] else 2) :], ctx, "python -m " + mod)
    for arg in argv[1:]:
        if arg and (any(c.isspace() for c in arg) or any(c in arg for c in ";|&`$<>")):
            sub = ctx.child()
            sub.raw = arg
            guard_shell.analyse_text(arg, sub, depth + 1, "an argument")


def _check_state_builtin(name: str, argv: list[str | None], ctx: Ctx) -> bool:
    """Builtins that only change the analysis state (variables, cwd); True when ``name`` is one."""
    args = argv[1:]
    if name in NON_COMMAND:
        if name in ("for", "select") and len(argv) > 2 and argv[1] and argv[2] == "in":
            guard_shell.assign(argv[1], False, list(argv[3:]) or [None], ctx)
        return True
    if name in ("export", "declare", "typeset", "local", "readonly"):
        for a in args:
            m = ASSIGN.fullmatch(a) if a else None
            if m:
                guard_shell.assign(m.group(1), bool(m.group(2)), [m.group(3)], ctx)
        return True
    if name in ("read", "mapfile", "readarray") or (name == "printf" and "-v" in args):
        for a in args:
            if a and ASSIGN.fullmatch(a + "=") and not a.startswith("-"):
                ctx.vars[a] = [None]
        return True
    if name in ("cd", "pushd"):
        target = next((a for a in args if a is None or not a.startswith("-")), "~")
        if target is None or target == "-" or isinstance(target, Glob):
            ctx.cwd_unknown = True
        else:
            ctx.cwds.append(absolute(target, ctx.cwd))
        return True
    return False


def _check_indirection(name: str, args: list[str | None], ctx: Ctx, depth: int) -> bool:
    """Builtins and tools that run other text or another command; True when ``name`` is one."""
    if name == "eval":
        guard_shell.analyse_text(
            " ".join(a if a is not None else "$UNRESOLVED" for a in args), ctx, depth + 1, "eval"
        )
        return True
    if name == "alias":
        for a in args:
            if a and "=" in a:
                guard_shell.analyse_text(a.split("=", 1)[1], ctx.child(), depth + 1, "an alias")
        return True
    if name in ("source", "."):
        if args:
            guard_scripts.scan_file(args[0] or "", "sh", args[1:], ctx, depth)
        return True
    if name == "xargs":
        rest = _skip_options(args, _XARGS_VALUE_OPTS)
        check_argv([*(rest or ["echo"]), None], ctx, depth + 1)
        return True
    return False


def _check_program(
    prog: str, name: str, args: list[str | None], ctx: Ctx, depth: int, stdin: Stdin
) -> None:
    """Shells, interpreters, runners, writers, ``apply_patch``, and other program files."""
    if name in SHELLS:
        _check_shell(args, ctx, depth, stdin)
        return
    if PYTHON.search(name):
        _check_python(args, ctx, depth, stdin)
        return
    if name in _RUNNERS:
        rest = [a for a in args if a is None or not a.startswith("-")]
        if rest and rest[0] in ("run", "exec"):
            rest = rest[1:]
        if rest:
            check_argv(rest, ctx, depth + 1)
        return
    if name in CODE_RUNNERS:
        _check_code_runner(name, args, ctx, depth)
    if name in WRITERS:
        guard_writers.check_writer(name, args, ctx)
    if name in ("apply_patch", "applypatch"):
        for a in args:
            check_patch(a or ctx.raw, ctx)
        return
    if "/" in prog:
        guard_scripts.scan_file(prog, "exec", args, ctx, depth)
    elif name not in WRITERS and name not in CODE_RUNNERS:
        found = _which(prog)
        if found:
            guard_scripts.scan_file(found, "exec", args, ctx, depth, quiet=True)


# -- wrappers ----------------------------------------------------------------------------------
def _skip_options(args: list[str | None], value_opts: tuple[str, ...]) -> list[str | None]:
    i = 0
    while i < len(args):
        a = args[i]
        if a is None or not a.startswith("-") or a == "-":
            break
        if a == "--":
            i += 1
            break
        i += 2 if a in value_opts else 1
    return args[i:]


def _unwrap(argv: list[str | None], ctx: Ctx, depth: int) -> list[str | None]:
    """Strip wrappers (``env``, ``sudo``, ``timeout 5``, …) down to the program they run."""
    for _ in range(32):
        prog = argv[0] if argv else None
        if prog is None:
            return argv
        name = os.path.basename(prog)
        if name not in WRAPPERS:
            return argv
        if name in ("command", "builtin") and len(argv) > 1 and argv[1] in ("-v", "-V"):
            return []
        rest = _skip_options(argv[1:], WRAPPER_VALUE_OPTS.get(name, ()))
        if name == "env":
            rest = _unwrap_env(argv, rest, ctx, depth)
        if name in ("su", "runuser", "script") and "-c" in argv:
            idx = argv.index("-c")
            if idx + 1 < len(argv):
                guard_shell.analyse_text(
                    argv[idx + 1] or ctx.raw, ctx.child(), depth + 1, name + " -c"
                )
        argv = rest[WRAPPER_POSITIONALS.get(name, 0) :]
    return argv


def _unwrap_env(
    argv: list[str | None], rest: list[str | None], ctx: Ctx, depth: int
) -> list[str | None]:
    """``env``: analyse ``-S`` strings, track ``THT_WORKSPACE=``, drop the assignments."""
    for i, a in enumerate(argv[1:]):
        if a in ("-S", "--split-string") and i + 2 < len(argv):
            guard_shell.analyse_text(argv[i + 2] or ctx.raw, ctx.child(), depth + 1, "env -S")
        elif a and a.startswith("-S") and len(a) > 2:
            guard_shell.analyse_text(a[2:], ctx.child(), depth + 1, "env -S")
    while rest and rest[0] is not None and ASSIGN.fullmatch(rest[0]):
        m = ASSIGN.fullmatch(rest[0])
        assert m is not None
        if m.group(1) == "THT_WORKSPACE":
            guard_shell.assign("THT_WORKSPACE", False, [m.group(3)], ctx)
        rest = rest[1:]
    return rest


def _which(prog: str) -> str | None:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d or ".", prog)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# -- interpreters ------------------------------------------------------------------------------
def _check_shell(args: list[str | None], ctx: Ctx, depth: int, stdin: Stdin) -> None:
    """``bash [opts] -c TEXT``, ``bash FILE``, or ``bash`` reading its script on stdin."""
    has_c = False
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            fallback(ctx.raw, ctx, "a shell argument cannot be resolved")
            return
        if a == "--":
            i += 1
            break
        if a.startswith(("-", "+")) and len(a) > 1:
            if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                if a in ("--rcfile", "--init-file") and i + 1 < len(args):
                    guard_scripts.scan_file(args[i + 1] or "", "sh", [], ctx, depth)
                i += 2
                continue
            if not a.startswith("--") and "c" in a[1:]:
                has_c = True
            i += 1
            continue
        break
    rest = args[i:]
    if has_c:
        if rest:
            sub = ctx.child()
            guard_shell.analyse_text(rest[0] or ctx.raw, sub, depth + 1, "a `-c` script")
        return
    if rest:
        guard_scripts.scan_file(rest[0] or "", "sh", rest[1:], ctx, depth)
        return
    guard_scripts.scan_stdin(stdin, "sh", ctx, depth)


def _check_python(args: list[str | None], ctx: Ctx, depth: int, stdin: Stdin) -> None:
    """``python -m MOD``, ``python -c CODE``, ``python FILE``, or code on stdin."""
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            fallback(ctx.raw, ctx, "a python argument cannot be resolved")
            return
        if a == "-":
            guard_scripts.scan_stdin(stdin, "py", ctx, depth)
            return
        if a == "--" or not a.startswith("-"):
            rest = args[i + 1 :] if a == "--" else args[i:]
            if rest:
                guard_scripts.scan_file(rest[0] or "", "py", rest[1:], ctx, depth)
            return
        if a.startswith("--"):
            i += 1
            continue
        for j, flag in enumerate(a[1:], start=1):
            value = a[j + 1 :] or (args[i + 1] if i + 1 < len(args) else None)
            consumed = 2 if not a[j + 1 :] else 1
            if flag == "m":
                mod = value or ""
                if mod == "tht" or mod.startswith("tht."):
                    check_tht(args[i + consumed :], ctx, "python -m " + mod)
                return
            if flag == "c":
                guard_scripts.check_code(
                    value if value is not None else ctx.raw, args[i + consumed :], ctx, depth
                )
                return
            if flag in "WX":
                i += consumed - 1
                break
        i += 1
    guard_scripts.scan_stdin(stdin, "py", ctx, depth)


def _check_code_runner(name: str, args: list[str | None], ctx: Ctx, depth: int) -> None:
    """``perl -e CODE``, ``node -e``, an ``awk``/``sed`` program, or a script file they run."""
    opts = CODE_RUNNERS[name]
    for i, a in enumerate(args):
        if a is None:
            continue
        code = None
        if a in opts and i + 1 < len(args):
            code = args[i + 1]
        elif any(a.startswith(o) and len(a) > len(o) and not o.startswith("--") for o in opts):
            code = a[2:]
        elif not a.startswith("-") and (any(c.isspace() for c in a) or not opts):
            code = a if not os.path.isfile(absolute(a, ctx.cwd)) else None
        if code and (RAW_PROTECTED.search(re.sub(r"[\"'\\`]", " ", code)) or THT_WORD.search(code)):
            guard_scripts.check_code(code, [], ctx, depth)
    if name in _SCRIPT_RUNNERS:
        rest = [a for a in args if a is None or not a.startswith("-")]
        if rest and not any(a in opts for a in args if a):
            guard_scripts.scan_file(rest[0] or "", "code", rest[1:], ctx, depth)
