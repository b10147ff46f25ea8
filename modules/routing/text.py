"""Text normalization for routing (spec 000 §7.3 ``normalizeText``, §8.1).

One function, :func:`analyze`, turns a prompt (or a catalog phrase) into an :class:`Analysis`:
folded tokens (lower case, accents removed), their Snowball stems in the text's language (Italian
or English, detected from function words), stop-word and clause marks, the negated scopes
("non usare …", "senza …", "don't …", "without …", "invece di …"), file extensions and hyphenated
compounds (skill ids). The router builds its n-gram keys from it; the catalog builder uses the same
code so that prompt and catalog meet on the same keys.

Words of the bilingual lexicon (``data/lexicon.json``: general software, office and data vocabulary,
Italian and English forms of one concept, multi-word forms included) take the concept's key instead
of their stem, so "tabella", "tabelle" and "tables" meet, and "foglio di calcolo" meets
"spreadsheet": an Italian prompt routes on an English catalog and the other way round.

Standard library plus ``snowballstemmer`` only (it uses the PyStemmer C extension when installed,
about 1 ms to import): this module is on the hook's hot path.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "LANGUAGES",
    "Analysis",
    "analyze",
    "detect_language",
    "fold",
    "stem",
    "stem_phrase",
]

LANGUAGES = ("it", "en")

_STOP_IT = frozenset(
    """
    il lo la i gli le un uno una di a da in con su per tra fra e ed o od che chi cui del dello della
    dei degli delle dell al allo alla ai agli alle all dal dallo dalla dai dagli dalle dall nel
    nello nella nei negli nelle nell sul sullo sulla sui sugli sulle sull col coi questo questa
    questi queste quello quella quelli quelle mi ti ci vi si ne mio mia miei mie tuo tua suo sua
    nostro nostra vostro loro sono sei era erano essere ho hai ha abbiamo avete hanno come anche piu
    gia solo se ma non no cosa qui qua li la lo ogni tutto tutti tutta tutte dove quando perche
    quale quali sia sto sta stai fai fa puoi posso per favore po c un po molto poco ancora poi
    quindi infine dopodiche
    """.split()
)
_STOP_EN = frozenset(
    """
    the a an of to in on for with and or but is are was were be been being this that these those
    it its i me my we our us you your he she they them their do does did have has had as at by
    from into about can could would should will shall please just also then so if not no there
    here what which who how when where why than too very some any all each more most other such
    only own same up out over t s let lets get got make sure via per e g etc one
    """.split()
)
STOPWORDS = _STOP_IT | _STOP_EN
_ONLY_IT = _STOP_IT - _STOP_EN
_ONLY_EN = _STOP_EN - _STOP_IT

# Negation cues. A cue opens a scope that runs to the next clause boundary (punctuation or a
# contrast word), or for at most ``_SCOPE_MAX`` content tokens.
_NEG_ALWAYS = frozenset(
    "senza tranne eccetto escluso esclusa esclusi escludi escludere evita evitare evitiamo niente "
    "nessun nessuno nessuna anziche without except excluding exclude avoid avoiding skip never "
    "neither nor".split()
)
_NEG_PAIRS = {
    ("invece", "di"),
    ("instead", "of"),
    ("rather", "than"),
    ("piuttosto", "che"),
    ("anything", "but"),
    ("everything", "but"),
    ("tutto", "fuorche"),
    ("away", "from"),  # "stay / keep away from X"
    ("lascia", "perdere"),
    ("lascia", "stare"),
}
# A bare "not" that opens a clause or follows a coordinator negates the noun after it ("not
# slides and not a doc"); Italian "né X né Y" (folded "ne", also a clitic: both must be there).
_COORDINATORS = frozenset("and or nor but e ed o od ma".split())
# Negations written after what they set aside: "X is off limits", "X no, grazie", "X vietato".
_POST_NEG = frozenset(
    {
        ("off", "limits"),
        ("not", "allowed"),
        ("non", "ammesso"),
        ("non", "ammessa"),
        ("no", "grazie"),
        ("no", "thanks"),
        ("no", "thank"),
    }
)
_POST_NEG_WORDS = frozenset("vietato vietata vietati vietate proibito proibita forbidden".split())
# ...and those that also come before their object ("esclusi quelli vuoti"): only at a clause's end
_POST_NEG_AT_END = frozenset("excluded escluso esclusa esclusi escluse".split())
# "non"/"not" negate routing-relevant text only before a verb of using, wanting or needing
# (Snowball stems, both languages): "non usare X", "non mi serve X", "do not need X".
_NEG_VERB_STEMS = frozenset(
    "us usa usar usat usand serv vogl volg tocc apr apri aprir cre gener modific coinvolg chiam "
    "esegu lanc includ scriv aggiorn pass far fa interess bisogn occorr necessari richiest "
    "use need want touch open creat generat modifi run includ write updat involv call bother "
    "go requir necessari".split()
)
_NEG_HEADS = frozenset("non nn not dont doesnt didnt mai".split())  # "nn": chat shorthand
_NEG_SKIPPABLE = frozenset("mi ti ci si vi lo la li le ne e c ho hai ha do does is are be".split())
# the cue words after which a negation's scope starts at what it sets aside ("senza pdf",
# "anything but pptx", "no xlsx", "né pdf"), not at a verb's object
_OBJECT_CUES = (
    _NEG_ALWAYS
    | {second for _, second in _NEG_PAIRS}
    | _NEG_HEADS
    | frozenset("no not do ne need bisogno".split())
)
_OBJECT_COORDINATORS = frozenset("o od or ne nor".split())  # not "and": "… and fetch the page"
_CONTRAST = frozenset(
    "ma pero bensi invece piuttosto comunque tuttavia poi quindi infine dopodiche inoltre "
    "but however instead rather then though although yet also plus afterwards finally".split()
)
_CLAUSE_WORDS = frozenset("poi quindi infine dopodiche then afterwards finally".split())
_SCOPE_MAX = 6
_INFINITIVE = re.compile(r"(?:are|ere|ire|rre)(?:lo|la|li|le|ne|mi|ci|si|gli)?$")
_COPULAS = frozenset("e era sono erano sia fosse is are was were be".split())
_ARTICLES = frozenset(
    "il lo la i gli le l un uno una a an the this that questo questa quel quella".split()
)
_ARTICLES_OR_COPULAS = _ARTICLES | _COPULAS

_TOKEN_RE = re.compile(r"(?P<w>[a-z0-9]+(?:[-_.][a-z0-9]+)*)|(?P<p>[,;:!?()\n]|\.(?=\s|$))")
_EXT_RE = re.compile(r"(?:^|[^a-z0-9])\.([a-z][a-z0-9]{1,4})\b|[a-z0-9_-]\.([a-z][a-z0-9]{1,4})\b")
_SPLIT_RE = re.compile(r"[-_.]")
_CONTRACTION_RE = re.compile(r"n[’']t\b")


def _concept_key(concept: str) -> str:
    return concept.upper().replace(" ", "_")


def _load_lexicon() -> tuple[
    dict[str, str], dict[str, list[tuple[tuple[str, ...], str]]], dict[str, dict[str, str]]
]:
    """The lexicon's compiled ``index`` (no work beyond parsing: this runs in every hook)."""
    with open(os.path.join(os.path.dirname(__file__), "data", "lexicon.json"), "rb") as handle:
        index = json.load(handle)["index"]
    multi = {
        first: [(tuple(entry[:-1]), entry[-1]) for entry in entries]
        for first, entries in index["multi"].items()
    }
    return index["forms"], multi, index["stems"]


def lexicon_index(concepts: dict[str, list[str]]) -> dict[str, Any]:
    """The ``index`` section of ``data/lexicon.json``, compiled from its ``concepts`` (a test
    checks they agree): ``forms`` one-word form → concept key; ``multi`` first word of a
    multi-word form → ``[[rest..., key]]``, longest first; ``stems`` per language, the Snowball
    stem of every one-word form → key, so unlisted inflections ("charting") meet too — a stem
    shared by two concepts, or shorter than four letters, is left out."""
    forms: dict[str, str] = {}
    multi: dict[str, list[list[str]]] = {}
    for concept, words in concepts.items():
        key = _concept_key(concept)
        for form in words:
            parts = _SPLIT_RE.sub(" ", form).split()
            if len(parts) == 1:
                forms.setdefault(parts[0], key)
            else:
                multi.setdefault(parts[0], []).append([*parts[1:], key])
    for entries in multi.values():
        entries.sort(key=lambda entry: (-len(entry), entry))
    stems: dict[str, dict[str, str]] = {}
    for lang in LANGUAGES:
        owners: dict[str, set[str]] = {}
        for form, key in forms.items():
            if len(form) > 2:
                owners.setdefault(stem(form, lang), set()).add(key)
        stems[lang] = {
            found: next(iter(keys))
            for found, keys in sorted(owners.items())
            if len(keys) == 1 and len(found) >= 4
        }
    return {
        "forms": dict(sorted(forms.items())),
        "multi": dict(sorted(multi.items())),
        "stems": stems,
    }


_LEXICON, _LEXICON_MULTI, _LEXICON_STEMS = _load_lexicon()
_STEMMERS: dict[str, object] = {}
_STEM_CACHE: dict[tuple[str, str], str] = {}


def fold(text: str) -> str:
    """Lower case, accents removed (NFKD), apostrophes and quotes to spaces, ``n't`` → `` not``."""
    lowered = _CONTRACTION_RE.sub(" not", text.lower())
    decomposed = unicodedata.normalize("NFKD", lowered)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.replace("'", " ").replace("’", " ").replace("`", " ").replace('"', " ")


def _stemmer(lang: str) -> object:
    found = _STEMMERS.get(lang)
    if found is None:
        import snowballstemmer

        found = snowballstemmer.stemmer("italian" if lang == "it" else "english")
        _STEMMERS[lang] = found
    return found


def stem(word: str, lang: str) -> str:
    """The Snowball stem of one folded word in ``lang`` ("it" or "en"); digits are kept as is."""
    key = (lang, word)
    cached = _STEM_CACHE.get(key)
    if cached is None:
        short = word.isdigit() or len(word) <= 2
        cached = word if short else _stemmer(lang).stemWord(word)  # type: ignore[attr-defined]
        _STEM_CACHE[key] = cached
    return cached


def detect_language(words: Iterable[str], raw: str = "") -> str:
    """``"it"`` or ``"en"``: Italian-only vs English-only function words (accents count for it)."""
    it = en = 0
    for word in words:
        if word in _ONLY_IT:
            it += 1
        elif word in _ONLY_EN:
            en += 1
    it += sum(1 for ch in raw if ch in "àèéìòù")
    return "it" if it > en else "en"


class Analysis:
    """The normalized view of one text. Parallel lists are indexed by token position."""

    __slots__ = (
        "clause",
        "compounds",
        "content",
        "extensions",
        "lang",
        "negated",
        "negation_objects",
        "offsets",
        "stems",
        "words",
    )

    def __init__(
        self,
        *,
        lang: str,
        words: list[str],
        stems: list[str],
        content: list[bool],
        negated: list[bool],
        clause: list[int],
        compounds: list[tuple[str, int, int]],
        extensions: list[str],
        offsets: list[int] | None = None,
        negation_objects: frozenset[int] = frozenset(),
    ) -> None:
        self.lang = lang
        self.words = words
        self.stems = stems
        self.content = content
        self.negated = negated
        # the word each negation sets aside, its direct object: "don't use pdf", "senza pptx",
        # "pdf excluded" (a bare id there is excluded, not only penalized: the router)
        self.negation_objects = negation_objects
        self.clause = clause
        self.compounds = compounds
        self.extensions = extensions
        # where each word starts in the folded text (``fold(text)``): what a pattern found in
        # that text covers (an injected instruction, :mod:`modules.routing.injection`)
        self.offsets = offsets if offsets is not None else []

    def ngrams(self, max_n: int) -> list[tuple[str, int, int]]:
        """Keys of content-token n-grams (1..max_n) within a clause: ``(key, first, last)``.

        Stop words are skipped (so "stato dell'arte" and "stato arte" meet); n-grams never cross
        a clause boundary.
        """
        out: list[tuple[str, int, int]] = []
        run: list[int] = []
        current = -1
        for pos, is_content in enumerate(self.content):
            if self.clause[pos] != current:
                _emit(self.stems, run, max_n, out)
                run = []
                current = self.clause[pos]
            if is_content:
                run.append(pos)
        _emit(self.stems, run, max_n, out)
        return out


def _emit(stems: list[str], run: list[int], max_n: int, out: list[tuple[str, int, int]]) -> None:
    for i in range(len(run)):
        for n in range(1, max_n + 1):
            if i + n > len(run):
                break
            window = run[i : i + n]
            out.append((" ".join(stems[p] for p in window), window[0], window[-1]))


def stem_phrase(text: str, lang: str) -> str:
    """The index key of a catalog phrase in ``lang``: its content-word stems joined by spaces."""
    analysis = analyze(text, lang=lang)
    return " ".join(s for s, c in zip(analysis.stems, analysis.content, strict=True) if c)


def analyze(text: str, *, lang: str | None = None) -> Analysis:
    """Normalize ``text``; ``lang`` forces the stemming language (else it is detected)."""
    folded = fold(text)
    words: list[str] = []
    offsets: list[int] = []
    compound_of: list[int] = []
    boundary_before: list[bool] = []
    compounds: list[tuple[str, int, int]] = []
    pending_boundary = False
    for match in _TOKEN_RE.finditer(folded):
        word = match.group("w")
        if word is None:
            pending_boundary = True
            continue
        parts = [p for p in _SPLIT_RE.split(word) if p]
        first = len(words)
        cursor = match.start()
        for index, part in enumerate(parts):
            cursor = folded.find(part, cursor)
            offsets.append(cursor)
            cursor += len(part)
            words.append(part)
            compound_of.append(len(compounds))
            boundary_before.append(pending_boundary and index == 0)
        compounds.append((word, first, len(words) - 1))
        pending_boundary = False
    language = lang or detect_language(words, text)
    stems = [stem(w, language) for w in words]
    content = [w not in STOPWORDS and not w.isdigit() for w in words]
    clause = _clauses(words, boundary_before)
    # "né … né" folds to the clitic "ne": only a text that writes the accent has the conjunction
    objects: set[int] = set()
    negated = _negation(
        words, stems, boundary_before, conj_ne="né" in text.casefold(), objects=objects
    )
    _apply_lexicon(words, stems, content, boundary_before, _LEXICON_STEMS.get(language, {}))
    extensions = sorted({m.group(1) or m.group(2) for m in _EXT_RE.finditer(folded)})
    return Analysis(
        lang=language,
        words=words,
        stems=stems,
        content=content,
        negated=negated,
        clause=clause,
        compounds=[c for c in compounds if c[2] > c[1]],
        extensions=extensions,
        offsets=offsets,
        negation_objects=frozenset(objects),
    )


def _apply_lexicon(
    words: list[str],
    stems: list[str],
    content: list[bool],
    boundary_before: list[bool],
    by_stem: dict[str, str],
) -> None:
    """Lexicon words take their concept key (in place); a multi-word form keeps its first word as
    the concept and drops the others from the content words (never across a clause mark)."""
    pos = 0
    while pos < len(words):
        word = words[pos]
        for rest, key in _LEXICON_MULTI.get(word, ()):
            end = pos + 1 + len(rest)
            if tuple(words[pos + 1 : end]) == rest and not any(boundary_before[pos + 1 : end]):
                stems[pos] = key
                content[pos] = True
                for inner in range(pos + 1, end):
                    stems[inner] = key
                    content[inner] = False
                pos = end
                break
        else:
            concept = _LEXICON.get(word)
            if concept is None and content[pos]:
                concept = by_stem.get(stems[pos])
            if concept is not None:
                stems[pos] = concept
                content[pos] = True
            pos += 1


def _clauses(words: list[str], boundary_before: list[bool]) -> list[int]:
    clause: list[int] = []
    current = 0
    for pos, word in enumerate(words):
        if pos and (boundary_before[pos] or word in _CLAUSE_WORDS):
            current += 1
        clause.append(current)
    return clause


def _negation(
    words: list[str],
    stems: list[str],
    boundary_before: list[bool],
    *,
    conj_ne: bool = False,
    objects: set[int] | None = None,
) -> list[bool]:
    """Which words a negation covers; ``objects`` receives each negation's direct object."""
    negated = [False] * len(words)
    objects = objects if objects is not None else set()
    pos = 0
    while pos < len(words):
        start = _cue_end(words, stems, pos, boundary_before, conj_ne)
        if start is None:
            pos += 1
            continue
        consumed = 0
        cursor = start
        objects.update(_objects_after(words, stems, start, boundary_before))
        while cursor < len(words):
            word = words[cursor]
            if cursor > start and boundary_before[cursor]:
                break
            if word in _CONTRAST and (word, _at(words, cursor + 1)) not in _NEG_PAIRS:
                break
            if word in ("e", "ed", "and") and consumed >= 2:
                break
            negated[cursor] = True
            if word not in STOPWORDS:
                consumed += 1
                if consumed >= _SCOPE_MAX:
                    cursor += 1
                    break
            cursor += 1
        pos = max(cursor, pos + 1)
    _post_negation(words, boundary_before, negated, objects)
    return negated


def _objects_after(
    words: list[str], stems: list[str], start: int, boundary_before: list[bool]
) -> list[int]:
    """The words a negation's scope sets aside: the first one past articles, pronouns and at
    most two verbs of using, wanting or calling ("don't want a pdf", "non mi serve pptx" — not
    another verb: "never open the pdf" sets aside an action on it), and those
    coordinated with it ("senza pdf né docx", "not pdf or xlsx"); none when the clause ends
    first."""
    if start >= len(words) or boundary_before[start]:
        return []
    before = start - 1
    while before > 0 and words[before] in _ARTICLES_OR_COPULAS:
        before -= 1  # "non è il pdf", "not an MCP server"
    if before >= 0 and words[before] not in _OBJECT_CUES and not _usage_verb(words, stems, before):
        return []  # "non modificare il pdf", "don't merge the pdf": an action on it set aside
    verbs = 0
    for cursor in range(start, min(len(words), start + 5)):
        if cursor > start and boundary_before[cursor]:
            return []
        word = words[cursor]
        if _usage_verb(words, stems, cursor):
            verbs += 1
            if verbs > 2:
                return []
            continue
        if _negated_verb(words, stems, cursor):
            return []  # "never open the pdf": an action on it set aside, not the tool
        if word in STOPWORDS:
            continue
        found = [cursor]
        while _at(words, cursor + 1) in _OBJECT_COORDINATORS and not boundary_before[cursor + 1]:
            following = cursor + 2 + (_at(words, cursor + 2) in _ARTICLES)
            if (
                following >= len(words)
                or boundary_before[following]
                or words[following] in STOPWORDS
            ):
                break
            cursor = following
            found.append(cursor)
        return found
    return []


def _usage_verb(words: list[str], stems: list[str], pos: int) -> bool:
    return stems[pos] in _USAGE_VERB_STEMS or words[pos][:4] in _USAGE_VERB_PREFIXES


def _negated_verb(words: list[str], stems: list[str], pos: int) -> bool:
    return (
        stems[pos] in _NEG_VERB_STEMS
        or words[pos][:4] in _NEG_VERB_PREFIXES
        or (words[pos] not in STOPWORDS and _INFINITIVE.search(words[pos]) is not None)
    )


def _post_negation(
    words: list[str], boundary_before: list[bool], negated: list[bool], objects: set[int]
) -> None:
    """Negations written after their object ("the browser is off limits", "Excel no, grazie",
    "the database excluded."): the cue negates back to the clause's start, at most
    ``_SCOPE_MAX`` content words ("esclusi quelli vuoti" is a negation before its object, the
    scopes' case: "excluded" and "esclusi" count only at the end of their clause)."""
    for pos, word in enumerate(words):
        pair = (word, _at(words, pos + 1))
        size = 2 if pair in _POST_NEG else 1 if word in _POST_NEG_WORDS | _POST_NEG_AT_END else 0
        if not size:
            continue
        if size == 2 and boundary_before[pos + 1] and word != "no":
            continue
        ends = pos + size >= len(words) or boundary_before[pos + size]
        if word in _POST_NEG_AT_END and not ends:
            continue  # "esclusi quelli vuoti": before its object, the scopes' case
        before = pos - 1
        while before >= 0 and words[before] in _COPULAS | {"not", "non"}:
            before -= 1  # "pptx is not allowed"
        if before >= 0 and words[before] not in STOPWORDS:
            objects.add(before)
        consumed = 0
        cursor = pos - 1
        while cursor >= 0 and consumed < _SCOPE_MAX:
            if words[cursor] in _CONTRAST:
                break
            negated[cursor] = True
            consumed += words[cursor] not in STOPWORDS
            if boundary_before[cursor]:
                break
            cursor -= 1


def _at(words: list[str], pos: int) -> str:
    return words[pos] if 0 <= pos < len(words) else ""


def _cue_end(
    words: list[str], stems: list[str], pos: int, boundary_before: list[bool], conj_ne: bool
) -> int | None:
    """Where the negated scope starts if a negation cue begins at ``pos``, else None."""
    word = words[pos]
    if (word, _at(words, pos + 1)) in _NEG_PAIRS:
        return pos + 2
    if word in _NEG_ALWAYS:
        return pos + 1
    if (
        word == "ne"
        and conj_ne
        and any(w not in STOPWORDS for w in words[pos + 1 : pos + 4])  # "né la skill X né …"
        and "ne" in (words[pos + 2 : pos + 2 + _SCOPE_MAX] + words[max(0, pos - _SCOPE_MAX) : pos])
    ):
        return pos + 1  # "né Excel né Word"
    if (
        word == "not"
        and (pos == 0 or boundary_before[pos] or _at(words, pos - 1) in _COORDINATORS)
        and pos + 1 < len(words)
        and words[pos + 1] not in STOPWORDS
        and stems[pos + 1] not in _NEG_VERB_STEMS
    ):
        return pos + 1  # "not slides and not a doc"
    if word == "no" and pos + 1 < len(words) and words[pos + 1] not in STOPWORDS:
        if words[pos + 1] in ("need", "bisogno"):
            return pos + 2
        return pos + 1
    if word in _NEG_HEADS or (word == "do" and _at(words, pos + 1) == "not"):
        cursor = pos + 1
        if word == "do":
            cursor += 1
        skipped = 0
        while cursor < len(words) and words[cursor] in _NEG_SKIPPABLE and skipped < 2:
            cursor += 1
            skipped += 1
        if cursor < len(words) and (
            stems[cursor] in _NEG_VERB_STEMS
            or words[cursor][:4] in _NEG_VERB_PREFIXES
            or _negative_imperative(words, cursor, pos, boundary_before)
        ):
            return cursor + 1
        return _negated_noun_phrase(words, pos + 1 + (word == "do"))
    return None


def _negative_imperative(
    words: list[str], verb: int, head: int, boundary_before: list[bool]
) -> bool:
    """A negative command, whatever the verb: Italian "non" + infinitive ("non cercare nella
    documentazione", "non toccarlo"); English "don't" + verb opening a clause ("Don't search the
    docs", "please do not open the browser") — not "I don't know why…"."""
    word = words[verb]
    if words[head] == "non":
        return len(word) >= 5 and _INFINITIVE.search(word) is not None
    if words[head] not in ("do", "dont", "not") or (
        words[head] == "not" and _at(words, head - 1) != "do"
    ):
        return False
    start = head - 1 if words[head] == "not" else head
    return start == 0 or boundary_before[start] or _at(words, start - 1) in ("please", "just")


def _negated_noun_phrase(words: list[str], cursor: int) -> int | None:
    """ "non è la query", "is not the browser", "not an MCP server": a negation followed by an
    article (after a copula or not) negates the noun phrase after it. Where it starts, or None."""
    copula = False
    if _at(words, cursor) in _COPULAS:
        copula = True
        cursor += 1
    if _at(words, cursor) not in _ARTICLES:
        return None  # "non è chiaro": an adjective, not a thing set aside
    cursor += 1
    if cursor >= len(words) or words[cursor] in STOPWORDS:
        return None
    if words[cursor - 1] in ("lo", "la", "le", "li") and not copula:
        return None  # "non la trovo": a pronoun before a verb, not an article
    return cursor


# the verbs whose object is the tool itself: "don't use / want / need / call X"
_USAGE_VERB_STEMS = frozenset(
    "us usa usar usat usand utilizz serv vogl volg chiam bisogn occorr necessari "
    "use need want call invok requir".split()
)
_USAGE_VERB_PREFIXES = frozenset("usar usat serv vogl chia util need want call invo requ".split())
_NEG_VERB_PREFIXES = frozenset(
    "usar usat serv vogl tocc apri crea gene modi coin chia eseg lanc incl scri aggi pass "
    "need want touc open crea gene modi incl writ upda invo call requ".split()
)
