"""BM25 query translation (modules/evidence/translation.py, evidence.fusion.translate_bm25): the
other language's terms of the query's lexicon concepts, bounded per concept, on and off,
recorded in the generation, validated."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.errors import UsageError
from kernel.lexicon import content_words, default_lexicon, lexicon_from, stem
from modules.evidence import EvidencePaths
from modules.evidence.fusion import DEFAULT_FUSION, FusionSettings, fusion_settings
from modules.evidence.generations import load_generation_state
from modules.evidence.publish import publish
from modules.evidence.query_text import evidence_query_text
from modules.evidence.retrieval import embed_query, evidence_filter, rank_units
from modules.evidence.translation import bm25_query_text, corpus_languages, expansion_terms
from tests.modules.evidence.conftest_index import Engines

SMALL = lexicon_from(
    {
        "concepts": [
            {
                "key": "patient",
                "en": ["patient", "patients", "inpatient", "case"],
                "it": ["paziente", "pazienti", "assistito"],
            },
            {"key": "admission", "en": ["admission", "admissions"], "it": ["ricovero"]},
            {"key": "rate", "en": ["rate"], "it": ["tasso"]},
        ],
        "generic": ["rate"],
    }
)
ON = FusionSettings(translate_bm25=True, translate_terms=2)
OFF = FusionSettings(translate_bm25=False)


def test_an_italian_query_gains_the_english_terms_of_its_concepts() -> None:
    terms = expansion_terms(
        "il tasso dei pazienti ricoverati", ("it", "en"), terms_per_concept=2, lexicon=SMALL
    )
    # "patients" is "patient" inflected: one term; "ricoverati" is "ricovero" inflected;
    # generic concepts are translated too
    assert terms == ["rate", "patient", "inpatient", "admission"]
    assert "ricovero" not in terms  # never the query's own language


def test_the_bound_is_per_concept_and_counts_inflections_once() -> None:
    text = "i pazienti del ricovero"
    one = expansion_terms(text, ("it", "en"), terms_per_concept=1, lexicon=SMALL)
    assert one == ["patient", "admission"]
    many = expansion_terms(text, ("it", "en"), terms_per_concept=10, lexicon=SMALL)
    assert many == ["patient", "inpatient", "case", "admission"]
    assert expansion_terms(text, ("it", "en"), terms_per_concept=0, lexicon=SMALL) == []


def test_the_targets_are_the_workspace_languages_other_than_the_querys() -> None:
    english = "what is the rate of the patients"
    assert expansion_terms(english, ("it", "en"), terms_per_concept=2, lexicon=SMALL) == [
        "tasso",
        "paziente",
        "assistito",
    ]
    # an English-only workspace: an English query gains nothing, an Italian one English terms
    assert expansion_terms(english, ("en",), terms_per_concept=2, lexicon=SMALL) == []
    italian = "il tasso dei pazienti"
    assert expansion_terms(italian, ("en",), terms_per_concept=2, lexicon=SMALL) == [
        "rate",
        "patient",
        "inpatient",
    ]
    # no clear language ("pazienti ricovero" has no function word): every workspace language
    both = expansion_terms("pazienti ricovero", ("it", "en"), terms_per_concept=1, lexicon=SMALL)
    assert both == ["paziente", "ricovero", "patient", "admission"]


def test_the_targets_are_only_the_corpus_languages() -> None:
    english, italian = "what is the rate of the patients", "il tasso dei pazienti"
    kw = {"terms_per_concept": 1, "lexicon": SMALL}
    assert expansion_terms(english, ("it", "en"), corpus=("en",), **kw) == []
    assert expansion_terms(english, ("it", "en"), corpus=("it",), **kw) == ["tasso", "paziente"]
    assert expansion_terms(italian, ("it", "en"), corpus=("en",), **kw) == ["rate", "patient"]
    assert expansion_terms(italian, ("it", "en"), corpus=("it",), **kw) == []
    # unknown (an older generation) or empty (no fragment shows a language): every language
    assert expansion_terms(english, ("it", "en"), corpus=(), **kw) == ["tasso", "paziente"]
    assert expansion_terms(english, ("it", "en"), corpus=None, **kw) == ["tasso", "paziente"]
    query = "il tasso dei pazienti"
    assert bm25_query_text(query, ON, corpus=("it",), lexicon=SMALL) == query


def test_the_corpus_languages_are_those_of_a_real_share_of_the_fragments() -> None:
    english = ["the patients of the ward", "the rate of the admissions"] * 20
    assert corpus_languages(english, ("it", "en")) == ("en",)
    # two stray Italian-looking formulas among 40 English fragments: still an English corpus
    stray = ["price per item = total(price) / total(amount)"] * 2
    assert corpus_languages(english + stray, ("it", "en")) == ("en",)
    mixed = english + ["il tasso dei ricoveri del reparto"] * 5
    assert corpus_languages(mixed, ("it", "en")) == ("it", "en")  # the workspace's order
    assert corpus_languages(mixed, ("en",)) == ("en",)
    assert corpus_languages(["`a` / `b`", "K-12"], ("it", "en")) == ()
    assert corpus_languages([], ("it", "en")) == ()


def test_off_the_bm25_text_is_the_query_on_it_is_followed_by_the_terms() -> None:
    query = "Quanti pazienti anziani sono stati ricoverati?"
    assert bm25_query_text(query, OFF) == query
    translated = bm25_query_text(query, ON)
    first, added = translated.split("\n")
    assert first == query
    assert "patient" in added.split() and "admission" in added.split()
    assert bm25_query_text("xyzzy", ON) == "xyzzy"  # no concept: nothing added


_WORDS = sorted({t for c in default_lexicon().terms.values() for t in c["it"]})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6), st.integers(1, 4))
def test_no_concept_ever_adds_more_than_its_bound(words: list[str], bound: int) -> None:
    """Whatever the (Italian) query, it gains only English terms of its concepts, at most
    ``bound`` a concept, none twice."""
    from kernel.lexicon import concept_terms
    from kernel.vectors.language import detect_language

    # "dei", an Italian function word, more often than any English cue a term may hold ("d'"
    # reads as English "d"), so that the text is Italian and the target English
    cues = 2 + sum(len(w.split()) + w.count("'") for w in words)
    text = " ".join(["dei"] * cues + words)
    assert detect_language(text, ("it", "en")) == "it"
    added = expansion_terms(text, ("it", "en"), terms_per_concept=bound)
    concepts = concept_terms(text, "en")
    assert set(added) <= {t for _, terms in concepts for t in terms}
    assert len(added) == len(set(added))
    assert len(added) <= bound * len(concepts)
    for _, terms in concepts:  # a term belongs to one concept a language: counted once
        chosen = {tuple(stem("en", w) for w in content_words(t)) for t in terms if t in added}
        assert len(chosen) <= bound


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"translate_bm25": "yes"}, "translate_bm25"),
        ({"translate_bm25": 1}, "translate_bm25"),
        ({"translate_terms": 0}, "translate_terms"),
        ({"translate_terms": 11}, "translate_terms"),
        ({"translate_terms": True}, "translate_terms"),
        ({"translate_terms": 2.5}, "translate_terms"),
    ],
)
def test_bad_translation_settings_are_a_usage_error(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(UsageError, match=field) as err:
        FusionSettings(**kwargs)  # type: ignore[arg-type]
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    "yaml",
    [
        "  fusion: {translate_bm25: maybe}\n",
        "  fusion: {translate_bm25: 1}\n",
        "  fusion: {translate_terms: 0}\n",
        "  fusion: {translate_terms: '3'}\n",
    ],
)
def test_bad_translation_in_workspace_yaml_exits_2_with_the_field(
    tmp_path: Path, yaml: str
) -> None:
    from kernel.workspace import init_workspace
    from tests.tht.conftest import run_tht

    ws, _ = init_workspace(tmp_path / "ws")
    text = ws.settings_file.read_text(encoding="utf-8")
    ws.settings_file.write_text(text.replace("evidence:\n", "evidence:\n" + yaml), "utf-8")
    done = run_tht("search", "find", "x", "--workspace", str(ws.root), "--json")
    assert done.code == 2
    assert "evidence.fusion.translate_" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_workspace_setting_reaches_the_module(tmp_path: Path) -> None:
    from kernel.workspace import init_workspace
    from tht.evidence_runtime import open_evidence

    ws, _ = init_workspace(tmp_path / "ws")
    text = ws.settings_file.read_text(encoding="utf-8")
    yaml = "  fusion: {translate_bm25: true, translate_terms: 3}\n"
    ws.settings_file.write_text(text.replace("evidence:\n", "evidence:\n" + yaml), "utf-8")
    fusion = open_evidence(ws.root).capabilities().settings.fusion
    assert (fusion.translate_bm25, fusion.translate_terms) == (True, 3)
    assert fusion == fusion_settings(
        fusion.method,
        rrf_k=fusion.rrf_k,
        dense_weight=fusion.dense_weight,
        bm25_weight=fusion.bm25_weight,
        cross_lingual_bm25=fusion.cross_lingual_bm25,
        translate_bm25=True,
        translate_terms=3,
    )


# --- through the index ----------------------------------------------------------------------


def test_the_generation_records_the_translation_and_switching_it_is_a_new_generation(
    published: Engines,
) -> None:
    paths = EvidencePaths.of(published.workspace)
    before = load_generation_state(paths.state_dir).active
    assert before is not None
    on = replace(DEFAULT_FUSION, translate_bm25=True, translate_terms=3)
    off = replace(DEFAULT_FUSION, translate_bm25=False)
    assert "translate_bm25" not in off.to_json()  # off: the record of an older generation
    report = publish(published.caps(fusion=on))
    assert report.status == "activated"
    active = load_generation_state(paths.state_dir).active
    assert active is not None and active.id != before.id
    assert active.fusion is not None
    assert active.fusion["translate_bm25"] is True
    assert active.fusion["translate_terms"] == 3
    assert active.fusion["lexicon"] == default_lexicon().identity
    # the fixture's units are Italian and English: both are the corpus's, the translation's
    # targets for a search of this generation
    assert active.languages == ("it", "en")
    assert publish(published.caps(fusion=on)).status == "unchanged"
    assert publish(published.caps(fusion=off)).status == "activated"


def test_an_english_question_finds_the_italian_unit_through_bm25_only_when_translated(
    published: Engines,
) -> None:
    """The fixture's units are Italian ("Tasso di occupazione = … posti_letto …"): BM25 alone
    shares no word with the English question until its concepts are translated."""
    paths = EvidencePaths.of(published.workspace)
    active = load_generation_state(paths.state_dir).active
    assert active is not None
    store = published.open_store()
    where = evidence_filter(active.id, "schema_linking")
    question = evidence_query_text("the bed occupancy")

    def bm25_units(fusion: FusionSettings | None) -> list[tuple[str, str]]:
        vectors = embed_query(published.embedder, published.bm25, question, fusion)
        units = rank_units(store, vectors, where, generation=active.id, limit=5, mode="bm25")
        return [(u.unit_id, u.excerpt.lower()) for u in units]

    assert bm25_units(None) == bm25_units(OFF)
    plain, translated = bm25_units(None), bm25_units(ON)
    assert not any("occupazione" in excerpt for _, excerpt in plain)
    assert translated and "tasso di occupazione" in translated[0][1]
