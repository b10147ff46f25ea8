"""Vocabulary alignment: the corpus's words for a cross-lingual query's untranslated words, the
table each generation records, and what a missing or forged table does (a stale index)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.vectors.hashing_embedder import HashingEmbedder
from kernel.workspace import Workspace, init_workspace
from modules.evidence import EvidencePaths, prepare
from modules.evidence.fusion import FusionSettings
from modules.evidence.generations import load_generation_state
from modules.evidence.publish import publish
from modules.evidence.query_text import evidence_query_text
from modules.evidence.retrieval import embed_query
from modules.evidence.search import search_evidence
from modules.evidence.translation import bm25_query_text
from modules.evidence.vocabulary import (
    VocabularyTable,
    aligned_terms,
    build_vocabulary,
    corpus_vocabulary,
    encode_vocabulary,
    read_vocabulary,
    unmatched_words,
    vocabulary_path,
    words_to_align,
)
from tests.modules.evidence.conftest import FIXTURES
from tests.modules.evidence.conftest_index import Engines

# -- pure parts ------------------------------------------------------------------------------


def _table(words: Sequence[str], vectors: Sequence[Sequence[float]]) -> VocabularyTable:
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return VocabularyTable(words=tuple(words), vectors=matrix)


def test_the_corpus_vocabulary_is_its_content_words_sorted_once() -> None:
    words = corpus_vocabulary(["The iodine element; iodine = 'i'", "Stealth power, not 42 KB"])
    # stopwords and negations dropped, digits and words under 3 letters too
    assert words == ("element", "iodine", "power", "stealth")


def test_only_words_no_lexicon_term_covers_and_the_corpus_lacks_are_aligned() -> None:
    table = _table(["iodine", "riverside"], [[1, 0], [0, 1]])
    text = "Fatturato delle scuole di Riverside senza iodio, non zolfo: 2013 SAT"
    # "fatturato" and "scuole" are lexicon concepts (revenue, school), "riverside" is held by
    # the corpus, "senza"/"non" are negations, "2013" is a number, "sat" is too short
    assert unmatched_words(text, "it", table) == ["iodio", "zolfo"]


def test_a_flood_of_words_is_bounded(english: Engines) -> None:
    """A crafted query of thousands of words costs at most MAX_WORDS embeddings beyond its own."""
    from modules.evidence.vocabulary import MAX_WORDS

    table = _table(["iodine"], [[1.0]])

    def word(n: int) -> str:  # letters only, so that every word is alignable
        return "parola" + "".join(chr(97 + (n // 26**k) % 26) for k in range(3))

    flood = "Quanti sono i " + " ".join(word(n) for n in range(3000))
    words = words_to_align(flood, ("en",), table)
    assert len(words) == MAX_WORDS
    publish(english.caps())
    embedder = english.embedder
    assert isinstance(embedder, BilingualEmbedder)
    before = len(embedder.queries)
    outcome = search_evidence(english.caps(), flood, purpose="schema_linking")
    assert outcome.status == "available"
    assert len(embedder.queries) - before == 1 + MAX_WORDS


def test_only_a_query_in_another_language_than_the_corpus_is_aligned() -> None:
    table = _table(["iodine"], [[1.0]])
    italian = "Quanti atomi di iodio ci sono nelle molecole?"
    # "quanti" and "molecole" are lexicon concepts (count, molecule): the lexicon translates them
    assert words_to_align(italian, ("en",), table) == ["atomi", "iodio"]
    assert words_to_align(italian, ("it",), table) == []  # meets its words as written
    assert words_to_align(italian, ("it", "en"), table) == []
    assert words_to_align(italian, None, table) == []  # the corpus languages are not known
    assert words_to_align("iodio zolfo", ("en",), table) == []  # no clear language
    assert words_to_align("How many iodine atoms are there?", ("en",), table) == []


def test_a_word_gains_the_closest_corpus_word_only_at_the_bound() -> None:
    table = _table(["iodine", "sulfur", "stealth"], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    vectors = np.asarray([[0.95, 0.31, 0], [0.7, 0.7, 0.14], [0.1, 0.99, 0]], dtype=np.float32)
    words = ["iodio", "vago", "zolfo"]
    assert aligned_terms(words, vectors, table, 0.9) == ["iodine", "sulfur"]
    assert aligned_terms(words, vectors, table, 0.99) == ["sulfur"]
    assert aligned_terms(words, vectors, table, 1.0) == []
    # two words aligned with one corpus word add it once; a zero vector aligns nothing
    twice = np.asarray([[1, 0, 0], [0.99, 0.01, 0], [0, 0, 0]], dtype=np.float32)
    assert aligned_terms(["a", "b", "c"], twice, table, 0.9) == ["iodine"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=4, max_size=4),
        min_size=1,
        max_size=8,
    ),
    st.lists(
        st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=4, max_size=4),
        min_size=0,
        max_size=6,
    ),
    st.floats(0.01, 1.0),
)
def test_an_aligned_word_is_a_corpus_word_at_least_the_bound_close(
    corpus: list[list[float]], query: list[list[float]], bound: float
) -> None:
    rows = [r if any(abs(x) > 1e-3 for x in r) else [1.0, 0, 0, 0] for r in corpus]
    table = _table([f"w{i}" for i in range(len(rows))], rows)
    words = [f"q{i}" for i in range(len(query))]
    vectors = np.asarray(query, dtype=np.float32).reshape(len(query), 4)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)  # unit rows
    out = aligned_terms(words, vectors, table, bound)
    assert len(out) == len(set(out)) <= len(words)
    for term in out:
        assert term in table.words
        best = max(float(table.vectors[table.words.index(term)] @ v) for v in vectors)
        assert best >= bound - 1e-6


def test_the_table_bytes_are_stable_and_read_back_only_when_unaltered(tmp_path: Path) -> None:
    from modules.evidence.vocabulary import write_vocabulary

    table = build_vocabulary(["stealth power", "iodine element"], HashingEmbedder(16))
    digest = write_vocabulary(tmp_path, "g1-x", table)
    assert encode_vocabulary(table) == vocabulary_path(tmp_path, "g1-x").read_bytes()
    back = read_vocabulary(tmp_path, "g1-x", digest)
    assert back is not None and back.words == table.words
    assert np.array_equal(back.vectors, table.vectors)
    assert read_vocabulary(tmp_path, "g1-x", "0" * 64) is None  # another record's digest
    assert read_vocabulary(tmp_path, "g2-y", digest) is None  # missing


# -- through publish and search --------------------------------------------------------------

#: an English-only source (the CLI test publishes it too)
ENGLISH = (FIXTURES / "english" / "chemistry.md").read_text(encoding="utf-8")


class BilingualEmbedder:
    """The hashing embedder, except that the words of a small dictionary share one vector with
    their translation: a stand-in for a multilingual model with known answers."""

    SAME: ClassVar[dict[str, str]] = {"iodio": "iodine", "zolfo": "sulfur"}

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.queries: list[str] = []

    @property
    def identity(self) -> str:
        return "test/bilingual"

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> Any:
        self.queries.extend(texts)
        return self.inner.embed_queries([self.SAME.get(t, t) for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_passages(texts)


@pytest.fixture
def english(tmp_path: Path) -> Any:
    ws, _ = init_workspace(tmp_path / "ws")
    (ws.sources_dir / "chemistry.md").write_text(ENGLISH, encoding="utf-8")
    engines = Engines(ws, embedder=BilingualEmbedder())  # type: ignore[arg-type]
    prepare(EvidencePaths.of(ws), max_chunk_chars=4000)
    try:
        yield engines
    finally:
        engines.close()


def _bm25_rank(engines: Engines, text: str, fusion: FusionSettings | None = None) -> Any:
    outcome = search_evidence(
        engines.caps(fusion=fusion), evidence_query_text(text), purpose="schema_linking"
    )
    assert outcome.status == "available", outcome.warning
    return {r.unit_id: r.bm25_rank for r in outcome.results}


def test_an_italian_word_reaches_an_english_unit_through_bm25(english: Engines) -> None:
    report = publish(english.caps())
    record = report.generation
    assert record.languages == ("en",)
    assert record.vocabulary is not None and record.vocabulary["words"] > 0
    ranks = _bm25_rank(english, "Quanti atomi di iodio ci sono?")
    assert ranks["evidence:iodine"] == 1  # "iodio" gained "iodine"; no other word matches
    assert ranks.get("evidence:sulfur") is None
    # the words were embedded with the query, in one call
    embedder = english.embedder
    assert isinstance(embedder, BilingualEmbedder)
    assert embedder.queries[-3:] == ["Quanti atomi di iodio ci sono?", "atomi", "iodio"]

    off = FusionSettings(align_vocabulary=False)
    publish(english.caps(fusion=off))
    assert (
        load_generation_state(EvidencePaths.of(english.workspace).state_dir).active.vocabulary
        is None
    )  # type: ignore[union-attr]
    assert _bm25_rank(english, "Quanti atomi di iodio ci sono?", off).get("evidence:iodine") is None


def test_debug_shows_what_the_bm25_query_gained_never_the_query(
    english: Engines, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    import kernel.log

    publish(english.caps())
    monkeypatch.setattr(kernel.log, "_enabled", True)  # what --debug turns on
    caplog.set_level(logging.DEBUG, logger="modules.evidence.retrieval")
    _bm25_rank(english, "Quanti atomi di iodio ci sono?")
    (message,) = [r.getMessage() for r in caplog.records if "BM25 query gained" in r.getMessage()]
    assert "'iodine'" in message and "aligned with the corpus vocabulary: ['iodine']" in message
    assert "iodio" not in message and "atomi" not in message


def test_the_bm25_text_of_an_aligned_query(english: Engines) -> None:
    publish(english.caps())
    paths = EvidencePaths.of(english.workspace)
    active = load_generation_state(paths.state_dir).active
    assert active is not None and active.vocabulary is not None
    table = read_vocabulary(paths.state_dir, active.id, active.vocabulary["sha256"])
    assert table is not None
    fusion = FusionSettings()
    vectors = embed_query(english.embedder, english.bm25, "iodio e zolfo", fusion, ("en",), table)
    expected = bm25_query_text(
        "iodio e zolfo", fusion, corpus=("en",), aligned=["iodine", "sulfur"]
    )
    assert vectors.sparse == english.bm25.embed_query(expected)
    # an English query over the English corpus is not aligned: its BM25 text is unchanged
    plain = embed_query(english.embedder, english.bm25, "iodine atoms", fusion, ("en",), table)
    assert plain.sparse == english.bm25.embed_query(bm25_query_text("iodine atoms", fusion))


@pytest.mark.parametrize("damage", ["delete", "forge", "swap", "symlink"])
def test_a_missing_or_forged_table_is_a_stale_index_until_publish(
    english: Engines, damage: str, tmp_path: Path
) -> None:
    first = publish(english.caps()).generation
    paths = EvidencePaths.of(english.workspace)
    path = vocabulary_path(paths.state_dir, first.id)
    if damage == "delete":
        path.unlink()
    elif damage == "forge":  # an agent maps "iodio" onto another unit's word
        forged = VocabularyTable(
            words=("sulfur",), vectors=np.asarray(HashingEmbedder(64).embed_queries(["iodine"]))
        )
        path.write_bytes(encode_vocabulary(forged))
    elif damage == "swap":  # a valid table of other words
        other = build_vocabulary(["sulfur bond"], HashingEmbedder(64))
        path.write_bytes(encode_vocabulary(other))
    else:
        target = tmp_path / "elsewhere.npz"
        shutil.copy(path, target)
        path.unlink()
        path.symlink_to(target)
    italian = evidence_query_text("Quanti atomi di iodio ci sono?")
    outcome = search_evidence(english.caps(), italian, purpose="schema_linking")
    assert outcome.status == "unavailable" and outcome.reason == "stale"
    assert outcome.results == ()
    # a query in the corpus's language never reads the table: it is answered as before
    assert _bm25_rank(english, "iodine atoms")["evidence:iodine"] == 1
    assert "vocabulary" in (outcome.warning or "") and "tht evidence publish" in outcome.warning
    report = publish(english.caps())  # the damaged generation is not intact: a new one
    assert report.status == "activated" and report.generation.id != first.id
    assert _bm25_rank(english, "Quanti atomi di iodio ci sono?")["evidence:iodine"] == 1


@pytest.mark.parametrize("forged", ["size", "nan"])
def test_a_table_forged_with_its_record_is_stale_not_a_crash(english: Engines, forged: str) -> None:
    """The agent rewrites the table and the record's SHA-256 together: a table that cannot be
    compared with a query (another size, a NaN) is still a stale index, never a traceback."""
    import hashlib
    import json

    from modules.evidence.generations import GENERATIONS_FILE

    first = publish(english.caps()).generation
    paths = EvidencePaths.of(english.workspace)
    if forged == "size":
        vectors = np.ones((1, 12), dtype=np.float32)
    else:
        vectors = np.full((1, 64), np.nan, dtype=np.float32)
    data = encode_vocabulary(VocabularyTable(words=("iodine",), vectors=vectors))
    vocabulary_path(paths.state_dir, first.id).write_bytes(data)
    state_file = paths.state_dir / GENERATIONS_FILE
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["active"]["vocabulary"]["sha256"] = hashlib.sha256(data).hexdigest()
    state_file.write_text(json.dumps(state), encoding="utf-8")
    italian = evidence_query_text("Quanti atomi di iodio ci sono?")
    outcome = search_evidence(english.caps(), italian, purpose="schema_linking")
    assert (outcome.status, outcome.reason) == ("unavailable", "stale")


def test_only_the_active_generations_table_is_kept(english: Engines) -> None:
    first = publish(english.caps()).generation
    second = publish(english.caps(fusion=FusionSettings(align_min_cosine=0.95))).generation
    state_dir = EvidencePaths.of(english.workspace).state_dir
    assert not vocabulary_path(state_dir, first.id).exists()
    assert vocabulary_path(state_dir, second.id).exists()
    assert second.fusion is not None and second.fusion["align_min_cosine"] == 0.95


def test_a_failing_candidate_leaves_no_table(english: Engines) -> None:
    from kernel.errors import PolicyError

    first = publish(english.caps()).generation
    paths = EvidencePaths.of(english.workspace)
    paths.eval_file.write_text(
        "cases:\n"
        + "".join(
            f"  - question: sulfur {kind}\n    purpose: schema_linking\n"
            f"    expected: [evidence:no-such-unit]\n    type: {kind}\n"
            for kind in ("lexical", "semantic", "mixed")
        ),
        encoding="utf-8",
    )
    with pytest.raises(PolicyError):
        publish(english.caps(fusion=FusionSettings(align_min_cosine=0.95)))
    tables = sorted(p.name for p in (paths.state_dir / "vocabulary").iterdir())
    assert tables == [f"{first.id}.npz"]


def test_a_workspace_yaml_bound_reaches_the_module(tmp_path: Path) -> None:
    from tht.evidence_runtime import open_evidence

    ws: Workspace
    ws, _ = init_workspace(tmp_path / "ws")
    text = ws.settings_file.read_text(encoding="utf-8")
    yaml = "  fusion: {align_vocabulary: true, align_min_cosine: 0.8}\n"
    ws.settings_file.write_text(text.replace("evidence:\n", "evidence:\n" + yaml), "utf-8")
    fusion = open_evidence(ws.root).capabilities().settings.fusion
    assert fusion.align_vocabulary and fusion.align_min_cosine == 0.8
