"""``LLMIntentParser`` through ``kernel.llm`` against a real OpenAI-compatible server on 127.0.0.1
(tests/support/openai_server.py): structured output validated locally, and a fallback to the
rules with a reason code on every kind of failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from kernel.clock import FixedClock
from kernel.domain_profile import Dimension, DomainProfile
from kernel.llm import OpenAICompatibleClient, ProfileOverrides, resolve_profile
from modules.disambiguation.intent import Intent
from modules.disambiguation.intent_llm import ANSWER_SCHEMA, LLMAnswer, LLMIntentParser
from modules.disambiguation.intent_rules import RuleIntentParser
from tests.support.openai_server import Answer, Hangup, OpenAITestServer, Raw, Stall, Status

NOW = datetime(2026, 5, 20, 10, 0, tzinfo=UTC)
PROFILE = DomainProfile(
    dimensions=(
        Dimension(name="hospital", synonyms={"it": ("ospedale",), "en": ("hospital",)}),
        Dimension(
            name="period",
            kind="temporal",
            default="last 12 months",
            required=True,
            clarify="assume",
        ),
        Dimension(name="admissions", kind="measure", synonyms={"it": ("ricovero",)}),
    )
)
QUESTION = "ricoveri per struttura nel terzo trimestre dell'anno 2024"


def answer(**fields: Any) -> str:
    body: dict[str, Any] = {
        "dimensions": [{"name": "hospital", "matched": "struttura", "value": None}],
        "measures": [{"name": "admissions", "matched": "ricoveri", "value": None}],
        "period": {
            "start": "2024-07-01",
            "end": "2024-10-01",
            "grain": "quarter",
            "text": "terzo trimestre dell'anno 2024",
            "relative": False,
        },
    }
    body.update(fields)
    return json.dumps(body)


@pytest.fixture
def ollama() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama") as server:
        yield server


def parser_for(
    server: OpenAITestServer, profile_id: str = "ollama-local", **kw: Any
) -> LLMIntentParser:
    provider = resolve_profile(
        profile_id,
        file_profiles=None,
        layers=[ProfileOverrides(base_url=server.base_url)],
        env={},
    )
    return LLMIntentParser(client=OpenAICompatibleClient(env={}), provider=provider, **kw)


def parse(parser: LLMIntentParser, question: str = QUESTION, **flags: bool) -> Intent:
    return parser.parse(question, PROFILE, FixedClock(NOW), **flags)


def rules(question: str = QUESTION) -> Intent:
    return RuleIntentParser().parse(question, PROFILE, FixedClock(NOW))


def test_a_valid_answer_is_the_intent_with_the_profile_s_clarify_policy(
    ollama: OpenAITestServer,
) -> None:
    ollama.script(Answer(content=answer()))
    intent = parse(parser_for(ollama))
    assert intent.parser == "llm" and intent.fallback_reason is None
    assert [(m.name, m.matched, m.span) for m in intent.dimensions] == [
        ("hospital", "struttura", (13, 22)),
        ("period", "terzo trimestre dell'anno 2024", (27, 57)),
    ]
    assert [m.name for m in intent.measures] == ["admissions"]
    assert intent.period is not None
    assert (intent.period.start, intent.period.end, intent.period.last_day) == (
        "2024-07-01",
        "2024-10-01",
        "2024-09-30",
    )
    assert (intent.clarify, intent.missing) == ("none", ())
    # "struttura" is no synonym: the rules alone miss it (what the LLM parser is for)
    assert [m.name for m in rules().dimensions] == ["period"]


def test_the_request_carries_today_the_dimensions_and_the_question_only(
    ollama: OpenAITestServer,
) -> None:
    ollama.script(Answer(content=answer()))
    parse(parser_for(ollama))
    (request,) = ollama.chat_requests()
    system = request.body["messages"][0]["content"]
    assert request.user_message == QUESTION
    assert "Today is 2026-05-20." in system
    assert "- hospital (categorical): en: hospital; it: ospedale" in system
    assert request.body["response_format"] == {"type": "json_object"}  # ollama's profile format
    assert request.body["temperature"] == 0 and request.body["stream"] is False


def test_a_json_schema_profile_sends_the_answer_schema() -> None:
    with OpenAITestServer(flavor="lmstudio", models=["mistralai/ministral-3-3b"]) as server:
        server.script(Answer(content=answer()))
        intent = parse(parser_for(server, "lmstudio-local"))
        (request,) = server.chat_requests()
    assert intent.parser == "llm"
    sent = request.body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == ANSWER_SCHEMA


def test_a_missing_period_in_the_answer_assumes_the_default(ollama: OpenAITestServer) -> None:
    ollama.script(Answer(content=answer(period=None)))
    intent = parse(parser_for(ollama), "ricoveri per struttura")
    assert intent.parser == "llm" and intent.missing == ("period",)
    assert intent.clarify == "answer_with_assumptions"


def test_a_fenced_json_answer_is_accepted(ollama: OpenAITestServer) -> None:
    ollama.script(Answer(content="```json\n" + answer() + "\n```"))
    assert parse(parser_for(ollama)).parser == "llm"


def _with(**fields: Any) -> Answer:
    return Answer(content=answer(**fields))


def _mention(name: str, matched: Any) -> list[dict[str, Any]]:
    return [{"name": name, "matched": matched, "value": None}]


def _period(start: str, end: str, text: str = "terzo trimestre", grain: str = "quarter") -> Any:
    return {"start": start, "end": end, "grain": grain, "text": text, "relative": False}


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (Answer(content="not json at all"), "invalid_json"),
        (Answer(content='{"dimensions": ['), "invalid_json"),
        (Answer(content='{"dimensions": [], "measures": []}'), "schema_mismatch"),
        (_with(extra=1), "schema_mismatch"),
        (_with(dimensions=_mention("hospital", 3)), "schema_mismatch"),
        (_with(dimensions=_mention("hospital", "x") * 21), "schema_mismatch"),
        (_with(dimensions=_mention("ward", "struttura")), "unknown_dimension"),
        (_with(dimensions=_mention("admissions", "ricoveri")), "unknown_dimension"),
        (_with(measures=_mention("hospital", "struttura")), "unknown_dimension"),
        (_with(dimensions=_mention("hospital", "Ospedale Rivale")), "ungrounded"),
        (_with(dimensions=_mention("hospital", "  ")), "ungrounded"),
        (_with(period=_period("2024-10-01", "2024-07-01")), "invalid_period"),
        (_with(period=_period("2024-02-30", "2024-07-01")), "invalid_period"),
        (_with(period=_period("2024-7-1", "2024-10-01")), "invalid_period"),
        (_with(period=_period("2024-07-01", "2024-10-01", text="Q3 2023")), "invalid_period"),
        (_with(period=_period("2024-07-01", "2024-10-01", grain="season")), "schema_mismatch"),
        (Status(500), "provider:http-error"),
        (Status(429), "provider:rate-limited"),
        (Status(401), "provider:auth-error"),
        (Raw(200, b"<html>proxy</html>", "text/html"), "provider:invalid-response"),
        (Hangup(), "provider:network-error"),
        (Stall(seconds=2.0), "provider:timeout"),
    ],
)
def test_any_failure_falls_back_to_the_rules_with_a_reason_code(
    ollama: OpenAITestServer, step: Any, reason: str
) -> None:
    ollama.script(step)
    # a short deadline only where the server stalls: elsewhere a loaded CI machine could take
    # longer than that to answer at all (a 401 once read as a timeout under a 300 ms deadline)
    intent = parse(parser_for(ollama, timeout_ms=300 if isinstance(step, Stall) else 5000))
    assert intent.fallback_reason == reason
    assert intent.parser == "rules"
    assert msgspec.structs.replace(intent, fallback_reason=None) == rules()


def test_an_unreachable_server_falls_back() -> None:
    with OpenAITestServer() as server:
        parser = parser_for(server, timeout_ms=500)
    intent = parse(parser)  # the server is gone
    assert intent.fallback_reason == "provider:network-error"


def test_without_a_profile_the_rules_answer_and_nothing_is_sent() -> None:
    intent = LLMIntentParser(client=None, provider=None).parse(QUESTION, PROFILE, FixedClock(NOW))
    assert (intent.parser, intent.fallback_reason) == ("rules", "no_profile")
    broken = LLMIntentParser(client=None, provider=None, unavailable="profile_invalid")
    assert broken.parse(QUESTION, PROFILE, FixedClock(NOW)).fallback_reason == "profile_invalid"


def test_a_refused_question_never_reaches_the_model(ollama: OpenAITestServer) -> None:
    intent = parse(
        parser_for(ollama), "ricoveri della [competitor] nel 2023", out_of_scope_entity=True
    )
    assert ollama.chat_requests() == []
    assert (intent.clarify, intent.fallback_reason) == ("out_of_scope_entity", "gate_refused")


def test_the_model_cannot_choose_the_clarify_mode(ollama: OpenAITestServer) -> None:
    ollama.script(Answer(content=answer(clarify="none")))
    assert parse(parser_for(ollama)).fallback_reason == "schema_mismatch"


def test_the_answer_schema_and_the_decoder_describe_the_same_fields() -> None:
    assert sorted(ANSWER_SCHEMA["required"]) == sorted(LLMAnswer.__struct_fields__)
    assert set(ANSWER_SCHEMA["properties"]) == set(LLMAnswer.__struct_fields__)
    period = ANSWER_SCHEMA["properties"]["period"]["anyOf"][1]
    generated = msgspec.json.schema(LLMAnswer)["$defs"]
    assert sorted(period["required"]) == sorted(generated["LLMPeriod"]["required"])
    grains = generated["LLMPeriod"]["properties"]["grain"]["enum"]
    assert sorted(period["properties"]["grain"]["enum"]) == sorted(grains)
    mention = ANSWER_SCHEMA["properties"]["dimensions"]["items"]
    assert sorted(mention["required"]) == sorted(generated["LLMMention"]["required"])
