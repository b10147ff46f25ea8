"""Prompt redaction and sensitive-content detection before a model call (spec 000 §21.2–21.3).

- :func:`redact_prompt` replaces, best effort, what must not leave the machine: API keys (known
  prefixes, and assignments to any name that names a secret: ``DB_PASSWORD=``,
  ``AWS_SECRET_ACCESS_KEY=``, ``export GITHUB_TOKEN=``, ``password: x`` in YAML, ``--password x``),
  authorization headers and bearer tokens, connection strings with credentials (a password may
  hold ``/`` or ``:``), private key blocks, JWTs, cookies and session tokens, IBANs and Italian
  fiscal codes (check digit verified), long Base64 payloads, and the user's home directory in
  paths; then bounds the text to ``max_chars``. Keyword patterns never rely on ``\b`` (which
  does not separate ``_`` from a letter) and stay linear in the input.
- :func:`detect_sensitive` says whether the *raw* prompt contains high-risk material that a cloud
  profile must never receive (§21.3); routing then skips the cloud call and stays deterministic.

Redaction is not anonymization: the cloud stays opt-in. Pure; standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["SENSITIVE_KINDS", "Redaction", "detect_sensitive", "redact_prompt"]

# Keyword boundaries: ``\b`` does not separate ``_`` from a letter, so ``DB_PASSWORD=`` or
# ``AWS_SECRET_ACCESS_KEY=`` slipped past a ``\bpassword`` pattern. Patterns here use ``_NB``
# ("not preceded by a letter or digit") and an assignment is matched as a *whole identifier*
# (maximal run of ``[A-Za-z0-9_.-]``, so matching stays linear) whose name is then inspected.
_NB = r"(?<![A-Za-z0-9])"
_QUOTED = r"\"[^\"\n]*\"|'[^'\n]*'"
_NOT_DONE = r"(?![\"']?\[REDACTED)"
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])([A-Za-z][A-Za-z0-9_.\-]*)"
    r"(\s*[\"']?\s*(?::|=(?!=))[ \t]*)" + _NOT_DONE + r"(?=[^\s])"
)
_VALUE_END = re.compile(r"[\s,;&\"']")
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "secret", "pwd")
_PASSWORD_PARTS = frozenset({"pass", "pw", "pin"})
_CREDENTIAL_WORDS = (
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "credential",
    "sessionid",
    "csrf",
    "signature",
)
_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _assignment_kind(name: str) -> str | None:
    """``password`` / ``credential-assignment`` when ``name`` names a secret, else ``None``."""
    flat = re.sub(r"[_.\-]", "", name).lower()
    parts = {p.lower() for p in _PARTS.findall(name)}
    if any(w in flat for w in _PASSWORD_WORDS) or parts & _PASSWORD_PARTS or flat.endswith("pass"):
        return "password"
    if any(w in flat for w in _CREDENTIAL_WORDS):
        return "credential-assignment"
    return None


def _redact_assignments(text: str, counts: dict[str, int]) -> str:
    """``NAME=value`` / ``name: value`` / ``"name": "value"`` where NAME names a secret."""
    out: list[str] = []
    pos = 0
    while (match := _ASSIGNMENT.search(text, pos)) is not None:
        name, start = match.group(1), match.end()
        kind = _assignment_kind(name)
        if kind is None:
            out.append(text[pos:start])
            pos = start
            continue
        line_end = text.find("\n", start)
        line_end = len(text) if line_end < 0 else line_end
        quote = text[start]
        if quote in "\"'":
            close = text.find(quote, start + 1, line_end)
            end = line_end if close < 0 else close
            start += 1
        elif ":" in match.group(2):  # YAML-like ``password: a b c``: the rest of the line
            end = line_end
        else:  # ``PASSWORD=x more text``: the token, up to whitespace or a separator
            stop = _VALUE_END.search(text, start, line_end)
            end = line_end if stop is None else stop.start()
        out.append(text[pos:start] + "[REDACTED]")
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    out.append(text[pos:])
    return "".join(out)


_CF_DIGIT = "[0-9LMNPQRSTUV]"
_FISCAL_CODE = re.compile(
    rf"(?i){_NB}[A-Z]{{6}}{_CF_DIGIT}{{2}}[ABCDEHLMPRST]{_CF_DIGIT}{{2}}[A-Z]{_CF_DIGIT}{{3}}[A-Z]"
    r"(?![A-Za-z0-9])"
)
_IBAN = re.compile(
    r"(?i)(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}"
    r"(?:[A-Z0-9]{11,30}|(?:[ ][A-Z0-9]{4}){2,7}(?:[ ][A-Z0-9]{1,4})?)(?![A-Za-z0-9])"
)


def _iban_valid(candidate: str) -> bool:
    """ISO 13616 mod-97 check, so only real IBANs (not any long code) are removed."""
    compact = candidate.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34 or not compact.isalnum() or not compact.isascii():
        return False
    moved = compact[4:] + compact[:4]
    digits = "".join(str(int(ch, 36)) for ch in moved)
    return int(digits) % 97 == 1


def _redact_checked(
    text: str, pattern: re.Pattern[str], valid: Callable[[str], bool], replacement: str
) -> tuple[str, int]:
    """Replace the matches of ``pattern`` that pass ``valid`` — or whose longest prefix ending at
    a space-separated group does (``IT60 X054 … 456 with`` keeps ``with``)."""
    n = 0

    def one(match: re.Match[str]) -> str:
        nonlocal n
        found = match.group(0)
        candidate = found
        while candidate:
            if valid(candidate):
                n += 1
                return replacement + found[len(candidate) :]
            if " " not in candidate:
                break
            candidate = candidate.rsplit(" ", 1)[0]
        return found

    return pattern.sub(one, text), n


def _fiscal_code_valid(candidate: str) -> bool:
    """The codice fiscale check character (odd/even tables), so random 16-char codes stay."""
    code = candidate.upper()
    odd = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25]
    odd += [24, 23]
    total = 0
    for i, ch in enumerate(code[:15]):
        value = int(ch) if ch.isdigit() else ord(ch) - ord("A")
        total += odd[value] if i % 2 == 0 else value
    return chr(ord("A") + total % 26) == code[15]


# (kind, pattern, replacement) — applied in this order; each replacement is inert for later ones.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "private-key",
        re.compile(
            r"-{3,}\s*BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?\s*-{3,}.*?(?:-{3,}\s*END [A-Z0-9 ]*"
            r"PRIVATE KEY(?: BLOCK)?\s*-{3,}|\Z)",
            re.DOTALL,
        ),
        "[REDACTED:private-key]",
    ),
    (
        "bearer",
        re.compile(
            r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest|negotiate|"
            r"apikey|key)?\s*)(?!\[REDACTED)[^\s\"',;]+"
        ),
        r"\1[REDACTED]",
    ),
    (
        "bearer",
        re.compile(r"(?i)(?<![A-Za-z0-9])(bearer)\s+(?!\[REDACTED)[A-Za-z0-9\-._~+/]{8,}=*"),
        r"\1 [REDACTED]",
    ),
    (
        "jwt",
        re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        "[REDACTED:jwt]",
    ),
    (
        # the password may hold '/', ':' or even '@' (unencoded): up to the last '@' of the token
        "connection-string",
        re.compile(r"(?<![A-Za-z0-9+.\-])([a-zA-Z][a-zA-Z0-9+.\-]{1,20})://[^\s:/@]*:[^\s\"'<>]*@"),
        r"\1://[REDACTED]@",
    ),
    (
        "api-key",
        re.compile(
            r"(?<![A-Za-z0-9])(?:sk|rk|pk)-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_\-]{16,}"
            r"|(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{20,}|(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{20,}"
            r"|(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}|(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}"
            r"(?![A-Za-z0-9])|(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"
            r"|(?<![A-Za-z0-9])glpat-[A-Za-z0-9_\-]{20,}|(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"
        ),
        "[REDACTED:api-key]",
    ),
    (
        "cookie",
        re.compile(r"(?im)^(\s*(?:set-)?cookie\s*:\s*).+$"),
        r"\1[REDACTED]",
    ),
    (
        # ``--password x`` / ``--token=x`` on a command line
        "password",
        re.compile(
            r"(?i)(?<![A-Za-z0-9-])(--?(?:password|passwd|pass|secret|token|api-key|apikey|"
            r"access-token|auth-token|client-secret)(?:=|\s+))(?!\[REDACTED)(?:"
            + _QUOTED
            + r"|[^\s]+)"
        ),
        r"\1[REDACTED]",
    ),
    (
        "base64",
        re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{200,}={0,2}(?![A-Za-z0-9+/=])"),
        "[REDACTED:base64]",
    ),
)

# (kind, pattern, validator, replacement): personal identifiers, removed only when the check
# digit holds (an IBAN's mod-97, a codice fiscale's check letter).
_CHECKED_RULES: tuple[tuple[str, re.Pattern[str], Callable[[str], bool], str], ...] = (
    ("iban", _IBAN, _iban_valid, "[REDACTED:iban]"),
    ("fiscal-code", _FISCAL_CODE, _fiscal_code_valid, "[REDACTED:fiscal-code]"),
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
    ("private-key", re.compile(r"-{3,}\s*BEGIN [A-Z0-9 ]*PRIVATE KEY")),
    (
        "bearer-authorization",
        re.compile(
            r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)(?![A-Za-z0-9])"
            r"|(?<![A-Za-z0-9])bearer\s+[A-Za-z0-9\-._~+/]{16,}"
        ),
    ),
    ("password-assignment", _RULES[7][1]),
    ("credentialed-connection-string", _RULES[4][1]),
    ("long-base64", re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")),
    ("known-key-format", _RULES[5][1]),
    ("jwt", _RULES[3][1]),
)


def _assignment_kinds(text: str) -> set[str]:
    """The §21.3 kinds of the secret-naming assignments in ``text``."""
    kinds: set[str] = set()
    for match in _ASSIGNMENT.finditer(text):
        name = match.group(1)
        flat = re.sub(r"[_.\-]", "", name).lower()
        kind = _assignment_kind(name)
        if kind is None:
            continue
        if "clientsecret" in flat:
            kinds.add("client-secret")
        elif kind == "password":
            kinds.add("password-assignment")
        else:
            kinds.add("api-key-assignment")
    return kinds


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
        out = _redact_assignments(out, counts)
        for kind, pattern, valid, replacement in _CHECKED_RULES:
            out, n = _redact_checked(out, pattern, valid, replacement)
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
    found = {kind for kind, pattern in _SENSITIVE if pattern.search(text)}
    found |= _assignment_kinds(text)
    return tuple(kind for kind in SENSITIVE_KINDS if kind in found)
