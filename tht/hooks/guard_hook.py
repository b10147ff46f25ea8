"""``tht-guard-hook``: the anti-bypass ``PreToolUse`` hook of Claude Code and Codex.

The model proposes; only a human decides (spec 001 §3.2). An agent that tries to run a
human-only ``tht`` command from its shell, or to write tht's files (``sessions/``, ``catalog/``,
``memory/``, ``reviewers/``, ``.tht/``, ``workspace.yaml``, ``workflow.yaml``) directly, is refused
before the tool runs, with a reason the agent sees. The command text is *parsed*
(:mod:`tht.hooks.guard_parse`), expanded against the variables it assigns, unwrapped
(``bash -c``, ``eval``, ``xargs``, ``env``, ``sudo``, …), and scripts it runs are read and checked
the same way. Whatever cannot be followed is refused when its text mentions a human-only
command or a protected path (fail closed). See ``docs/guard-hook.md``.

This is a courtesy layer, defence in depth: the boundary is signed human decisions and a fold
that replays every transition (ARCHITECTURE §3.9).

Protocol: one JSON object on stdin (``tool_name``, ``tool_input``, ``cwd``, …; Codex may send
``tool_input.command`` as an argv list). A refusal is written as

    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                            "permissionDecisionReason": "…"}}

with exit 0; anything else prints nothing and exits 0. Any internal error is a refusal.
Standard library only: it runs before every shell command of the agent.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from typing import Any

from tht.hooks.guard_parse import ParseError, SimpleCommand, Word, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["check_tool_call", "main"]

MAX_STDIN_BYTES = 64 * 1024 * 1024
MAX_COMMAND_CHARS = 8 * 1024 * 1024
MAX_SCRIPT_BYTES = 1024 * 1024
MAX_DEPTH = 24
MAX_STEPS = 200_000

HUMAN_ONLY: tuple[tuple[str, ...], ...] = (
    ("review", "answer"),
    ("decision", "retract"),
    ("stage", "skip"),
    ("stage", "reopen"),
    *(("session", v) for v in ("pause", "resume", "finalize", "derive", "abandon")),
    ("ledger", "verify", "--repair"),
    *(("reviewer", v) for v in ("add", "revoke", "approve-workflow")),
    ("serve", "token", "add"),
    ("memory", "forget"),
    ("catalog", "sensitive", "set"),
)
PROTECTED_DIRS = frozenset({"sessions", "catalog", "memory", "reviewers", ".tht"})
PROTECTED_FILES = frozenset({"workspace.yaml", "workflow.yaml"})
_WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # …/tht

_SEP = r"[^A-Za-z0-9_-]+"
_RAW_HUMAN = re.compile(
    r"(?<![\w-])(?:review"
    + _SEP
    + r"answer|decision"
    + _SEP
    + r"retract|stage"
    + _SEP
    + r"(?:skip|reopen)|session"
    + _SEP
    + r"(?:pause|resume|finalize|derive|abandon)"
    r"|verify[\s\S]*?--repair|reviewer"
    + _SEP
    + r"(?:add|revoke|approve-workflow)|token"
    + _SEP
    + r"add|memory"
    + _SEP
    + r"forget|sensitive"
    + _SEP
    + r"set)(?![\w-])",
    re.I,
)
_RAW_PROTECTED = re.compile(
    r"(?:^|[^\w.-])(?:sessions|catalog|memory|reviewers|\.tht)(?:[/\\]|['\"]|$)"
    r"|workspace\.ya?ml|workflow\.ya?ml|ledger\.(?:jsonl|head)",
    re.M,
)
_THT_WORD = re.compile(r"(?<![\w-])tht(?![\w-])")
_CODE_VERBS = re.compile(
    r"answer|retract|skip|reopen|pause|resume|finalize|derive|abandon|repair|reviewer|revoke"
    r"|approve|token|forget|sensitive",
    re.I,
)
_IMPORTS_THT = re.compile(r"(?m)(?:^|;)\s*(?:from\s+tht\b|import\s+tht\b)|import_module|tht\.cli")
_PYTHON = re.compile(r"^(?:python|pypy)[0-9.]*w?$|^py$")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox", "rbash"})
_CODE_RUNNERS = {  # program → options whose value is program text
    "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
    "php": ("-r",), "lua": ("-e",), "Rscript": ("-e",), "osascript": ("-e",),
    "awk": (), "gawk": (), "mawk": (), "nawk": (), "sed": ("-e", "--expression"),
    "jq": (), "sqlite3": (), "tclsh": (), "julia": ("-e",),
}  # fmt: skip
_WRAPPERS = frozenset(
    {"env", "nohup", "timeout", "nice", "sudo", "doas", "exec", "command", "builtin", "time",
     "stdbuf", "ionice", "setsid", "chrt", "taskset", "unbuffer", "strace", "ltrace", "flock",
     "watch", "caffeinate", "chroot", "runuser", "su", "script", "faketime", "firejail",
     "unshare", "nsenter", "systemd-run", "proot", "catchsegv", "xvfb-run", "then", "do",
     "else", "elif", "if", "while", "until", "!", "{", "}", "coproc", "exec-once"}
)  # fmt: skip
_WRAPPER_VALUE_OPTS = {
    "env": ("-u", "--unset", "-C", "--chdir"), "sudo": ("-u", "-g", "-C", "-D", "-h", "-p", "-U"),
    "nice": ("-n", "--adjustment"), "timeout": ("-s", "--signal", "-k", "--kill-after"),
    "exec": ("-a",), "ionice": ("-c", "-n", "-p"), "stdbuf": ("-i", "-o", "-e"),
    "su": ("-c", "-s", "-g"), "runuser": ("-u", "-g", "-c", "-s"), "script": ("-c", "-t"),
    "flock": ("-w", "-E"), "watch": ("-n", "-d"), "strace": ("-o", "-e", "-p", "-s", "-u"),
}  # fmt: skip
_WRAPPER_POSITIONALS = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1, "chroot": 1}
_WRITERS = frozenset(
    {"tee", "dd", "cp", "mv", "rm", "rmdir", "ln", "link", "unlink", "install", "truncate",
     "touch", "chmod", "chown", "chgrp", "rsync", "tar", "unzip", "shred", "mkfifo", "mknod",
     "mkdir", "git", "patch", "split", "csplit", "sort", "cpio", "7z", "bsdtar", "gunzip",
     "gzip", "bzip2", "xz", "zstd", "setfacl", "setfattr", "chattr", "ed", "ex", "vi", "vim",
     "nvim", "nano", "emacs", "sponge", "curl", "wget", "scp", "sqlite3", "perl", "sed", "awk",
     "gawk", "find", "fallocate", "mktemp", "ditto", "rename", "mmv", "sd", "yq", "jq"}
)  # fmt: skip
_DESTRUCTIVE = frozenset(
    {"rm", "rmdir", "mv", "shred", "chmod", "chown", "chgrp", "rsync", "setfacl", "chattr"}
)  # fmt: skip
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_NON_COMMAND = frozenset({"for", "select", "case", "[[", "function", "in", "esac", "fi", "done"})
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", re.S)

REASON_HUMAN = (
    "tht: `{command}` is a human-only decision. Propose instead (`tht propose STAGE --file "
    "P.json`) and let the reviewer answer; the model proposes, a human decides."
)
REASON_LEDGER = (
    "tht: {path} is written only by tht itself (session ledgers, objects, artifacts, catalog, "
    "memory, reviewers, .tht, workspace.yaml, workflow.yaml); use `tht propose` (artifacts go "
    "in the proposal)."
)
REASON_CLOSED = (
    "tht: {why}; it mentions a human-only tht command or a file tht alone writes, so it is "
    "refused (fail closed). Run a plain `tht propose …` instead."
)


class Deny(Exception):
    """Raised with the refusal reason; stops the analysis."""


class Glob(str):
    """An argument with unquoted glob or brace characters (its value is a pattern)."""


class _Ctx:
    def __init__(self, cwd: str, raw: str) -> None:
        self.vars: dict[str, list[str | None]] = {}
        self.cwds = [cwd]
        self.cwd_unknown = False
        self.raw = raw
        ws = os.environ.get("THT_WORKSPACE")
        self.workspaces = [_absolute(ws, cwd) if ws else cwd]
        self.steps = 0
        self.seen_files: set[str] = set()

    @property
    def cwd(self) -> str:
        return self.cwds[-1]

    def child(self) -> _Ctx:
        new = _Ctx.__new__(_Ctx)
        new.__dict__.update(self.__dict__)
        new.vars = {k: list(v) for k, v in self.vars.items()}
        new.cwds = list(self.cwds)
        return new

    def tick(self, depth: int) -> None:
        self.steps += 1
        if depth > MAX_DEPTH or self.steps > MAX_STEPS:
            raise Deny("tht: the command is nested too deeply to inspect; refused (fail closed).")


# -- paths -------------------------------------------------------------------------------------
def _absolute(path: str, cwd: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def _under_protected(path: str, root: str) -> bool:
    rel = os.path.relpath(path, root) if path != root else "."
    if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
        return False
    parts = rel.split(os.sep)
    return parts[0] in PROTECTED_DIRS or rel in PROTECTED_FILES


def _candidates(path: str, ctx: _Ctx) -> list[str]:
    """The absolute forms of ``path``: lexical and symlink-resolved, from every cwd seen."""
    out: list[str] = []
    for cwd in ctx.cwds:
        lexical = _absolute(path, cwd)
        out.append(lexical)
        real = os.path.realpath(lexical)
        if real != lexical:
            out.append(real)
    return out


def is_protected(path: str, ctx: _Ctx, destructive: bool = False) -> bool:
    """Whether a write to ``path`` (relative to the tracked cwd) touches tht's files; with
    ``destructive`` (rm -r, mv, …) also a folder that contains a workspace."""
    if not path:
        return False
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    for k, part in enumerate(parts):
        if part in (".tht", "reviewers") or (part == "sessions" and k + 1 < len(parts)):
            return True
    if ctx.cwd_unknown and not os.path.isabs(os.path.expanduser(path)):
        if any(p in PROTECTED_DIRS or p in PROTECTED_FILES or p == ".." for p in parts):
            return True
        if parts and parts[-1] in ("ledger.jsonl", "ledger.head"):
            return True
    roots = [os.path.normpath(w) for w in ctx.workspaces]
    roots += [os.path.realpath(w) for w in ctx.workspaces]
    for cand in _candidates(path, ctx):
        if any(_under_protected(cand, root) for root in roots):
            return True
        if destructive and any(
            r == cand or r.startswith(cand.rstrip(os.sep) + os.sep) for r in roots
        ):
            return True
        if cand != _absolute(path, ctx.cwds[0]) or os.path.isabs(path):
            tail = cand.split(os.sep)
            if any(p in (".tht", "reviewers") for p in tail) or "sessions" in tail[:-1]:
                return True
        d, hops = cand, 0
        while hops < 64:
            if os.path.isfile(os.path.join(d, "workspace.yaml")):
                if d != cand and _under_protected(cand, d):
                    return True
                if d == cand and destructive:
                    return True
            parent = os.path.dirname(d)
            if parent == d:
                break
            d, hops = parent, hops + 1
    return False


def _check_path(path: str | None, ctx: _Ctx, destructive: bool = False) -> None:
    if path is None:
        _fallback(ctx.raw, ctx, "a write target cannot be resolved")
        return
    paths = [path]
    if isinstance(path, Glob):
        import glob

        paths += [m for cwd in ctx.cwds for m in glob.glob(os.path.join(cwd, path))][:256]
    for p in paths:
        if is_protected(p, ctx, destructive):
            raise Deny(REASON_LEDGER.format(path=f"`{path}`"))


# -- fail closed -------------------------------------------------------------------------------
def suspicious(text: str) -> bool:
    flat = re.sub(r"[\"'\\`]", "", text)
    return bool(_RAW_HUMAN.search(flat) or _RAW_PROTECTED.search(flat))


def _fallback(text: str, ctx: _Ctx, why: str) -> None:
    if suspicious(text):
        raise Deny(REASON_CLOSED.format(why=why))


# -- expansion ---------------------------------------------------------------------------------
def _lookup(name: str, ctx: _Ctx) -> list[str | None]:
    if name in ctx.vars:
        return ctx.vars[name]
    if name in os.environ and name not in ("@", "*", "#", "?", "$", "!", "-", "0"):
        return [os.environ[name]]
    return [None]


def _expand_parts(
    parts: list[tuple[Any, ...]], ctx: _Ctx, depth: int
) -> tuple[list[str | None], bool]:
    values: list[str | None] = [""]
    dynamic = False
    for part in parts:
        kind = part[0]
        if kind in ("lit", "glob"):
            dynamic = dynamic or kind == "glob"
            values = [v + part[1] if v is not None else None for v in values]
            continue
        if kind == "sub":
            analyse_script(part[1], ctx.child(), depth + 1)
            add: list[str | None] = [None]
        elif kind == "var":
            add = _lookup(part[1], ctx)
            if None in add and part[2] is not None:
                default, dyn = _expand_parts(part[2], ctx, depth)
                add = [*(a for a in add if a is not None), *default]
                dynamic = dynamic or dyn
        else:  # ${…} forms we do not evaluate: look inside, value unknown
            with contextlib.suppress(ParseError):
                analyse_script(part[1], ctx.child(), depth + 1)
            add = [None]
        values = [v + a if v is not None and a is not None else None for v in values for a in add]
        if len(values) > 16:
            values = [None]
    return list(dict.fromkeys(values)), dynamic


def _expand(word: Word, ctx: _Ctx, depth: int) -> list[str | None]:
    values, dynamic = _expand_parts(word.parts, ctx, depth)
    return [Glob(v) if dynamic and v is not None else v for v in values]


# -- analysis ----------------------------------------------------------------------------------
def analyse_script(text: str, ctx: _Ctx, depth: int) -> None:
    """Check a shell script; raises :class:`Deny` (or :class:`ParseError`)."""
    ctx.tick(depth)
    commands = parse(text)
    pipeline: list[SimpleCommand] = []
    for command in commands:
        pipeline = [*pipeline, command] if command.piped else [command]
        _analyse_command(command, pipeline[:-1], ctx, depth)


def _analyse_text(text: str, ctx: _Ctx, depth: int, why: str) -> None:
    try:
        analyse_script(text, ctx, depth)
    except ParseError as exc:
        _fallback(text, ctx, f"{why} cannot be parsed ({exc})")


def _assign(name: str, append: bool, values: list[str | None], ctx: _Ctx) -> None:
    old = ctx.vars.get(name, _lookup(name, ctx)) if append else []
    if append:
        values = [o + v if o is not None and v is not None else None for o in old for v in values]
    merged = list(dict.fromkeys([*ctx.vars.get(name, []), *values]))
    ctx.vars[name] = merged[-16:]
    if name == "THT_WORKSPACE":
        ctx.workspaces += [_absolute(v, ctx.cwd) for v in values if v]


def _analyse_command(
    command: SimpleCommand, upstream: list[SimpleCommand], ctx: _Ctx, depth: int
) -> None:
    ctx.tick(depth)
    stdin: list[tuple[str, str]] = []  # (kind, text|path): what a shell would read as a script
    for redir in command.redirs:
        if redir.op in ("<<", "<<-"):
            body = redir.body or ""
            if not redir.quoted_delim and any(c in body for c in "$`"):
                _analyse_text(body, ctx.child(), depth + 1, "a heredoc")
            stdin.append(("text", body))
            continue
        targets = _expand(redir.target, ctx, depth) if redir.target else [None]
        if redir.op == "<<<":
            stdin += [("text", t if t is not None else ctx.raw) for t in targets]
        elif redir.op == "<":
            stdin += [("file", t) if t is not None else ("text", ctx.raw) for t in targets]
        elif redir.op in ("<&", ">&") and all(
            t is not None and re.fullmatch(r"\d+-?|-", t) for t in targets
        ):
            continue
        else:
            for target in targets:
                _check_path(target, ctx)
    for up in upstream:  # `… | bash`: whatever the upstream commands print may be the script
        stdin.append(("text", up.text))
        for w in up.words[1:]:
            plain = len(w.parts) == 1 and w.parts[0][0] == "lit"
            if plain and os.path.isfile(_absolute(w.parts[0][1], ctx.cwd)):
                stdin.append(("file", w.parts[0][1]))
    words: list[list[str | None]] = [_expand(w, ctx, depth) for w in command.words]
    # leading assignments
    k = 0
    while k < len(command.words):
        first = command.words[k].parts[0] if command.words[k].parts else None
        m = _ASSIGN.fullmatch(command.words[k].raw) if first and first[0] == "lit" else None
        if not m or not _ASSIGN.match(first[1]):  # type: ignore[index]
            break
        vm = _ASSIGN.match(first[1])  # type: ignore[index]
        assert vm is not None
        values = [v[len(vm.group(1)) + len(vm.group(2)) + 1 :] if v else v for v in words[k]]
        if k + 1 == len(command.words) or vm.group(1) == "THT_WORKSPACE":
            _assign(vm.group(1), bool(vm.group(2)), values, ctx)
        for v in values:
            if v and any(c.isspace() for c in v):
                _analyse_text(v, ctx.child(), depth + 1, "an assigned value")
        k += 1
    argvs = _product(words[k:])
    for argv in argvs:
        check_argv(argv, ctx, depth, stdin)


def _product(words: list[list[str | None]]) -> list[list[str | None]]:
    out: list[list[str | None]] = [[]]
    for cands in words:
        out = [[*o, c] for o in out for c in cands]
        if len(out) > 16:
            return [[None] * len(words)]
    return out


def check_argv(
    argv: list[str | None], ctx: _Ctx, depth: int, stdin: list[tuple[str, str]] | None = None
) -> None:
    """Check one command's argument vector (already expanded)."""
    ctx.tick(depth)
    stdin = stdin or []
    if not argv:
        return
    # a tht program anywhere in the words (find -exec, watch, strace, unknown wrappers, …)
    for i, arg in enumerate(argv):
        if arg and i and _tht_name(arg):
            _check_tht(argv[i + 1 :], ctx, arg)
        if (
            arg
            and arg.startswith("-m")
            and i
            and _PYTHON.search(os.path.basename(argv[0] or "")) is None
        ):
            mod = arg[2:] or (argv[i + 1] if i + 1 < len(argv) else "") or ""
            if mod == "tht" or mod.startswith("tht."):
                _check_tht(argv[i + (1 if arg[2:] else 2) :], ctx, "python -m " + mod)
    # any word with shell syntax inside may be a command string for something we do not know
    for arg in argv[1:]:
        if arg and (any(c.isspace() for c in arg) or any(c in arg for c in ";|&`$<>")):
            _analyse_arg(arg, ctx, depth)
    argv = _unwrap(argv, ctx, depth)
    if not argv:
        return
    prog = argv[0]
    if prog is None or isinstance(prog, Glob):
        _fallback(ctx.raw, ctx, "the program name cannot be resolved")
        return
    name = os.path.basename(prog)
    args = argv[1:]
    if _tht_name(prog):
        _check_tht(args, ctx, prog)
        return
    if name in _NON_COMMAND:
        if name in ("for", "select") and len(argv) > 2 and argv[1] and argv[2] == "in":
            _assign(argv[1], False, list(argv[3:]) or [None], ctx)
        return
    if name in ("export", "declare", "typeset", "local", "readonly"):
        for a in args:
            m = _ASSIGN.fullmatch(a) if a else None
            if m:
                _assign(m.group(1), bool(m.group(2)), [m.group(3)], ctx)
        return
    if name in ("read", "mapfile", "readarray") or (name == "printf" and "-v" in args):
        for a in args:
            if a and _ASSIGN.fullmatch(a + "=") and not a.startswith("-"):
                ctx.vars[a] = [None]
        return
    if name in ("cd", "pushd"):
        target = next((a for a in args if a is None or not a.startswith("-")), "~")
        if target is None or target == "-" or isinstance(target, Glob):
            ctx.cwd_unknown = True
        else:
            ctx.cwds.append(_absolute(target, ctx.cwd))
        return
    if name == "eval":
        _analyse_text(
            " ".join(a if a is not None else "$UNRESOLVED" for a in args), ctx, depth + 1, "eval"
        )
        return
    if name == "alias":
        for a in args:
            if a and "=" in a:
                _analyse_text(a.split("=", 1)[1], ctx.child(), depth + 1, "an alias")
        return
    if name in ("source", "."):
        if args:
            _scan_file(args[0] or "", "sh", args[1:], ctx, depth)
        return
    if name == "xargs":
        rest = _skip_options(
            args, ("-I", "-i", "-L", "-l", "-n", "-P", "-s", "-d", "-E", "-a", "-e")
        )
        check_argv([*(rest or ["echo"]), None], ctx, depth + 1)
        return
    if name in _SHELLS:
        _check_shell(args, ctx, depth, stdin)
        return
    if _PYTHON.search(name):
        _check_python(args, ctx, depth, stdin)
        return
    if name in ("uv", "uvx", "pipx", "poetry", "pdm", "hatch", "rye", "conda", "npx", "pixi"):
        rest = [a for a in args if a is None or not a.startswith("-")]
        if rest and rest[0] in ("run", "exec"):
            rest = rest[1:]
        if rest:
            check_argv(rest, ctx, depth + 1)
        return
    if name in _CODE_RUNNERS:
        _check_code_runner(name, args, ctx, depth)
    if name in _WRITERS:
        _check_writer(name, args, ctx)
    if name in ("apply_patch", "applypatch"):
        for a in args:
            check_patch(a or ctx.raw, ctx)
        return
    if "/" in prog:
        _scan_file(prog, "exec", args, ctx, depth)
    elif name not in _WRITERS and name not in _CODE_RUNNERS:
        found = _which(prog)
        if found:
            _scan_file(found, "exec", args, ctx, depth, quiet=True)


def _analyse_arg(arg: str, ctx: _Ctx, depth: int) -> None:
    sub = ctx.child()
    sub.raw = arg
    _analyse_text(arg, sub, depth + 1, "an argument")


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


def _unwrap(argv: list[str | None], ctx: _Ctx, depth: int) -> list[str | None]:
    for _ in range(32):
        prog = argv[0] if argv else None
        if prog is None:
            return argv
        name = os.path.basename(prog)
        if name not in _WRAPPERS:
            return argv
        if name in ("command", "builtin") and len(argv) > 1 and argv[1] in ("-v", "-V"):
            return []
        rest = _skip_options(argv[1:], _WRAPPER_VALUE_OPTS.get(name, ()))
        if name == "env":
            for i, a in enumerate(argv[1:]):
                if a in ("-S", "--split-string") and i + 2 < len(argv):
                    _analyse_text(argv[i + 2] or ctx.raw, ctx.child(), depth + 1, "env -S")
                elif a and a.startswith("-S") and len(a) > 2:
                    _analyse_text(a[2:], ctx.child(), depth + 1, "env -S")
            while rest and rest[0] is not None and _ASSIGN.fullmatch(rest[0]):
                m = _ASSIGN.fullmatch(rest[0])
                assert m is not None
                if m.group(1) == "THT_WORKSPACE":
                    _assign("THT_WORKSPACE", False, [m.group(3)], ctx)
                rest = rest[1:]
        if name in ("su", "runuser", "script") and "-c" in argv:
            idx = argv.index("-c")
            if idx + 1 < len(argv):
                _analyse_text(argv[idx + 1] or ctx.raw, ctx.child(), depth + 1, name + " -c")
        rest = rest[_WRAPPER_POSITIONALS.get(name, 0) :]
        argv = rest
    return argv


def _tht_name(word: str) -> bool:
    base = os.path.basename(word)
    return base in ("tht", "tht.exe") or base.startswith("tht-")


def _which(prog: str) -> str | None:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d or ".", prog)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def _check_tht(args: list[str | None], ctx: _Ctx, prog: str) -> None:
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
                    ctx.workspaces.append(_absolute(args[i + 1] or "", ctx.cwd))
                i += 1
            elif a.startswith("--workspace="):
                ctx.workspaces.append(_absolute(a.split("=", 1)[1], ctx.cwd))
        else:
            pos.append(a.lower())
        i += 1
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


def _check_shell(
    args: list[str | None], ctx: _Ctx, depth: int, stdin: list[tuple[str, str]]
) -> None:
    has_c = False
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            _fallback(ctx.raw, ctx, "a shell argument cannot be resolved")
            return
        if a == "--":
            i += 1
            break
        if a.startswith(("-", "+")) and len(a) > 1:
            if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                if a in ("--rcfile", "--init-file") and i + 1 < len(args):
                    _scan_file(args[i + 1] or "", "sh", [], ctx, depth)
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
            _analyse_text(rest[0] or ctx.raw, sub, depth + 1, "a `-c` script")
        return
    if rest:
        _scan_file(rest[0] or "", "sh", rest[1:], ctx, depth)
        return
    _scan_stdin(stdin, "sh", ctx, depth)


def _scan_stdin(stdin: list[tuple[str, str]], kind: str, ctx: _Ctx, depth: int) -> None:
    for what, value in stdin:
        if what == "file":
            _scan_file(value, kind, [], ctx, depth)
        elif kind == "sh":
            _analyse_text(value, ctx.child(), depth + 1, "a script on stdin")
        else:
            _check_code(value, [], ctx, depth)


def _check_python(
    args: list[str | None], ctx: _Ctx, depth: int, stdin: list[tuple[str, str]]
) -> None:
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            _fallback(ctx.raw, ctx, "a python argument cannot be resolved")
            return
        if a == "-":
            _scan_stdin(stdin, "py", ctx, depth)
            return
        if a == "--" or not a.startswith("-"):
            rest = args[i + 1 :] if a == "--" else args[i:]
            if rest:
                _scan_file(rest[0] or "", "py", rest[1:], ctx, depth)
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
                    _check_tht(args[i + consumed :], ctx, "python -m " + mod)
                return
            if flag == "c":
                _check_code(
                    value if value is not None else ctx.raw, args[i + consumed :], ctx, depth
                )
                return
            if flag in "WX":
                i += consumed - 1
                break
        i += 1
    _scan_stdin(stdin, "py", ctx, depth)


def _check_code(code: str, argv: list[str | None], ctx: _Ctx, depth: int) -> None:
    """Interpreter code (python -c, perl -e, a .py file): refuse when it mentions a protected
    path, or mentions tht together with a human-only verb; a tht entry point runs ``argv``."""
    ctx.tick(depth)
    flat = re.sub(r"[\"'\\`]", " ", code)
    if _RAW_PROTECTED.search(flat) or _RAW_PROTECTED.search(code):
        raise Deny(REASON_LEDGER.format(path="the file this code names"))
    if _THT_WORD.search(code):
        if _CODE_VERBS.search(code) or suspicious(code):
            raise Deny(
                "tht: this code runs tht with a human-only command; the model proposes, a human "
                "decides (`tht propose STAGE --file P.json`)."
            )
        if _IMPORTS_THT.search(code):
            _check_tht(argv, ctx, "tht (imported)")
    for m in list(re.finditer(r"'([^'\n]{3,})'|\"([^\"\n]{3,})\"", code))[:200]:
        literal = m.group(1) or m.group(2)
        if any(c.isspace() for c in literal):
            with contextlib.suppress(ParseError):
                analyse_script(literal, ctx.child(), depth + 1)


def _check_code_runner(name: str, args: list[str | None], ctx: _Ctx, depth: int) -> None:
    opts = _CODE_RUNNERS[name]
    for i, a in enumerate(args):
        if a is None:
            continue
        code = None
        if a in opts and i + 1 < len(args):
            code = args[i + 1]
        elif any(a.startswith(o) and len(a) > len(o) and not o.startswith("--") for o in opts):
            code = a[2:]
        elif not a.startswith("-") and (any(c.isspace() for c in a) or not opts):
            code = a if not os.path.isfile(_absolute(a, ctx.cwd)) else None
        if code and (
            _RAW_PROTECTED.search(re.sub(r"[\"'\\`]", " ", code)) or _THT_WORD.search(code)
        ):
            _check_code(code, [], ctx, depth)
    if name in ("perl", "ruby", "node", "nodejs", "php", "lua", "julia"):
        rest = [a for a in args if a is None or not a.startswith("-")]
        if rest and not any(a in opts for a in args if a):
            _scan_file(rest[0] or "", "code", rest[1:], ctx, depth)


def _check_writer(name: str, args: list[str | None], ctx: _Ctx) -> None:
    if name in ("sed", "perl", "awk", "gawk", "sort", "jq", "yq", "sd", "sqlite3"):
        in_place = any(
            a is None
            or a.startswith(("-i", "--in-place", "-pi", "-o"))
            or (a[:1] == "-" and "i" in a[1:] and not a.startswith("--"))
            for a in args
        ) or (name in ("sd", "sqlite3"))
        if not in_place:
            return
    if name == "find":
        starts: list[str] = []
        for a in args:
            if a is None or a.startswith(("-", "(", "!")):
                break
            starts.append(a)
        acts = [i for i, a in enumerate(args) if a in _FIND_ACTIONS]
        writes = "-delete" in args or any(a and a.startswith(("-fprint", "-fls")) for a in args)
        for i in acts:
            cmd = args[
                i + 1 : i
                + 1
                + next((k for k, a in enumerate(args[i + 1 :]) if a in (";", "+")), len(args))
            ]
            writes = writes or bool(cmd and cmd[0] and os.path.basename(cmd[0]) in _WRITERS)
            if cmd:
                check_argv(cmd, ctx, 1)
        if writes:
            for start in starts or ["."]:
                _check_path(start, ctx, destructive=True)
        return
    if name == "git":
        k = 0
        while k < len(args) and args[k] is not None and args[k].startswith("-"):  # type: ignore[union-attr]
            k += 2 if args[k] in ("-C", "-c", "--git-dir", "--work-tree") else 1
        sub = args[k] if k < len(args) else None
        if sub not in (
            "checkout",
            "restore",
            "clean",
            "rm",
            "mv",
            "reset",
            "apply",
            "am",
            "stash",
        ) and not (k < len(args) and sub is None):
            return
        if "-C" in args[:k]:
            ctx = ctx.child()
            ctx.cwds.append(_absolute(args[args.index("-C") + 1] or ".", ctx.cwd))
        paths: list[str | None] = [a for a in args[k + 1 :] if a is None or not a.startswith("-")]
        if sub == "clean" and not paths:
            paths = ["."]
        for p in paths:
            _check_path(p, ctx, destructive=True)
        return
    destructive = name in _DESTRUCTIVE
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
    if name in ("tar", "bsdtar", "unzip", "7z", "cpio") and _extracts(name, args):
        dest = next(
            (
                args[i + 1]
                for i, a in enumerate(args[:-1])
                if a in ("-C", "--directory", "-d", "-o")
            ),
            ".",
        )
        _check_path(dest, ctx, destructive=True)
    for v in values:
        _check_path(v, ctx, destructive=destructive)
    plain = [a for a in args if a is not None and not a.startswith("-")]
    if name in ("cp", "mv", "ln", "install", "rsync", "scp") and len(plain) >= 2:
        dest = plain[-1]
        if os.path.isdir(_absolute(dest, ctx.cwd)):
            for src in plain[:-1]:
                base = os.path.basename(os.path.normpath(src))
                child = dest if src.endswith("/") or base in ("", ".") else os.path.join(dest, base)
                _check_path(child, ctx, destructive=True)


def _extracts(name: str, args: list[str | None]) -> bool:
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


def _scan_file(
    path: str, kind: str, argv: list[str | None], ctx: _Ctx, depth: int, quiet: bool = False
) -> None:
    """A file that a command runs: read it (bounded) and check its content the same way."""
    ctx.tick(depth)
    if not path:
        _fallback(ctx.raw, ctx, "the script to run cannot be resolved")
        return
    full = os.path.realpath(_absolute(path, ctx.cwd))
    if os.path.basename(full) in ("tht", "tht.exe") or full.startswith(_PKG_DIR + os.sep):
        _check_tht(argv, ctx, path)
        if full.startswith(_PKG_DIR + os.sep):
            return
    try:
        size = os.path.getsize(full)
        if not os.path.isfile(full):
            return
    except OSError:
        if not quiet:
            _fallback(ctx.raw, ctx, f"the script `{path}` cannot be read")
        return
    if full in ctx.seen_files:
        return
    ctx.seen_files.add(full)
    try:
        with open(full, "rb") as fh:
            head = fh.read(8192)
            if b"\0" in head:
                return  # a binary: out of reach (docs/guard-hook.md)
            if size > MAX_SCRIPT_BYTES:
                raise Deny(
                    f"tht: the script `{path}` is too large to inspect; refused (fail closed)."
                )
            data = head + fh.read(MAX_SCRIPT_BYTES)
    except OSError:
        if not quiet:
            _fallback(ctx.raw, ctx, f"the script `{path}` cannot be read")
        return
    text = data.decode("utf-8", errors="replace")
    first = text.split("\n", 1)[0]
    if kind == "exec":
        if first.startswith("#!") and re.search(r"python|pypy", first):
            kind = "py"
        elif first.startswith("#!") and re.search(r"perl|node|ruby|php|lua", first):
            kind = "code"
        else:
            kind = "sh"
    if kind == "sh":
        sub = ctx.child()
        sub.vars = {}
        sub.raw = text
        _analyse_text(text, sub, depth + 1, f"the script `{path}`")
    else:
        _check_code(text, argv, ctx, depth + 1)


def check_patch(text: str, ctx: _Ctx) -> None:
    """Codex ``apply_patch``: every file it adds, updates, deletes or moves to."""
    for m in re.finditer(
        r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", text, re.M
    ):
        _check_path((m.group(1) or m.group(2)).strip(), ctx)


# -- payload -----------------------------------------------------------------------------------
def check_tool_call(payload: object) -> str | None:
    """The refusal reason for a tool call, or None when it may proceed. Never raises."""
    try:
        return _check(payload)
    except Deny as deny:
        return str(deny)
    except Exception as exc:  # fail closed
        name = type(exc).__name__
        return (
            f"tht: the guard hook could not inspect this tool call ({name}); refused (fail closed)."
        )


def _check(payload: object) -> str | None:
    if not isinstance(payload, dict):
        text = json.dumps(payload, ensure_ascii=False) if payload is not None else ""
        return (
            REASON_CLOSED.format(why="the hook input is not a tool call")
            if suspicious(text)
            else None
        )
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else os.getcwd()
    if isinstance(tool_input, dict) and isinstance(tool_input.get("workdir"), str):
        cwd = _absolute(tool_input["workdir"], cwd)
    raw = json.dumps(tool_input, ensure_ascii=False) if tool_input is not None else ""
    ctx = _Ctx(os.path.abspath(cwd), raw)
    if not isinstance(tool_input, dict):
        return (
            REASON_CLOSED.format(why="the tool input is not an object") if suspicious(raw) else None
        )
    if tool in _WRITE_TOOLS or (
        tool not in ("Read", "Glob", "Grep", "LS")
        and "file_path" in tool_input
        and any(k in tool_input for k in ("content", "new_string", "edits", "new_source"))
    ):
        for key in ("file_path", "notebook_path", "path"):
            path = tool_input.get(key)
            if isinstance(path, str) and path:
                _check_path(path, ctx)
        return None
    for key in ("input", "patch"):
        if isinstance(tool_input.get(key), str) and "*** Begin Patch" in tool_input[key]:
            check_patch(tool_input[key], ctx)
    command = next((tool_input[k] for k in ("command", "cmd") if k in tool_input), None)
    if command is None:
        return None
    if isinstance(command, list):
        argv: list[str | None] = [a if isinstance(a, str) else json.dumps(a) for a in command]
        ctx.raw = " ".join(a or "" for a in argv)
        check_argv(argv, ctx, 0)
        return None
    if not isinstance(command, str):
        return REASON_CLOSED.format(why="the command is not text") if suspicious(raw) else None
    if len(command) > MAX_COMMAND_CHARS:
        return "tht: the command is too large to inspect; refused (fail closed)."
    ctx.raw = command
    _analyse_text(command, ctx, 0, "the command")
    return None


def _deny_json(reason: str, event: object = None) -> str:
    body = {
        "hookSpecificOutput": {
            "hookEventName": event if isinstance(event, str) and event else "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return json.dumps(body, ensure_ascii=False)


def _decide(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8", errors="replace")
        try:
            payload = json.loads(text)
        except ValueError:
            if suspicious(text):
                return _deny_json(REASON_CLOSED.format(why="the hook input is not valid JSON"))
            return ""
        reason = check_tool_call(payload)
        if reason is None:
            return ""
        event = payload.get("hook_event_name") if isinstance(payload, dict) else None
        return _deny_json(reason, event)
    except Exception as exc:  # fail closed
        return _deny_json(
            f"tht: the guard hook failed ({type(exc).__name__}); refused (fail closed)."
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: never raises, always exits 0."""
    try:
        chunks, total = [], 0
        while True:
            chunk = sys.stdin.buffer.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_STDIN_BYTES:
                break
        if total > MAX_STDIN_BYTES:
            out = _deny_json("tht: tool call too large to inspect; refused (fail closed).")
        else:
            out = _decide(b"".join(chunks))
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    except BaseException:
        try:
            sys.stdout.write(
                _deny_json("tht: the guard hook failed; refused (fail closed).") + "\n"
            )
            sys.stdout.flush()
        except BaseException:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
