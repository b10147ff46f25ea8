"""Segmentation and kind recognizers on Markdown Source Evidence."""

from __future__ import annotations

from modules.evidence.recognizers import recognize
from modules.evidence.segmentation import segment
from modules.evidence.text import collapse_ws, normalize_text

SOURCE = """---
metadata: {db: x}
---
# Dati

## Glossario

- **FRPM**: Free or Reduced Price Meal.
- Degenza media: detta anche ALOS.

## Metriche

Tasso = giorni * 100.0 / NULLIF(posti, 0)

Tasso di abbandono:
```sql
dropouts::numeric / NULLIF(enrolled, 0)
```

## Codici di stato

- A = attivo
- C = chiuso

| Codice | Significato |
|---|---|
| F | femmina |

## Altro

Female refers to gender = 'F'

Le date sono nel formato YYYY-MM-DD.

Vedi [il manuale](https://example.org/manual).

Domanda: quanti ricoveri nel 2023? Interpretazione: contare.

I ricoveri in day hospital non contano.
"""


def _kinds() -> list[tuple[str, str]]:
    return [(p.recognition.kind, p.recognition.title) for p in segment(normalize_text(SOURCE))]


def test_each_block_becomes_one_passage_with_its_kind() -> None:
    assert _kinds() == [
        ("glossary", "FRPM"),
        ("glossary", "Degenza media"),
        ("formula", "Tasso"),
        ("formula", "Tasso di abbandono"),
        ("enum", "Codici di stato"),
        ("enum", "Codici di stato"),
        ("mapping", "Female"),
        ("normalization", "Le date sono nel formato YYYY-MM-DD"),
        ("reference", "il manuale"),
        ("example", "quanti ricoveri nel 2023?"),
        ("domain", "I ricoveri in day hospital non contano"),
    ]


def test_every_excerpt_is_found_verbatim_in_the_normalized_source() -> None:
    text = normalize_text(SOURCE)
    collapsed = collapse_ws(text)
    for passage in segment(text):
        assert passage.excerpts
        for excerpt in passage.excerpts:
            assert excerpt in collapsed


def test_formula_passages_carry_a_valid_expression_and_inputs() -> None:
    formulas = [
        p.recognition for p in segment(normalize_text(SOURCE)) if p.recognition.kind == "formula"
    ]
    assert formulas[0].expression == "giorni * 100.0 / NULLIF(posti, 0)"
    assert formulas[0].inputs == ("giorni", "posti")
    assert formulas[1].inputs == ("dropouts", "enrolled")


def test_a_pseudo_formula_that_is_not_postgresql_is_not_a_formula() -> None:
    rec = recognize("percentage = DIVIDE(SUM(a), COUNT(b)) * 100", shape="paragraph")
    assert rec.kind != "formula"


def test_backticked_identifiers_become_quoted_identifiers_in_the_expression() -> None:
    rec = recognize("Rate = `Free Meal Count` / `Enrollment (K-12)`", shape="paragraph")
    assert rec.kind == "formula"
    assert rec.expression == '"Free Meal Count" / "Enrollment (K-12)"'


def test_crlf_and_decomposed_accents_are_normalized_before_segmentation() -> None:
    crlf = "Citta\u0300: comune.\r\n\r\nAltro paragrafo.\r\n"
    passages = segment(normalize_text(crlf))
    assert [p.excerpts[0] for p in passages] == ["Città: comune.", "Altro paragrafo."]
