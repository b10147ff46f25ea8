"""Slugs: assigned once, from the title, never reassigned.

A slug is lowercase ASCII words joined by ``-`` (at most 60 characters, cut at a word boundary).
A slug already taken — by a unit present, by the manifest, or by a retired unit — gets ``-2``,
``-3``… so an id once cited in a session ledger never points at different content.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

__all__ = ["MAX_SLUG", "assign_slug", "slugify"]

MAX_SLUG = 60
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """``"Tasso d'occupazione (%)"`` → ``"tasso-d-occupazione"``; empty → ``"unit"``."""
    ascii_text = (
        unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    )
    words = [w for w in _NON_ALNUM.split(ascii_text) if w]
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG:
            if not slug:
                slug = word[:MAX_SLUG]
            break
        slug = candidate
    return slug or "unit"


def assign_slug(title: str, taken: Collection[str]) -> str:
    """A slug for ``title`` not in ``taken`` (``-2``, ``-3``… appended when needed)."""
    base = slugify(title)
    if base not in taken:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = base[: MAX_SLUG - len(suffix)].rstrip("-") + suffix
        if candidate not in taken:
            return candidate
        n += 1
