"""The golden table of Italian and English phrasings (``golden/intent/phrasings.json``).

Each case is parsed by ``RuleIntentParser`` with the named profile and the table's fixed clock,
and the projection below must equal the case's ``expected``. The table was written before the
parser; ``pytest --update-golden`` rewrites the expectations from the current behaviour (an
unexplained diff of that file is a regression until shown otherwise).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kernel.clock import FixedClock
from kernel.domain_profile import Dimension, DomainProfile
from modules.disambiguation.intent import Intent
from modules.disambiguation.intent_rules import RuleIntentParser

TABLE_PATH = Path(__file__).resolve().parents[3] / "golden" / "intent" / "phrasings.json"
TABLE: dict[str, Any] = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
CLOCK_AT = datetime.fromisoformat(TABLE["clock"].replace("Z", "+00:00"))


def profile_from(data: dict[str, Any]) -> DomainProfile:
    """A DomainProfile from the table's JSON (the shape of ``domain:`` in workspace.yaml)."""
    return DomainProfile(
        dimensions=tuple(
            Dimension(
                name=d["name"],
                kind=d.get("kind", "categorical"),
                synonyms={lang: tuple(words) for lang, words in d.get("synonyms", {}).items()},
                default=d.get("default"),
                required=d.get("required", False),
                clarify=d.get("clarify", "none"),
            )
            for d in data["dimensions"]
        )
    )


PROFILES = {name: profile_from(data) for name, data in TABLE["profiles"].items()}


def projection(intent: Intent) -> dict[str, Any]:
    """What the table pins: everything but spans and kinds (covered by other tests)."""

    def period(p: Any) -> dict[str, Any] | None:
        if p is None:
            return None
        return {k: getattr(p, k) for k in ("start", "end", "last_day", "grain", "text", "relative")}

    return {
        "period": period(intent.period),
        "periods": [p.text for p in intent.periods],
        "dimensions": [
            {"name": m.name, "matched": m.matched, "value": m.value} for m in intent.dimensions
        ],
        "measures": [{"name": m.name, "matched": m.matched} for m in intent.measures],
        "clarify": intent.clarify,
        "missing": list(intent.missing),
        "unresolved": list(intent.unresolved),
        "assumptions": list(intent.assumptions),
    }


def parse_case(case: dict[str, Any]) -> Intent:
    return RuleIntentParser().parse(
        case["question"], PROFILES[case["profile"]], FixedClock(CLOCK_AT)
    )


def test_the_table_covers_both_languages_with_enough_phrasings() -> None:
    languages = Counter(case["lang"] for case in TABLE["cases"])
    assert len(TABLE["cases"]) >= 80
    assert languages["it"] >= 30 and languages["en"] >= 30
    assert len({case["id"] for case in TABLE["cases"]}) == len(TABLE["cases"])


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["id"] for c in TABLE["cases"]])
def test_phrasing_parses_as_the_table_says(case: dict[str, Any]) -> None:
    assert projection(parse_case(case)) == case["expected"], case["question"]


def test_update_golden_rewrites_the_table(update_golden: bool) -> None:
    """``pytest --update-golden``: the expectations become the current parses (ids, questions
    and profiles are kept)."""
    if not update_golden:
        return
    for case in TABLE["cases"]:
        case["expected"] = projection(parse_case(case))
    text = json.dumps(TABLE, ensure_ascii=False, indent=1) + "\n"
    TABLE_PATH.write_text(text, encoding="utf-8")
