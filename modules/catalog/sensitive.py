"""The offline pre-pass of the Sensitive Data Suggestion Run: deterministic, no model. Pure.

From structural metadata only — a column's name, its declared type and its table's name, never
a value — it proposes Sensitive Data Flags, each with the rule that fired, the words that made
it fire and a confidence, marked ``offline``. A proposal is shown whole and only a human saves
it (``tht catalog sensitive set``); nothing here records anything.

Names are split into lower-case words (``CustomerEmail`` / ``customer_email`` /
``Customer-Email`` → ``customer email``). A pattern is a word sequence: it fires when the words
appear in that order next to each other, or joined as one word (``first name`` also matches
``firstname``; a long pattern such as ``email`` or ``codicefiscale`` also inside a longer word:
``contactemail``). Italian and English, as the glossary's workspaces are.

Rules (:data:`RULES`): ``email``, ``phone``, ``national_id`` (fiscal code / codice fiscale, SSN,
passport, …), ``payment`` (IBAN, bank account, card), ``person_name`` (first / last name,
nome / cognome; a bare ``name`` / ``nome`` only in a table of persons), ``birth_date`` (data di
nascita, dob, birth_date), ``address``, ``ip_address`` (also by type: ``INET``, ``CIDR``) and
``secret`` (passwords, tokens, keys). A word that says the column is *about* the data rather
than the data itself (``email_verified``, ``phone_type``, ``address_id``, ``password_changed_at``)
vetoes the match unless the pattern itself contains it; each rule accepts only the type families
that can hold its data (a boolean never is an e-mail; only a date rule takes a temporal type).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from modules.catalog.generation import name_words, type_family
from modules.catalog.records import CatalogTable

__all__ = [
    "RULES",
    "SensitiveProposal",
    "classify_column",
    "propose_sensitive",
]

_TEXT = frozenset({"text", ""})
_TEXT_NUMBER = frozenset({"text", "number", ""})
_DATE = frozenset({"temporal", "text", "number", ""})
_SECRET = frozenset({"text", "binary", ""})

#: the words of a table of persons (its bare ``name`` / ``nome`` column is a person's name)
_PERSON_WORDS = frozenset(
    """person persons people individual customer customers client clients user users member
    members employee employees staff patient patients student students teacher teachers
    driver drivers player players athlete athletes author authors owner owners contact
    contacts doctor doctors nurse nurses applicant applicants candidate candidates voter
    voters passenger passengers guest guests subscriber subscribers account_holder
    persona persone cliente clienti utente utenti dipendente dipendenti paziente pazienti
    studente studenti docente docenti medico medici socio soci iscritto iscritti anagrafica
    assistito assistiti contatto contatti""".split()
)

#: words that say a column is about the data, not the data itself (unless the pattern has them)
_VETO = frozenset(
    """count cnt flag flags is has verified verify valid validated validation enabled opt optin
    optout consent consenso bounce bounced sent received type tipo status stato format length
    len id ids changed updated created modified reset at date time timestamp expires expiry
    expiration scadenza domain provider template templates policy policies required strength
    attempts attempt""".split()
)


@dataclass(frozen=True)
class _Pattern:
    words: tuple[str, ...]
    confidence: float
    #: may also match inside a longer single word (only long, distinctive words)
    inside: bool = False
    #: fires only in a table of persons
    person_table: bool = False
    #: words that veto this pattern (beside the shared ones)
    unless: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Rule:
    id: str
    what: str
    families: frozenset[str]
    patterns: tuple[_Pattern, ...]


def _p(
    text: str,
    confidence: float,
    *,
    inside: bool = False,
    person: bool = False,
    unless: str = "",
) -> _Pattern:
    return _Pattern(tuple(text.split()), confidence, inside, person, frozenset(unless.split()))


#: ``MailStreet``, ``MailCity``: a mailing address, not an e-mail
_MAILING = "street str city zip state address addr box country province provincia citta"


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "email",
        "an e-mail address",
        _TEXT,
        (
            _p("email", 0.95, inside=True),
            _p("e mail", 0.95),
            _p("mail", 0.8, unless=_MAILING),
            _p("posta elettronica", 0.9),
            _p("pec", 0.7),
        ),
    ),
    _Rule(
        "phone",
        "a telephone number",
        _TEXT_NUMBER,
        (
            _p("phone", 0.9, inside=True),
            _p("telephone", 0.9),
            _p("telefono", 0.9, inside=True),
            _p("cellulare", 0.9, inside=True),
            _p("tel", 0.7),
            _p("cell", 0.6),
            _p("mobile", 0.6),
            _p("fax", 0.7),
        ),
    ),
    _Rule(
        "national_id",
        "a fiscal code, SSN or identity document number",
        _TEXT_NUMBER,
        (
            _p("codice fiscale", 0.95, inside=True),
            _p("cod fisc", 0.9),
            _p("cod fiscale", 0.9),
            _p("fiscal code", 0.95),
            _p("tax code", 0.9),
            _p("tax id", 0.9),
            _p("ssn", 0.95),
            _p("social security", 0.95),
            _p("national id", 0.9),
            _p("passport", 0.9, inside=True),
            _p("driver license", 0.85),
            _p("drivers license", 0.85),
            _p("driving licence", 0.85),
            _p("id card", 0.8),
            _p("carta identita", 0.9),
            _p("partita iva", 0.6),
        ),
    ),
    _Rule(
        "payment",
        "an IBAN, bank account or payment card number",
        _TEXT_NUMBER,
        (
            _p("iban", 0.95),
            _p("bank account", 0.85),
            _p("account number", 0.7),
            _p("conto corrente", 0.85),
            _p("card number", 0.9),
            _p("credit card", 0.9),
            _p("cc number", 0.8),
            _p("cvv", 0.95),
        ),
    ),
    _Rule(
        "person_name",
        "a person's name",
        _TEXT,
        (
            _p("first name", 0.9),
            _p("last name", 0.9),
            _p("given name", 0.9),
            _p("family name", 0.9),
            _p("middle name", 0.85),
            _p("maiden name", 0.9),
            _p("full name", 0.8),
            _p("fname", 0.8),
            _p("lname", 0.8),
            _p("f name", 0.8),
            _p("l name", 0.8),
            _p("surname", 0.9, inside=True),
            _p("forename", 0.9, inside=True),
            _p("cognome", 0.9, inside=True),
            _p("nominativo", 0.85),
            _p("contact name", 0.7),
            _p("display name", 0.5),
            _p("username", 0.5),
            _p("user name", 0.5),
            _p("name", 0.6, person=True),
            _p("nome", 0.6, person=True),
        ),
    ),
    _Rule(
        "birth_date",
        "a date or place of birth",
        _DATE,
        (
            _p("date of birth", 0.95),
            _p("birth date", 0.95),
            _p("birthdate", 0.95, inside=True),
            _p("birthday", 0.9, inside=True),
            _p("dob", 0.9),
            _p("data di nascita", 0.95),
            _p("data nascita", 0.95),
            _p("nato il", 0.8),
            _p("birth place", 0.75),
            _p("luogo nascita", 0.75),
            _p("luogo di nascita", 0.75),
            _p("nascita", 0.75, inside=True),
            _p("birth year", 0.6),
            _p("anno nascita", 0.6),
            _p("birth", 0.6),
        ),
    ),
    _Rule(
        "address",
        "a postal address",
        _TEXT_NUMBER,
        (
            _p("street address", 0.85),
            _p("home address", 0.85),
            _p("address", 0.8, inside=True),
            _p("addr", 0.7),
            _p("street", 0.8),
            _p("indirizzo", 0.85, inside=True),
            _p("residenza", 0.7),
            _p("domicilio", 0.7),
            _p("civico", 0.6),
            _p("zip code", 0.55),
            _p("zip", 0.5),
            _p("postcode", 0.5),
            _p("postal code", 0.5),
        ),
    ),
    _Rule(
        "ip_address",
        "an IP address",
        frozenset({"text", "", "INET", "CIDR"}),
        (_p("ip address", 0.85), _p("ipaddress", 0.85, inside=True), _p("ip", 0.6)),
    ),
    _Rule(
        "secret",
        "a password, token or key",
        _SECRET,
        (
            _p("password", 0.95, inside=True),
            _p("passwd", 0.95),
            _p("pwd", 0.85),
            _p("api key", 0.95),
            _p("apikey", 0.95),
            _p("private key", 0.95),
            _p("access key", 0.9),
            _p("secret", 0.9),
            _p("token", 0.8),
            _p("otp", 0.8),
            _p("pin", 0.6),
            _p("pin code", 0.7),
        ),
    ),
)

#: rule id → what it finds
RULES: dict[str, str] = {rule.id: rule.what for rule in _RULES}

#: declared types that are the data whatever the column's name (PostgreSQL network types)
_TYPE_RULES: dict[str, tuple[str, float]] = {
    "INET": ("ip_address", 0.7),
    "CIDR": ("ip_address", 0.7),
    "MACADDR": ("ip_address", 0.6),
}
_EMAIL_TYPE = re.compile(r"\bE_?MAIL", re.I)  # a domain type named after it (``email_address``)


@dataclass(frozen=True)
class SensitiveProposal:
    """One proposed flag: where, the rule that fired, why, and how sure (0..1)."""

    table: str
    column: str
    type: str
    rule: str
    confidence: float
    evidence: str  # "name: 'first name'" or "type: INET"
    offline: bool = True

    @property
    def ref(self) -> str:
        return f"{self.table}.{self.column}"

    def to_json(self) -> dict[str, object]:
        return {
            "table": self.table,
            "column": self.column,
            "type": self.type,
            "rule": self.rule,
            "confidence": self.confidence,
            "evidence": self.evidence,
            "offline": self.offline,
        }


def _contiguous(words: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    n = len(pattern)
    return any(words[i : i + n] == pattern for i in range(len(words) - n + 1))


def _matches(words: tuple[str, ...], pattern: _Pattern) -> bool:
    if _contiguous(words, pattern.words):
        return True
    joined = "".join(pattern.words)
    if len(pattern.words) > 1 and joined in words:
        return True
    return pattern.inside and any(joined in w and w != joined for w in words)


@lru_cache(maxsize=1 << 14)
def _words(name: str) -> tuple[str, ...]:
    return tuple(w for w in name_words(name).split("_") if w)


def _person_table(table: str) -> bool:
    words = _words(table)
    return any(w in _PERSON_WORDS for w in words) or "_".join(words) in _PERSON_WORDS


def classify_column(table: str, column: str, declared_type: str) -> SensitiveProposal | None:
    """The best proposal for one column (highest confidence, then rule order), or None."""
    words = _words(column)
    family = type_family(declared_type)
    upper = declared_type.strip().upper()
    best: SensitiveProposal | None = None

    def consider(rule: str, confidence: float, evidence: str) -> None:
        nonlocal best
        if best is None or confidence > best.confidence:
            best = SensitiveProposal(
                table=table,
                column=column,
                type=declared_type,
                rule=rule,
                confidence=confidence,
                evidence=evidence,
            )

    base_type = re.sub(r"\(.*", "", upper).strip()
    if base_type in _TYPE_RULES:
        by_type, sure = _TYPE_RULES[base_type]
        consider(by_type, sure, f"type: {declared_type}")
    if _EMAIL_TYPE.search(upper) and family not in ("boolean", "number", "temporal"):
        consider("email", 0.9, f"type: {declared_type}")
    if family == "boolean" or not words:
        return best
    for rule in _RULES:
        if family not in rule.families:
            continue
        for pattern in rule.patterns:
            vetoes = (_VETO | pattern.unless) - set(pattern.words)
            if not _matches(words, pattern) or vetoes.intersection(words):
                continue
            evidence = f"name: {' '.join(pattern.words)!r}"
            confidence = pattern.confidence
            if pattern.person_table:
                owner = _person_before(words, pattern.words[0])
                if owner is not None:  # ``patient_name``, ``nome_cliente``
                    confidence, evidence = 0.75, f"name: {owner!r}"
                elif not _person_table(table):
                    continue
                else:
                    evidence += f" in a table of persons ({table})"
            consider(rule.id, confidence, evidence)
    return best


def _person_before(words: tuple[str, ...], name: str) -> str | None:
    """``patient name`` / ``nome cliente``: a person's word next to a bare name."""
    for i, word in enumerate(words):
        if word != name:
            continue
        if i > 0 and words[i - 1] in _PERSON_WORDS:
            return f"{words[i - 1]} {word}"
        if i + 1 < len(words) and words[i + 1] in _PERSON_WORDS:
            return f"{word} {words[i + 1]}"
    return None


def propose_sensitive(tables: Iterable[CatalogTable]) -> list[SensitiveProposal]:
    """Every proposal over ``tables``, by table name then column position."""
    found: list[SensitiveProposal] = []
    for table in sorted(tables, key=lambda t: t.name):
        for column in sorted(table.columns, key=lambda c: (c.position, c.name)):
            proposal = classify_column(table.name, column.name, column.type)
            if proposal is not None:
                found.append(proposal)
    return found
