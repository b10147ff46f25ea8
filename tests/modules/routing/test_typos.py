"""Typo tolerance: one edit from exactly one catalog word, positive evidence only."""

from __future__ import annotations

from pathlib import Path

import pytest

from modules.routing.catalog_build import build_catalog
from modules.routing.pack import CatalogPack, open_pack
from modules.routing.router import route
from modules.routing.sources import OverridesFile, read_skills
from modules.routing.typos import deletions, fuzzy_index, one_edit_apart, variant_keys

from .conftest import write_skill


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("excell", "excel", True),  # insertion
        ("coldfuson", "coldfusion", True),  # deletion
        ("quiery", "query", True),
        ("tabela", "tabella", True),
        ("rebsae", "rebase", True),  # adjacent transposition
        ("rebasr", "rebase", True),  # substitution
        ("excel", "excel", False),  # the same word is not a typo
        ("exel", "excell", False),  # two edits
        ("rbesae", "rebase", False),
    ],
)
def test_one_edit_apart(a: str, b: str, near: bool) -> None:
    assert one_edit_apart(a, b) is near
    assert one_edit_apart(b, a) is near


def test_a_word_reaches_its_neighbours_through_shared_deletions() -> None:
    assert "~excel" in variant_keys("excell")
    assert deletions("excel") & deletions("exsel")  # a substitution meets on a deletion


def test_the_fuzzy_index_holds_positive_words_only() -> None:
    index = {
        "spreadsheet": [[0, 3.0, "curated", "spreadsheet"]],
        "invoic": [[0, 3.0, "anti", "invoice"]],
        "audit": [[1, 0.0, "lock", "audit"]],
        "pdf": [[1, 2.0, "name", "pdf"]],  # too short to be reached by a typo
    }
    fuzzy = fuzzy_index(index)
    assert fuzzy["~spreadsheet"] == [["spreadsheet", "spreadsheet"]]
    assert fuzzy["~spredsheet"] == [["spreadsheet", "spreadsheet"]]
    assert not any(pair[0] in ("invoice", "audit", "pdf") for v in fuzzy.values() for pair in v)


@pytest.fixture
def typo_pack(tmp_path: Path) -> CatalogPack:
    skills = tmp_path / "skills"
    write_skill(skills, "sheets-pro", "Edits spreadsheet workbooks.")
    write_skill(skills, "report-kit", "Writes quarterly reports.")
    write_skill(skills, "lint-tool", "Checks formulas. Do not use for vouchers.")
    overrides = OverridesFile.model_validate(
        {
            "overrides": {
                "report-kit": {"keywords": ["ledger", "lodger"]},
                "lint-tool": {"exclusions": [{"phrases": ["quarantine"]}]},
            }
        }
    )
    data, _ = build_catalog(read_skills(skills), overrides=overrides)
    path = tmp_path / "typo.pack"
    path.write_bytes(data)
    return open_pack(path)


def _ids(pack: CatalogPack, prompt: str) -> list[str]:
    return [c.id for c in route(prompt, pack.lookup_many, pack.target).ranked() if c.score > 0]


def test_a_misspelt_word_routes_like_the_word(typo_pack: CatalogPack) -> None:
    assert _ids(typo_pack, "fix the spredsheet") == _ids(typo_pack, "fix the spreadsheet")
    assert _ids(typo_pack, "fix the spredsheet")[0] == "sheets-pro"


def test_a_typo_with_two_readings_is_no_evidence(typo_pack: CatalogPack) -> None:
    assert _ids(typo_pack, "the ledgr")[0] == "report-kit"  # one reading: "ledger"
    assert _ids(typo_pack, "the ladger") == []  # one edit from "ledger" and from "lodger"


def test_a_typo_never_triggers_an_exclusion_or_a_penalty(typo_pack: CatalogPack) -> None:
    routing = route("fix the quarantne formulas", typo_pack.lookup_many, typo_pack.target)
    assert not any(c.hard_excluded for c in routing.candidates)
    routing = route("check the vouchrs", typo_pack.lookup_many, typo_pack.target)
    assert not any(c.anti for c in routing.candidates)
