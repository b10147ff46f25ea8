"""Analytics: scan a 1,000,000-line hook log, rescan it, and query a million evaluations.

``python -m benchmarks analytics`` (``make bench``). Set ``THT_BENCH_ANALYTICS_LINES`` for another
size. Everything is measured in this run, against baselines measured in this run:

1. scan throughput (read, decode, allowlist, HMAC ids, two ``INSERT OR IGNORE`` per line) against
   a bare sqlite-utils bulk insert (``insert_all`` in list mode) of the very rows the scan stored,
   into a fresh store with the same schema — target ratio ≥ 0.5;
2. a rescan with nothing new — target < 0.05 s;
3. ``routing-evaluator`` with a date filter and a group-by over the million evaluations, against
   one hand-written SQL statement per result block computing the same numbers — target ≤ 2×;
   the query plans of its statements are printed (they must use the spec's indexes).

Temporary files (about 1 GB of log and 2 GB of databases) live in a temporary folder that is
removed at the end.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tht.analytics.events import INVOKED_STATUSES
from tht.analytics.hooklog import scan_hook_log
from tht.analytics.routing_query import RoutingEvaluatorQuery, routing_evaluator, statements
from tht.analytics.store import open_store

NOW = "2026-08-01T00:00:00.000Z"
START = datetime(2025, 8, 1, tzinfo=UTC)
DAYS = 365
PROFILES = {
    "ollama-cloud": ("ollama", "cloud", "ministral-3:3b-cloud", "managed", "json-object", 550),
    "ollama-local": ("ollama", "local", "ministral-3:3b", "q4_k_m", "json-object", 260),
    "lmstudio-local": ("lmstudio", "local", "mistralai/ministral-3-3b", "q8_0", "json-schema", 300),
    "lmstudio-lan": ("lmstudio", "lan", "mistralai/ministral-3-3b", "q4_k_m", "json-schema", 380),
}
SKILLS = ("mcp-code-reviewer", "mcp-technical-analyst", "sql-writer", "doc-writer", "test-runner")
STATUSES = (
    ["not-ambiguous"] * 60
    + ["completed"] * 20
    + ["cache-hit"] * 4
    + ["disabled", "not-sampled", "skipped-sensitive", "circuit-open"] * 2
    + ["timeout", "invalid-output", "rate-limited", "low-confidence", "network-error"] * 1
)


FALLBACKS = {
    "timeout": "no-evaluation",
    "rate-limited": "no-evaluation",
    "network-error": "no-evaluation",
    "invalid-output": "unknown-id",
    "low-confidence": "low-confidence",
}


def write_log(path: Path, lines: int, seed: int = 7) -> None:
    """``lines`` RoutingEvaluator events spread over a year, in time order."""
    rng = random.Random(seed)
    step = DAYS * 86_400_000 / lines
    with path.open("w", encoding="utf-8") as out:
        batch = []
        for i in range(lines):
            profile = rng.choice(tuple(PROFILES))
            family, location, model, quant, fmt, base = PROFILES[profile]
            status = rng.choice(STATUSES)
            invoked = status in INVOKED_STATUSES
            ambiguous = status != "not-ambiguous"
            candidates = rng.sample(SKILLS, 3 if ambiguous else 1)
            det_top = candidates[0]
            ev_top = rng.choice(candidates) if status == "completed" else None
            changed = ev_top is not None and ev_top != det_top and rng.random() < 0.5
            moment = START + timedelta(milliseconds=i * step)
            event = {
                "ts": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
                "event": "RoutingEvaluator",
                "hook": "tht-route-hook",
                "schema_version": 1,
                "request_id": f"routing-{rng.getrandbits(48):012x}",
                "mode": "shadow",
                "activation": "ambiguous-only",
                "ambiguity_detected": ambiguous,
                "ambiguity_reasons": ["small-top-score-gap"] if ambiguous else [],
                "evaluator_status": status,
                "provider_profile": profile,
                "provider_family": family,
                "provider_location": location,
                "model": model,
                "model_family": "ministral-3",
                "model_parameter_class": "3b",
                "model_variant": "instruct",
                "model_quantization": quant,
                "evaluator_profile_version": "ministral-3-3b-routing-v1",
                "prompt_contract_version": 1,
                "response_format": fmt,
                "latency_ms": int(rng.lognormvariate(0, 0.45) * base) if invoked else None,
                "input_tokens": rng.randint(300, 520) if invoked else None,
                "output_tokens": rng.randint(60, 130) if status == "completed" else None,
                "candidate_count": len(candidates),
                "candidate_ids": candidates,
                "deterministic_top": det_top,
                "evaluator_top": ev_top,
                "final_top": det_top,
                "decision": "single" if status == "completed" else None,
                "confidence_bucket": "high" if status == "completed" else None,
                "changed_top": changed,
                "applied": False,
                "fallback_reason": FALLBACKS.get(status),
                "cache_hit": status == "cache-hit",
                "sensitive_skip": status == "skipped-sensitive",
            }
            batch.append(json.dumps(event, separators=(",", ":")))
            if len(batch) == 10_000:
                out.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            out.write("\n".join(batch) + "\n")


def bulk_insert_baseline(source: Path, target: Path) -> float:
    """Seconds sqlite-utils' ``insert_all`` takes to insert the rows of ``source`` into a fresh
    store with the same schema. Rows are read in chunks outside the timed part."""
    store = open_store(target, now=NOW)
    src = open_store(source, now=NOW)
    db = store.db
    elapsed = 0.0
    for table, order in (
        ("source_files", "id"),
        ("runtime_events", "rowid"),
        ("routing_evaluations", "rowid"),
    ):
        cursor = src.conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
        columns = [d[0] for d in cursor.description]
        while True:
            rows = cursor.fetchmany(50_000)
            if not rows:
                break
            started = time.perf_counter()
            with db.atomic():
                db.table(table).insert_all(iter([columns, *rows]), ignore=True)
            elapsed += time.perf_counter() - started
    count = store.conn.execute("SELECT COUNT(*) FROM routing_evaluations").fetchone()[0]
    expected = src.conn.execute("SELECT COUNT(*) FROM routing_evaluations").fetchone()[0]
    assert count == expected, (count, expected)
    store.close()
    src.close()
    return elapsed


_INVOKED = ", ".join(f"'{s}'" for s in sorted(INVOKED_STATUSES))


def hand_written(conn: Any, date_from: str, date_to: str, group: bool) -> list[tuple[Any, ...]]:
    """One SQL statement: the same totals, rates' inputs and interpolated percentiles."""
    keys = "provider_profile AS g0, substr(occurred_at, 1, 10) AS g1" if group else "1 AS g0"
    part = "PARTITION BY g0, g1" if group else "PARTITION BY g0"
    by = "g0, g1" if group else "g0"
    sql = f"""
    WITH f AS (
      SELECT {keys}, * FROM routing_evaluations WHERE occurred_at >= ? AND occurred_at <= ?
    ), agg AS (
      SELECT {by}, COUNT(*) AS decisions, SUM(ambiguity_detected) AS ambiguous,
        SUM(evaluator_status IN ({_INVOKED})) AS invoked,
        SUM(evaluator_status = 'completed') AS completed,
        SUM(evaluator_status = 'invalid-output') AS invalid,
        SUM(evaluator_status = 'timeout') AS timeouts,
        SUM(changed_top = 1 AND applied = 0) AS shadow,
        SUM(changed_top = 1 AND applied = 1) AS applied,
        SUM(cache_hit) AS cache_hits, SUM(sensitive_skip) AS sensitive,
        TOTAL(input_tokens) AS tokens_in, TOTAL(output_tokens) AS tokens_out,
        SUM(evaluator_status = 'completed' AND evaluator_top IS NOT deterministic_top) AS disagree,
        AVG(CASE WHEN evaluator_status IN ({_INVOKED}) THEN latency_ms END) AS lat_avg,
        MAX(CASE WHEN evaluator_status IN ({_INVOKED}) THEN latency_ms END) AS lat_max
      FROM f GROUP BY {by}
    ), ranked AS (
      SELECT {by}, latency_ms AS x,
        ROW_NUMBER() OVER ({part} ORDER BY latency_ms) AS rn, COUNT(*) OVER ({part}) AS n
      FROM f WHERE latency_ms IS NOT NULL AND evaluator_status IN ({_INVOKED})
    ), pct AS (
      SELECT {by}, MAX(n) AS n,
        MAX(CASE WHEN rn = (50 * (n - 1)) / 100 + 1 THEN x END) AS p50a,
        MAX(CASE WHEN rn = (50 * (n - 1)) / 100 + 2 THEN x END) AS p50b,
        MAX(CASE WHEN rn = (95 * (n - 1)) / 100 + 1 THEN x END) AS p95a,
        MAX(CASE WHEN rn = (95 * (n - 1)) / 100 + 2 THEN x END) AS p95b
      FROM ranked GROUP BY {by}
    )
    SELECT agg.*,
      CASE WHEN (50 * (n - 1)) % 100 = 0 THEN p50a
        ELSE (p50a * (100 - (50 * (n - 1)) % 100) + p50b * ((50 * (n - 1)) % 100)) / 100.0 END,
      CASE WHEN (95 * (n - 1)) % 100 = 0 THEN p95a
        ELSE (p95a * (100 - (95 * (n - 1)) % 100) + p95b * ((95 * (n - 1)) % 100)) / 100.0 END
    FROM agg LEFT JOIN pct USING ({by}) ORDER BY {by}
    """
    return list(conn.execute(sql, (date_from, date_to)).fetchall())


def best_of(runs: int, fn: Any) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    lines = int(os.environ.get("THT_BENCH_ANALYTICS_LINES", "1000000"))
    out = sys.stdout
    with tempfile.TemporaryDirectory(prefix="tht-bench-analytics-") as tmp:
        root = Path(tmp)
        os.environ["THT_HOME"] = str(root / "home")
        log = root / "route-hook.jsonl"
        started = time.perf_counter()
        write_log(log, lines)
        out.write(
            f"generated {lines:,} lines ({log.stat().st_size / 1e6:,.0f} MB) "
            f"in {time.perf_counter() - started:.1f} s\n"
        )

        db_path = root / "scan.sqlite"
        store = open_store(db_path, now=NOW)
        started = time.perf_counter()
        report = scan_hook_log(store, log, now=NOW)
        scan_s = time.perf_counter() - started
        assert report.imported == lines, report.to_json()
        store.close()

        baseline_s = bulk_insert_baseline(db_path, root / "baseline.sqlite")
        ratio = baseline_s / scan_s
        out.write(
            f"scan:     {scan_s:7.2f} s  {lines / scan_s:10,.0f} lines/s\n"
            f"baseline: {baseline_s:7.2f} s  {lines / baseline_s:10,.0f} rows/s "
            "(sqlite-utils insert_all of the same rows, both tables)\n"
            f"scan throughput / baseline throughput = {ratio:.2f}  (target >= 0.5) "
            f"{'OK' if ratio >= 0.5 else 'MISSED'}\n"
        )

        def rescan() -> float:
            begun = time.perf_counter()
            with open_store(db_path, now=NOW) as again:
                result = scan_hook_log(again, log, now=NOW)
            assert result.action == "unchanged" and result.imported == 0
            return time.perf_counter() - begun

        rescan_s = min(rescan() for _ in range(5))
        out.write(
            f"rescan with nothing new (open store + scan): {rescan_s * 1000:.1f} ms "
            f"(target < 50 ms) {'OK' if rescan_s < 0.05 else 'MISSED'}\n"
        )

        store = open_store(db_path, now=NOW)
        conn = store.conn
        date_from, date_to = "2026-02-01", "2026-04-30"
        query = RoutingEvaluatorQuery(
            date_from=date_from, date_to=date_to, group_by=("provider_profile", "day")
        )
        out.write(f"\nquery plans ({date_from} .. {date_to}, group by provider_profile, day):\n")
        for sql, params in statements(query):
            plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
            out.write(f"  {sql[:90]}…\n")
            for row in plan:
                out.write(f"      {row[-1]}\n")
        ours_s, result = best_of(3, lambda: routing_evaluator(conn, query))
        lo, hi = query.date_from or "", query.date_to or ""

        def by_hand() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
            return hand_written(conn, lo, hi, False), hand_written(conn, lo, hi, True)

        hand_s, (totals, groups) = best_of(3, by_hand)
        _check_same(result, totals, groups)
        out.write(
            f"routing-evaluator over {result['totals']['routing_decisions']:,} of {lines:,} "
            f"evaluations, {len(result['groups'])} groups: {ours_s * 1000:.0f} ms; "
            f"hand-written SQL: {hand_s * 1000:.0f} ms; ratio {ours_s / hand_s:.2f} "
            f"(target <= 2) {'OK' if ours_s <= 2 * hand_s else 'MISSED'}\n"
        )
        store.close()


def _check_same(result: dict[str, Any], totals: list[Any], groups: list[Any]) -> None:
    """The baseline computes the same numbers (so the comparison is fair)."""
    (row,) = totals
    assert row[1] == result["totals"]["routing_decisions"]
    assert row[3] == result["totals"]["evaluator_invoked"]
    assert round(row[-2], 2) == result["latency_ms"]["p50"]
    assert round(row[-1], 2) == result["latency_ms"]["p95"]
    assert len(groups) == len(result["groups"])
    for mine, theirs in zip(result["groups"], groups, strict=True):
        assert (mine["provider_profile"], mine["day"]) == theirs[:2]
        assert mine["totals"]["routing_decisions"] == theirs[2]
        assert mine["latency_ms"]["p95"] == (None if theirs[-1] is None else round(theirs[-1], 2))


if __name__ == "__main__":
    main()
