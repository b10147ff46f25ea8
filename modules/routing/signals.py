"""Signals derived from the catalog itself, so that a catalog nobody curated still routes (§2.1).

From a skill's frontmatter and body, and an MCP server's card, we derive weighted index terms:

- name: the id's distinctive tokens (weight 2) and the whole name phrase (3);
- quoted: terms in quotes in the description or body (3): "Word doc", 'deck', "gap analysis";
- trigger: the passages after "use when / use this whenever / trigger when / usalo quando" and
  the body sections "Quando usarlo", "Regole di escalation", "When to use" (n-grams 1–3);
- description / body: the rest of the text, weaker, body weakest;
- capability: the capability names of the semantic card;
- ext: file extensions mentioned positively (".docx", ".cfm");
- anti: terms of "do not use / don't / skip when / non usarlo / anti-trigger" passages that are not
  also positive for the same target (penalties).

Distinctiveness: a term positive for many targets is worth little; :func:`weigh` scales every term
by its document frequency across the catalog and drops the ones shared by too many targets.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from modules.routing.text import LANGUAGES, analyze, detect_language, fold

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["TargetTerms", "derive_terms", "phrase_keys", "weigh"]

# role -> weight of a 1-, 2- and 3-gram
_ROLE_WEIGHTS: dict[str, tuple[float, float, float]] = {
    "trigger": (1.5, 2.5, 3.0),
    "description": (1.0, 2.0, 2.5),
    "body-trigger": (1.0, 2.0, 2.5),
    "body": (0.5, 1.0, 0.0),
    "capability": (1.0, 2.0, 2.0),
}
QUOTED_WEIGHT = 3.0
NAME_PHRASE_WEIGHT = 3.0
NAME_TOKEN_WEIGHT = 2.0
EXT_WEIGHT = 3.0
ANTI_WEIGHTS = (1.5, 2.0, 2.0)

_QUOTED = re.compile(r"[\"“”]([^\"“”\n]{2,40})[\"“”]|(?<![a-zA-Z])'([^'\n]{2,40})'(?![a-zA-Z])")
_CHUNK_SPLIT = re.compile(r"[,;:()\[\]\n/|—–]+|\s(?:or|o|oppure|and|e|ed)\s|\.\s")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|\s[—–]\s")
_POS_CUE = re.compile(
    r"\b(use (this|it|when|for|whenever)|trigger|whenever|should use|usalo|usala|usa questo|"
    r"quando usarl|escala a|use this skill)",
)
_NEG_CUE = re.compile(
    r"^\W*(do not|don t|dont|never|not for|skip|non usarl|non usare|non usarla|anti-trigger|"
    r"anti trigger|evita)|\b(do not (use|trigger)|not for|non usarl|anti-trigger|skip only)",
)
_NEG_SPLIT = re.compile(
    r"(?i)(?:^|(?<=[\s,;:(]))(?:(?:do not|don['’]t|dont|never) (?:use|trigger)|not for|"
    r"not when|non usarl[oae]|non usare|non è per|anti-trigger)\b"
)
_META_WORDS = frozenset(
    """
    user users utente utenti skill skills agent agente need needs needed want wants wanted ask asks
    asked asking request requests requested mention mentions mentioned task tasks whenever trigger
    triggers triggered use used uses using usa usare usalo usala usarla usarlo usato serve servono
    richiede richiesto richiesta chiede involve involves involved involving include includes
    including like sort kind anything something way e g etc
    """.split()
)
_EXT = re.compile(r"(?<![\w/])\.([a-z][a-z0-9]{1,4})\b")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_POS_HEADING = re.compile(r"quando usarl|when to use|escalation|trigger|use when|usalo quando")
_NEG_HEADING = re.compile(r"non usarl|when not|do not use|anti-trigger|quando non")


class TargetTerms:
    """Weighted index terms of one target before distinctiveness scaling."""

    __slots__ = ("anti", "ext", "fixed", "positive")

    def __init__(self) -> None:
        # key -> (weight, kind, label)
        self.positive: dict[str, tuple[float, str, str]] = {}
        self.fixed: dict[str, tuple[float, str, str]] = {}  # never scaled (name, quoted)
        self.anti: dict[str, tuple[float, str, str]] = {}
        self.ext: dict[str, float] = {}

    def add(self, table: str, key: str, weight: float, kind: str, label: str) -> None:
        store: dict[str, tuple[float, str, str]] = getattr(self, table)
        old = store.get(key)
        if old is None or weight > old[0]:
            store[key] = (weight, kind, label)


def phrase_weight(base: float, key: str) -> float:
    """A whole phrase outweighs its words: +0.5 per extra word, at most +1.5."""
    return base + min(1.5, 0.5 * key.count(" "))


def phrase_keys(text: str) -> list[tuple[str, str]]:
    """The index keys of a whole phrase in both languages: ``[(key, label)]`` (deduplicated)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    label = " ".join(fold(text).split())[:60]
    for lang in LANGUAGES:
        analysis = analyze(text, lang=lang)
        key = " ".join(s for s, c in zip(analysis.stems, analysis.content, strict=True) if c)
        if key and key not in seen:
            seen.add(key)
            out.append((key, label))
    return out


def _ngram_terms(text: str, max_n: int = 3) -> list[tuple[str, int, str]]:
    """(key, n, label) for the content n-grams of each chunk of ``text``, in both languages."""
    out: list[tuple[str, int, str]] = []
    for chunk in _CHUNK_SPLIT.split(text):
        if not chunk or not chunk.strip():
            continue
        for lang in LANGUAGES:
            analysis = analyze(chunk, lang=lang)
            positions = [
                i
                for i, c in enumerate(analysis.content)
                if c and analysis.words[i] not in _META_WORDS
            ]
            for i in range(len(positions)):
                for n in range(1, max_n + 1):
                    if i + n > len(positions):
                        break
                    window = positions[i : i + n]
                    key = " ".join(analysis.stems[p] for p in window)
                    label = " ".join(analysis.words[p] for p in window)
                    out.append((key, n, label))
    return out


def _add_text(terms: TargetTerms, text: str, role: str) -> None:
    weights = _ROLE_WEIGHTS[role]
    for key, n, label in _ngram_terms(text):
        weight = weights[n - 1]
        if weight > 0:
            terms.add(
                "positive", key, weight, "body" if role.startswith("body") else "catalog", label
            )
    for match in _QUOTED.finditer(text):
        quoted = (match.group(1) or match.group(2)).strip(" \\,;:.")
        for key, label in phrase_keys(quoted):
            terms.add("fixed", key, phrase_weight(QUOTED_WEIGHT, key), "catalog", label)
    for ext in _EXT.findall(fold(text)):
        terms.ext[ext] = max(terms.ext.get(ext, 0.0), EXT_WEIGHT)


def _add_anti(terms: TargetTerms, text: str) -> None:
    for key, n, label in _ngram_terms(text, max_n=2):
        terms.add("anti", key, ANTI_WEIGHTS[n - 1], "anti", label)


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_SPLIT.split(text) if s.strip()]


def split_at_negation(text: str) -> tuple[str, str]:
    """``(positive, negative)``: a "do not use / not for / non usarlo …" cue inside a sentence
    negates what follows it, not what precedes it ("Use for complex artifacts … - not for simple
    single-file HTML artifacts")."""
    match = _NEG_SPLIT.search(text)
    if match is None:
        return text, ""
    return text[: match.start()], text[match.start() :]


def _classify_description(terms: TargetTerms, description: str) -> None:
    for sentence in _sentences(description):
        positive, negative = split_at_negation(sentence)
        if negative:
            _add_anti(terms, negative)
        if not positive.strip(" \t,;:-—–("):
            continue
        folded = fold(positive)
        if _NEG_CUE.search(folded):
            _add_anti(terms, positive)
        elif _POS_CUE.search(folded):
            _add_text(terms, positive, "trigger")
        else:
            _add_text(terms, positive, "description")


def _clean_body(body: str, other_ids: Iterable[str]) -> str:
    text = _LINK.sub(" ", body)
    for other in other_ids:
        text = text.replace(other, " ; ")
    return text


def _classify_body(terms: TargetTerms, body: str) -> None:
    section = "body"
    negative_block = False
    for line in body.splitlines():
        heading = _HEADING.match(line)
        if heading:
            title = fold(heading.group(1))
            if _NEG_HEADING.search(title):
                section = "anti"
            elif _POS_HEADING.search(title):
                section = "body-trigger"
            else:
                section = "body"
            negative_block = False
            continue
        if not line.strip():
            continue
        line, negative = split_at_negation(line)
        if negative:
            _add_anti(terms, negative)
            if not line.strip(" \t,;:-—–(*+"):
                negative_block = True
                continue
        folded = fold(line)
        is_bullet = bool(_BULLET.match(line))
        if _NEG_CUE.search(folded):
            negative_block = True
            _add_anti(terms, line)
            continue
        if negative_block and is_bullet:
            _add_anti(terms, line)
            continue
        negative_block = False
        if section == "anti":
            _add_anti(terms, line)
        else:
            _add_text(terms, line, section)


def name_terms(terms: TargetTerms, name: str, generic_tokens: frozenset[str]) -> None:
    """Distinctive tokens of an id ("mcp-database-expert" → database, expert, "database expert")."""
    tokens = [t for t in re.split(r"[-_.]", name) if t and t not in generic_tokens]
    if len(tokens) >= 2:
        for key, label in phrase_keys(" ".join(tokens)):
            terms.add("fixed", key, phrase_weight(NAME_PHRASE_WEIGHT, key), "name", label)
    for token in tokens:
        for key, label in phrase_keys(token):
            if key:
                terms.add("fixed", key, NAME_TOKEN_WEIGHT, "name", label)


def derive_terms(
    *,
    name: str,
    description: str,
    when_to_use: str,
    body: str,
    capabilities: Iterable[str],
    other_ids: Iterable[str],
    generic_tokens: frozenset[str],
) -> TargetTerms:
    """Every catalog-derived term of one target (skill or MCP server)."""
    terms = TargetTerms()
    name_terms(terms, name, generic_tokens)
    _classify_description(terms, description)
    if when_to_use:
        _add_text(terms, when_to_use, "trigger")
    if body:
        _classify_body(terms, _clean_body(body, other_ids))
    for capability in capabilities:
        _add_text(terms, capability.replace("-", " "), "capability")
    for key in list(terms.anti):
        if key in terms.positive or key in terms.fixed:
            del terms.anti[key]
    return terms


def weigh(all_terms: dict[str, TargetTerms], target_count: int) -> None:
    """Scale positive terms by distinctiveness, in place: shared terms weigh less or are dropped.

    A key positive for ``df`` targets keeps its weight when ``df == 1``, 60 % when ``df == 2``,
    40 % up to ``max(2, 20 % of the targets)``, and is dropped beyond. Names, quoted terms and
    curated terms are "fixed": they are not scaled.
    """
    df: dict[str, int] = {}
    for terms in all_terms.values():
        for key in terms.positive.keys() | terms.fixed.keys():
            df[key] = df.get(key, 0) + 1
    limit = max(2.0, 0.2 * target_count)
    for terms in all_terms.values():
        for key, (weight, kind, label) in list(terms.positive.items()):
            count = df.get(key, 1)
            if count > limit:
                del terms.positive[key]
                continue
            factor = 1.0 if count == 1 else 0.6 if count == 2 else 0.4
            terms.positive[key] = (round(weight * factor, 2), kind, label)


def language_of(text: str) -> str:
    return detect_language(analyze(text).words, text)
