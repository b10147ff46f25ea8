"""``python -m benchmarks.eval_unanswerable``: F1's *unanswerable* terms on BIRD mini-dev.

Every BIRD question is answered by its gold SQL over its own database, so any term F1 reports as
naming nothing in the catalog is a **false unanswerable**: the reviewer is asked whether a good
question can be answered at all. Measured over the questions' own schemas (the catalog as
``benchmarks.eval_schema_linking`` builds it from ``dev_tables.json``: names only, no value
index, no glossary — the harshest setting, where a value word like "female" has nothing to meet).

The other side, **kept detections**: a term the catalog really lacks must still be reported. For
each question and each column its gold SQL reads whose name (one word of 4 letters or more) the
question writes as a word, the column is removed from the schema (every table's column of that
name), and the case counts when F1 reports that word as unanswerable. Only cases where *some*
version of the rules can see it are meaningful, so the report gives the count.

Split: BIRD's locked 30% (``eval_schema_linking.locked``, fixed before any tuning); the word
classes were chosen on the dev 70% only. Prints both splits (docs/disambiguation.md).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.eval_schema_linking import _direct_view, gold_of, load_bird, locked


def _without(view: Any, column: str) -> Any:
    from kernel.schema_view import StaticSchemaView

    tables = tuple(
        t.__class__(
            name=t.name,
            columns=tuple(c for c in t.columns if c.name.lower() != column),
            description=t.description,
        )
        for t in view.tables()
    )
    return StaticSchemaView(
        dialect=view.dialect,
        version=f"{view.version}-{column}",
        schema_tables=tables,
        schema_relationships=tuple(
            r
            for r in view.relationships()
            if column not in {c.lower() for c in (*r.from_columns, *r.to_columns)}
        ),
    )


def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[A-Za-z]+", text)}


def evaluate(
    schemas: Mapping[str, Any], questions: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    from modules.disambiguation.ambiguity import detect_ambiguities

    views = {name: _direct_view(db) for name, db in schemas.items()}
    out: dict[str, dict[str, Any]] = {}
    for split in ("dev", "locked"):
        cases = [q for q in questions if locked(q["question_id"]) == (split == "locked")]
        flagged = 0
        terms: Counter[str] = Counter()
        kept = probes = 0
        for q in cases:
            view = views[q["db_id"]]
            report = detect_ambiguities(q["question"], view)
            flagged += bool(report.unanswerable)
            terms.update(u.term.casefold() for u in report.unanswerable)
            words = _words(q["question"])
            try:
                _, columns = gold_of(q["SQL"], view)
            except Exception:  # a gold query sqlglot cannot qualify: no probe from it
                columns = set()
            for name in sorted({c.lower() for _, c in columns}):
                if len(name) < 4 or not name.isalpha() or name not in words:
                    continue
                probes += 1
                missing = detect_ambiguities(q["question"], _without(view, name))
                kept += any(u.term.casefold() == name for u in missing.unanswerable)
        out[split] = {
            "questions": len(cases),
            "false_unanswerable": round(flagged / len(cases), 3),
            "terms": sum(terms.values()),
            "most_common": terms.most_common(25),
            "probes": probes,
            "detected": kept,
        }
    return out


def main() -> int:
    schemas, questions = load_bird()
    result = evaluate(schemas, questions)
    for split, r in result.items():
        print(
            f"{split:6}  questions {r['questions']}  with a false unanswerable "
            f"{r['false_unanswerable']:.3f} ({r['terms']} terms)  removed column reported "
            f"{r['detected']}/{r['probes']}"
        )
        print("        " + ", ".join(f"{t} {n}" for t, n in r["most_common"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
