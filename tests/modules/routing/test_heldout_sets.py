"""The held-out routing eval sets of issue 17 (golden/routing/evals/heldout17, its README).

Checked: the case format of the other eval files (same keys, spec 000 §26.8 plus split, lang,
categories), every id in its catalog, the split sizes and the positive / off-topic / adversarial
and Italian / English shares the README states, no prompt shared between dev and locked, between
the catalogs or with any other eval file, and the locked files unchanged since they were locked.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.routing.evaluation import validate_case

REPO = Path(__file__).resolve().parents[3]
CATALOGS = REPO / "golden" / "routing" / "catalogs"
EVALS = REPO / "golden" / "routing" / "evals"
HELDOUT = EVALS / "heldout17"
MANIFESTS = {"tesisquare": "mcp-servers.json", "anthropic": "mcp-reference-servers.json"}
SIZES = {"dev": 40, "locked": 80}
SHORT = {"tesisquare": "t", "anthropic": "a"}
LANG_CATEGORY = {"it": "italian", "en": "english", "mix": "mixed-language"}
ADVERSARIAL = {"prompt-injection", "invented-ids", "negation"}
CASE_KEYS = ["id", "split", "lang", "categories", "prompt", "expected"]
EXPECTED_KEYS = ["acceptablePrimary", "acceptableSecondary", "forbidden", "allowNone"]
# The lock: these bytes were measured once as the baseline; nobody edits or tunes on them.
LOCKED_SHA256 = {
    "tesisquare-locked.jsonl": "9da557cae85948170ee676d95eb4b7de6dd3c9522b653d34228c4b027195da78",
    "anthropic-locked.jsonl": "c868f18dd9641380a56829ead1dd498ee7d36c4bc4917a06db1b7ce48183f07e",
}
SETS = [(catalog, split) for catalog in MANIFESTS for split in SIZES]


def catalog_ids(catalog: str) -> set[str]:
    root = CATALOGS / catalog
    skills = {p.parent.name for p in (root / "skills").glob("*/SKILL.md")}
    servers = json.loads((root / MANIFESTS[catalog]).read_text(encoding="utf-8"))["servers"]
    return skills | {s["id"] for s in servers}


def normalize(prompt: str) -> str:
    """The key two prompts share when they differ only in case and whitespace."""
    return " ".join(prompt.casefold().split())


def kind(case: dict[str, Any]) -> str:
    if ADVERSARIAL & set(case["categories"]):
        return "adversarial"
    return "positive" if case["expected"]["acceptablePrimary"] else "off-topic"


def problems(case: Any, *, catalog: str, split: str, known: set[str]) -> list[str]:
    """What is wrong with one held-out case (empty when nothing)."""
    found = validate_case(case, "case")
    if found:
        return found
    if list(case) != CASE_KEYS:
        found.append(f"keys {list(case)} != {CASE_KEYS}")
    expected = case["expected"]
    if list(expected) != EXPECTED_KEYS:
        found.append(f"expected keys {list(expected)} != {EXPECTED_KEYS}")
    if not re.fullmatch(rf"h17-{SHORT[catalog]}-{split}-\d{{3}}", case["id"]):
        found.append(f"id {case['id']!r} does not name its catalog and split")
    if case["split"] != f"heldout17-{split}":
        found.append(f"split {case['split']!r} != 'heldout17-{split}'")
    if case["lang"] not in LANG_CATEGORY:
        found.append(f"lang {case['lang']!r}")
    elif LANG_CATEGORY[case["lang"]] not in case["categories"]:
        found.append(f"categories lack {LANG_CATEGORY[case['lang']]!r}")
    primary, secondary = set(expected["acceptablePrimary"]), set(expected["acceptableSecondary"])
    forbidden = set(expected["forbidden"])
    for target in sorted((primary | secondary | forbidden) - known):
        found.append(f"unknown id {target!r} in catalog {catalog}")
    if forbidden & (primary | secondary):
        found.append("an id is both acceptable and forbidden")
    if primary & secondary:
        found.append("an id is both primary and secondary")
    if expected["allowNone"] == bool(primary):
        found.append("allowNone must be true exactly when no primary is acceptable")
    if not case["prompt"].strip():
        found.append("empty prompt")
    return found


def load(catalog: str, split: str) -> list[dict[str, Any]]:
    text = (HELDOUT / f"{catalog}-{split}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize(("catalog", "split"), SETS)
def test_cases_are_valid_and_name_only_catalog_ids(catalog: str, split: str) -> None:
    known = catalog_ids(catalog)
    cases = load(catalog, split)
    assert len(cases) == SIZES[split]
    for case in cases:
        assert problems(case, catalog=catalog, split=split, known=known) == [], case["id"]
    assert len({c["id"] for c in cases}) == len(cases)


@pytest.mark.parametrize(("catalog", "split"), SETS)
def test_shares_match_the_readme(catalog: str, split: str) -> None:
    cases = load(catalog, split)
    n = len(cases)
    kinds = [kind(c) for c in cases]
    assert kinds.count("positive") == round(0.7 * n)
    assert kinds.count("off-topic") == round(0.2 * n)
    assert kinds.count("adversarial") == round(0.1 * n)
    italian = sum(1 for c in cases if c["lang"] == "it")
    english = sum(1 for c in cases if c["lang"] == "en")
    assert 0.35 * n <= italian <= 0.6 * n and 0.35 * n <= english <= 0.6 * n
    # every adversarial family is present, and forbidden ids are set where the prompt pushes one
    categories = {cat for c in cases if kind(c) == "adversarial" for cat in c["categories"]}
    assert {"prompt-injection", "negation"} <= categories
    assert any(c["expected"]["forbidden"] for c in cases if "prompt-injection" in c["categories"])


def test_no_prompt_is_shared_with_another_set() -> None:
    others = {
        normalize(json.loads(line)["prompt"])
        for path in EVALS.glob("*/*.jsonl")
        if path.parent != HELDOUT
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    owner: dict[str, str] = {}
    for catalog, split in SETS:
        for case in load(catalog, split):
            key = normalize(case["prompt"])
            assert key not in others, f"{case['id']}: prompt is in another eval file"
            assert key not in owner, f"{case['id']}: prompt also in {owner.get(key)}"
            owner[key] = case["id"]
    assert len(owner) == sum(SIZES.values()) * len(MANIFESTS)


@pytest.mark.parametrize("name", sorted(LOCKED_SHA256))
def test_locked_files_are_unchanged(name: str) -> None:
    digest = hashlib.sha256((HELDOUT / name).read_bytes()).hexdigest()
    assert digest == LOCKED_SHA256[name], f"{name} was edited after it was locked"
    assert digest in (HELDOUT / "README.md").read_text(encoding="utf-8")


# --- the checks themselves can fail -----------------------------------------------------------

GOOD: dict[str, Any] = {
    "id": "h17-t-dev-001",
    "split": "heldout17-dev",
    "lang": "it",
    "categories": ["single-skill", "italian"],
    "prompt": "quanti ordini aperti?",
    "expected": {
        "acceptablePrimary": ["mcp-database-expert"],
        "acceptableSecondary": ["sql-node"],
        "forbidden": ["mcp-office-expert"],
        "allowNone": False,
    },
}


def _bad(**changes: Any) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if key in EXPECTED_KEYS:
            case["expected"][key] = value
        else:
            case[key] = value
    return case


def test_the_good_example_passes() -> None:
    assert problems(GOOD, catalog="tesisquare", split="dev", known=catalog_ids("tesisquare")) == []


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        (_bad(acceptablePrimary=["mcp-sap-bridge"]), "unknown id"),
        (_bad(acceptableSecondary=["xlsx"]), "unknown id"),  # an id of the other catalog
        (_bad(forbidden=["mcp-database-expert"]), "both acceptable and forbidden"),
        (_bad(acceptableSecondary=["mcp-database-expert"]), "both primary and secondary"),
        (_bad(allowNone=True), "allowNone"),
        (_bad(acceptablePrimary=[], acceptableSecondary=[]), "allowNone"),
        (_bad(split="dev"), "split"),
        (_bad(id="h17-a-dev-001"), "does not name"),
        (_bad(lang="fr"), "lang"),
        (_bad(categories=["single-skill"]), "categories lack"),
        (_bad(categories=["single-skill", "italian", "made-up"]), "unknown category"),
        (_bad(prompt="   "), "empty prompt"),
        ({**{k: v for k, v in GOOD.items() if k != "split"}, "split": "heldout17-dev"}, "keys"),
        ({k: v for k, v in GOOD.items() if k != "expected"}, "expected"),
        (_bad(acceptablePrimary="mcp-database-expert"), "list of ids"),
    ],
)
def test_each_rule_rejects_a_broken_case(case: dict[str, Any], needle: str) -> None:
    found = problems(case, catalog="tesisquare", split="dev", known=catalog_ids("tesisquare"))
    assert any(needle in p for p in found), found


def test_kind_puts_a_negated_positive_among_the_adversarial() -> None:
    assert kind(GOOD) == "positive"
    assert kind(_bad(categories=["negation", "italian"])) == "adversarial"
    assert kind(_bad(acceptablePrimary=[], allowNone=True)) == "off-topic"


@given(
    st.text(alphabet="abcAB àè?", min_size=1, max_size=30),
    st.lists(st.sampled_from([" ", "  ", "\t", "\n"]), min_size=1, max_size=4),
)
def test_duplicates_are_found_across_case_and_spacing(text: str, gaps: list[str]) -> None:
    words = text.split() or ["x"]
    spaced = "".join(w + gaps[i % len(gaps)] for i, w in enumerate(words))
    assert normalize(spaced.upper()) == normalize(" ".join(words).lower())
