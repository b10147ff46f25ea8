"""``make bench`` / ``python -m benchmarks [NAME...]``: run the named benchmarks, or all of them.

Static list (no discovery): each entry is a module under ``benchmarks/`` exposing ``main()``, which
prints what it measured, the baseline it measured in the same run, and their ratio.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS: dict[str, str] = {
    "kernel": "benchmarks.bench_kernel",
    "analytics": "benchmarks.bench_analytics",
    "route_hook": "benchmarks.bench_route_hook",
    "evaluator": "benchmarks.bench_evaluator",
    "vectors": "benchmarks.bench_vectors",
    "evidence": "benchmarks.bench_evidence",
    "trust": "benchmarks.bench_trust",
    "schema_link": "benchmarks.bench_schema_link",
    "database": "benchmarks.bench_database",
    "catalog": "benchmarks.bench_catalog",
    "store": "benchmarks.bench_store",
    "memory": "benchmarks.bench_memory",
    "web": "benchmarks.bench_web",
}


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        sys.stderr.write(
            f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}\n"
        )
        return 2
    for name in names:
        sys.stdout.write(f"\n== {name} ==\n")
        sys.stdout.flush()
        importlib.import_module(BENCHMARKS[name]).main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
