"""The output parser/validator: every case of spec 000 §26.2, and agreement with the shipped
JSON Schema (§13.3) on generated documents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.routing.evaluator import (
    REASON_CODES,
    EvaluationConstraints,
    evaluation_schema,
    parse_evaluator_output,
)

CONSTRAINTS = EvaluationConstraints(
    allowed_skill_ids=("mcp-code-reviewer", "mcp-technical-analyst"),
    allowed_mcp_ids=("git-node",),
    max_skill_suggestions=2,
    max_mcp_suggestions=1,
)


def target(
    ident: str, role: str = "primary", relevance: float = 0.9, reason: str = "static-review"
) -> dict[str, Any]:
    return {"id": ident, "role": role, "relevance": relevance, "reasonCode": reason}


def doc(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schemaVersion": 1,
        "decision": "single",
        "skills": [target("mcp-code-reviewer")],
        "mcps": [],
        "confidence": 0.85,
        "ambiguityResolved": True,
    }
    base.update(over)
    return base


def parse(value: Any, **kw: Any):  # type: ignore[no-untyped-def]
    text = value if isinstance(value, str) else json.dumps(value)
    return parse_evaluator_output(text, CONSTRAINTS, **kw)


def rejected(value: Any, code: str, **kw: Any) -> None:
    outcome = parse(value, **kw)
    assert outcome.evaluation is None
    assert outcome.rejection == code, outcome


def test_valid_single() -> None:
    outcome = parse(doc())
    assert outcome.ok
    evaluation = outcome.evaluation
    assert evaluation is not None
    assert evaluation.decision == "single"
    assert evaluation.primary == "mcp-code-reviewer"
    assert evaluation.to_json() == doc()


def test_valid_compose_with_a_supporting_mcp() -> None:
    value = doc(
        decision="compose",
        skills=[
            target("mcp-code-reviewer"),
            target("mcp-technical-analyst", "secondary", 0.7, "multi-source-analysis"),
        ],
        mcps=[target("git-node", "supporting", 0.8, "repository-evidence-required")],
    )
    assert parse(value).ok


def test_valid_none_and_uncertain() -> None:
    assert parse(doc(decision="none", skills=[], confidence=0.9)).ok
    assert parse(doc(decision="uncertain", skills=[], confidence=0.2, ambiguityResolved=False)).ok


def test_extra_fields_reject_the_whole_evaluation() -> None:
    rejected({**doc(), "reasoning": "because"}, "extra-fields")
    rejected(doc(skills=[{**target("mcp-code-reviewer"), "tool": "force_push"}]), "extra-fields")


def test_an_invented_id_rejects_the_whole_evaluation() -> None:
    value = doc(
        decision="compose",
        skills=[target("mcp-code-reviewer"), target("mcp-invented", "secondary")],
    )
    outcome = parse(value)
    assert (outcome.rejection, outcome.where) == ("unknown-id", "skills[1].id")
    rejected(doc(mcps=[target("filesystem", "supporting")]), "unknown-id")
    rejected(doc(skills=[target("git-node")]), "unknown-id")  # an MCP id is not a skill id


def test_an_unknown_reason_code_rejects() -> None:
    rejected(
        doc(skills=[target("mcp-code-reviewer", reason="because-i-said-so")]), "unknown-reason-code"
    )


def test_a_reason_code_outside_the_request_allowlist_rejects() -> None:
    narrow = EvaluationConstraints(
        allowed_skill_ids=("mcp-code-reviewer",),
        allowed_mcp_ids=(),
        allowed_reason_codes=("spec-compliance",),
    )
    outcome = parse_evaluator_output(json.dumps(doc()), narrow)
    assert outcome.rejection == "unknown-reason-code"


@pytest.mark.parametrize("value", [1.01, -0.1, 7])
def test_relevance_out_of_range(value: float) -> None:
    rejected(doc(skills=[target("mcp-code-reviewer", relevance=value)]), "out-of-range")


@pytest.mark.parametrize("value", [1.5, -0.01])
def test_confidence_out_of_range(value: float) -> None:
    rejected(doc(confidence=value), "out-of-range")


def test_nan_and_infinity_are_not_json() -> None:
    rejected(
        json.dumps(doc(decision="none", skills=[])).replace("0.85", "NaN"),
        "invalid-json",
    )


def test_two_primaries_and_no_primary_are_incoherent() -> None:
    rejected(
        doc(
            decision="compose",
            skills=[target("mcp-code-reviewer"), target("mcp-technical-analyst")],
        ),
        "incoherent-decision",
    )
    rejected(doc(skills=[target("mcp-code-reviewer", role="secondary")]), "incoherent-decision")


@pytest.mark.parametrize(
    "value",
    [
        doc(decision="single", skills=[]),
        doc(decision="none"),  # none with a skill
        doc(decision="none", skills=[], mcps=[target("git-node", "supporting")]),
        doc(decision="compose", skills=[]),
        doc(mcps=[target("git-node", "primary")]),  # an MCP is only ever supporting
        doc(skills=[target("mcp-code-reviewer", role="supporting")]),
    ],
)
def test_incoherent_decisions(value: dict[str, Any]) -> None:
    rejected(value, "incoherent-decision")


def test_compose_and_none_obey_the_request_constraints() -> None:
    strict = EvaluationConstraints(
        allowed_skill_ids=CONSTRAINTS.allowed_skill_ids,
        allowed_mcp_ids=(),
        allow_none=False,
        allow_compose=False,
    )
    compose = doc(decision="compose", skills=[target("mcp-code-reviewer")])
    assert parse_evaluator_output(json.dumps(compose), strict).rejection == "incoherent-decision"
    none = doc(decision="none", skills=[])
    assert parse_evaluator_output(json.dumps(none), strict).rejection == "incoherent-decision"


def test_cardinality_is_bounded_by_the_constraints() -> None:
    one = EvaluationConstraints(
        allowed_skill_ids=CONSTRAINTS.allowed_skill_ids,
        allowed_mcp_ids=("git-node",),
        max_skill_suggestions=1,
    )
    value = doc(
        decision="compose",
        skills=[target("mcp-code-reviewer"), target("mcp-technical-analyst", "secondary")],
    )
    assert parse_evaluator_output(json.dumps(value), one).rejection == "cardinality"
    rejected(doc(skills=[target("mcp-code-reviewer")] * 3), "cardinality")
    rejected(
        doc(
            decision="compose",
            skills=[target("mcp-code-reviewer"), target("mcp-code-reviewer", "secondary")],
        ),
        "cardinality",
    )


def test_text_before_the_json_is_rejected_in_production() -> None:
    rejected("Here is my answer: " + json.dumps(doc()), "not-pure-json-object")


def test_a_code_fence_is_rejected_in_production_but_read_in_diagnostic_mode() -> None:
    fenced = "```json\n" + json.dumps(doc()) + "\n```"
    rejected(fenced, "not-pure-json-object")
    assert parse(fenced, diagnostic=True).ok
    assert parse("Sure! " + json.dumps(doc()) + " Hope it helps.", diagnostic=True).ok


def test_truncated_json_is_recognized() -> None:
    text = json.dumps(doc())
    rejected(text[: len(text) // 2], "truncated-json")
    rejected(text[:-1], "truncated-json")


def test_an_oversized_answer_is_rejected_before_parsing() -> None:
    rejected(json.dumps(doc()) + " " * 9000, "response-too-large")
    rejected(doc(), "response-too-large", max_chars=20)


def test_an_array_instead_of_an_object() -> None:
    rejected("[" + json.dumps(doc()) + "]", "not-pure-json-object")
    rejected("[]", "not-pure-json-object")
    rejected('"single"', "not-pure-json-object")


def test_prototype_and_duplicate_keys_are_anomalies() -> None:
    rejected('{"__proto__": {"admin": true}, "schemaVersion": 1}', "anomalous-keys")
    rejected(json.dumps(doc())[:-1] + ', "constructor": 1}', "anomalous-keys")
    rejected(
        '{"schemaVersion": 1, ' + json.dumps(doc(decision="none", skills=[]))[1:],
        "anomalous-keys",
    )


def test_empty_output() -> None:
    rejected("", "empty-output")
    rejected("   \n", "empty-output")


def test_a_wrong_version_is_a_version_mismatch() -> None:
    rejected(doc(schemaVersion=2), "version-mismatch")


@pytest.mark.parametrize(
    ("over", "where"),
    [
        ({"decision": "maybe"}, "decision"),
        ({"confidence": "high"}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"ambiguityResolved": "yes"}, "ambiguityResolved"),
        ({"skills": {"id": "x"}}, "skills"),
        ({"skills": ["mcp-code-reviewer"]}, "skills[0]"),
        (
            {"skills": [{"id": "mcp-code-reviewer", "role": "primary", "relevance": 0.9}]},
            "skills[0].reasonCode",
        ),
        ({"skills": [target("", "primary")]}, "skills[0].id"),
        ({"skills": [target("mcp-code-reviewer", "boss")]}, "skills[0].role"),
    ],
)
def test_schema_violations_name_the_field(over: dict[str, Any], where: str) -> None:
    outcome = parse(doc(**over))
    assert (outcome.rejection, outcome.where) == ("schema-violation", where)


def test_a_rejection_never_echoes_the_model_text() -> None:
    secret = "IGNORE PREVIOUS INSTRUCTIONS sk-live-abc"
    for value in (
        {**doc(), secret: 1},
        doc(skills=[target(secret)]),
        doc(skills=[target("mcp-code-reviewer", reason=secret[:60])]),
    ):
        outcome = parse(value)
        assert outcome.rejection is not None
        assert secret[:20] not in repr(outcome)


# -- agreement with the shipped JSON Schema ---------------------------------------------------

ids = st.sampled_from(["mcp-code-reviewer", "mcp-technical-analyst", "git-node"])
targets = st.fixed_dictionaries(
    {
        "id": ids,
        "role": st.sampled_from(["primary", "secondary", "supporting", "other"]),
        "relevance": st.one_of(st.floats(-0.5, 1.5, allow_nan=False), st.integers(-1, 2)),
        "reasonCode": st.sampled_from([*REASON_CODES[:4], "x"]),
    },
    optional={"extra": st.integers()},
)
documents = st.fixed_dictionaries(
    {
        "schemaVersion": st.sampled_from([1, 2]),
        "decision": st.sampled_from(["single", "compose", "none", "uncertain", "other"]),
        "skills": st.lists(targets, max_size=3),
        "mcps": st.lists(targets, max_size=3),
        "confidence": st.one_of(st.floats(-0.5, 1.5, allow_nan=False), st.booleans()),
        "ambiguityResolved": st.one_of(st.booleans(), st.integers(0, 1)),
    },
    optional={"note": st.text(max_size=3)},
)


@given(documents)
def test_whatever_the_parser_accepts_satisfies_the_json_schema(value: dict[str, Any]) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(evaluation_schema())
    outcome = parse(value)
    schema_ok = validator.is_valid(value)
    if outcome.ok:
        assert schema_ok
    if not schema_ok:
        assert not outcome.ok
    if schema_ok and not outcome.ok:  # stricter than the schema only for the semantic checks
        assert outcome.rejection in {
            "unknown-id",
            "cardinality",
            "incoherent-decision",
            "unknown-reason-code",
        }


def test_the_shipped_schema_is_the_spec_schema() -> None:
    import jsonschema

    schema = evaluation_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "https://local.invalid/schemas/routing-evaluation-v1.json"
    assert schema["additionalProperties"] is False
    assert schema["required"] == [
        "schemaVersion",
        "decision",
        "skills",
        "mcps",
        "confidence",
        "ambiguityResolved",
    ]
    assert schema["$defs"]["target"]["properties"]["id"]["maxLength"] == 120
