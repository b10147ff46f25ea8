"""Candidates and dev-split tuning for ``benchmarks/eval_evidence.py``.

Every query's dense and BM25 fragment rankings are fetched once from the store (the same
``prefetch_limit`` candidates the search path fuses); every fusion is then computed from them by
the module's own functions (``kernel.vectors.fusion`` and ``modules.evidence.retrieval``), so a
grid over fusion parameters costs no engine call. :meth:`Candidates.check_search_path` proves on
a sample that the offline figures equal ``rank_units``'s (the code path of ``tht search find``).

Tuning reads only the dev split (English and Italian ``question_id % 5 == 0``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

LIMIT = 10
WEIGHT_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))  # dense weight; bm25 = 1 - it
CROSS_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
K_GRID = (1, 2, 5, 10, 20, 60)
IT_HIT10_TARGET = 0.95


TRANSLATE_GRID = (0, 1, 2, 3, 5)  # BM25 query translation: off, or at most N terms per concept


def translation_key(fusion: Any) -> int:
    """0: BM25 untranslated; N: translated with at most N terms per concept."""
    return int(fusion.translate_terms) if fusion.translate_bm25 else 0


def bm25_key(fusion: Any) -> tuple[int, float | None]:
    """What a BM25 query depends on: the translation, and the vocabulary alignment's bound
    (None: off)."""
    return translation_key(fusion), fusion.align_min_cosine if fusion.align_vocabulary else None


@dataclass
class Candidates:
    caps: Any
    generation: str
    cases: Sequence[Any]
    vectors: list[Any]
    wheres: list[Any]
    dense: list[list[Any]]  # ScoredPoint rankings, fragment level
    bm25: list[list[Any]]  # untranslated
    translated: dict[tuple[int, float | None], list[list[Any]]]  # bm25_key -> BM25 rankings
    corpus: tuple[str, ...] | None  # the generation's languages (the translation's targets)
    # vocabulary alignment (modules/evidence/vocabulary.py): the generation's table, each
    # query's words to align and their vectors (every distinct word embedded once)
    table: Any
    to_align: list[list[str]]
    word_vectors: dict[str, Any]

    @classmethod
    def collect(cls, caps: Any, generation: str, cases: Sequence[Any]) -> Candidates:
        from kernel.vectors import VectorFilter
        from modules.evidence.query_text import evidence_query_text
        from modules.evidence.retrieval import QueryVectors, evidence_filter, fetch_size

        embedder, encoder, store = caps.embedder(), caps.bm25(), caps.vector_store()
        texts = [evidence_query_text(c.query) for c in cases]
        dense_vectors = embedder.embed_queries(texts)
        vectors = [
            QueryVectors(dense=d, sparse=encoder.embed_query(t), text=t)
            for d, t in zip(dense_vectors, texts, strict=True)
        ]
        prefetch = max(caps.settings.prefetch_limit, fetch_size(LIMIT))
        corpus = VectorFilter(kind="evidence", match={"generation": generation})
        wheres = [evidence_filter(generation, "schema_linking", (), {"db": c.db}) for c in cases]
        dense = [
            store.query_dense(dense=v.dense, where=w, limit=prefetch)
            for v, w in zip(vectors, wheres, strict=True)
        ]
        bm25 = [
            store.query_sparse(sparse=v.sparse, where=w, limit=prefetch, idf_corpus=corpus)
            for v, w in zip(vectors, wheres, strict=True)
        ]
        from modules.evidence.generations import load_generation_state
        from modules.evidence.vocabulary import recorded_vocabulary, words_to_align

        active = load_generation_state(caps.paths.state_dir).active
        corpus = active.languages if active is not None and active.id == generation else None
        table = None
        if active is not None and active.id == generation:
            table = recorded_vocabulary(caps.paths.state_dir, active)
        to_align = [[] if table is None else words_to_align(t, corpus, table) for t in texts]
        distinct = sorted({w for words in to_align for w in words})
        rows = embedder.embed_queries(distinct) if distinct else []
        word_vectors = dict(zip(distinct, rows, strict=True))
        untranslated = {(0, None): bm25}
        return cls(
            caps,
            generation,
            cases,
            vectors,
            wheres,
            dense,
            bm25,
            untranslated,
            corpus,
            table,
            to_align,
            word_vectors,
        )

    def aligned(self, i: int, fusion: Any) -> list[str]:
        """Query ``i``'s aligned corpus words under ``fusion``'s bound (as ``embed_query``)."""
        from modules.evidence.vocabulary import aligned_terms

        words = self.to_align[i]
        if not fusion.align_vocabulary or not words:
            return []
        vectors = [self.word_vectors[w] for w in words]
        return aligned_terms(words, vectors, self.table, fusion.align_min_cosine)

    def query_vectors(self, i: int, fusion: Any) -> Any:
        """Query ``i``'s vectors as the search path builds them for ``fusion``
        (``retrieval.embed_query``: the BM25 query translated when the fusion says so)."""
        from dataclasses import replace

        from modules.evidence.translation import bm25_query_text

        aligned = self.aligned(i, fusion)
        if not fusion.translate_bm25 and not aligned:
            return self.vectors[i]
        text = bm25_query_text(self.vectors[i].text, fusion, corpus=self.corpus, aligned=aligned)
        return replace(self.vectors[i], sparse=self.caps.bm25().embed_query(text))

    def bm25_of(self, fusion: Any) -> list[list[Any]]:
        """Every query's BM25 ranking under ``fusion``'s translation (fetched once per bound)."""
        from kernel.vectors import VectorFilter
        from modules.evidence.retrieval import fetch_size

        key = bm25_key(fusion)
        if key not in self.translated:
            store = self.caps.vector_store()
            prefetch = max(self.caps.settings.prefetch_limit, fetch_size(LIMIT))
            corpus = VectorFilter(kind="evidence", match={"generation": self.generation})
            self.translated[key] = [
                store.query_sparse(
                    sparse=self.query_vectors(i, fusion).sparse,
                    where=self.wheres[i],
                    limit=prefetch,
                    idf_corpus=corpus,
                )
                for i in range(len(self.cases))
            ]
        return self.translated[key]

    def _first(self, i: int, units: list[Any]) -> int | None:
        from modules.evidence.evaluation import first_rank

        return first_rank(units, self.cases[i].expected)

    def rank_mode(self, i: int, mode: str, fusion: Any = None) -> int | None:
        """``dense``, ``bm25`` (untranslated) or ``bm25_translated`` (``fusion``'s translation)."""
        from modules.evidence.retrieval import fetch_size, group_units

        if mode == "dense":
            hits = self.dense[i]
        elif mode == "bm25_translated" and fusion is not None:
            hits = self.bm25_of(fusion)[i]
        else:
            hits = self.bm25[i]
        return self._first(i, group_units(hits[: fetch_size(LIMIT)], LIMIT))

    def rank_rrf(self, i: int, k: int) -> int | None:
        from modules.evidence.fusion import FusionSettings

        return self.rank_fusion(i, FusionSettings(method="rrf", rrf_k=k))

    def rank_fusion(self, i: int, fusion: Any) -> int | None:
        from modules.evidence.fusion import fuse_rankings
        from modules.evidence.retrieval import fetch_size, group_units

        hits = fuse_rankings(
            self.dense[i],
            self.bm25_of(fusion)[i],
            fusion,
            query_text=self.vectors[i].text,
            limit=fetch_size(LIMIT),
        )
        return self._first(i, group_units(hits, LIMIT))

    def check_search_path(self, fusion: Any, sample: int = 40) -> bool:
        """``rank_units`` (the search path) gives the offline fusion's first ranks on a sample."""
        from modules.evidence.retrieval import rank_units

        store = self.caps.vector_store()
        step = max(1, len(self.cases) // sample)
        for i in range(0, len(self.cases), step):
            units = rank_units(
                store,
                self.query_vectors(i, fusion),
                self.wheres[i],
                generation=self.generation,
                limit=LIMIT,
                fusion=fusion,
                prefetch_limit=self.caps.settings.prefetch_limit,
            )
            if self._first(i, units) != self.rank_fusion(i, fusion):
                return False
        return True


def tune(
    cands: Candidates,
    dev: Sequence[int],
    metrics: Callable[[Sequence[int | None]], dict[str, float]],
) -> tuple[Any, dict[str, Any]]:
    """Weighted RRF on the dev split: grid over the BM25 query translation (off, or at most N
    terms per concept), k, the dense weight and the cross-lingual factor.

    Objective, in order (the targets of issue 17 first, then quality): the worst margin over
    (language, metric) against the best single mode, capped at 0 (target: hybrid >= the better
    of dense and BM25 on every metric, BM25 counted both untranslated and translated); Italian
    hit@10's shortfall from 0.95, capped at 0 (target: Italian hit@10 >= 0.95); then the mean
    MRR@10 over the two languages; then the mean hit@1. Ties go to the earlier grid point.
    """
    from modules.evidence.fusion import FusionSettings

    langs = sorted({cands.cases[i].lang for i in dev})
    by_lang = {lang: [i for i in dev if cands.cases[i].lang == lang] for lang in langs}
    single: dict[int, dict[str, dict[str, dict[str, float]]]] = {}
    best: tuple[tuple[float, ...], Any, dict[str, Any]] | None = None
    tried = 0
    for terms in TRANSLATE_GRID:
        translation = FusionSettings(translate_bm25=terms > 0, translate_terms=max(terms, 1))
        single[terms] = {
            lang: {
                mode: metrics([cands.rank_mode(i, mode, translation) for i in idx])
                for mode in ("dense", "bm25", "bm25_translated")
            }
            for lang, idx in by_lang.items()
        }
        for k in K_GRID:
            for wd in WEIGHT_GRID:
                for cross in CROSS_GRID:
                    fusion = FusionSettings(
                        method="weighted",
                        rrf_k=k,
                        dense_weight=wd,
                        bm25_weight=round(1.0 - wd, 2),
                        cross_lingual_bm25=cross,
                        translate_bm25=terms > 0,
                        translate_terms=max(terms, 1),
                    )
                    tried += 1
                    per = {
                        lang: metrics([cands.rank_fusion(i, fusion) for i in idx])
                        for lang, idx in by_lang.items()
                    }
                    margin = min(
                        per[lang][m] - max(modes[m] for modes in single[terms][lang].values())
                        for lang in langs
                        for m in per[lang]
                    )
                    it_hit10 = per["it"]["hit@10"] if "it" in per else 1.0
                    key = (
                        round(min(margin, 0.0), 6),
                        round(min(it_hit10 - IT_HIT10_TARGET, 0.0), 6),
                        round(sum(per[lang]["mrr@10"] for lang in langs) / len(langs), 6),
                        round(sum(per[lang]["hit@1"] for lang in langs) / len(langs), 6),
                    )
                    if best is None or key > best[0]:
                        best = (key, fusion, per)
    assert best is not None
    key, fusion, per = best
    return fusion, {
        "objective": "min(0, worst margin vs the better single mode), min(0, it hit@10 - 0.95), "
        "mean MRR@10, mean hit@1 (lexicographic, dev only)",
        "grid": {
            "translate_terms (0: off)": TRANSLATE_GRID,
            "rrf_k": K_GRID,
            "dense_weight": WEIGHT_GRID,
            "cross_lingual_bm25": CROSS_GRID,
        },
        "points": tried,
        "best_key": list(key),
        "dev_single_modes": single[translation_key(fusion)],
        "dev_fusion": per,
    }
