"""``make eval-ambiqt``: F1's ambiguity detection on AmbiQT (issue 14) — recall per type and the
false-alarm rate.

Data: ``../shared/data/ambiqt/{tbl-agg,tbl-split}.json`` beside the repository (``AMBIQT_DIR``
overrides the folder): 62 "P" cases (a precomputed aggregate table was added) and 184 "J" cases
(a table was split in two), each with a question, its two correct queries and the schema with up
to three sample values per column.

1. **Materialise** each case's ``schema_with_content`` as a SQLite database: one table per
   schema table (SQLite's reserved ``sqlite_*`` names skipped), a column's declared type read
   from its samples (INTEGER, REAL, else TEXT; none when it has no sample), the sample values as
   rows (the i-th sample of every column is row i; a row repeating a primary key is dropped),
   and primary keys from ``tables_with_pkeys`` (P) or ``primary_key`` (J) — AmbiQT declares no
   foreign keys.
2. **SchemaView**: ``kernel.database.introspect`` of that database (cached per structure),
   as ``benchmarks.eval_schema_linking.view_from_introspection`` reads it, plus the catalog's
   Generated Relationship rules (``modules.catalog.generation``; they need a primary key whose
   name says its table, e.g. ``<table>_id``). No other relationship is inferred here: the
   detector itself joins tables that share a key column (see
   ``modules/disambiguation/ambiguity_rules.py``).
3. **Value index**: the databases' text cells, folded (case, accents, whitespace), as the
   ``ValueLookup`` (an exact normalized lookup: what item 6's index will do at the least).
4. **Detection**: ``detect_ambiguities(question, view, values=...)``. Readings: the tables and
   ``table.column`` the two queries reference (``eval_schema_linking.gold_of``, sqlglot), each
   minus the other's. A case is **detected** when one ambiguity has two options, one covering
   each reading; an option covers a reading when its target, or its target's table, is one of
   the reading's elements. ``detected_kind``: the same, counting only ambiguities of the case's
   kind (``precomputed_aggregate`` for P, ``joinable_attribute`` for J).
5. **False alarms**: the same questions (once each) over the schema without the added table
   (P: ``new_table_name``; J: the split-off ``<table>_<column>``): a question is a false alarm
   when any P- or J-kind ambiguity is raised there; ``any_kind`` counts every ambiguity.
   **False unanswerables**: every term called unanswerable in a question the gold SQL answers.

**Split**, fixed before any tuning: a case is *dev* when
``int(sha256(db_id + "\\n" + question)[:8], 16) % 3 == 0`` (a third), else *locked*; rules were
tuned on dev only. Writes ``golden/ambiqt/report.json`` (``EVAL_JSON`` elsewhere);
``EVAL_LIMIT=N`` takes the first N cases of each file (smoke runs).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.ambiqt_data import (
    Schema,
    ValueIndex,
    Views,
    added_tables,
    materialise,
    parse_schema,
    primary_keys,
)

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "golden" / "ambiqt" / "report.json"
FILES = {"P": "tbl-agg.json", "J": "tbl-split.json"}
KIND_OF_TYPE = {"P": "precomputed_aggregate", "J": "joinable_attribute"}
STRUCTURAL = frozenset(KIND_OF_TYPE.values())
SPLIT_RULE = 'int(sha256(db_id + "\\n" + question).hexdigest()[:8], 16) % 3 == 0 → dev'
TARGETS = {"recall_per_type": 0.90, "false_alarm_rate": 0.10}


def data_dir() -> Path:
    """``AMBIQT_DIR``, else ``shared/data/ambiqt`` in the first folder above the repository
    that has one, else the copy committed under ``golden/ambiqt/data``."""
    env = os.environ.get("AMBIQT_DIR")
    if env:
        return Path(env)
    for parent in REPO.parents:
        candidate = parent / "shared" / "data" / "ambiqt"
        if candidate.is_dir():
            return candidate
    return REPO / "golden" / "ambiqt" / "data"  # the committed copy (its README says what)


def is_dev(db_id: str, question: str) -> bool:
    digest = hashlib.sha256(f"{db_id}\n{question}".encode()).hexdigest()
    return int(digest[:8], 16) % 3 == 0


def load_cases(folder: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Every case of both files, each with its ``type`` (P or J), in file order."""
    cases: list[dict[str, Any]] = []
    for kind, name in FILES.items():
        rows = json.loads((folder / name).read_text(encoding="utf-8"))
        for row in rows[:limit]:
            cases.append({**row, "type": kind})
    return cases


# --- evaluation ----------------------------------------------------------------------------


def reading_elements(sql: str, view: Any) -> set[str]:
    """The tables and ``table.column`` names ``sql`` references in ``view``."""
    from benchmarks.eval_schema_linking import gold_of

    tables, columns = gold_of(sql, view)
    return tables | {f"{t}.{c}" for t, c in columns}


def covers(target: str | None, reading: set[str]) -> bool:
    return target is not None and (target in reading or target.split(".")[0] in reading)


def detects(ambiguity: Any, first: set[str], second: set[str]) -> bool:
    """Two distinct options of ``ambiguity``, one covering each reading."""
    options = ambiguity.readings
    return any(
        covers(a.target, first) and covers(b.target, second)
        for a in options
        for b in options
        if a.id != b.id
    )


@dataclass(frozen=True)
class CaseResult:
    type: str
    dev: bool
    db_id: str
    question: str
    readings: tuple[tuple[str, ...], tuple[str, ...]]
    detected: bool
    detected_kind: bool
    first: bool
    found: tuple[tuple[str, str, tuple[str, ...]], ...]
    unanswerable: tuple[str, ...]


@dataclass(frozen=True)
class OriginalResult:
    dev: bool
    db_id: str
    question: str
    kinds: tuple[str, ...]
    unanswerable: tuple[str, ...]


def _summary(ambiguities: Iterable[Any]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    return tuple((a.kind, a.term, tuple(a.target_group)) for a in ambiguities)


class Runner:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.views = Views(folder)
        self.count = 0

    def _database(self, schema: Schema, pks: Mapping[str, str]) -> tuple[Any, ValueIndex]:
        self.count += 1
        path = self.folder / f"case{self.count}.sqlite"
        ddl = materialise(schema, pks, path)
        return self.views.of(path, ddl), ValueIndex(path)

    def case(self, case: Mapping[str, Any]) -> tuple[CaseResult, OriginalResult]:
        from modules.disambiguation.ambiguity import detect_ambiguities

        schema = parse_schema(case["schema_with_content"])
        pks = primary_keys(case)
        view, values = self._database(schema, pks)
        first = reading_elements(case["query1"], view)
        second = reading_elements(case["query2"], view)
        r1, r2 = first - second, second - first
        report = detect_ambiguities(case["question"], view, values=values)
        kind = KIND_OF_TYPE[case["type"]]
        hits = [a for a in report.ambiguities if detects(a, r1, r2)]
        dev = is_dev(case["db_id"], case["question"])
        result = CaseResult(
            type=case["type"],
            dev=dev,
            db_id=case["db_id"],
            question=case["question"],
            readings=(tuple(sorted(r1)), tuple(sorted(r2))),
            detected=bool(hits),
            detected_kind=any(kind in a.kinds for a in hits),
            first=bool(report.ambiguities) and report.ambiguities[0] in hits,
            found=_summary(report.ambiguities),
            unanswerable=tuple(u.term for u in report.unanswerable),
        )
        added = added_tables(case, schema)
        original = [(t, cols) for t, cols in schema if t not in added]
        orig_view, orig_values = self._database(original, pks)
        orig = detect_ambiguities(case["question"], orig_view, values=orig_values)
        return result, OriginalResult(
            dev=dev,
            db_id=case["db_id"],
            question=case["question"],
            kinds=tuple(a.kind for a in orig.ambiguities),
            unanswerable=tuple(u.term for u in orig.unanswerable),
        )


def evaluate(
    cases: Sequence[Mapping[str, Any]], *, splits: Sequence[str] = ("dev", "locked")
) -> tuple[list[CaseResult], list[OriginalResult]]:
    """Run every case of the given splits (``dev``, ``locked``); original questions once each."""
    wanted = [
        c for c in cases if ("dev" if is_dev(c["db_id"], c["question"]) else "locked") in splits
    ]
    results: list[CaseResult] = []
    originals: dict[tuple[str, str], OriginalResult] = {}
    with tempfile.TemporaryDirectory(prefix="tht-ambiqt-") as tmp:
        runner = Runner(Path(tmp))
        for case in wanted:
            result, original = runner.case(case)
            results.append(result)
            originals.setdefault((case["db_id"], case["question"]), original)
    return results, list(originals.values())


def _rate(n: int, d: int) -> float:
    return round(n / d, 4) if d else 0.0


def summarise(results: Sequence[CaseResult], originals: Sequence[OriginalResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("P", "J"):
        rows = [r for r in results if r.type == kind]
        n = len(rows)
        out[kind] = {
            "cases": n,
            "detected": sum(r.detected for r in rows),
            "recall": _rate(sum(r.detected for r in rows), n),
            "recall_kind": _rate(sum(r.detected_kind for r in rows), n),
            "first_ambiguity_detects": _rate(sum(r.first for r in rows), n),
            "mean_ambiguities": round(sum(len(r.found) for r in rows) / n, 3) if n else 0.0,
        }
    structural = [o for o in originals if STRUCTURAL & set(o.kinds)]
    out["false_alarms"] = {
        "questions": len(originals),
        "p_or_j": len(structural),
        "rate": _rate(len(structural), len(originals)),
        "any_kind_rate": _rate(sum(bool(o.kinds) for o in originals), len(originals)),
    }
    terms: Counter[str] = Counter(t.casefold() for r in results for t in r.unanswerable)
    out["false_unanswerable"] = {
        "cases_with_any": _rate(sum(bool(r.unanswerable) for r in results), len(results)),
        "original_questions_with_any": _rate(
            sum(bool(o.unanswerable) for o in originals), len(originals)
        ),
        "terms": sum(terms.values()),
        "most_common": [[t, n] for t, n in sorted(terms.items(), key=lambda p: (-p[1], p[0]))][:10],
    }
    return out


def _misses(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    return [
        {
            "type": r.type,
            "db_id": r.db_id,
            "question": r.question,
            "readings": [list(r.readings[0]), list(r.readings[1])],
            "found": [[k, t, list(g)] for k, t, g in r.found],
        }
        for r in results
        if not r.detected
    ]


def report(results: Sequence[CaseResult], originals: Sequence[OriginalResult]) -> dict[str, Any]:
    dev = [r for r in results if r.dev]
    locked = [r for r in results if not r.dev]
    out: dict[str, Any] = {
        "data": "AmbiQT (testzer0/AmbiQT @2dd908b, MIT): tbl-agg (P) and tbl-split (J)",
        "split_rule": SPLIT_RULE,
        "targets": TARGETS,
        "dev": summarise(dev, [o for o in originals if o.dev]),
    }
    if locked:
        out["locked"] = summarise(locked, [o for o in originals if not o.dev])
        out["all"] = summarise(results, originals)
    out["dev_misses"] = _misses(dev)
    false_alarms = [o for o in originals if o.dev and STRUCTURAL & set(o.kinds)]
    out["dev_false_alarms"] = [
        {"db_id": o.db_id, "question": o.question, "kinds": list(o.kinds)} for o in false_alarms
    ]
    return out


def _print(result: Mapping[str, Any]) -> None:
    for split in ("dev", "locked", "all"):
        if split not in result:
            continue
        s = result[split]
        fa = s["false_alarms"]
        print(
            f"{split:6}  P recall {s['P']['recall']:.3f} ({s['P']['detected']}/{s['P']['cases']})"
            f"  J recall {s['J']['recall']:.3f} ({s['J']['detected']}/{s['J']['cases']})"
            f"  false alarms {fa['rate']:.3f} ({fa['p_or_j']}/{fa['questions']})"
            f"  false unanswerable {s['false_unanswerable']['cases_with_any']:.3f}"
        )


def main() -> None:
    folder = data_dir()
    if not (folder / FILES["P"]).is_file():
        print(f"AmbiQT data not found in {folder} (set AMBIQT_DIR)", file=sys.stderr)
        raise SystemExit(3)
    limit = int(os.environ["EVAL_LIMIT"]) if os.environ.get("EVAL_LIMIT") else None
    splits = ("dev",) if os.environ.get("EVAL_SPLIT") == "dev" else ("dev", "locked")
    started = time.perf_counter()
    results, originals = evaluate(load_cases(folder, limit), splits=splits)
    result = report(results, originals)
    _print(result)
    print(f"{len(results)} cases in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    target = os.environ.get("EVAL_JSON")
    if target or (limit is None and splits == ("dev", "locked")):
        path = Path(target) if target else GOLDEN
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
