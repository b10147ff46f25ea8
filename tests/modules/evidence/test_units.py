"""The Curated Evidence Unit file format: canonical rendering, round trip, precise errors."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.errors import UsageError
from modules.evidence.units import (
    EvidenceUnit,
    UnitFrontMatter,
    parse_unit,
    render_unit,
    slug_of,
)

GOOD = """---
id: evidence:eligible-free-rate
kind: formula
purposes: [schema_linking, sql_generation]
title: Eligible free meal rate
source: california-schools.md
excerpts: ["Eligible free rate = Free Meal Count / Enrollment"]
metadata: {db: california_schools}
expression: "free_meal_count / NULLIF(enrollment, 0)"
inputs: [free_meal_count, enrollment]
review: []
---

Body in Markdown.
"""


def test_canonical_unit_round_trips_byte_for_byte() -> None:
    unit = parse_unit(GOOD, "evidence/units/eligible-free-rate.md")
    assert unit.id == "evidence:eligible-free-rate"
    assert unit.front.metadata == {"db": "california_schools"}
    assert unit.body == "Body in Markdown."
    assert render_unit(unit) == GOOD


def test_the_architecture_example_without_kind_fields_parses() -> None:
    text = GOOD.replace('expression: "free_meal_count / NULLIF(enrollment, 0)"\n', "").replace(
        "inputs: [free_meal_count, enrollment]\n", ""
    )
    unit = parse_unit(text, "eligible-free-rate.md")
    assert unit.front.expression is None


def test_a_bad_field_names_the_file_and_the_field_path() -> None:
    bad = GOOD.replace("purposes: [schema_linking, sql_generation]", "purposes: [schema_link]")
    with pytest.raises(UsageError) as err:
        parse_unit(bad, "evidence/units/eligible-free-rate.md")
    assert "evidence/units/eligible-free-rate.md" in err.value.message
    assert "purposes[0]" in err.value.message
    assert err.value.exit_code == 2


def test_an_unknown_key_is_refused_naming_it() -> None:
    bad = GOOD.replace("review: []", "review: []\nstatus: approved")
    with pytest.raises(UsageError, match="status"):
        parse_unit(bad, "eligible-free-rate.md")


def test_id_must_match_the_file_name() -> None:
    with pytest.raises(UsageError, match=r"expected eligible-free-rate\.md"):
        parse_unit(GOOD, "evidence/units/other.md")


def test_missing_front_matter_and_broken_yaml_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="no front matter"):
        parse_unit("just text\n", "x.md")
    with pytest.raises(UsageError, match="not valid YAML"):
        parse_unit("---\nid: [unclosed\n---\n", "x.md")


def test_source_must_stay_inside_the_sources_folder() -> None:
    bad = GOOD.replace("source: california-schools.md", "source: ../secrets.md")
    with pytest.raises(UsageError, match="source"):
        parse_unit(bad, "eligible-free-rate.md")


def test_slug_of_accepts_fragment_ids_and_refuses_other_ids() -> None:
    assert slug_of("evidence:a-b#2") == "a-b"
    with pytest.raises(UsageError):
        slug_of("memory:a-b")


# Unit files are read as NFC (like sources): the round trip holds for normalized text, and
# text that is not NFC comes back normalized (test below).
_text = (
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
    .map(lambda s: unicodedata.normalize("NFC", s))
    .filter(lambda s: s.strip() == s and s.strip())
)


@given(title=_text, excerpt=_text, value=_text)
def test_any_titles_excerpts_and_metadata_round_trip(title: str, excerpt: str, value: str) -> None:
    front = UnitFrontMatter(
        id="evidence:x",
        kind="glossary",
        purposes=["disambiguation"],
        title=title,
        source="a.md",
        excerpts=[excerpt],
        metadata={"db": value},
    )
    unit = EvidenceUnit(front=front, body="text")
    again = parse_unit(render_unit(unit), "x.md")
    assert again.front == front
    assert render_unit(again) == render_unit(unit)


def test_text_that_is_not_nfc_is_read_back_normalized() -> None:
    front = UnitFrontMatter(
        id="evidence:x",
        kind="glossary",
        purposes=["disambiguation"],
        title="e\u0301",  # e + combining acute
        source="a.md",
        excerpts=["\uf900"],  # a compatibility ideograph
        metadata={"db": "x"},
    )
    again = parse_unit(render_unit(EvidenceUnit(front=front, body="text")), "x.md")
    assert again.front.title == "\u00e9"
    assert again.front.excerpts == ["\u8c48"]
