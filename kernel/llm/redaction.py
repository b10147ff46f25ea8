"""Prompt redaction and sensitive-content detection before a model call (spec 000 §21.2–21.3).

- :func:`redact_prompt` replaces, best effort, what must not leave the machine: API keys (known
  prefixes and ``key=value`` assignments), bearer tokens, passwords, connection strings with
  credentials, private key blocks, JWTs, cookies and session tokens, long Base64 payloads, and the
  user's home directory in paths; then bounds the text to ``max_chars``.
- :func:`detect_sensitive` says whether the *raw* prompt contains high-risk material that a cloud
  profile must never receive (§21.3); routing then skips the cloud call and stays deterministic.

Redaction is not anonymization: the cloud stays opt-in. Pure; standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["SENSITIVE_KINDS", "Redaction", "detect_sensitive", "redact_prompt"]

# (kind, pattern, replacement) — applied in this order; each replacement is inert for later ones.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY"
            r"(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED:private-key]",
    ),
    (
        "bearer",
        re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"),
        r"\1 [REDACTED]",
    ),
    (
        "bearer",
        re.compile(r"(?i)(authorization\s*:\s*basic\s+)[A-Za-z0-9+/=]{6,}"),
        r"\1[REDACTED]",
    ),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        "[REDACTED:jwt]",
    ),
    (
        "connection-string",
        re.compile(r"\b([a-z][a-z0-9+.\-]{1,20})://[^\s:/@]+:[^\s@/]+@"),
        r"\1://[REDACTED]@",
    ),
    (
        "api-key",
        re.compile(
            r"\b(?:sk|rk|pk)-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_\-]{16,}"
            r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
            r"|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_\-]{30,}"
            r"|\bglpat-[A-Za-z0-9_\-]{20,}|\bhf_[A-Za-z0-9]{30,}"
        ),
        "[REDACTED:api-key]",
    ),
    (
        "cookie",
        re.compile(r"(?im)^(\s*(?:set-)?cookie\s*:\s*).+$"),
        r"\1[REDACTED]",
    ),
    (
        "password",
        re.compile(
            r"(?i)\b(password|passwd|pwd|passphrase|secret|client[_-]?secret)([\"']?\s*[:=]\s*)"
            r"(?:\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
        ),
        r"\1\2[REDACTED]",
    ),
    (
        "credential-assignment",
        re.compile(
            r"(?i)\b(api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret[_-]?key|auth[_-]?token|"
            r"access[_-]?token|refresh[_-]?token|session[_-]?(?:id|token)|sessionid|csrftoken|"
            r"private[_-]?token|x-api-key)([\"']?\s*[:=]\s*)(?:\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
        ),
        r"\1\2[REDACTED]",
    ),
    (
        "base64",
        re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{200,}={0,2}(?![A-Za-z0-9+/=])"),
        "[REDACTED:base64]",
    ),
)

_HOME_PATHS = re.compile(
    r"(?<![\w.])(?:/home/|/Users/)[^/\s]+(?=/|\b)|\b[A-Za-z]:\\Users\\[^\\\s]+(?=\\|\b)"
)

SENSITIVE_KINDS = (
    "private-key",
    "bearer-authorization",
    "password-assignment",
    "api-key-assignment",
    "client-secret",
    "credentialed-connection-string",
    "long-base64",
    "known-key-format",
    "jwt",
)

_SENSITIVE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY")),
    (
        "bearer-authorization",
        re.compile(
            r"(?i)authorization\s*:\s*(?:bearer|basic)\b|\bbearer\s+[A-Za-z0-9\-._~+/]{16,}"
        ),
    ),
    ("password-assignment", re.compile(r"(?i)\b(?:password|passwd|pwd)[\"']?\s*[:=]\s*\S")),
    (
        "api-key-assignment",
        re.compile(
            r"(?i)\b(?:api[_-]?key|apikey|x-api-key|access[_-]?token|secret[_-]?key)[\"']?\s*[:=]\s*\S"
        ),
    ),
    ("client-secret", re.compile(r"(?i)\bclient[_-]?secret[\"']?\s*[:=]\s*\S")),
    (
        "credentialed-connection-string",
        re.compile(r"\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@]+:[^\s@/]+@"),
    ),
    ("long-base64", re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")),
    ("known-key-format", _RULES[5][1]),
    ("jwt", _RULES[3][1]),
)


@dataclass(frozen=True)
class Redaction:
    """The redacted text and what was done to it (counts per kind; never the removed values)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)
    truncated: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.counts) or self.truncated


def redact_prompt(
    text: str,
    *,
    secrets: bool = True,
    home_paths: bool = True,
    max_chars: int = 6000,
    home: str | None = None,
) -> Redaction:
    """Redact ``text`` (spec §21.2 ``redactPrompt``) and bound it to ``max_chars`` characters.

    ``home`` is the user's home directory (the caller passes it; the kernel reads no
    environment): its occurrences, and any ``/home/<user>``, ``/Users/<user>`` or
    ``C:\\Users\\<user>`` prefix, become ``~``.
    """
    counts: dict[str, int] = {}
    out = text
    if secrets:
        for kind, pattern, replacement in _RULES:
            out, n = pattern.subn(replacement, out)
            if n:
                counts[kind] = counts.get(kind, 0) + n
    if home_paths:
        n_total = 0
        if home and len(home) > 1:
            n_total += out.count(home.rstrip("/\\"))
            out = out.replace(home.rstrip("/\\"), "~")
        out, n = _HOME_PATHS.subn("~", out)
        n_total += n
        if n_total:
            counts["home-path"] = n_total
    truncated = len(out) > max_chars
    if truncated:
        out = out[:max_chars]
    return Redaction(text=out, counts=counts, truncated=truncated)


def detect_sensitive(text: str) -> tuple[str, ...]:
    """The high-risk kinds found in ``text`` (empty when none): such a prompt never goes to a
    cloud profile (spec §21.3)."""
    return tuple(kind for kind, pattern in _SENSITIVE if pattern.search(text))
