"""The Evidence query text and the evaluation set loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.errors import UsageError
from modules.evidence import evidence_query_text, load_eval_set


def test_query_text_orders_fields_and_omits_empty_ones() -> None:
    text = evidence_query_text(
        "  Quanti ricoveri,  nel 2023?\r\n",
        concepts=["ricovero", "Ablazione", "ricovero", " "],
        columns=["t.b", "t.a"],
    )
    assert text == "Quanti ricoveri,  nel 2023?\nconcepts: Ablazione; ricovero\ncolumns: t.a; t.b"


def test_query_text_applies_nfc_and_never_changes_case() -> None:
    assert evidence_query_text("Citta\u0300", tables=["B", "a"]) == "Città\ntables: B; a"


EVAL = """cases:
  - question: "eligible free meal rate"
    purpose: schema_linking
    where: {db: california_schools}
    expected: [evidence:eligible-free-rate]
    type: semantic
  - question: FRPM
    purpose: disambiguation
    expected: [evidence:frpm]
    type: lexical
  - question: "tasso di abbandono dropouts"
    purpose: sql_generation
    expected: [evidence:tasso-di-abbandono]
    type: mixed
"""


def test_the_evaluation_set_loads(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text(EVAL, encoding="utf-8")
    loaded = load_eval_set(path)
    assert loaded is not None
    assert [c.type for c in loaded.cases] == ["semantic", "lexical", "mixed"]
    assert loaded.cases[0].where == {"db": "california_schools"}


def test_no_evaluation_set_is_none(tmp_path: Path) -> None:
    assert load_eval_set(tmp_path / "eval.yaml") is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("type: mixed", "type: lexical"), "missing: mixed"),
        (("purpose: disambiguation", "purpose: memory"), r"cases\[1\]\.purpose"),
        (("[evidence:frpm]", "[frpm]"), r"cases\[1\]\.expected\[0\]"),
    ],
)
def test_a_malformed_evaluation_set_names_file_and_field(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text(EVAL.replace(*edit), encoding="utf-8")
    with pytest.raises(UsageError, match=message) as err:
        load_eval_set(path)
    assert "evidence/eval.yaml" in err.value.message
