"""Mechanical text normalization shared by sources, units, excerpts and the Evidence query text.

Glossary ("Supporting excerpt", "Evidence query text"): text receives only Unicode NFC
normalization, newline conversion and (where said) stripping of outer whitespace. Nothing here
rewrites punctuation or case. Excerpt matching additionally collapses runs of whitespace, so an
excerpt copied across a line wrap of the source is still found.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = [
    "collapse_ws",
    "excerpt_found",
    "normalize_text",
    "sha256_text",
]

_WS = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """NFC, ``\\r\\n`` and lone ``\\r`` → ``\\n``, a leading BOM dropped. Nothing else changes."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def collapse_ws(text: str) -> str:
    """Normalized text with every run of whitespace turned into one space, outer spaces removed."""
    return _WS.sub(" ", normalize_text(text)).strip()


def excerpt_found(excerpt: str, collapsed_source: str) -> bool:
    """Is ``excerpt`` present in a source already passed through :func:`collapse_ws`?"""
    key = collapse_ws(excerpt)
    return bool(key) and key in collapsed_source


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
