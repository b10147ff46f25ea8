"""The scores of schema linking: per column, per table (pure; :mod:`modules.catalog.linking`).

A column adds its signals (each in [0, 1], weighted by :class:`LinkWeights`): retrieval (the
dense and BM25 competition ranks of its hit, ``k / (k + rank - 1)`` averaged), its name and
Description against the question (:class:`~modules.catalog.linking_hints.NameMatcher`, quoted
values left out), the Evidence Hints that name it (qualified, delimited, verbatim, or its words as
a phrase), a date-like value for a date column. A table adds its own retrieval, name and evidence
signals to its best column and the mean of its best three.

Candidates are bounded so that a large catalog costs what its hits cost: the columns the
rankings return, every column of the best ``candidate_tables`` tables, the columns hints name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from kernel.schema_view import SchemaColumn, SchemaTable
from modules.catalog.linking_hints import (
    NAME_WORDS,
    EvidenceHint,
    NameMatcher,
    Stemmer,
    date_like,
    delimited_names,
    has_proper_name,
    is_date_type,
    is_text_type,
    qualified_names,
    resolve_qualified,
    stems_of_name,
    stems_of_text,
    strip_values,
)
from modules.catalog.schema_search import IndexHit

__all__ = [
    "DEFAULT_WEIGHTS",
    "Key",
    "LinkWeights",
    "Scores",
    "score_schema",
]


class LinkWeights(msgspec.Struct, frozen=True, kw_only=True):
    """The knobs of schema linking (tuned on the BIRD mini-dev tuning split only)."""

    rank_k: float = 4.0
    col_retrieval: float = 0.5
    col_name: float = 1.0
    col_description: float = 0.5
    col_evidence: float = 1.5
    col_table: float = 0.5
    col_date: float = 0.2
    col_value_name: float = 0.0  # a name-like text column when the question holds a value
    tab_retrieval: float = 1.0
    tab_name: float = 1.0
    tab_evidence: float = 1.0
    tab_col_max: float = 1.0
    tab_col_mean: float = 0.5
    plain_mention: float = 0.8
    choose_ratio: float = 0.4
    choose_column_ratio: float = 0.6  # 0: off; else tables of columns within it of the best
    max_chosen: int = 4
    max_explicit: int = 4
    join_floor: float = 0.9
    max_hops: int = 4
    candidate_tables: int = 5


DEFAULT_WEIGHTS = LinkWeights()


Key = tuple[str, str]


def _rank_score(rank: int | None, k: float) -> float:
    return 0.0 if rank is None else k / (k + rank - 1)


def _retrieval(hit: IndexHit, k: float) -> float:
    return 0.5 * (_rank_score(hit.dense_rank, k) + _rank_score(hit.bm25_rank, k))


class _Text:
    """One text's stems as a sequence and a set, with quoted values removed."""

    def __init__(self, stem: Stemmer, text: str) -> None:
        self.raw, self.values = strip_values(text)
        self.stems = stems_of_text(stem, self.raw)
        self.set = frozenset(self.stems)
        self.lower = f" {' '.join(self.raw.lower().split())} "


def _word_in(name: str, text: _Text) -> bool:
    """``name`` written verbatim (case-insensitive) as a word of the text."""
    lowered = name.lower()
    if len(lowered) < 3:
        return False
    at = text.lower.find(lowered)
    while at >= 0:
        before, after = text.lower[at - 1], text.lower[at + len(lowered) : at + len(lowered) + 1]
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        at = text.lower.find(lowered, at + 1)
    return False


class _Mentions:
    """What the hints name: ``(table, column) -> strength`` and ``table -> strength``."""

    def __init__(self, hints: Sequence[EvidenceHint], tables: Mapping[str, SchemaTable]) -> None:
        self.columns: dict[Key, float] = {}
        self.tables: dict[str, float] = {}
        #: tables named without doubt (qualified, delimited, a column only they have)
        self.explicit: set[str] = set()
        folded_tables = {name.lower(): name for name in tables}
        by_name: dict[str, list[Key]] | None = None
        for hint in hints:
            for key in resolve_qualified(qualified_names(hint.text), tables):
                self._add(key, hint.weight)
                self.tables[key[0]] = max(self.tables.get(key[0], 0.0), hint.weight)
                self.explicit.add(key[0])
            names = delimited_names(hint.text)
            if not names:
                continue
            if by_name is None:
                by_name = {}
                for table in tables.values():
                    for column in table.columns:
                        by_name.setdefault(column.name.lower(), []).append(
                            (table.name, column.name)
                        )
            for name in names:
                keys = by_name.get(name.lower(), [])
                strength = hint.weight if len(keys) <= 2 else 0.5 * hint.weight
                for key in keys:
                    self._add(key, strength)
                if len(keys) == 1:
                    self.explicit.add(keys[0][0])
                table_name = folded_tables.get(name.lower())
                if table_name is not None:
                    self.tables[table_name] = max(self.tables.get(table_name, 0.0), hint.weight)
                    self.explicit.add(table_name)

    def _add(self, key: Key, strength: float) -> None:
        self.columns[key] = max(self.columns.get(key, 0.0), strength)


def _candidates(
    tables: Mapping[str, SchemaTable],
    table_hits: Sequence[IndexHit],
    column_hits: Sequence[IndexHit],
    mentions: _Mentions,
    weights: LinkWeights,
) -> dict[Key, SchemaColumn]:
    out: dict[Key, SchemaColumn] = {}
    best = [h.table for h in table_hits[: weights.candidate_tables]]
    for name in [*best, *mentions.tables]:
        table = tables.get(name)
        if table is not None:
            for column in table.columns:
                out[(table.name, column.name)] = column
    for table_name, column_name in [*((h.table, h.column) for h in column_hits), *mentions.columns]:
        found = tables.get(table_name)
        hit = found.column(column_name) if found is not None else None
        if found is not None and hit is not None:
            out[(found.name, hit.name)] = hit
    return out


@dataclass(frozen=True)
class Scores:
    """What scoring found: each candidate column's own score (``base``), with its table's share
    (``final``); each table's score; the tables the hints name without doubt."""

    base: dict[Key, float]
    final: dict[Key, float]
    tables: dict[str, float]
    explicit: frozenset[str]

    def ranked_tables(self) -> list[str]:
        return sorted(self.tables, key=lambda t: (-self.tables[t], t))


def score_schema(
    question: str,
    tables: Mapping[str, SchemaTable],
    table_hits: Sequence[IndexHit],
    column_hits: Sequence[IndexHit],
    hints: Sequence[EvidenceHint],
    *,
    stem: Stemmer,
    weights: LinkWeights,
) -> Scores:
    q = _Text(stem, question)
    hint_texts = [(h, _Text(stem, h.text)) for h in hints if h.text.strip()]
    mentions = _Mentions(hints, tables)
    candidates = _candidates(tables, table_hits, column_hits, mentions, weights)
    base = _column_scores(question, q, hint_texts, mentions, candidates, column_hits, stem, weights)
    table_score = _table_scores(tables, q, hint_texts, mentions, base, table_hits, stem, weights)
    ranked = sorted(table_score, key=lambda t: (-table_score[t], t))
    top = table_score[ranked[0]] if ranked else 0.0
    final = {
        key: score + (weights.col_table * table_score[key[0]] / top if top > 0 else 0.0)
        for key, score in base.items()
    }
    return Scores(base=base, final=final, tables=table_score, explicit=frozenset(mentions.explicit))


def _column_scores(
    question: str,
    q: _Text,
    hint_texts: Sequence[tuple[EvidenceHint, _Text]],
    mentions: _Mentions,
    candidates: Mapping[Key, SchemaColumn],
    column_hits: Sequence[IndexHit],
    stem: Stemmer,
    w: LinkWeights,
) -> dict[Key, float]:
    col_ret = {(h.table, h.column): _retrieval(h, w.rank_k) for h in column_hits}
    col_stems = {key: stems_of_name(stem, key[1]) for key in candidates}
    names = NameMatcher(col_stems.values())
    descs = {k: stems_of_text(stem, c.description) for k, c in candidates.items() if c.description}
    desc_matcher = NameMatcher(descs.values())
    dates = any(date_like(v) for t in [q, *(t for _, t in hint_texts)] for v in t.values)
    spelled: dict[str, int] = {}
    for key in candidates:
        spelled[key[1].lower()] = spelled.get(key[1].lower(), 0) + 1
    valued = bool(q.values) or has_proper_name(question)
    name_stems = frozenset(s for word in NAME_WORDS for s in stem(word))

    base: dict[Key, float] = {}
    for key, column in candidates.items():
        stems = col_stems[key]
        ev = mentions.columns.get(key, 0.0)
        for hint, text in hint_texts:
            plain = names.score(stems, text.stems, text.set) * w.plain_mention
            if _word_in(column.name, text):
                plain = max(plain, names.weight(stems[0]) if stems else 0.0)
                if spelled[key[1].lower()] == 1:  # a name only this column has
                    mentions.explicit.add(key[0])
            ev = max(ev, hint.weight * plain)
        score = w.col_retrieval * col_ret.get(key, 0.0)
        score += w.col_name * names.score(stems, q.stems, q.set)
        if key in descs:
            score += w.col_description * desc_matcher.score(descs[key], q.stems, q.set)
        score += w.col_evidence * ev
        if dates and is_date_type(column.type):
            score += w.col_date
        if valued and is_text_type(column.type) and name_stems & set(stems):
            score += w.col_value_name
        base[key] = score
    return base


def _table_scores(
    tables: Mapping[str, SchemaTable],
    q: _Text,
    hint_texts: Sequence[tuple[EvidenceHint, _Text]],
    mentions: _Mentions,
    base: Mapping[Key, float],
    table_hits: Sequence[IndexHit],
    stem: Stemmer,
    w: LinkWeights,
) -> dict[str, float]:
    tab_ret = {h.table: _retrieval(h, w.rank_k) for h in table_hits}
    names = sorted({k[0] for k in base} | set(tab_ret) & set(tables))
    t_stems = {t: stems_of_name(stem, t) for t in names}
    matcher = NameMatcher(t_stems.values())
    by_table: dict[str, list[float]] = {}
    for key, score in base.items():
        by_table.setdefault(key[0], []).append(score)
    out: dict[str, float] = {}
    for name in names:
        cols = sorted(by_table.get(name, []), reverse=True)
        ev = mentions.tables.get(name, 0.0)
        for hint, text in hint_texts:
            ev = max(ev, hint.weight * matcher.score(t_stems[name], text.stems, text.set))
        score = w.tab_retrieval * tab_ret.get(name, 0.0)
        score += w.tab_name * matcher.score(t_stems[name], q.stems, q.set)
        score += w.tab_evidence * ev
        if cols:
            score += w.tab_col_max * cols[0] + w.tab_col_mean * sum(cols[:3]) / 3
        out[name] = score
    return out
