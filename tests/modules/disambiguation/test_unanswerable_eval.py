"""``benchmarks.eval_unanswerable``: BIRD's answerable questions judge F1's unanswerable terms;
its probe (a column taken out of the schema) must really take the column out, and the report
must count what the detector says."""

from __future__ import annotations

from benchmarks import eval_unanswerable
from benchmarks.eval_schema_linking import _direct_view, load_bird
from modules.disambiguation.ambiguity import detect_ambiguities


def test_the_probe_removes_the_column_everywhere_and_the_detector_then_reports_it() -> None:
    schemas, questions = load_bird()
    case = next(q for q in questions if q["db_id"] == "california_schools")
    view = _direct_view(schemas[case["db_id"]])
    name = "latitude"
    assert any(c.name.lower() == name for t in view.tables() for c in t.columns)
    without = eval_unanswerable._without(view, name)
    assert not any(c.name.lower() == name for t in without.tables() for c in t.columns)
    question = "What is the salary of the latitude of each school?"
    assert [u.term for u in detect_ambiguities(question, view).unanswerable] == ["salary"]
    assert [u.term for u in detect_ambiguities(question, without).unanswerable] == [
        "salary",
        "latitude",
    ]


def test_the_report_counts_the_detector_s_findings_on_both_splits() -> None:
    schemas, questions = load_bird()
    small = [q for q in questions if q["db_id"] == "california_schools"][:30]
    result = eval_unanswerable.evaluate(schemas, small)
    assert set(result) == {"dev", "locked"}
    assert sum(r["questions"] for r in result.values()) == len(small)
    views = {n: _direct_view(d) for n, d in schemas.items()}
    flagged = sum(
        bool(detect_ambiguities(q["question"], views[q["db_id"]]).unanswerable) for q in small
    )
    counted = sum(round(r["false_unanswerable"] * r["questions"]) for r in result.values())
    assert counted == flagged
    assert all(0 <= r["detected"] <= r["probes"] for r in result.values())
