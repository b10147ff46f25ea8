"""The generic reviewer tools: proposal files become module outcomes."""

from __future__ import annotations

import json

import pytest

from kernel.errors import UsageError
from kernel.reviewer_tools import outcome_from_proposal, parse_proposal


def _outcome(body: dict, stage: str = "disambiguation"):
    return outcome_from_proposal(parse_proposal(json.dumps(body).encode()), stage)


def test_select_becomes_a_review_with_options_and_artifacts() -> None:
    outcome = _outcome(
        {
            "kind": "select",
            "prompt": "p",
            "options": [
                {
                    "id": "a",
                    "label": "A",
                    "events": [{"type": "concept_clarified", "payload": {"meaning": "m"}}],
                }
            ],
            "artifacts": [{"name": "question.md", "content": "# q"}],
        },
        "rewriting",
    )
    assert outcome.status == "awaiting_review"
    assert outcome.review is not None and outcome.review.kind == "select"
    assert outcome.review.artifacts == ("question.md",)
    assert outcome.artifacts[0].content == b"# q"


def test_confirm_gets_a_default_prompt() -> None:
    outcome = _outcome({"kind": "confirm"}, "sql")
    assert outcome.review is not None and outcome.review.prompt == "Approve stage sql?"


def test_auto_completes_with_its_events() -> None:
    outcome = _outcome(
        {"kind": "auto", "events": [{"type": "result_verified", "payload": {"rows": 1}}]}
    )
    assert outcome.status == "completed"
    assert outcome.events[0].type == "result_verified"


def test_revision_and_fail() -> None:
    assert (
        _outcome({"kind": "revision", "target": "cte", "reason": "r"}).status
        == "revision_requested"
    )
    failed = _outcome({"kind": "fail", "failure": {"code": "c", "message": "m"}})
    assert failed.status == "failed" and failed.failure is not None


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"kind": "select", "events": [{"type": "x"}]}, "no top-level events"),
        ({"kind": "confirm", "options": [{"id": "a", "label": "A"}]}, "no options"),
        ({"kind": "auto", "options": [{"id": "a", "label": "A"}]}, "no options"),
        ({"kind": "revision", "reason": "r"}, "target"),
        ({"kind": "fail"}, "failure"),
        ({"kind": "select", "options": [{"id": "a"}]}, "label"),
    ],
)
def test_malformed_proposals_are_usage_errors(body: dict, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        _outcome(body)


def test_oversized_and_non_json_proposals() -> None:
    with pytest.raises(UsageError, match="not valid JSON"):
        parse_proposal(b"\xff\xfe")
    with pytest.raises(UsageError, match="larger than"):
        parse_proposal(b" " * (4 * 1024 * 1024 + 1))
