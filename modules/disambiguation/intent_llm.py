"""``LLMIntentParser``: the optional model-backed IntentParser, through ``kernel.llm`` (ADR 0010).

One chat completion per question, through the shared OpenAI-compatible transport (one attempt,
hard deadline, bounded body: docs/llm.md), asking for structured output (:data:`ANSWER_SCHEMA`;
sent as a JSON schema to profiles that take one, described in the prompt to the others). The
answer is validated here, whatever the server claims to enforce: decoded with msgspec into
:class:`LLMAnswer` (unknown fields refused), then checked against the DomainProfile and the
question. On **any** failure the rules answer instead, with a reason code in
``Intent.fallback_reason`` (the ``parser`` field then says ``"rules"``):

==================== ==========================================================================
``no_profile``       no provider profile is configured (the composition root gave none)
``profile_invalid``  the profile could not be resolved or used (its message went to stderr)
``provider:<kind>``  the transport failed: ``provider:timeout``, ``provider:network-error``, …
``invalid_json``     the answer is not JSON
``schema_mismatch``  JSON, but not :data:`ANSWER_SCHEMA`
``unknown_dimension`` a name the profile does not declare, or a measure given as a dimension
``ungrounded``       a ``matched`` text that does not occur in the question
``invalid_period``   a period whose dates, order or text do not hold
``gate_refused``     the SecurityGate refused the question: no model is called
==================== ==========================================================================

What the model decides is only *what the question mentions*; ``missing``, assumptions and the
clarify mode come from the same policy as the rules (:func:`~modules.disambiguation.intent.
assemble_intent`). The model receives the question as given (the composition root gives the
SecurityGate's masked text), today's date and the profile's dimensions, nothing else.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import date, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import msgspec

from kernel.clock import Clock
from kernel.domain_profile import DomainProfile
from modules.disambiguation.intent import (
    DimensionMention,
    Intent,
    IntentParser,
    assemble_intent,
    today_of,
)
from modules.disambiguation.intent_rules import RuleIntentParser
from modules.disambiguation.periods import Grain, Period, PeriodParse, Resolved, fold_text

if TYPE_CHECKING:
    from kernel.llm.client import ChatCompletion, ChatMessage
    from kernel.llm.profiles import ProviderProfile

__all__ = ["ANSWER_SCHEMA", "ChatTransport", "LLMAnswer", "LLMIntentParser", "LLMMention"]

logger = logging.getLogger(__name__)


class ChatTransport(Protocol):
    """What the parser needs of ``kernel.llm.OpenAICompatibleClient``."""

    def chat(
        self,
        profile: ProviderProfile,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        timeout_ms: int,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "response",
    ) -> ChatCompletion: ...


class LLMMention(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    matched: str
    value: str | None


class LLMPeriod(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    start: str
    end: str
    grain: Grain
    text: str
    relative: bool


_Mentions = Annotated[list[LLMMention], msgspec.Meta(max_length=20)]


class LLMAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The model's answer, as :data:`ANSWER_SCHEMA` describes it (a test ties the two)."""

    dimensions: _Mentions
    measures: _Mentions
    period: LLMPeriod | None


_MENTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "matched", "value"],
    "properties": {
        "name": {"type": "string"},
        "matched": {"type": "string"},
        "value": {"type": ["string", "null"]},
    },
}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dimensions", "measures", "period"],
    "properties": {
        "dimensions": {"type": "array", "items": _MENTION_SCHEMA},
        "measures": {"type": "array", "items": _MENTION_SCHEMA},
        "period": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["start", "end", "grain", "text", "relative"],
                    "properties": {
                        "start": {"type": "string"},
                        "end": {"type": "string"},
                        "grain": {
                            "type": "string",
                            "enum": ["day", "week", "month", "quarter", "half", "year"],
                        },
                        "text": {"type": "string"},
                        "relative": {"type": "boolean"},
                    },
                },
            ]
        },
    },
}

_SYSTEM = """You read one analytics question and say which dimensions, measures and period it \
mentions. Answer with one JSON object only, matching this JSON schema:
{schema}
Rules:
- "dimensions" and "measures" use only the names listed below; "matched" is the exact text of \
the question that names it; "value" is the value the question sets for it, or null.
- "period" is null unless the question names a time period; "start" is the first day (inclusive) \
and "end" the day after the last one (exclusive), as YYYY-MM-DD; "text" is the exact text of the \
question that names it; "relative" is true when it depends on today's date.
- Today is {today}.
Dimensions (name, kind, synonyms):
{dimensions}"""


class _Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LLMIntentParser:
    """The model-backed parser; ``fallback`` (the rules by default) answers on any failure.

    ``provider`` is the resolved provider profile (None: none configured); ``unavailable`` is the
    reason code to report when the composition root could not build one."""

    name = "llm"

    def __init__(
        self,
        *,
        client: ChatTransport | None,
        provider: ProviderProfile | None,
        fallback: IntentParser | None = None,
        timeout_ms: int = 4000,
        max_tokens: int = 600,
        unavailable: str | None = None,
    ) -> None:
        self._client = client
        self._provider = provider
        self._fallback: IntentParser = fallback or RuleIntentParser()
        self._timeout_ms = timeout_ms
        self._max_tokens = max_tokens
        self._unavailable = unavailable

    def parse(
        self,
        question: str,
        profile: DomainProfile,
        clock: Clock,
        *,
        out_of_scope_entity: bool = False,
    ) -> Intent:
        today = today_of(clock)
        try:
            if out_of_scope_entity:
                raise _Rejected("gate_refused")
            if self._provider is None or self._client is None:
                raise _Rejected(self._unavailable or "no_profile")
            raw = self._ask(question, profile, today)
            mentions, periods = _validated(_decode(raw), question, profile)
        except _Rejected as rejected:
            logger.debug("intent: LLM parser fell back to the rules (%s)", rejected.reason)
            intent = self._fallback.parse(
                question, profile, clock, out_of_scope_entity=out_of_scope_entity
            )
            return msgspec.structs.replace(intent, fallback_reason=rejected.reason)
        return assemble_intent(
            parser="llm", profile=profile, today=today, mentions=mentions, periods=periods
        )

    def _ask(self, question: str, profile: DomainProfile, today: date) -> str:
        from kernel.llm.client import ChatMessage
        from kernel.llm.errors import ProviderError

        provider, client = self._provider, self._client
        assert provider is not None and client is not None
        dimensions = "\n".join(
            f"- {d.name} ({d.kind}): "
            + "; ".join(f"{lang}: {', '.join(words)}" for lang, words in sorted(d.synonyms.items()))
            for d in profile.dimensions
        )
        system = _SYSTEM.format(
            schema=json.dumps(ANSWER_SCHEMA, separators=(",", ":")),
            today=today.isoformat(),
            dimensions=dimensions or "(none)",
        )
        schema = ANSWER_SCHEMA if provider.response_format == "json-schema" else None
        try:
            answer = client.chat(
                provider,
                [ChatMessage("system", system), ChatMessage("user", question)],
                max_tokens=self._max_tokens,
                timeout_ms=self._timeout_ms,
                json_schema=schema,
                schema_name="intent",
            )
        except ProviderError as err:
            raise _Rejected(f"provider:{err.kind}") from None
        except ValueError:  # a response format the profile does not declare
            raise _Rejected("profile_invalid") from None
        return answer.raw_text


def _decode(raw: str) -> LLMAnswer:
    text = raw.strip()
    if text.startswith("```") and text.endswith("```"):  # a fenced answer (prompt-json models)
        text = text.strip("`").removeprefix("json").strip()
    try:
        return msgspec.json.decode(text.encode("utf-8"), type=LLMAnswer)
    except msgspec.ValidationError:
        raise _Rejected("schema_mismatch") from None
    except msgspec.DecodeError:
        raise _Rejected("invalid_json") from None


def _locate(question: str, matched: str) -> tuple[int, int] | None:
    """Where ``matched`` occurs in the question (first occurrence, folded comparison)."""
    needle = fold_text(matched.strip()).text
    if not needle:
        return None
    view = fold_text(question)
    at = view.text.find(needle)
    return None if at < 0 else view.raw_span(at, at + len(needle))


def _validated(
    answer: LLMAnswer, question: str, profile: DomainProfile
) -> tuple[list[DimensionMention], PeriodParse]:
    kinds = {d.name: d.kind for d in profile.dimensions}
    mentions: list[DimensionMention] = []
    groups: tuple[tuple[list[LLMMention], bool], ...] = (
        (answer.dimensions, False),
        (answer.measures, True),
    )
    for group, measures in groups:
        for item in group:
            kind = kinds.get(item.name)
            if kind is None or (kind == "measure") != measures:
                raise _Rejected("unknown_dimension")
            span = _locate(question, item.matched)
            if span is None:
                raise _Rejected("ungrounded")
            value = item.value.strip() if item.value and item.value.strip() else None
            mentions.append(
                DimensionMention(
                    name=item.name,
                    kind=kind,
                    matched=question[span[0] : span[1]],
                    span=span,
                    value=value,
                )
            )
    resolved: tuple[Resolved, ...] = ()
    if answer.period is not None:
        resolved = (Resolved(period=_period(answer.period, question), yearless=False),)
    return mentions, PeriodParse(resolved=resolved, unresolved=())


def _period(found: LLMPeriod, question: str) -> Period:
    try:
        start, end = date.fromisoformat(found.start), date.fromisoformat(found.end)
    except ValueError:
        raise _Rejected("invalid_period") from None
    span = _locate(question, found.text)
    if span is None or end <= start or len(found.start) != 10 or len(found.end) != 10:
        raise _Rejected("invalid_period")
    return Period(
        start=start.isoformat(),
        end=end.isoformat(),
        last_day=(end - timedelta(days=1)).isoformat(),
        grain=found.grain,
        text=question[span[0] : span[1]],
        relative=found.relative,
        span=span,
    )
