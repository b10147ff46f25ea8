"""Normalization: folding, stemming language, negation scopes, clauses, extensions."""

from __future__ import annotations

from modules.routing.text import analyze, fold


def _negated(text: str) -> set[str]:
    a = analyze(text)
    return {w for w, n in zip(a.words, a.negated, strict=True) if n}


def test_fold_removes_accents_case_and_apostrophes() -> None:
    assert fold("Perché l'Analisi È") == "perche l analisi e"


def test_language_is_detected_from_function_words() -> None:
    assert analyze("Esegui una query sulla tabella degli ordini").lang == "it"
    assert analyze("Run a query on the orders table").lang == "en"


def test_italian_negation_covers_its_clause_only() -> None:
    negated = _negated("Non mi serve il PDF, ma aggiorna il file Excel")
    assert "pdf" in negated
    assert "excel" not in negated


def test_english_negation_and_contractions() -> None:
    assert "docx" in _negated("don't use the docx skill; build slides instead")
    assert "slides" not in _negated("don't use the docx skill; build slides instead")


def test_non_before_a_non_usage_verb_is_not_a_negation() -> None:
    assert _negated("non funziona il login") == set()


def test_instead_of_negates_what_follows() -> None:
    assert "dossier" in _negated("Crea lo stato dell'arte invece di un dossier")


def test_scope_ends_at_and_after_two_content_words() -> None:
    negated = _negated("senza toccare il db e aggiorna il ticket")
    assert "db" in negated and "ticket" not in negated


def test_file_extensions_and_compound_ids_are_found() -> None:
    a = analyze("usa mcp-office-expert per il file edit.cfm e report.XLSX")
    assert a.extensions == ["cfm", "xlsx"]
    assert ("mcp-office-expert", 1, 3) in a.compounds


def test_negation_then_article_sets_the_noun_phrase_aside() -> None:
    assert "query" in _negated("Il problema non è la query: il file Excel ha le colonne sbagliate")
    assert "excel" not in _negated("Il problema non è la query: il file Excel ha colonne sbagliate")
    assert {"mcp", "server"} <= _negated("Not an MCP server, I just need tool use")


def test_negation_before_an_adjective_or_a_pronoun_is_not_a_scope() -> None:
    assert _negated("la funzione non è testabile") == set()
    assert _negated("non la trovo nella documentazione") == set()


def test_a_negative_command_negates_whatever_the_verb() -> None:
    assert "documentazione" in _negated("Non cercare nella documentazione: vai sullo schema")
    assert "schema" not in _negated("Non cercare nella documentazione: vai sullo schema")
    assert "docs" in _negated("Don't search the docs, query the db")
    assert "db" not in _negated("Don't search the docs, query the db")


def test_a_statement_with_dont_is_not_a_command() -> None:
    assert _negated("I don't know why the query fails") == set()
