"""Scripts and interpreter code that a command runs: read them and check their content.

:func:`scan_file` reads a file a command executes or sources (bounded, binaries skipped, each
file once) and checks it as a shell script or as interpreter code, chosen by how it is run and
by its ``#!`` line. :func:`check_code` is the rule for interpreter code (``python -c``,
``perl -e``, a ``.py`` file, …): refuse when it names a protected path or runs tht with a
human-only verb, and analyse its quoted strings that look like shell commands.
:func:`scan_stdin` does the same for what a shell or interpreter reads on stdin. Standard
library only.
"""

from __future__ import annotations

import contextlib
import os
import re

from tht.hooks import guard_shell
from tht.hooks.guard_context import Ctx, Deny, absolute, fallback, suspicious
from tht.hooks.guard_parse import ParseError
from tht.hooks.guard_rules import (
    CODE_VERBS,
    IMPORTS_THT,
    MAX_SCRIPT_BYTES,
    PKG_DIR,
    RAW_PROTECTED,
    REASON_LEDGER,
    THT_WORD,
)
from tht.hooks.guard_tht import check_tht


def check_code(code: str, argv: list[str | None], ctx: Ctx, depth: int) -> None:
    """Interpreter code (python -c, perl -e, a .py file): refuse when it mentions a protected
    path, or mentions tht together with a human-only verb; a tht entry point runs ``argv``."""
    ctx.tick(depth)
    flat = re.sub(r"[\"'\\`]", " ", code)
    if RAW_PROTECTED.search(flat) or RAW_PROTECTED.search(code):
        raise Deny(REASON_LEDGER.format(path="the file this code names"))
    if THT_WORD.search(code):
        if CODE_VERBS.search(code) or suspicious(code):
            raise Deny(
                "tht: this code runs tht with a human-only command; the model proposes, a human "
                "decides (`tht propose STAGE --file P.json`)."
            )
        if IMPORTS_THT.search(code):
            check_tht(argv, ctx, "tht (imported)")
    for m in list(re.finditer(r"'([^'\n]{3,})'|\"([^\"\n]{3,})\"", code))[:200]:
        literal = m.group(1) or m.group(2)
        if any(c.isspace() for c in literal):
            with contextlib.suppress(ParseError):
                guard_shell.analyse_script(literal, ctx.child(), depth + 1)


def scan_stdin(stdin: list[tuple[str, str]], kind: str, ctx: Ctx, depth: int) -> None:
    """Check what a shell (``kind`` ``"sh"``) or an interpreter would read on stdin."""
    for what, value in stdin:
        if what == "file":
            scan_file(value, kind, [], ctx, depth)
        elif kind == "sh":
            guard_shell.analyse_text(value, ctx.child(), depth + 1, "a script on stdin")
        else:
            check_code(value, [], ctx, depth)


def scan_file(
    path: str, kind: str, argv: list[str | None], ctx: Ctx, depth: int, quiet: bool = False
) -> None:
    """A file that a command runs: read it (bounded) and check its content the same way."""
    ctx.tick(depth)
    if not path:
        fallback(ctx.raw, ctx, "the script to run cannot be resolved")
        return
    full = os.path.realpath(absolute(path, ctx.cwd))
    if os.path.basename(full) in ("tht", "tht.exe") or full.startswith(PKG_DIR + os.sep):
        check_tht(argv, ctx, path)
        if full.startswith(PKG_DIR + os.sep):
            return
    text = _read_script(full, path, ctx, quiet)
    if text is None:
        return
    if _script_kind(kind, text) == "sh":
        sub = ctx.child()
        sub.vars = {}
        sub.raw = text
        guard_shell.analyse_text(text, sub, depth + 1, f"the script `{path}`")
    else:
        check_code(text, argv, ctx, depth + 1)


def _read_script(full: str, path: str, ctx: Ctx, quiet: bool) -> str | None:
    """The text of the script at ``full``; ``None`` when it is absent, binary or already read
    (an unreadable one falls back to the raw text unless ``quiet``; a huge one is refused)."""
    try:
        size = os.path.getsize(full)
        if not os.path.isfile(full):
            return None
    except OSError:
        if not quiet:
            fallback(ctx.raw, ctx, f"the script `{path}` cannot be read")
        return None
    if full in ctx.seen_files:
        return None
    ctx.seen_files.add(full)
    try:
        with open(full, "rb") as fh:
            head = fh.read(8192)
            if b"\0" in head:
                return None  # a binary: out of reach (docs/guard-hook.md)
            if size > MAX_SCRIPT_BYTES:
                raise Deny(
                    f"tht: the script `{path}` is too large to inspect; refused (fail closed)."
                )
            data = head + fh.read(MAX_SCRIPT_BYTES)
    except OSError:
        if not quiet:
            fallback(ctx.raw, ctx, f"the script `{path}` cannot be read")
        return None
    return data.decode("utf-8", errors="replace")


def _script_kind(kind: str, text: str) -> str:
    """``"sh"``, ``"py"`` or ``"code"``: an executed file (``"exec"``) by its ``#!`` line."""
    if kind != "exec":
        return kind
    first = text.split("\n", 1)[0]
    if first.startswith("#!") and re.search(r"python|pypy", first):
        return "py"
    if first.startswith("#!") and re.search(r"perl|node|ruby|php|lua", first):
        return "code"
    return "sh"
