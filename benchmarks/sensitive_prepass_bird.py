"""What the offline Sensitive Data pre-pass proposes on the BIRD mini-dev schemas.

``python -m benchmarks.sensitive_prepass_bird [dev_tables.json] [--all]``: every column of the
11 BIRD databases (``golden/schema_linking/bird/dev_tables.json``, the same file as
``../shared/data/bird-minidev/dev_tables.json``) through
:func:`modules.catalog.sensitive.classify_column` — names and declared types only, as the
pre-pass always works — and prints the count per rule, per confidence and per database, and the
flagged columns (a sample of each rule; ``--all``: every one). Deterministic: no model, no
timing, the same output every run. There is no labelled ground truth: the list is for a person
to judge (docs/catalog.md records what it found).
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from modules.catalog.sensitive import RULES, SensitiveProposal, classify_column

REPO = Path(__file__).resolve().parents[1]
BIRD_TABLES = REPO / "golden" / "schema_linking" / "bird" / "dev_tables.json"
SAMPLE = 6


def proposals(databases: list[dict[str, Any]]) -> tuple[int, list[tuple[str, SensitiveProposal]]]:
    """``(columns considered, [(db_id, proposal)])`` over every BIRD column."""
    considered = 0
    found: list[tuple[str, SensitiveProposal]] = []
    for db in databases:
        tables = db["table_names_original"]
        for (table_index, column), declared in zip(
            db["column_names_original"], db["column_types"], strict=True
        ):
            if table_index < 0:
                continue  # BIRD's "*"
            considered += 1
            proposal = classify_column(tables[table_index], column, declared)
            if proposal is not None:
                found.append((db["db_id"], proposal))
    return considered, found


def _band(confidence: float) -> str:
    if confidence >= 0.9:
        return "high (>= 0.9)"
    return "medium (0.7-0.89)" if confidence >= 0.7 else "low (< 0.7)"


def report(databases: list[dict[str, Any]], *, every: bool = False) -> str:
    considered, found = proposals(databases)
    lines = [
        f"BIRD mini-dev: {len(databases)} databases, {considered} columns; "
        f"the pre-pass proposes {len(found)} ({len(found) / max(considered, 1):.1%})",
        "",
        "per rule:",
    ]
    by_rule: dict[str, list[tuple[str, SensitiveProposal]]] = defaultdict(list)
    for db_id, proposal in found:
        by_rule[proposal.rule].append((db_id, proposal))
    for rule in RULES:
        lines.append(f"  {rule:<12} {len(by_rule.get(rule, [])):>4}")
    confidence = Counter(_band(p.confidence) for _, p in found)
    lines += ["", "per confidence:"]
    lines += [f"  {k:<18} {confidence[k]:>4}" for k in sorted(confidence)]
    per_db = Counter(db_id for db_id, _ in found)
    lines += ["", "per database:"]
    lines += [f"  {db['db_id']:<26} {per_db[db['db_id']]:>4}" for db in databases]
    lines += ["", "flagged columns" + ("" if every else f" (up to {SAMPLE} per rule)") + ":"]
    for rule in RULES:
        shown = by_rule.get(rule, [])
        for db_id, p in shown if every else shown[:SAMPLE]:
            lines.append(
                f"  {rule:<12} {p.confidence:.2f}  {db_id}.{p.table}.{p.column} "
                f"({p.type or 'untyped'}; {p.evidence})"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    every = "--all" in args
    paths = [a for a in args if a != "--all"]
    path = Path(paths[0]) if paths else BIRD_TABLES
    databases = json.loads(path.read_text(encoding="utf-8"))
    sys.stdout.write(report(databases, every=every))


if __name__ == "__main__":
    main()
