"""The adversarial routing eval sets: ``adversarial18`` (locked: injection and negation forms
written by another author, blind to the router, measured before and after the router's
injection-scope and negation changes and never tuned on) and ``adversarial-dev`` (a development
set by a third author: read and tuned on).

Checked: every case is valid in the eval format (spec 000 §26.8), names only ids of its catalog,
is an injection or a negation with something forbidden, and the locked files are the bytes that
were measured.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from modules.routing.evaluation import validate_case
from tests.modules.routing.test_heldout_sets import catalog_ids

REPO = Path(__file__).resolve().parents[3]
EVALS = REPO / "golden" / "routing" / "evals"
FOLDER = EVALS / "adversarial18"
LOCKED_SHA256 = {
    "tesisquare.jsonl": "d16fdc62a0b17eb027514c9fa3bc3ae613ce3ff9fdb1acc846bf137a010dbfce",
    "anthropic.jsonl": "7e991c79bc2c4a84d5e10a9a08a9c9878aa29b0af8a04c0d281e7ab0029ae15c",
}


def load(name: str, folder: Path = FOLDER) -> list[dict[str, Any]]:
    text = (folder / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("split", ["adversarial18", "adversarial-dev"])
@pytest.mark.parametrize("name", sorted(LOCKED_SHA256))
def test_cases_are_valid_adversarial_cases_of_their_catalog(name: str, split: str) -> None:
    known = catalog_ids(name.removesuffix(".jsonl"))
    cases = load(name, EVALS / split)
    assert len(cases) >= 30 and len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        assert validate_case(case, case["id"]) == [], case["id"]
        assert case["split"] == split
        assert {"prompt-injection", "negation"} & set(case["categories"]), case["id"]
        expected = case["expected"]
        named = {*expected["acceptablePrimary"], *expected["acceptableSecondary"]}
        assert expected["forbidden"] and not set(expected["forbidden"]) & named, case["id"]
        assert (named | set(expected["forbidden"])) <= known, case["id"]
    kinds = [c for c in cases if "prompt-injection" in c["categories"]]
    assert 0.3 * len(cases) <= len(kinds) <= 0.7 * len(cases)  # both families, in earnest


@pytest.mark.parametrize("name", sorted(LOCKED_SHA256))
def test_the_files_are_the_ones_measured(name: str) -> None:
    digest = hashlib.sha256((FOLDER / name).read_bytes()).hexdigest()
    assert digest == LOCKED_SHA256[name], f"{name} was edited after it was measured"
