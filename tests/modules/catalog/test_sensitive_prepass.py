"""The offline pre-pass (modules/catalog/sensitive.py): names and types in, proposals out, no
model, no value. Each rule in Italian and English, in snake_case and camelCase; the vetoes and
type gates that keep it from flagging what only talks *about* the data."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.catalog.records import CatalogColumn, CatalogTable
from modules.catalog.sensitive import RULES, classify_column, propose_sensitive


def rule(column: str, declared: str = "TEXT", table: str = "t") -> str | None:
    found = classify_column(table, column, declared)
    return None if found is None else found.rule


@pytest.mark.parametrize(
    ("column", "declared", "expected"),
    [
        # e-mail
        ("email", "TEXT", "email"),
        ("EmailAddress", "VARCHAR(200)", "email"),
        ("contactEmail", "TEXT", "email"),
        ("e_mail", "", "email"),
        ("indirizzo_posta_elettronica", "TEXT", "email"),
        ("pec", "TEXT", "email"),
        # phone
        ("phone_number", "TEXT", "phone"),
        ("PhoneNumber", "INTEGER", "phone"),
        ("telefono", "TEXT", "phone"),
        ("numeroCellulare", "TEXT", "phone"),
        ("tel", "TEXT", "phone"),
        # fiscal code / SSN / documents
        ("codice_fiscale", "CHAR(16)", "national_id"),
        ("CodiceFiscale", "TEXT", "national_id"),
        ("codicefiscale", "TEXT", "national_id"),
        ("cod_fisc", "TEXT", "national_id"),
        ("fiscal_code", "TEXT", "national_id"),
        ("ssn", "TEXT", "national_id"),
        ("SocialSecurityNumber", "TEXT", "national_id"),
        ("passport_no", "TEXT", "national_id"),
        ("tax_id", "TEXT", "national_id"),
        # IBAN and cards
        ("iban", "TEXT", "payment"),
        ("IBAN", "VARCHAR(34)", "payment"),
        ("credit_card_number", "TEXT", "payment"),
        ("conto_corrente", "TEXT", "payment"),
        # names
        ("first_name", "TEXT", "person_name"),
        ("LastName", "TEXT", "person_name"),
        ("firstname", "TEXT", "person_name"),
        ("surname", "TEXT", "person_name"),
        ("cognome", "TEXT", "person_name"),
        ("nominativo", "TEXT", "person_name"),
        ("customer_name", "TEXT", "person_name"),
        ("nome_paziente", "TEXT", "person_name"),
        ("AdmFName1", "TEXT", "person_name"),
        # birth dates
        ("birth_date", "DATE", "birth_date"),
        ("BirthDate", "TEXT", "birth_date"),
        ("date_of_birth", "DATE", "birth_date"),
        ("dob", "DATE", "birth_date"),
        ("birthday", "TEXT", "birth_date"),
        ("data_di_nascita", "DATE", "birth_date"),
        ("dataNascita", "TEXT", "birth_date"),
        ("luogo_nascita", "TEXT", "birth_date"),
        # addresses
        ("address", "TEXT", "address"),
        ("street_address", "TEXT", "address"),
        ("indirizzo", "TEXT", "address"),
        ("indirizzo_residenza", "TEXT", "address"),
        ("MailStreet", "TEXT", "address"),  # a mailing address, not an e-mail
        ("zip_code", "TEXT", "address"),
        # network and secrets
        ("ip_address", "TEXT", "ip_address"),
        ("client", "INET", "ip_address"),
        ("password", "TEXT", "secret"),
        ("password_hash", "BYTEA", "secret"),
        ("api_key", "TEXT", "secret"),
        ("refresh_token", "TEXT", "secret"),
    ],
)
def test_each_rule_fires_in_both_languages_and_both_cases(
    column: str, declared: str, expected: str
) -> None:
    assert rule(column, declared) == expected


@pytest.mark.parametrize(
    ("column", "declared"),
    [
        ("email_verified", "BOOLEAN"),  # a boolean never holds an e-mail
        ("email_verified", "TEXT"),  # about the e-mail, not the e-mail
        ("has_email", "INTEGER"),
        ("email_count", "INTEGER"),
        ("phone_type", "TEXT"),
        ("address_id", "INTEGER"),  # a key to the address, not the address
        ("password_changed_at", "TIMESTAMP"),
        ("email", "DATE"),  # a date is no e-mail
        ("MailCity", "TEXT"),
        ("hotel", "TEXT"),  # "tel" inside a word is not a phone
        ("shipping", "TEXT"),  # nor "pin"
        ("name", "TEXT"),  # a bare name, outside a table of persons
        ("nome", "TEXT"),
        ("product_name", "TEXT"),
        ("placed", "DATE"),
        ("total", "NUMERIC(10, 2)"),
        ("", "TEXT"),
        ("___", ""),
    ],
)
def test_what_only_talks_about_the_data_is_not_proposed(column: str, declared: str) -> None:
    assert rule(column, declared, table="orders") is None


def test_a_bare_name_is_a_persons_name_only_in_a_table_of_persons() -> None:
    assert rule("name", table="customers") == "person_name"
    assert rule("nome", table="anagrafica_pazienti") == "person_name"
    assert rule("Name", table="Users") == "person_name"
    assert rule("name", table="products") is None
    weak = classify_column("clienti", "nome", "TEXT")
    strong = classify_column("clienti", "cognome", "TEXT")
    assert weak is not None and strong is not None and weak.confidence < strong.confidence
    assert "table of persons" in weak.evidence


def test_a_proposal_says_its_rule_evidence_confidence_and_that_it_is_offline() -> None:
    found = classify_column("clienti", "EmailAddress", "TEXT")
    assert found is not None
    assert found.to_json() == {
        "table": "clienti",
        "column": "EmailAddress",
        "type": "TEXT",
        "rule": "email",
        "confidence": 0.95,
        "evidence": "name: 'email'",
        "offline": True,
    }
    by_type = classify_column("t", "source", "inet")
    assert by_type is not None and by_type.evidence == "type: inet"


def test_the_best_rule_wins() -> None:
    assert rule("email_address") == "email"  # not "address"
    assert rule("ip_address") == "ip_address"


def test_proposals_follow_table_name_then_column_position() -> None:
    def column(name: str, position: int) -> CatalogColumn:
        return CatalogColumn(name=name, position=position, type="TEXT")

    tables = [
        CatalogTable(name="z_people", columns=(column("email", 2), column("phone", 1))),
        CatalogTable(name="a_orders", columns=(column("total", 1), column("iban", 2))),
    ]
    assert [p.ref for p in propose_sensitive(tables)] == [
        "a_orders.iban",
        "z_people.phone",
        "z_people.email",
    ]


_names = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGH_ -.0123456789"))


@given(table=_names, column=_names, declared=st.sampled_from(["", "TEXT", "INT", "DATE", "BOOL"]))
def test_any_name_classifies_without_error_into_a_known_rule(
    table: str, column: str, declared: str
) -> None:
    found = classify_column(table, column, declared)
    if found is not None:
        assert found.rule in RULES
        assert 0 < found.confidence <= 1
        assert found.offline is True
        assert classify_column(table, column, declared) == found  # deterministic


@given(
    words=st.lists(
        st.sampled_from(["email", "first", "name", "data", "nascita", "phone", "user", "x"]),
        min_size=1,
        max_size=4,
    )
)
def test_snake_case_and_camel_case_spellings_agree(words: list[str]) -> None:
    snake = "_".join(words)
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    assert rule(snake) == rule(camel)
