"""The bilingual lexicon: Italian and English forms of one concept meet on one index key."""

from __future__ import annotations

import json
from pathlib import Path

from modules.routing.text import analyze, lexicon_index

LEXICON = Path(__file__).resolve().parents[3] / "modules" / "routing" / "data" / "lexicon.json"


def _keys(text: str) -> list[str]:
    a = analyze(text)
    return [s for s, c in zip(a.stems, a.content, strict=True) if c]


def test_italian_and_english_forms_share_one_key() -> None:
    assert _keys("tabella") == _keys("tables") == _keys("tabelle") == ["TABLE"]
    assert _keys("colonne") == _keys("column")
    assert _keys("dividi") == _keys("splitting")


def test_a_multi_word_form_is_one_concept() -> None:
    assert _keys("un foglio di calcolo") == _keys("a spreadsheet") == ["SPREADSHEET"]
    assert _keys("il foglio") == ["SHEET"]  # the longest form wins, the shorter still works


def test_a_multi_word_form_never_spans_a_clause_mark() -> None:
    assert "SPREADSHEET" not in _keys("il foglio, di calcolo")


def test_an_unlisted_inflection_meets_its_concept_through_the_stem() -> None:
    assert "charting" not in json.loads(LEXICON.read_text(encoding="utf-8"))["concepts"]["chart"]
    assert _keys("charting") == _keys("chart") == ["CHART"]


def test_the_committed_index_matches_the_concepts() -> None:
    data = json.loads(LEXICON.read_text(encoding="utf-8"))
    assert data["index"] == lexicon_index(data["concepts"]), (
        "regenerate the index section of data/lexicon.json with text.lexicon_index()"
    )


def test_no_form_belongs_to_two_concepts() -> None:
    concepts = json.loads(LEXICON.read_text(encoding="utf-8"))["concepts"]
    seen: dict[str, str] = {}
    for concept, forms in concepts.items():
        for form in forms:
            assert seen.setdefault(form, concept) == concept, form


def test_an_italian_prompt_routes_on_an_english_catalog(anthropic: object) -> None:
    from modules.routing.pipeline import run_routing

    outcome = run_routing("Converti questo TSV in un foglio di calcolo con i totali", anthropic)  # type: ignore[arg-type]
    assert outcome.hints()[0]["id"] == "xlsx"
