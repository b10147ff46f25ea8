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


def test_a_bare_not_opening_a_clause_sets_the_noun_aside() -> None:
    negated = _negated("Not charts and not a deck, just the raw numbers in a table")
    assert {"charts", "deck"} <= negated and "table" not in negated
    assert _negated("I do not know why the export fails") == set()  # a statement, not a refusal


def test_ne_ne_negates_both_only_when_both_are_there() -> None:
    negated = _negated("né Excel né Word: mi servono delle slide")
    assert {"excel", "word"} <= negated and "slide" not in negated
    assert _negated("ne voglio due copie del report") == set()  # the clitic "ne"


def test_negations_written_after_their_object() -> None:
    assert "browser" in _negated("the browser is off limits, just read the log")
    assert "log" not in _negated("the browser is off limits, just read the log")
    assert "excel" in _negated("Excel no, grazie. Preparami un documento")
    assert "database" in _negated("il database è vietato in questa attività")


def test_anything_but_and_stay_away_from_negate_what_follows() -> None:
    assert "spreadsheet" in _negated("anything but a spreadsheet")
    assert "browser" in _negated("please stay away from the browser today")
    assert "playwright" in _negated("lascia perdere playwright, leggi i log")


def test_word_offsets_point_into_the_folded_text() -> None:
    text = "Usa l'MCP mcp-office-expert, poi apri report.XLSX"
    a = analyze(text)
    folded = fold(text)
    assert [folded[o : o + len(w)] for w, o in zip(a.words, a.offsets, strict=True)] == a.words


def test_chat_shorthand_and_excluded_are_negations() -> None:
    assert "pptx" in _negated("nn usare pptx, voglio solo sapere come funziona")
    assert "database" in _negated("Turn the spec into a Word doc. The database excluded.")
    assert "word" not in _negated("Turn the spec into a Word doc. The database excluded.")


def test_a_negation_before_its_object_is_not_read_backwards() -> None:
    negated = _negated("Dammi tutti i fogli excel, esclusi quelli vuoti")
    assert "excel" not in negated and "fogli" not in negated
    assert "quelli" in negated


def test_two_clitic_ne_are_no_negation_without_the_accent() -> None:
    assert _negated("ne ho parlato con il team, ne riparliamo domani") == set()
    assert {"xlsx", "altro"} <= _negated("né la skill xlsx né altro")


def _objects(text: str) -> list[str]:
    a = analyze(text)
    return [a.words[i] for i in sorted(a.negation_objects)]


def test_a_negation_names_what_it_sets_aside() -> None:
    """The direct object of a negation: past a verb of using or wanting, after a cue that takes
    a thing ("senza", "anything but", "no"), before a negation written after it, and what is
    coordinated with it by "or" / "né" (not by "and": "… and fetch the page" is a new verb)."""
    assert _objects("don't use pdf.") == ["pdf"]
    assert _objects("I don't want a pdf") == ["pdf"]
    assert _objects("non mi serve il pptx") == ["pptx"]
    assert _objects("senza xlsx") == ["xlsx"]
    assert _objects("anything but pptx") == ["pptx"]
    assert _objects("instead of pdf, a docx") == ["pdf"]
    assert _objects("pptx is not allowed") == ["pptx"]
    assert _objects("pptx no, grazie") == ["pptx"]
    assert _objects("the report, xlsx excluded.") == ["xlsx"]
    assert _objects("non è il pdf") == ["pdf"]
    assert _objects("né pdf né docx") == ["pdf", "docx"]
    assert _objects("non usare pdf o docx, fai un pptx") == ["pdf", "docx"]
    assert _objects("don't use git and fetch the page") == ["git"]


def test_an_action_set_aside_has_no_object() -> None:
    """ "never open the pdf" sets aside an action on the file, not a tool: nothing is its object,
    whatever the verb's language or form; nor is a word across a clause boundary."""
    for text in (
        "never open the pdf",
        "non modificare il pdf",
        "don't merge the pdf",
        "non toccare excel",
        "no, the pdf is fine",
        "I don't know why the pdf fails",
    ):
        assert _objects(text) == [], text
