"""The acronym signal (modules/memory/acronyms.py): a question that writes the acronym of a
memory's term names that memory; ordinary capitals and coincidences do not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from modules.memory.acronyms import AcronymIndex, acronyms_in, contradicts, initials
from modules.memory.terms import TermIndex, default_lexicon


def test_acronyms_are_three_to_six_capitals_with_an_optional_plural() -> None:
    assert acronyms_in("AOV and LOS, KPIs, the SLAs, OR, HR, EBITDAX1, Iva, ETAsx") == [
        "AOV",
        "LOS",
        "KPI",
        "SLA",
    ]


def test_a_subject_spells_its_initials_with_or_without_stopwords() -> None:
    assert initials("length of stay") == {"LOS"}  # "LS": two letters are too few
    assert initials("trattamento di fine rapporto") == {"TDFR", "TFR"}
    assert initials("average order value") == {"AOV"}
    assert initials("FTE") == initials("fatturato") == set()  # one word is no term to shorten
    assert initials("the of") == set()


def test_a_question_naming_the_acronym_names_the_memory() -> None:
    index = AcronymIndex(
        [("aov", "average order value"), ("tfr", "trattamento di fine rapporto"), ("x", "FTE")]
    )
    assert index.named_in("AOV by channel, last quarter") == {"aov"}
    assert index.named_in("quota TFR accantonata nel 2024") == {"tfr"}
    assert index.named_in("the average value of an order") == set()  # words: the term signal's
    assert index.named_in("aov by channel") == set()  # lowercase: a word, not an acronym
    assert index.named_in("How many SMEs pay in CZK?") == set()


def test_the_term_index_names_by_acronym_too() -> None:
    terms = TermIndex(
        [("m1", "length of stay", "en"), ("m2", "cliente attivo", "it")], default_lexicon()
    )
    assert "m1" in terms.named_in("average LOS in cardiology, 2024")
    assert "m1" not in terms.named_in("average stay of lost luggage")


@given(st.lists(st.sampled_from(["alpha", "beta", "of", "di", "gamma", "delta"]), max_size=5))
def test_a_subject_is_named_only_by_an_acronym_it_spells(words: list[str]) -> None:
    subject = " ".join(words)
    index = AcronymIndex([("m", subject)])
    for acronym in initials(subject):
        assert index.named_in(f"the {acronym} of March") == {"m"}
    assert index.named_in("the ZZZ of March") == set()


def test_a_question_about_a_sibling_acronym_contradicts_a_text() -> None:
    assert contradicts(["SAIDI"], ["SAIFI"])  # two indices, not two spellings of one
    assert contradicts(["ROE"], ["ROI"]) and contradicts(["DSO"], ["DPO", "EUR"])
    assert not contradicts(["AOV", "KPI"], ["AOV"])  # one shared: the same measure
    assert not contradicts(["SAIDI"], ["SAIDI", "SAIFI"])
    assert not contradicts(["EUR"], ["USD"])  # different, but no siblings
    assert not contradicts(["SQL"], ["EBITDA"])
    assert not contradicts([], ["SAIFI"])  # the question writes none
    assert not contradicts(["SAIDI"], [])  # the text writes none: nothing to contradict


ACRONYMS = st.text(alphabet="ABCDE", min_size=3, max_size=4)


@given(st.lists(ACRONYMS, max_size=3), st.lists(ACRONYMS, max_size=3))
def test_contradiction_is_siblings_and_nothing_shared(asked: list[str], written: list[str]) -> None:
    shared = set(asked) & set(written)
    expected = not shared and any(
        len(a) == len(b) and 0 < sum(x != y for x, y in zip(a, b, strict=True)) <= 2
        for a in asked
        for b in written
    )
    assert contradicts(asked, written) == expected
    assert contradicts(asked, written) == contradicts(written, asked)


def test_the_term_index_knows_what_each_item_writes() -> None:
    terms = TermIndex(
        [("m-saifi", "SAIFI", "en"), ("m-loss", "loss ratio", "en")],
        default_lexicon(),
        texts=[("sq-saifi", "SAIFI by area in 2024\n"), ("sq-plain", "outages by area")],
    )
    assert terms.contradicted_in("SAIDI for 2025: average outage minutes per customer") == {
        "m-saifi",
        "sq-saifi",
    }
    assert terms.contradicted_in("SAIFI and SAIDI for 2025") == set()
    assert terms.contradicted_in("average outage minutes per customer") == set()
