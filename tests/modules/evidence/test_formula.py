"""Formula Evidence: one composable PostgreSQL expression with declared inputs (sqlglot)."""

from __future__ import annotations

import pytest

from modules.evidence.formula import check_formula


@pytest.mark.parametrize(
    ("expression", "inputs"),
    [
        ("free_meal_count / NULLIF(enrollment, 0)", ["free_meal_count", "enrollment"]),
        ("SUM(x) / COUNT(*)", ["x"]),
        ("CASE WHEN gender = 'F' THEN 1 ELSE 0 END", ["gender"]),
        ('"Free Meal Count (K-12)" / t."Enrollment"', ["Free Meal Count (K-12)", "t.Enrollment"]),
        ("dropouts::numeric / NULLIF(enrolled, 0);", ["dropouts", "enrolled"]),
    ],
)
def test_composable_expressions_with_their_inputs_are_valid(
    expression: str, inputs: list[str]
) -> None:
    check = check_formula(expression, inputs)
    assert check.ok, check.problems


@pytest.mark.parametrize(
    ("expression", "inputs", "problem"),
    [
        ("SELECT a / b FROM t", ["a", "b"], "full query"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", [], "full query"),
        ("INSERT INTO t VALUES (1)", [], "full query"),
        ("a / (SELECT max(b) FROM t)", ["a", "b"], "sub-query"),
        ("a / b; c", ["a", "b", "c"], "single expression"),
        ("a AS rate", ["a"], "alias"),
        ("DIVIDE(a, b)", ["a", "b"], "unknown function"),
        ("a / b", ["a"], "not declared"),
        ("a / b", ["a", "b", "c"], "not used"),
        ("1 + 2", [], "reads no column"),
        ("a +", ["a"], "not a PostgreSQL expression"),
        ("", [], "empty"),
    ],
)
def test_anything_but_one_composable_expression_is_rejected(
    expression: str, inputs: list[str], problem: str
) -> None:
    check = check_formula(expression, inputs)
    assert not check.ok
    assert any(problem in p for p in check.problems), check.problems
