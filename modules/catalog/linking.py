"""Schema linking (F4): the tables and columns a question needs, and the joins between them.

:func:`link` is pure: the question, the SchemaView, the schema index's hits and Evidence Hints
in; a deterministic :class:`SchemaLink` out. Three phases:

1. **scores** (:mod:`modules.catalog.linking_scores`): every candidate column and table;
2. **chosen tables**: the best one, those the hints name without doubt, those within
   ``choose_ratio`` of the best and those holding a column within ``choose_column_ratio`` of the
   best column (``max_chosen`` in all, plus the named ones);
3. **joins** (:mod:`modules.catalog.linking_joins`): the path connecting the chosen tables over
   the active relationships; its bridge tables join the chosen ones (scored as the weakest of
   them) and its join columns are raised to ``join_floor`` of the best column: the SQL needs
   them. Between two tables, the relationship whose columns score highest.

Tables and columns are then ranked by score, ties by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kernel.schema_view import SchemaRelationship, SchemaView
from modules.catalog.linking_hints import EvidenceHint, Stemmer
from modules.catalog.linking_joins import join_path
from modules.catalog.linking_scores import DEFAULT_WEIGHTS, Key, LinkWeights, Scores, score_schema
from modules.catalog.schema_search import IndexHit

__all__ = [
    "DEFAULT_WEIGHTS",
    "LinkWeights",
    "LinkedColumn",
    "LinkedJoin",
    "LinkedTable",
    "SchemaLink",
    "link",
]


class LinkedTable(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    score: float


class LinkedColumn(msgspec.Struct, frozen=True, kw_only=True):
    table: str
    column: str
    score: float


class LinkedJoin(msgspec.Struct, frozen=True, kw_only=True):
    left: str  # "t.c" (the relationship's from side)
    right: str  # "t.c"


class SchemaLink(msgspec.Struct, frozen=True, kw_only=True):
    tables: tuple[LinkedTable, ...]
    columns: tuple[LinkedColumn, ...]
    joins: tuple[LinkedJoin, ...]
    #: the tables the join path connects (chosen and bridges), best first; not in the JSON
    chosen: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The contract shape of ``tht schema link --json`` (ARCHITECTURE §6)."""
        return {
            "tables": [{"name": t.name, "score": round(t.score, 4)} for t in self.tables],
            "columns": [
                {"table": c.table, "column": c.column, "score": round(c.score, 4)}
                for c in self.columns
            ],
            "joins": [{"from": j.left, "to": j.right} for j in self.joins],
        }


def link(
    question: str,
    view: SchemaView,
    table_hits: Sequence[IndexHit],
    column_hits: Sequence[IndexHit],
    hints: Sequence[EvidenceHint] = (),
    *,
    stem: Stemmer,
    limit: int = 10,
    weights: LinkWeights = DEFAULT_WEIGHTS,
) -> SchemaLink:
    """Rank tables and columns for ``question`` and join the chosen tables (pure)."""
    tables = {t.name: t for t in view.tables()}
    scores = score_schema(
        question, tables, table_hits, column_hits, hints, stem=stem, weights=weights
    )
    table_score = dict(scores.tables)
    final = dict(scores.final)
    chosen = _choose(scores, weights)

    def prefer(rel: SchemaRelationship) -> float:
        keys = [(rel.from_table, c) for c in rel.from_columns]
        keys += [(rel.to_table, c) for c in rel.to_columns]
        return sum(final.get(k, 0.0) for k in keys)

    path = join_path(chosen, view.relationships(), max_hops=weights.max_hops, prefer=prefer)
    if path.bridges:
        floor = min(table_score[t] for t in chosen)
        for bridge in path.bridges:
            table_score[bridge] = max(table_score.get(bridge, 0.0), floor)
    pairs = path.column_pairs()
    if pairs:
        join_score = weights.join_floor * max(final.values(), default=0.0)
        for key in (side for pair in pairs for side in pair):
            final[key] = max(final.get(key, 0.0), join_score)
    return _result(table_score, final, pairs, path.tables, limit)


def _choose(scores: Scores, w: LinkWeights) -> list[str]:
    """The tables the SQL most likely needs: the best, those the hints name without doubt (up to
    ``max_explicit``), those within ``choose_ratio`` of the best and (``choose_column_ratio``)
    those holding a column within that ratio of the best column, ``max_chosen`` in all."""
    ranked, table_score, base = scores.ranked_tables(), scores.tables, scores.base
    if not ranked:
        return []
    top = table_score[ranked[0]]
    forced = sorted(scores.explicit & set(table_score), key=lambda t: (-table_score[t], t))
    forced = forced[: w.max_explicit]
    chosen = list(dict.fromkeys([ranked[0], *forced]))
    chosen += [t for t in ranked[1:] if top > 0 and table_score[t] >= w.choose_ratio * top]
    if w.choose_column_ratio > 0 and base:
        best = max(base.values())
        strong = sorted(
            (k for k, s in base.items() if s >= w.choose_column_ratio * best),
            key=lambda k: (-base[k], k),
        )
        chosen += [k[0] for k in strong]
    return list(dict.fromkeys(chosen))[: max(w.max_chosen, len(forced) + 1)]


def _result(
    table_score: Mapping[str, float],
    column_score: Mapping[Key, float],
    pairs: Sequence[tuple[Key, Key]],
    chosen: Sequence[str],
    limit: int,
) -> SchemaLink:
    tables = sorted(table_score.items(), key=lambda item: (-item[1], item[0]))[:limit]
    columns = sorted(column_score.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return SchemaLink(
        tables=tuple(LinkedTable(name=n, score=s) for n, s in tables),
        columns=tuple(LinkedColumn(table=k[0], column=k[1], score=s) for k, s in columns),
        joins=tuple(LinkedJoin(left=f"{a[0]}.{a[1]}", right=f"{b[0]}.{b[1]}") for a, b in pairs),
        chosen=tuple(chosen),
    )
