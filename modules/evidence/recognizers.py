"""Kind recognizers: deterministic rules that give a candidate passage its Evidence kind.

Each rule looks at the passage text, the shape of its blocks (paragraph, list, table, fence) and
the headings above it. Strong content signals decide first (a URL-only passage is a reference; a
``name = expression`` whose right side is a valid PostgreSQL expression is a formula; value/meaning
pairs are an enum), then the section heading (``## Glossario``, ``## Mappings``…), then weaker
wording signals (``refers to`` / ``si riferisce a`` → mapping, ``formato`` → normalization …), and
``domain`` is the fallback. A rule never invents content: titles are taken from the passage or its
heading, and a formula is recognized only when its expression validates (formula.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modules.evidence.formula import check_formula
from modules.evidence.text import collapse_ws
from modules.evidence.units import EvidencePurpose

__all__ = [
    "DEFAULT_PURPOSES",
    "Recognition",
    "definition_text",
    "is_value_pair",
    "plain_text",
    "recognize",
]

DEFAULT_PURPOSES: dict[str, tuple[EvidencePurpose, ...]] = {
    "glossary": ("disambiguation", "rewriting", "schema_linking"),
    "domain": ("disambiguation", "schema_linking", "sql_generation"),
    "enum": ("disambiguation", "schema_linking", "sql_generation"),
    "example": ("rewriting", "sql_generation"),
    "mapping": ("schema_linking", "sql_generation"),
    "normalization": ("schema_linking", "sql_generation"),
    "formula": ("schema_linking", "sql_generation"),
    "reference": ("disambiguation", "rewriting"),
}


@dataclass(frozen=True)
class Recognition:
    kind: str
    title: str
    expression: str | None = None
    inputs: tuple[str, ...] = ()


_URL = re.compile(r"https?://[^\s)>\]]+")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
# emphasis, not arithmetic or identifiers: the delimiters may not touch a word character outside
# (``a*b*c`` and ``free_meals_count`` keep their ``*`` and ``_``)
_EMPH = re.compile(r"(?<![\w*])(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_CODE = re.compile(r"`([^`]*)`")
_PAIR = re.compile(
    r"""^\s*(?P<value>`[^`]{1,40}`|'[^']{1,40}'|"[^"]{1,40}"|[\w.+-]{1,30})"""
    r"""\s*(?:=|:|→|->|—|–)\s+(?P<meaning>\S.*)$""",
    re.DOTALL,
)
_QUOTED_VALUE_MEANS = re.compile(
    r"""^\s*['"`][^'"`]{1,40}['"`]\s*(?:stands for|means|indicates|indica|significa|sta per|=)\s""",
    re.IGNORECASE,
)
_INLINE_PAIRS = re.compile(r"""(?:^|[,;]\s*)['"`]?[\w.+-]{1,12}['"`]?\s*=\s*[^,;=]+""")
# the wording form is tried first: its expression may itself contain ``=`` (``x = a / b``, a
# ``CASE WHEN s = 1``) and must not be split there
_FORMULA_WORDING = re.compile(
    r"^(?P<name>.{2,100}?)\s+(?:is computed as|is calculated as|si calcola come|"
    r"è calcolat[oa] come|is defined as the expression)\s*:?\s*(?P<expr>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_FORMULA_ASSIGN = re.compile(
    r"^(?P<name>[^=<>!:]{2,100}?)\s*(?::=|=|≡)\s*(?P<expr>[^=].*)$", re.DOTALL
)
_LEADING_ASSIGN = re.compile(
    r"^\s*[`\"]?[\w.]{1,60}[`\"]?\s*(?::=|=|≡)\s*(?P<expr>[^=].*)$", re.DOTALL
)
_ARITH = re.compile(r"[-+*/%]|\b[A-Za-z_]+\s*\(")
_MAPPING = re.compile(
    r"\b(?:refers? to|refer to|maps? to|is stored in|are stored in|corrispond\w* a\w*|"
    r"si riferisc\w* a\w*|è memorizzat\w* in|sono memorizzat\w* in|column|colonna|colonne|"
    r"table|tabella|tabelle|field|campo)\b|→|->",
    re.IGNORECASE,
)
_SCHEMA_TOKEN = re.compile(r"`[^`]+`|\b\w+_\w+\b|\b\w+\.\w+\b|\b\w+\s*(?:=|<>|!=|>=|<=|>|<)\s*\S")
_NORMALIZATION = re.compile(
    r"\b(?:format|formato|formats|normaliz\w*|canonical|canonic\w*|lower ?case|upper ?case|"
    r"minuscol\w*|maiuscol\w*|trim|convert\w*|conver\w*|can be (?:represented|presented|written)"
    r" as|represented (?:as|by)|written as|scritt\w* come|YYYY|yyyy|MM/DD|DD/MM)\b",
    re.IGNORECASE,
)
_EXAMPLE = re.compile(
    r"^\s*(?:example|examples|esempio|esempi|e\.g\.|es\.|q:|question:|domanda:)", re.IGNORECASE
)
_GLOSSARY_WORDS = re.compile(
    r"\b(?:means|significa|indica|is defined as|è definit\w* come|synonyms?|sinonim\w*|"
    r"also called|also known as|detto anche|detta anche|noto come|nota come|abbreviation|"
    r"abbreviazione|acronym|acronimo|stands for|sta per)\b",
    re.IGNORECASE,
)
_TERM_COLON = re.compile(r"^\s*(?P<term>[^:\n.]{1,60}?)\s*:\s+\S")
_HEADING_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"glossar|definizion|definition|terms|termini|terminolog", re.I), "glossary"),
    (re.compile(r"formul|calcol|metric|metrich|indicator|kpi", re.I), "formula"),
    (re.compile(r"enum|valori|values|codes|codici|legend", re.I), "enum"),
    (re.compile(r"mapping|mappatur|schema|colonn|column|tabell|table", re.I), "mapping"),
    (re.compile(r"normaliz|format", re.I), "normalization"),
    (re.compile(r"exampl|esemp", re.I), "example"),
    (re.compile(r"referen|riferiment|link|fonti|sources", re.I), "reference"),
    (re.compile(r"regol|rule|vincol|constraint|domain|dominio", re.I), "domain"),
)


def plain_text(markdown: str) -> str:
    """Markdown inline syntax removed (links keep their text, emphasis and code their content)."""
    text = _LINK.sub(r"\1", markdown)
    text = _CODE.sub(r"\1", text)
    for _ in range(2):
        text = _EMPH.sub(r"\2", text)
    return collapse_ws(text)


def is_value_pair(text: str) -> bool:
    """``F = female``, ``'1': attivo``, ``A → active``: a short value and its meaning."""
    one_line = collapse_ws(text)
    return bool(_PAIR.match(one_line)) and len(one_line) <= 200


def _short_title(text: str, limit: int = 80) -> str:
    text = plain_text(text).strip(" .:;")
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].strip(" .:;")
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def _expression_candidate(raw: str) -> str:
    """The text after ``=`` as SQL: a lone inline-code span unwrapped, `x` → "x" identifiers."""
    expr = raw.strip().rstrip(".;").strip()
    whole = re.fullmatch(r"`([^`]+)`", expr)
    if whole:
        return whole.group(1).strip()
    return _CODE.sub(lambda m: '"' + m.group(1).replace('"', '""') + '"', expr)


def _formula(text: str, fence: tuple[str, str] | None) -> Recognition | None:
    if fence is not None:
        intro, code = fence
        check = check_formula(code, _columns(code))
        if check.ok and check.canonical is not None:
            title = _short_title(intro) if intro else ""
            return Recognition("formula", title, code.strip().rstrip(";"), check.columns)
        return None
    one_line = collapse_ws(text)
    wording = _FORMULA_WORDING.match(one_line)
    if wording:
        raw = wording.group("expr")
        assigned = _LEADING_ASSIGN.match(raw)  # "X is computed as x = a / b": the right side
        candidates = [assigned.group("expr"), raw] if assigned else [raw]
        for candidate in candidates:
            found = _checked_formula(wording.group("name"), candidate)
            if found is not None:
                return found
        return None
    assign = _FORMULA_ASSIGN.match(one_line)
    if not assign:
        return None
    return _checked_formula(assign.group("name"), assign.group("expr"))


def _checked_formula(name: str, raw: str) -> Recognition | None:
    if not _ARITH.search(raw):
        return None
    expr = _expression_candidate(raw)
    cols = _columns(expr)
    if not cols:
        return None
    check = check_formula(expr, cols)
    if not check.ok:
        return None
    return Recognition("formula", plain_text(name).strip(" .:"), expr, check.columns)


def _columns(expr: str) -> tuple[str, ...]:
    import sqlglot
    from sqlglot.errors import SqlglotError

    from modules.evidence.formula import columns_of

    try:
        trees = [t for t in sqlglot.parse(expr, read="postgres") if t is not None]
    except SqlglotError:
        return ()
    if len(trees) != 1:
        return ()
    return tuple(columns_of(trees[0]))


def _lead_term(text: str) -> str | None:
    """The term a definition-like passage is about: ``X refers to``, ``X: …``, ``**X** …``."""
    plain = plain_text(text)
    for pattern in (
        r"^(?P<t>.{1,100}?)\s+(?:refers? to|refer to|si riferisc\w* a\w*|corrispond\w* a\w*|"
        r"maps? to|means|significa|indica|stands for|sta per|is defined as|è definit\w* come|"
        r"can be (?:represented|presented|written) (?:as|by))\b",
        r"^(?P<t>[^:]{1,60}?)\s*:\s+\S",
    ):
        match = re.match(pattern, plain, re.IGNORECASE)
        if match:
            return match.group("t").strip(" '\"`.")
    bold = re.match(r"^\s*(\*\*|__)(.+?)\1", text)
    if bold:
        return plain_text(bold.group(2))
    return None


def definition_text(term: str, text: str) -> str:
    """What a glossary passage says ``term`` means: its plain text without the leading
    "**Term**:" / "Term:" a definition is written with (the text as it is when it does not
    lead with that term)."""
    plain = plain_text(text)
    lead = re.match(r"^(?P<t>[^:]{1,100}?)\s*[:—–]\s+", plain)
    if lead and lead["t"].strip(" '\"`.").casefold() == term.strip().casefold():
        return plain[lead.end() :].strip() or plain
    return plain


def recognize(
    text: str,
    *,
    shape: str,
    headings: tuple[str, ...] = (),
    table_rows: tuple[tuple[str, ...], ...] = (),
    items: tuple[str, ...] = (),
    fence: tuple[str, str] | None = None,
    heading_title: str | None = None,
) -> Recognition:
    """The kind and title of one passage (``shape``: paragraph, item, list, table, fence, quote).

    ``heading_title`` is the nearest heading when the passage is alone in its section (it then
    becomes the title of kinds whose text carries no name of its own).
    """
    plain = plain_text(text)
    fallback_title = heading_title or _short_title(text)
    hint = _heading_hint(headings)

    # 1. strong content signals
    urls = _URL.findall(text)
    if urls and (len(plain.split()) <= 40 or (shape in ("item", "list") and hint == "reference")):
        link = _LINK.search(text)
        title = link.group(1) if link else (_lead_term(text) or fallback_title)
        return Recognition("reference", plain_text(title) or urls[0])
    formula = _formula(text, fence) if shape in ("paragraph", "item") or fence else None
    if formula is not None:
        title = formula.title or heading_title or _short_title(formula.expression or text)
        return Recognition("formula", title, formula.expression, formula.inputs)
    if shape == "fence":  # code that is not a formula shows how something is done
        return Recognition("example", fallback_title)
    section = headings[-1] if headings else None
    if shape == "table" and table_rows and len(table_rows[0]) == 2:
        return Recognition("enum", heading_title or section or _table_title(table_rows))
    if shape == "list" and items and all(is_value_pair(i) for i in items):
        return Recognition("enum", heading_title or section or _short_title(items[0]))
    if _QUOTED_VALUE_MEANS.match(plain) or (
        len(_INLINE_PAIRS.findall(plain)) >= 2 and len(plain) <= 200
    ):
        return Recognition("enum", _lead_term(text) or fallback_title)

    # 2. the section says what it holds
    term = _lead_term(text)
    example_match = _EXAMPLE.match(plain)
    if example_match or hint == "example":
        rest = plain[example_match.end() :] if example_match else plain
        return Recognition("example", _short_title(rest.lstrip(" :")) or fallback_title)
    if hint in ("glossary", "mapping", "normalization"):
        return Recognition(hint, term or fallback_title)

    # 3. wording
    if _MAPPING.search(plain) and _SCHEMA_TOKEN.search(text):
        return Recognition("mapping", term or fallback_title)
    if _NORMALIZATION.search(plain):
        return Recognition("normalization", term or fallback_title)
    if _GLOSSARY_WORDS.search(plain) or (
        shape in ("item", "paragraph") and _TERM_COLON.match(plain)
    ):
        return Recognition("glossary", term or fallback_title)
    return Recognition("domain", term or fallback_title)


def _heading_hint(headings: tuple[str, ...]) -> str | None:
    for heading in reversed(headings):
        for pattern, kind in _HEADING_HINTS:
            if pattern.search(heading):
                return kind
    return None


def _table_title(rows: tuple[tuple[str, ...], ...]) -> str:
    header = [plain_text(c) for c in rows[0]]
    return f"{header[0]} → {header[1]}" if all(header) else "Values"
