"""The AmbiQT evaluation of F1's ambiguity detection (``make eval-ambiqt``): the eval runs on a
small slice with the report's shape checked, the committed report matches the code's split rule
and records the targets, and — the rule that keeps the measure honest — no rule of the detector
names AmbiQT's databases, tables or columns."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from benchmarks import eval_ambiqt
from benchmarks.ambiqt_data import parse_schema
from modules.disambiguation import ambiguity_rules, unanswerable

ROOT = Path(__file__).resolve().parents[3]
DETECTOR = sorted(
    [
        *(ROOT / "modules" / "disambiguation").glob("ambiguity*.py"),
        ROOT / "modules" / "disambiguation" / "unanswerable.py",
        ROOT / "modules" / "disambiguation" / "f1_policy.py",
        ROOT / "modules" / "disambiguation" / "intent_questions.py",
    ]
)
DATA = eval_ambiqt.data_dir()
#: the data is always there (a copy is committed under golden/ambiqt/data): never skipped


def test_the_ambiqt_data_is_found() -> None:
    assert (DATA / "tbl-agg.json").is_file() and (DATA / "tbl-split.json").is_file(), DATA


#: the generic vocabularies the detector declares: words a question or a column name is made of
GENERIC = (
    set(ambiguity_rules.AGGREGATE_NAMES)
    | set(ambiguity_rules.GENERIC_KEYS)
    | set(ambiguity_rules.AGGREGATE_CUES)
    | set(unanswerable.QUESTION_WORDS)
    | set(unanswerable.NOUN_CUES)
    | set(unanswerable.CALENDAR_WORDS)
    | set(unanswerable.COMPUTATION_WORDS)
    | set(unanswerable.NUMBER_WORDS)
    | set(unanswerable.COMPARISON_WORDS)
)


def _ambiqt_names() -> tuple[set[str], set[str], set[str]]:
    """AmbiQT's database ids, table names and column names (folded)."""
    dbs: set[str] = set()
    tables: set[str] = set()
    columns: set[str] = set()
    for case in eval_ambiqt.load_cases(DATA):
        dbs.add(case["db_id"].casefold())
        for table, cols in parse_schema(case["schema_with_content"]):
            tables.add(table.casefold())
            columns.update(c.casefold() for c, _ in cols)
    return dbs, tables, columns


def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[A-Za-z0-9_]+", text)}


def _literal_words(path: Path) -> set[str]:
    """The words of the string literals of ``path`` that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words |= set() if id(node) in docstrings else _words(node.value)
    return words


def test_no_rule_names_an_ambiqt_database_table_or_column() -> None:
    dbs, tables, columns = _ambiqt_names()
    assert len(dbs) == 12 and len(tables) > 50  # the names were really read
    for path in DETECTOR:
        text = path.read_text(encoding="utf-8")
        everywhere = _words(text)  # code, strings, comments and docstrings
        assert not everywhere & dbs, f"{path.name} names AmbiQT databases"
        assert not everywhere & tables, f"{path.name} names AmbiQT tables: {everywhere & tables}"
        compound = {c for c in columns if "_" in c}
        assert not everywhere & compound, f"{path.name} names AmbiQT columns"
        # a one-word column name may be an everyday word (``name``, ``type``): in a rule's
        # literals it is only allowed as a word of the declared generic vocabularies
        named = _literal_words(path) & columns
        assert named <= GENERIC, f"{path.name}: literals naming AmbiQT columns {named - GENERIC}"


def test_the_grep_would_catch_a_rule_that_names_a_table(tmp_path: Path) -> None:
    """The check is not vacuous: a literal naming a table or a compound column is seen."""
    rule = tmp_path / "rule.py"
    rule.write_text('BOOST = {"singer_in_concert": 2.0}\nX = "avg_age"\n', encoding="utf-8")
    words = _literal_words(rule)
    assert {"singer_in_concert", "avg_age"} <= words


def test_the_split_is_a_fixed_third_by_question() -> None:
    assert eval_ambiqt.is_dev("db", "q") == eval_ambiqt.is_dev("db", "q")
    flags = [eval_ambiqt.is_dev("db", f"question {i}") for i in range(3000)]
    assert 0.30 < sum(flags) / len(flags) < 0.37
    # the same question of the same database lands on one side, whichever case it comes from
    assert {eval_ambiqt.is_dev("x", "same") for _ in range(3)} == {eval_ambiqt.is_dev("x", "same")}


def test_a_schema_with_quoted_commas_and_parentheses_parses() -> None:
    schema = parse_schema(
        'ward : name ("North, (old)", "South"), beds (3, 4.5) | bed : ward_id (1, 2), note ()'
    )
    assert schema == [
        ("ward", [("name", ["North, (old)", "South"]), ("beds", [3, 4.5])]),
        ("bed", [("ward_id", [1, 2]), ("note", [])]),
    ]


def test_the_eval_runs_on_a_slice_and_reports_its_shape() -> None:
    cases = eval_ambiqt.load_cases(DATA, limit=5)
    assert [c["type"] for c in cases] == ["P"] * 5 + ["J"] * 5
    results, originals = eval_ambiqt.evaluate(cases)
    assert len(results) == 10
    assert 0 < len(originals) <= 10  # one original per (db_id, question)
    report = eval_ambiqt.report(results, originals)
    assert report["split_rule"] == eval_ambiqt.SPLIT_RULE
    for split in ("dev", "locked", "all"):
        if split not in report:
            continue
        s = report[split]
        for kind in ("P", "J"):
            assert set(s[kind]) == {
                "cases",
                "detected",
                "recall",
                "recall_kind",
                "first_ambiguity_detects",
                "mean_ambiguities",
            }
            assert 0.0 <= s[kind]["recall_kind"] <= s[kind]["recall"] <= 1.0
            assert s[kind]["detected"] <= s[kind]["cases"]
        fa = s["false_alarms"]
        assert 0.0 <= fa["rate"] <= fa["any_kind_rate"] <= 1.0
        assert fa["p_or_j"] <= fa["questions"]
    assert sum(r.detected for r in results) >= 8  # the first cases are plain ones
    assert all(len(r.readings[0]) and len(r.readings[1]) for r in results)


def test_the_committed_report_matches_the_code() -> None:
    golden = ROOT / "golden" / "ambiqt" / "report.json"
    report = json.loads(golden.read_text(encoding="utf-8"))
    assert report["split_rule"] == eval_ambiqt.SPLIT_RULE
    assert report["targets"] == eval_ambiqt.TARGETS
    for split in ("dev", "locked", "all"):
        assert report[split]["P"]["cases"] + report[split]["J"]["cases"] > 0
    assert report["all"]["P"]["cases"] == 62 and report["all"]["J"]["cases"] == 184
    assert (
        report["dev"]["P"]["cases"] + report["locked"]["P"]["cases"] == report["all"]["P"]["cases"]
    )
