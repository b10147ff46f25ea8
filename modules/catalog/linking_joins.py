"""The join path between the tables schema linking chose, over the active relationships (pure).

The relationships of the Effective Relationship Snapshot form an undirected graph of tables. The
path connecting the chosen tables (the *terminals*) is a Steiner-tree approximation — Takahashi
and Matsuyama's greedy: start from the best terminal; repeatedly find, by a breadth-first search
from every table already in the tree, the nearest terminal not yet in it and add the shortest path
to it, intermediate (bridge) tables included. Paths longer than ``max_hops`` are not taken: such a
terminal stays unconnected (``unreachable``) rather than dragging in a long chain.

Deterministic: terminals are tried in the order given (best first), BFS starts from the tree's
tables in name order and visits neighbours in name order, and between two tables the
relationship used is the one the caller prefers most (``prefer``: e.g. the linking scores of its
columns, so "away team" joins on ``away_team_api_id``), then the first by (origin: physical,
manual, generated; id).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernel.schema_view import SchemaRelationship

__all__ = ["JoinPath", "join_path"]

_ORIGIN_ORDER = {"physical": 0, "manual": 1, "generated": 2}


@dataclass(frozen=True)
class JoinPath:
    #: terminals and bridge tables, in the order they joined the tree
    tables: tuple[str, ...]
    #: the bridge tables alone (on a path, not chosen themselves)
    bridges: tuple[str, ...]
    #: the relationships used, in the order they were added
    edges: tuple[SchemaRelationship, ...]
    #: terminals no path of at most ``max_hops`` relationships reaches
    unreachable: tuple[str, ...]

    def column_pairs(self) -> list[tuple[tuple[str, str], tuple[str, str]]]:
        """``((table, column), (table, column))`` for every column pair of every relationship
        used (its from side first), in order."""
        return [
            ((rel.from_table, a), (rel.to_table, b))
            for rel in self.edges
            for a, b in zip(rel.from_columns, rel.to_columns, strict=False)
        ]


def _graph(
    relationships: Sequence[SchemaRelationship],
    prefer: Callable[[SchemaRelationship], float] | None,
) -> dict[str, list[tuple[str, SchemaRelationship]]]:
    def rank(rel: SchemaRelationship) -> tuple[float, int, str]:
        return (
            -prefer(rel) if prefer is not None else 0.0,
            _ORIGIN_ORDER.get(rel.origin, 3),
            rel.id,
        )

    best: dict[tuple[str, str], SchemaRelationship] = {}
    for rel in relationships:
        if rel.from_table == rel.to_table or not rel.from_columns:
            continue
        pair = (min(rel.from_table, rel.to_table), max(rel.from_table, rel.to_table))
        known = best.get(pair)
        if known is None or rank(rel) < rank(known):
            best[pair] = rel
    graph: dict[str, list[tuple[str, SchemaRelationship]]] = {}
    for (a, b), rel in best.items():
        graph.setdefault(a, []).append((b, rel))
        graph.setdefault(b, []).append((a, rel))
    for neighbours in graph.values():
        neighbours.sort(key=lambda item: item[0])
    return graph


def _bfs(
    graph: dict[str, list[tuple[str, SchemaRelationship]]], tree: set[str], max_hops: int
) -> tuple[dict[str, int], dict[str, tuple[str, SchemaRelationship]]]:
    dist = dict.fromkeys(tree, 0)
    parent: dict[str, tuple[str, SchemaRelationship]] = {}
    queue = deque(sorted(tree))
    while queue:
        node = queue.popleft()
        if dist[node] >= max_hops:
            continue
        for neighbour, rel in graph.get(node, ()):
            if neighbour not in dist:
                dist[neighbour] = dist[node] + 1
                parent[neighbour] = (node, rel)
                queue.append(neighbour)
    return dist, parent


def join_path(
    terminals: Sequence[str],
    relationships: Sequence[SchemaRelationship],
    *,
    max_hops: int = 4,
    prefer: Callable[[SchemaRelationship], float] | None = None,
) -> JoinPath:
    """Connect ``terminals`` (best first, duplicates ignored) over ``relationships``."""
    order = list(dict.fromkeys(terminals))
    if not order:
        return JoinPath(tables=(), bridges=(), edges=(), unreachable=())
    graph = _graph(relationships, prefer)
    tree_order = [order[0]]
    tree = {order[0]}
    edges: list[SchemaRelationship] = []
    remaining = order[1:]
    unreachable: list[str] = []
    while remaining:
        dist, parent = _bfs(graph, tree, max_hops)
        reachable = [t for t in remaining if t in dist]
        if not reachable:
            unreachable.extend(remaining)
            break
        target = min(reachable, key=lambda t: (dist[t], remaining.index(t)))
        remaining.remove(target)
        path: list[tuple[str, SchemaRelationship]] = []
        node = target
        while node not in tree:
            previous, rel = parent[node]
            path.append((node, rel))
            node = previous
        for table, rel in reversed(path):  # from the tree outwards
            tree.add(table)
            tree_order.append(table)
            edges.append(rel)
    chosen = set(order)
    return JoinPath(
        tables=tuple(tree_order),
        bridges=tuple(t for t in tree_order if t not in chosen),
        edges=tuple(edges),
        unreachable=tuple(unreachable),
    )
