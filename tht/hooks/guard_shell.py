"""Shell text: parse it, expand each simple command's words, hand the argv on.

:func:`analyse_script` lexes a script (:mod:`tht.hooks.guard_parse`) and walks its simple
commands: redirections (a write target is checked; a heredoc, here-string, ``< file`` or an
upstream ``… |`` becomes the command's possible stdin script), leading assignments (tracked in
:class:`~tht.hooks.guard_context.Ctx` so that ``$X`` expands to what was assigned), and the
expansion of each word to its possible values. Command and parameter substitutions are
analysed as scripts of their own. Each resulting argv goes to
:func:`tht.hooks.guard_programs.check_argv`. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

from tht.hooks import guard_programs
from tht.hooks.guard_context import Ctx, Glob, absolute, fallback
from tht.hooks.guard_parse import ParseError, Redir, SimpleCommand, Word, parse
from tht.hooks.guard_paths import check_path
from tht.hooks.guard_rules import ASSIGN

Stdin = list[tuple[str, str]]  # (kind, text|path): what a shell would read as a script

_MAX_VALUES = 16  # beyond this many possible values a word (or argv product) is unknown


# -- expansion ---------------------------------------------------------------------------------
def lookup(name: str, ctx: Ctx) -> list[str | None]:
    """The possible values of variable ``name``: assigned here, else the environment's."""
    if name in ctx.vars:
        return ctx.vars[name]
    if name in os.environ and name not in ("@", "*", "#", "?", "$", "!", "-", "0"):
        return [os.environ[name]]
    return [None]


def _expand_parts(
    parts: list[tuple[Any, ...]], ctx: Ctx, depth: int
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
            add = lookup(part[1], ctx)
            if None in add and part[2] is not None:
                default, dyn = _expand_parts(part[2], ctx, depth)
                add = [*(a for a in add if a is not None), *default]
                dynamic = dynamic or dyn
        else:  # ${…} forms we do not evaluate: look inside, value unknown
            with contextlib.suppress(ParseError):
                analyse_script(part[1], ctx.child(), depth + 1)
            add = [None]
        values = [v + a if v is not None and a is not None else None for v in values for a in add]
        if len(values) > _MAX_VALUES:
            values = [None]
    return list(dict.fromkeys(values)), dynamic


def expand(word: Word, ctx: Ctx, depth: int) -> list[str | None]:
    """The possible values of a word (``None``: unknown); a pattern's values are :class:`Glob`."""
    values, dynamic = _expand_parts(word.parts, ctx, depth)
    return [Glob(v) if dynamic and v is not None else v for v in values]


def assign(name: str, append: bool, values: list[str | None], ctx: Ctx) -> None:
    """Record ``name=value`` (or ``+=``); a new ``THT_WORKSPACE`` is one more workspace."""
    old = ctx.vars.get(name, lookup(name, ctx)) if append else []
    if append:
        values = [o + v if o is not None and v is not None else None for o in old for v in values]
    merged = list(dict.fromkeys([*ctx.vars.get(name, []), *values]))
    ctx.vars[name] = merged[-16:]
    if name == "THT_WORKSPACE":
        ctx.workspaces += [absolute(v, ctx.cwd) for v in values if v]


# -- analysis ----------------------------------------------------------------------------------
def analyse_script(text: str, ctx: Ctx, depth: int) -> None:
    """Check a shell script; raises :class:`~tht.hooks.guard_context.Deny` (or
    :class:`~tht.hooks.guard_parse.ParseError`)."""
    ctx.tick(depth)
    commands = parse(text)
    pipeline: list[SimpleCommand] = []
    for command in commands:
        pipeline = [*pipeline, command] if command.piped else [command]
        _analyse_command(command, pipeline[:-1], ctx, depth)


def analyse_text(text: str, ctx: Ctx, depth: int, why: str) -> None:
    """:func:`analyse_script`, failing closed (on ``why``) when the text cannot be parsed."""
    try:
        analyse_script(text, ctx, depth)
    except ParseError as exc:
        fallback(text, ctx, f"{why} cannot be parsed ({exc})")


def _analyse_command(
    command: SimpleCommand, upstream: list[SimpleCommand], ctx: Ctx, depth: int
) -> None:
    ctx.tick(depth)
    stdin = _redirections(command.redirs, ctx, depth)
    stdin += _upstream_stdin(upstream, ctx)
    words: list[list[str | None]] = [expand(w, ctx, depth) for w in command.words]
    k = _leading_assignments(command, words, ctx, depth)
    for argv in _product(words[k:]):
        guard_programs.check_argv(argv, ctx, depth, stdin)


def _redirections(redirs: list[Redir], ctx: Ctx, depth: int) -> Stdin:
    """Check write targets; return what the redirections feed the command on stdin."""
    stdin: Stdin = []
    for redir in redirs:
        if redir.op in ("<<", "<<-"):
            body = redir.body or ""
            if not redir.quoted_delim and any(c in body for c in "$`"):
                analyse_text(body, ctx.child(), depth + 1, "a heredoc")
            stdin.append(("text", body))
            continue
        targets = expand(redir.target, ctx, depth) if redir.target else [None]
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
                check_path(target, ctx)
    return stdin


def _upstream_stdin(upstream: list[SimpleCommand], ctx: Ctx) -> Stdin:
    """`… | bash`: whatever the upstream commands print (or name as files) may be the script."""
    stdin: Stdin = []
    for up in upstream:
        stdin.append(("text", up.text))
        for w in up.words[1:]:
            plain = len(w.parts) == 1 and w.parts[0][0] == "lit"
            if plain and os.path.isfile(absolute(w.parts[0][1], ctx.cwd)):
                stdin.append(("file", w.parts[0][1]))
    return stdin


def _leading_assignments(
    command: SimpleCommand, words: list[list[str | None]], ctx: Ctx, depth: int
) -> int:
    """Handle the leading ``NAME=value`` words; return the index of the first other word."""
    k = 0
    while k < len(command.words):
        first = command.words[k].parts[0] if command.words[k].parts else None
        m = ASSIGN.fullmatch(command.words[k].raw) if first and first[0] == "lit" else None
        if not m or not ASSIGN.match(first[1]):  # type: ignore[index]
            break
        vm = ASSIGN.match(first[1])  # type: ignore[index]
        assert vm is not None
        values = [v[len(vm.group(1)) + len(vm.group(2)) + 1 :] if v else v for v in words[k]]
        if k + 1 == len(command.words) or vm.group(1) == "THT_WORKSPACE":
            assign(vm.group(1), bool(vm.group(2)), values, ctx)
        for v in values:
            if v and any(c.isspace() for c in v):
                analyse_text(v, ctx.child(), depth + 1, "an assigned value")
        k += 1
    return k


def _product(words: list[list[str | None]]) -> list[list[str | None]]:
    out: list[list[str | None]] = [[]]
    for cands in words:
        out = [[*o, c] for o in out for c in cands]
        if len(out) > _MAX_VALUES:
            return [[None] * len(words)]
    return out
