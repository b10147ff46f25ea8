"""How Evidence fuses its dense and BM25 rankings: plain RRF, or weighted and language-aware.

``rrf`` is the baseline: both rankings count alike (``kernel.vectors.fusion.rrf_fuse``, the
store's ``query_hybrid``). ``weighted`` (the default) is weighted RRF
(``kernel.vectors.fusion.weighted_rrf_fuse``): each ranking has a weight, so the fusion can lean
on the ranking that is stronger, and BM25's weight is multiplied by ``cross_lingual_bm25`` for a
fragment whose language differs from the query's — an Italian question shares few words with an
English unit, and BM25's ranking of it is mostly noise that would push the dense ranking's
answer down. Languages come from function words (``kernel.vectors.language``); a text without
a clear language never counts as a mismatch. With the BM25 query translated through the
bilingual lexicon (``translate_bm25``, :mod:`modules.evidence.translation`, the default) BM25's
cross-lingual ranking is no longer noise, and the factor chosen with it is 1 (no lowering).

The defaults were chosen on the development split of ``make eval-evidence`` (BIRD mini-dev,
English questions and Italian paraphrases, ``question_id % 5 == 0``; docs/evidence.md) and each
generation records the fusion it was evaluated with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Final, Literal

from kernel.errors import UsageError

if TYPE_CHECKING:
    from kernel.vectors import ScoredPoint

__all__ = [
    "DEFAULT_FUSION",
    "FUSION_METHODS",
    "FusionMethod",
    "FusionSettings",
    "fuse_rankings",
    "fusion_settings",
    "language_of",
]

FusionMethod = Literal["rrf", "weighted"]
# chosen on the dev split of `make eval-evidence` (docs/evidence.md)
DEFAULT_TRANSLATE: Final = True
DEFAULT_TRANSLATE_TERMS: Final = 2
DEFAULT_ALIGN: Final = True
DEFAULT_ALIGN_MIN_COSINE: Final = 0.90
FUSION_METHODS: Final = ("rrf", "weighted")


@dataclass(frozen=True)
class FusionSettings:
    """One fusion, validated: ``UsageError`` (exit 2) on a bad method, ``k`` or weight."""

    # defaults: chosen on the dev split of `make eval-evidence` (docs/evidence.md)
    method: FusionMethod = "weighted"
    rrf_k: int = 1
    dense_weight: float = 0.35
    bm25_weight: float = 0.65
    cross_lingual_bm25: float = 1.0
    languages: tuple[str, ...] = ("it", "en")
    # BM25 query translation through the bilingual lexicon (modules/evidence/translation.py):
    # at most translate_terms terms per concept
    translate_bm25: bool = DEFAULT_TRANSLATE
    translate_terms: int = DEFAULT_TRANSLATE_TERMS
    # vocabulary alignment (modules/evidence/vocabulary.py): a cross-lingual query's words that
    # the lexicon does not translate gain the corpus word whose vector is at least this close
    align_vocabulary: bool = DEFAULT_ALIGN
    align_min_cosine: float = DEFAULT_ALIGN_MIN_COSINE

    def __post_init__(self) -> None:
        where = "evidence.fusion"
        if self.method not in FUSION_METHODS:
            raise UsageError(
                f"{where}.method: must be one of {', '.join(FUSION_METHODS)}, got {self.method!r}"
            )
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, int) or self.rrf_k < 1:
            raise UsageError(f"{where}.rrf_k: must be an integer >= 1, got {self.rrf_k!r}")
        for name in ("dense_weight", "bm25_weight", "cross_lingual_bm25"):
            value = getattr(self, name)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or value < 0:
                raise UsageError(f"{where}.{name}: must be a finite number >= 0, got {value!r}")
        if self.cross_lingual_bm25 > 1:
            raise UsageError(
                f"{where}.cross_lingual_bm25: must be at most 1 (it lowers BM25's weight), "
                f"got {self.cross_lingual_bm25!r}"
            )
        if self.method == "weighted" and self.dense_weight == 0 and self.bm25_weight == 0:
            raise UsageError(f"{where}: dense_weight and bm25_weight cannot both be 0")
        if not isinstance(self.translate_bm25, bool):
            raise UsageError(
                f"{where}.translate_bm25: must be true or false, got {self.translate_bm25!r}"
            )
        terms = self.translate_terms
        if isinstance(terms, bool) or not isinstance(terms, int) or not 1 <= terms <= 10:
            raise UsageError(
                f"{where}.translate_terms: must be an integer from 1 to 10, got {terms!r}"
            )
        if not isinstance(self.align_vocabulary, bool):
            raise UsageError(
                f"{where}.align_vocabulary: must be true or false, got {self.align_vocabulary!r}"
            )
        bound = self.align_min_cosine
        ok = isinstance(bound, int | float) and not isinstance(bound, bool)
        if not ok or not math.isfinite(bound) or not 0 < bound <= 1:
            raise UsageError(f"{where}.align_min_cosine: must be a number in (0, 1], got {bound!r}")

    def to_json(self) -> dict[str, object]:
        """What a generation records (``rrf``: its ``k`` only, weights do not apply; the BM25
        translation, when on, with its bound and the lexicon's identity — off, nothing, so a
        record written before the translation existed still reads as the same fusion)."""
        body: dict[str, object] = {"method": "rrf", "rrf_k": self.rrf_k}
        if self.method == "weighted":
            body = {
                "method": "weighted",
                "rrf_k": self.rrf_k,
                "dense_weight": self.dense_weight,
                "bm25_weight": self.bm25_weight,
                "cross_lingual_bm25": self.cross_lingual_bm25,
            }
        if self.translate_bm25:
            from kernel.lexicon import default_lexicon

            body |= {
                "translate_bm25": True,
                "translate_terms": self.translate_terms,
                "lexicon": default_lexicon().identity,
            }
        if self.align_vocabulary:
            body |= {"align_vocabulary": True, "align_min_cosine": self.align_min_cosine}
        return body


DEFAULT_FUSION: Final = FusionSettings()


def fusion_settings(
    method: str,
    *,
    rrf_k: int,
    dense_weight: float,
    bm25_weight: float,
    cross_lingual_bm25: float,
    languages: Sequence[str] = ("it", "en"),
    translate_bm25: bool = DEFAULT_TRANSLATE,
    translate_terms: int = DEFAULT_TRANSLATE_TERMS,
    align_vocabulary: bool = DEFAULT_ALIGN,
    align_min_cosine: float = DEFAULT_ALIGN_MIN_COSINE,
) -> FusionSettings:
    """Build and validate from loose values (``workspace.yaml``); ``UsageError`` if invalid."""
    if method not in FUSION_METHODS:
        raise UsageError(
            f"evidence.fusion.method: must be one of {', '.join(FUSION_METHODS)}, got {method!r}"
        )
    return FusionSettings(
        method=method,  # type: ignore[arg-type]  # checked just above
        rrf_k=rrf_k,
        dense_weight=dense_weight,
        bm25_weight=bm25_weight,
        cross_lingual_bm25=cross_lingual_bm25,
        languages=tuple(languages),
        translate_bm25=translate_bm25,
        translate_terms=translate_terms,
        align_vocabulary=align_vocabulary,
        align_min_cosine=align_min_cosine,
    )


@lru_cache(maxsize=65536)
def language_of(text: str, languages: tuple[str, ...] = ("it", "en")) -> str | None:
    """The language of a query or fragment text (cached: fragment texts repeat across queries)."""
    from kernel.vectors.language import detect_language

    return detect_language(text, languages)


def fuse_rankings(
    dense: Sequence[ScoredPoint],
    bm25: Sequence[ScoredPoint],
    fusion: FusionSettings,
    *,
    query_text: str,
    limit: int,
) -> list[ScoredPoint]:
    """Fuse two fragment rankings (each in the store's order) into the top ``limit`` fragments.

    The result carries each point's payload and its 1-based rank in each ranking.
    """
    from kernel.vectors import ScoredPoint
    from kernel.vectors.fusion import RankedHit, rrf_fuse, weighted_rrf_fuse

    points = {p.id: p for p in dense}
    for p in bm25:
        points.setdefault(p.id, p)
    dense_hits = [RankedHit(p.id, p.score) for p in dense]
    bm25_hits = [RankedHit(p.id, p.score) for p in bm25]
    if fusion.method == "rrf":
        fused = rrf_fuse(dense_hits, bm25_hits, k=fusion.rrf_k, limit=limit)
    else:
        fused = weighted_rrf_fuse(
            dense_hits,
            bm25_hits,
            k=fusion.rrf_k,
            dense_weight=fusion.dense_weight,
            bm25_weight=fusion.bm25_weight,
            limit=limit,
            bm25_scale=_cross_lingual_scale(bm25, fusion, query_text),
        )
    return [
        ScoredPoint(
            id=f.id,
            score=f.score,
            payload=points[f.id].payload,
            dense_rank=f.dense_rank,
            bm25_rank=f.bm25_rank,
        )
        for f in fused
    ]


def _cross_lingual_scale(
    bm25: Sequence[ScoredPoint], fusion: FusionSettings, query_text: str
) -> dict[str, float]:
    """``cross_lingual_bm25`` for each BM25 hit in another language than the query's."""
    if fusion.cross_lingual_bm25 == 1.0:
        return {}
    query_lang = language_of(query_text, fusion.languages)
    if query_lang is None:
        return {}
    scale: dict[str, float] = {}
    for p in bm25:
        lang = language_of(str(p.payload.get("text", "")), fusion.languages)
        if lang is not None and lang != query_lang:
            scale[p.id] = fusion.cross_lingual_bm25
    return scale
