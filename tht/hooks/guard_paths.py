"""Protected paths: whether a write target is one of the files tht alone writes.

A path is protected when it lies in a workspace's ``sessions/``, ``catalog/``, ``memory/``,
``reviewers/`` or ``.tht/``, or is its ``workspace.yaml`` / ``workflow.yaml``; a destructive
write (``rm -r``, ``mv``, …) is also refused on a folder that contains a workspace. Workspaces
are the cwd, ``$THT_WORKSPACE``, ``--workspace`` values and any folder holding a
``workspace.yaml`` above the target, checked both lexically and through symlinks. Also the
file targets of a Codex ``apply_patch``. Standard library only.
"""

from __future__ import annotations

import os
import re

from tht.hooks.guard_context import Ctx, Deny, Glob, absolute, fallback
from tht.hooks.guard_rules import PROTECTED_DIRS, PROTECTED_FILES, REASON_LEDGER

_MAX_HOPS = 64  # how many parent folders are searched for a workspace.yaml


def _under_protected(path: str, root: str) -> bool:
    rel = os.path.relpath(path, root) if path != root else "."
    if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
        return False
    parts = rel.split(os.sep)
    return parts[0] in PROTECTED_DIRS or rel in PROTECTED_FILES


def _candidates(path: str, ctx: Ctx) -> list[str]:
    """The absolute forms of ``path``: lexical and symlink-resolved, from every cwd seen."""
    out: list[str] = []
    for cwd in ctx.cwds:
        lexical = absolute(path, cwd)
        out.append(lexical)
        real = os.path.realpath(lexical)
        if real != lexical:
            out.append(real)
    return out


def _names_protected(path: str, parts: list[str], ctx: Ctx) -> bool:
    """The path's own words name tht's files, wherever it is resolved from."""
    for k, part in enumerate(parts):
        if part in (".tht", "reviewers") or (part == "sessions" and k + 1 < len(parts)):
            return True
    if ctx.cwd_unknown and not os.path.isabs(os.path.expanduser(path)):
        if any(p in PROTECTED_DIRS or p in PROTECTED_FILES or p == ".." for p in parts):
            return True
        if parts and parts[-1] in ("ledger.jsonl", "ledger.head"):
            return True
    return False


def _candidate_protected(
    cand: str, path: str, roots: list[str], ctx: Ctx, destructive: bool
) -> bool:
    """One absolute form of the path lies in (or, destructively, above) a known workspace."""
    if any(_under_protected(cand, root) for root in roots):
        return True
    if destructive and any(r == cand or r.startswith(cand.rstrip(os.sep) + os.sep) for r in roots):
        return True
    if cand != absolute(path, ctx.cwds[0]) or os.path.isabs(path):
        tail = cand.split(os.sep)
        if any(p in (".tht", "reviewers") for p in tail) or "sessions" in tail[:-1]:
            return True
    return False


def _in_found_workspace(cand: str, destructive: bool) -> bool:
    """A folder above ``cand`` (or, destructively, ``cand`` itself) holds a workspace.yaml."""
    d, hops = cand, 0
    while hops < _MAX_HOPS:
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


def is_protected(path: str, ctx: Ctx, destructive: bool = False) -> bool:
    """Whether a write to ``path`` (relative to the tracked cwd) touches tht's files; with
    ``destructive`` (rm -r, mv, …) also a folder that contains a workspace."""
    if not path:
        return False
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if _names_protected(path, parts, ctx):
        return True
    roots = [os.path.normpath(w) for w in ctx.workspaces]
    roots += [os.path.realpath(w) for w in ctx.workspaces]
    for cand in _candidates(path, ctx):
        if _candidate_protected(cand, path, roots, ctx, destructive):
            return True
        if _in_found_workspace(cand, destructive):
            return True
    return False


def check_path(path: str | None, ctx: Ctx, destructive: bool = False) -> None:
    """Refuse a write to ``path``; ``None`` (unresolvable) falls back to the raw text."""
    if path is None:
        fallback(ctx.raw, ctx, "a write target cannot be resolved")
        return
    paths = [path]
    if isinstance(path, Glob):
        import glob

        paths += [m for cwd in ctx.cwds for m in glob.glob(os.path.join(cwd, path))][:256]
    for p in paths:
        if is_protected(p, ctx, destructive):
            raise Deny(REASON_LEDGER.format(path=f"`{path}`"))


def check_patch(text: str, ctx: Ctx) -> None:
    """Codex ``apply_patch``: every file it adds, updates, deletes or moves to."""
    for m in re.finditer(
        r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", text, re.M
    ):
        check_path((m.group(1) or m.group(2)).strip(), ctx)
