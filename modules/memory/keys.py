"""The identities of Memory: normalized text, the memory key and the ids derived from them.

A memory is *the same memory* when its normalized subject, target and meaning are the same
(issue 13: exact duplicates are never saved twice): :func:`memory_key` is that triple and
:func:`memory_id` its content identity. Two memories about the same subject and target (a
newer meaning replaces an older one: ``memory_superseded``) share :func:`subject_target_key`;
two about the same subject with different targets contradict each other (:func:`subject_key`).
A solved question's id is the content identity of the session it came from (one per session).

Normalization (:func:`normalize_text`) is what a reviewer would call "the same words": Unicode
NFKC, case folded, accents stripped (``Ablazione`` = ``ablazióne``), invisible format
characters dropped, whitespace collapsed, punctuation around the text stripped (``"flag."`` =
``flag``); punctuation inside stays (``a.b`` is a column, not ``ab``). It is idempotent.
"""

from __future__ import annotations

import hashlib
import unicodedata

import msgspec

__all__ = [
    "memory_id",
    "memory_id_for_key",
    "memory_key",
    "normalize_text",
    "solved_id",
    "subject_key",
    "subject_target_key",
]

_PASSES = 4
_ID_HEX = 16  # 64 bits of SHA-256: ample for a workspace's memories, short enough to type


def _is_edge(ch: str) -> bool:
    """Stripped around the text: whitespace and punctuation (Unicode categories P*)."""
    return ch.isspace() or unicodedata.category(ch).startswith("P")


def _fold_once(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    # accents: decompose, drop the combining marks, compose what is left
    decomposed = unicodedata.normalize("NFD", text)
    kept = []
    for ch in decomposed:
        category = unicodedata.category(ch)
        if category == "Mn" or category == "Cf":  # accents; zero-width and bidi controls
            continue
        kept.append(" " if category == "Cc" else ch)  # control characters separate words
    text = unicodedata.normalize("NFKC", "".join(kept))
    text = " ".join(text.split())
    start, end = 0, len(text)
    while start < end and _is_edge(text[start]):
        start += 1
    while end > start and _is_edge(text[end - 1]):
        end -= 1
    return text[start:end]


def normalize_text(text: str) -> str:
    """The comparable form of ``text`` (see the module docstring); ``""`` for blank text."""
    # NFKC after dropping marks can expose a character that case folding changes again (rare
    # compatibility forms): a few passes reach the fixed point, so the result is idempotent
    for _ in range(_PASSES):
        folded = _fold_once(text)
        if folded == text:
            break
        text = folded
    return text


def _key(*parts: str) -> str:
    # JSON of the normalized parts: unambiguous whatever they contain, readable when printed
    return msgspec.json.encode([normalize_text(p) for p in parts]).decode("utf-8")


def memory_key(subject: str, target: str | None, meaning: str) -> str:
    """The identity of a memory's content: normalized (subject, target, meaning)."""
    return _key(subject, target or "", meaning)


def subject_target_key(subject: str, target: str | None) -> str:
    """What a newer memory supersedes an older one on: normalized (subject, target)."""
    return _key(subject, target or "")


def subject_key(subject: str) -> str:
    """What contradicting memories share: the normalized subject."""
    return normalize_text(subject)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:_ID_HEX]


def memory_id(subject: str, target: str | None, meaning: str) -> str:
    """``mem-`` + the first 16 hex digits of SHA-256(:func:`memory_key`)."""
    return memory_id_for_key(memory_key(subject, target, meaning))


def memory_id_for_key(key: str) -> str:
    """The :func:`memory_id` of a :func:`memory_key`."""
    return "mem-" + _digest(key)


def solved_id(session: str) -> str:
    """``sq-`` + the first 16 hex digits of SHA-256(session id): one solved question per
    finalized session."""
    return "sq-" + _digest(session)
