"""F1's ambiguity detection over a hand-built catalog: each rule has a case that must fire and
the near misses that must not; every option carries a valid event; the report's order. (Term
matching and unanswerable terms: ``test_ambiguity_terms``.)

The catalogs here (a hospital) are also what the other ``test_ambiguity*`` tests use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kernel import events as ev
from kernel.schema_view import SchemaColumn, SchemaRelationship, SchemaTable, StaticSchemaView
from modules.disambiguation.ambiguity import LEAVE_OPEN_LABEL, detect_ambiguities
from modules.disambiguation.ambiguity_records import (
    OPEN_OPTION,
    Ambiguity,
    AmbiguityReport,
    GlossaryEntry,
)

# --------------------------------------------------------------------------- catalogs


def table(
    name: str, *columns: str, pk: Sequence[str] = (), types: Mapping[str, str] | None = None
) -> SchemaTable:
    return SchemaTable(
        name=name,
        columns=tuple(
            SchemaColumn(name=c, position=i + 1, pk=c in pk, type=(types or {}).get(c, "TEXT"))
            for i, c in enumerate(columns)
        ),
    )


def link(from_table: str, from_column: str, to_table: str, to_column: str) -> SchemaRelationship:
    return SchemaRelationship(
        id=f"physical:{from_table}.{from_column}->{to_table}",
        from_table=from_table,
        from_columns=(from_column,),
        to_table=to_table,
        to_columns=(to_column,),
        origin="physical",
    )


def view(
    *tables: SchemaTable, relationships: Sequence[SchemaRelationship] = ()
) -> StaticSchemaView:
    return StaticSchemaView(
        dialect="sqlite",
        version="test",
        schema_tables=tuple(tables),
        schema_relationships=tuple(relationships),
    )


HOSPITALS = table("hospitals", "hospital_id", "name", "region", "beds", pk=("hospital_id",))
#: a vertical split: ``region`` copied out, keyed by the hospital's key (no declared relationship)
HOSPITALS_REGION = table("hospitals_region", "hospital_id", "region")
#: precomputed aggregates of ``beds``
BEDS_STATS = table("beds_stats", "avg_beds", "max_beds", "total_beds")
WARDS = table("wards", "ward_id", "hospital_id", "name", "ward_type", pk=("ward_id",))
TO_HOSPITAL = link("wards", "hospital_id", "hospitals", "hospital_id")

HOSPITAL_VIEW = view(HOSPITALS, HOSPITALS_REGION, BEDS_STATS, WARDS, relationships=(TO_HOSPITAL,))
#: the same catalog without the split copy and the precomputed aggregates
PLAIN_VIEW = view(HOSPITALS, WARDS, relationships=(TO_HOSPITAL,))


class FakeValues:
    """A value index: exact, case-folded lookup of a fixed table; remembers what was asked."""

    def __init__(self, occurrences: Mapping[str, Sequence[str]]) -> None:
        self.occurrences = {k.casefold(): list(v) for k, v in occurrences.items()}
        self.asked: list[str] = []

    def __call__(self, value: str) -> list[str]:
        self.asked.append(value)
        return self.occurrences.get(value.casefold(), [])


def kinds(report: AmbiguityReport) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(a.kind, a.term, a.target_group) for a in report.ambiguities]


def only(report: AmbiguityReport) -> Ambiguity:
    assert len(report.ambiguities) == 1, kinds(report)
    return report.ambiguities[0]


# --------------------------------------------------------------------------- joinable attribute


def test_an_attribute_copied_into_a_table_sharing_the_key_is_ambiguous() -> None:
    report = detect_ambiguities("Show name and region of all hospitals", HOSPITAL_VIEW)
    found = only(report)
    assert found.kinds == ("joinable_attribute",)
    assert found.term == "region"
    assert found.target_group == ("hospitals.region", "hospitals_region.region")
    assert report.question == "Show name and region of all hospitals"
    assert found.span == (14, 20)


def test_the_copy_is_ambiguous_even_when_the_question_names_the_table() -> None:
    # a vertical split describes the same entity: naming it does not say which copy
    found = only(detect_ambiguities("region of the hospital", HOSPITAL_VIEW))
    assert found.term == "region"


def test_without_the_copy_nothing_is_ambiguous() -> None:
    assert detect_ambiguities("Show name and region of all hospitals", PLAIN_VIEW).ambiguities == ()


def test_a_many_to_one_attribute_is_ambiguous_only_when_no_table_is_named() -> None:
    assert kinds(detect_ambiguities("What is the name?", PLAIN_VIEW)) == [
        ("joinable_attribute", "name", ("hospitals.name", "wards.name"))
    ]
    assert detect_ambiguities("the name of each ward", PLAIN_VIEW).ambiguities == ()
    assert detect_ambiguities("hospital names", PLAIN_VIEW).ambiguities == ()


def test_tables_that_do_not_join_never_share_an_attribute() -> None:
    lonely = view(HOSPITALS, table("suppliers", "supplier_id", "name", pk=("supplier_id",)))
    assert detect_ambiguities("What is the name?", lonely).ambiguities == ()


def test_the_join_key_itself_is_never_ambiguous() -> None:
    assert detect_ambiguities("list every hospital id", HOSPITAL_VIEW).ambiguities == ()


def test_tables_all_keyed_id_do_not_join_by_it() -> None:
    orders = table("orders", "id", "name", "status", pk=("id",))
    customers = table("customers", "id", "name", "status", pk=("id",))
    assert detect_ambiguities("the name and status", view(orders, customers)).ambiguities == ()
    # a declared relationship joins them (many-to-one: ambiguous only when no table is named)
    linked = view(orders, customers, relationships=(link("orders", "id", "customers", "id"),))
    assert only(detect_ambiguities("the status", linked)).term == "status"
    # a key whose name says its table is a shared key even when both declare it
    a = table("visit", "visit_ref", "status", pk=("visit_ref",))
    b = table("visit_status", "visit_ref", "status", pk=("visit_ref",))
    assert only(detect_ambiguities("the status of visits", view(a, b))).term == "status"


def test_a_relationship_joins_tables_whose_keys_are_named_differently() -> None:
    clinics = table("clinics", "code", "city_name", pk=("code",))
    visits = table("visits", "visit_id", "clinic_code", "city_name", pk=("visit_id",))
    linked = view(
        clinics, visits, relationships=(link("visits", "clinic_code", "clinics", "code"),)
    )
    unlinked = view(clinics, visits)
    assert kinds(detect_ambiguities("Which city name?", linked)) == [
        ("joinable_attribute", "city name", ("clinics.city_name", "visits.city_name"))
    ]
    assert detect_ambiguities("Which city name?", unlinked).ambiguities == ()


def test_a_shared_key_without_a_primary_key_does_not_join() -> None:
    # same-named columns alone prove nothing: one side must be the key of its table
    a = table("a_list", "ref", "region")
    b = table("b_list", "ref", "region")
    assert detect_ambiguities("region", view(a, b)).ambiguities == ()
    keyed = table("a_list", "ref", "region", pk=("ref",))
    assert only(detect_ambiguities("region", view(keyed, b))).term == "region"


# --------------------------------------------------------------------------- precomputed aggregate


def test_a_measure_with_precomputed_aggregates_is_ambiguous_when_an_aggregate_is_asked() -> None:
    found = only(detect_ambiguities("What is the average number of beds?", HOSPITAL_VIEW))
    assert found.kinds == ("precomputed_aggregate",)
    assert found.term == "beds"
    # the asked aggregates: AVG (average) and COUNT (number of); one stored column matches
    assert found.target_group == ("hospitals.beds", "beds_stats.avg_beds")
    assert [o.reading for o in found.readings] == ["column", "column"]


def test_several_asked_aggregates_point_at_the_precomputed_table() -> None:
    found = only(detect_ambiguities("average and maximum beds", HOSPITAL_VIEW))
    assert found.target_group == ("hospitals.beds", "beds_stats")
    assert found.readings[1].reading == "table"
    assert "avg_beds, max_beds" in found.readings[1].label


def test_without_an_aggregate_word_a_measure_is_not_ambiguous() -> None:
    assert detect_ambiguities("beds of each hospital", HOSPITAL_VIEW).ambiguities == ()


def test_without_precomputed_aggregates_an_aggregate_is_not_ambiguous() -> None:
    assert detect_ambiguities("average beds per hospital", PLAIN_VIEW).ambiguities == ()


@pytest.mark.parametrize(
    ("stored", "question"),
    [
        ("cost_total", "total cost"),
        ("num_cost", "how many cost"),
        ("cnt_cost", "count the cost"),
        ("media_cost", "la media del cost"),
        ("tot_cost", "il totale dei cost"),
        ("maxCost", "highest cost"),
        ("min_cost", "lowest cost"),
    ],
)
def test_aggregate_names_and_words_of_both_languages(stored: str, question: str) -> None:
    catalog = view(table("orders", "order_id", "cost", pk=("order_id",)), table("stats", stored))
    found = only(detect_ambiguities(question, catalog))
    assert found.kind == "precomputed_aggregate"
    assert found.target_group == ("orders.cost", f"stats.{stored}")


def test_a_column_named_like_an_aggregate_of_nothing_is_a_plain_measure() -> None:
    # ``version_number`` ends in an aggregate word, but no ``version`` column exists: it is the
    # measure, and ``min_version_number`` its precomputed minimum
    catalog = view(
        table("releases", "release_id", "version_number", pk=("release_id",)),
        table("release_stats", "min_version_number", "max_version_number"),
    )
    found = only(detect_ambiguities("the lowest version number", catalog))
    assert found.target_group == ("releases.version_number", "release_stats.min_version_number")


def test_an_aggregate_of_a_table_that_names_no_measure_offers_its_precomputed_measures() -> None:
    catalog = view(
        table("shipments", "shipment_id", "shipped_at", pk=("shipment_id",)),
        table("shipments_shipped_at", "avg_shipped_at", "max_shipped_at"),
    )
    found = only(detect_ambiguities("On average, when were the shipments sent?", catalog))
    assert found.term == "shipments"
    assert found.target_group == ("shipments.shipped_at", "shipments_shipped_at.avg_shipped_at")


# --------------------------------------------------------------------------- values


def test_a_value_in_two_columns_is_ambiguous_with_value_readings() -> None:
    values = FakeValues({"Lazio": ["hospitals.region", "hospitals_region.region"]})
    report = detect_ambiguities("beds in Lazio", HOSPITAL_VIEW, values=values)
    found = only(report)
    assert found.kind == "value_columns"
    assert found.term == "Lazio"
    assert [o.event.type for o in found.readings] == ["value_grounded", "value_grounded"]
    assert [o.event.payload["column"] for o in found.readings] == [
        "hospitals.region",
        "hospitals_region.region",
    ]
    assert all(o.event.payload["value"] == "Lazio" for o in found.readings)


def test_a_value_in_one_column_is_not_ambiguous() -> None:
    values = FakeValues({"Lazio": ["hospitals.region"]})
    assert detect_ambiguities("beds in Lazio", PLAIN_VIEW, values=values).ambiguities == ()


def test_a_value_that_is_also_a_column_is_ambiguous() -> None:
    # issue 14's "ablazione": a boolean flag column and a value of the pathology column
    procedures = table(
        "procedure", "procedure_id", "ablazione", "patologia", pk=("procedure_id",),
        types={"ablazione": "BOOLEAN"},
    )  # fmt: skip
    values = FakeValues({"ablazioni": ["procedure.patologia"]})
    found = only(detect_ambiguities("Quante ablazioni nel 2023?", view(procedures), values=values))
    assert found.kind == "value_columns"
    assert [(o.reading, o.target) for o in found.readings] == [
        ("value", "procedure.patologia"),
        ("column", "procedure.ablazione"),
    ]
    assert found.readings[1].event.type == "concept_clarified"


def test_columns_the_catalog_does_not_hold_are_dropped() -> None:
    values = FakeValues({"Lazio": ["hospitals.region", "gone.region", "hospitals.nope", "x"]})
    assert detect_ambiguities("beds in Lazio", PLAIN_VIEW, values=values).ambiguities == ()


def test_values_are_looked_up_quoted_capitalised_and_word_by_word() -> None:
    values = FakeValues({})
    detect_ambiguities('Wards named "Day Surgery" in San Carlo, 2023', PLAIN_VIEW, values=values)
    assert "Day Surgery" in values.asked
    assert "San Carlo" in values.asked
    assert "2023" not in values.asked  # a bare number is no text value
    assert "in" not in values.asked  # nor a stopword


# --------------------------------------------------------------------------- glossary


GLOSSARY = (
    GlossaryEntry(term="active patient", definition="admitted in the last 12 months", unit="ev:a"),
    GlossaryEntry(term="active patients", definition="with an open admission", unit="ev:b"),
    GlossaryEntry(term="bed", definition="a staffed bed", unit="ev:c", target="hospitals.beds"),
    GlossaryEntry(term="bed", definition="A  staffed bed", unit="ev:d", target="HOSPITALS.BEDS"),
)


def test_a_term_two_glossary_units_define_differently_is_ambiguous() -> None:
    found = only(detect_ambiguities("How many active patients?", PLAIN_VIEW, glossary=GLOSSARY))
    assert found.kind == "glossary_conflict"
    assert found.term == "active patients"
    assert [o.event.payload["meaning"] for o in found.readings] == [
        "admitted in the last 12 months",
        "with an open admission",
    ]
    assert "ev:a" in found.readings[0].label


def test_the_same_definition_in_two_units_is_no_conflict() -> None:
    # whitespace and case do not make a definition different, nor the target's spelling
    assert detect_ambiguities("beds", PLAIN_VIEW, glossary=GLOSSARY).ambiguities == ()


def test_glossary_conflicts_come_first() -> None:
    values = FakeValues({"Lazio": ["hospitals.region", "hospitals_region.region"]})
    report = detect_ambiguities(
        "average beds of active patients by region in Lazio",
        HOSPITAL_VIEW,
        glossary=GLOSSARY,
        values=values,
    )
    assert [a.kind for a in report.ambiguities] == [
        "glossary_conflict",
        "precomputed_aggregate",
        "value_columns",
        "joinable_attribute",
    ]


# --------------------------------------------------------------------------- options and events


def test_every_option_records_a_valid_event_about_the_term() -> None:
    values = FakeValues({"Lazio": ["hospitals.region", "hospitals_region.region"]})
    report = detect_ambiguities(
        "average beds of active patients by region in Lazio",
        HOSPITAL_VIEW,
        glossary=GLOSSARY,
        values=values,
    )
    assert len(report.ambiguities) == 4
    for found in report.ambiguities:
        ids = [o.id for o in found.options]
        assert len(set(ids)) == len(ids)
        for option in found.options:
            assert option.event.subject == found.term
            ev.payload_from_builtins(option.event.type, option.event.payload)  # schema-valid
            ev.ReviewOptionPayload(id=option.id, label=option.label, events=(option.event,))
            assert option.review_option().events == (option.event,)


def test_the_leave_open_option_is_always_last_and_records_ambiguity_open() -> None:
    found = only(detect_ambiguities("Show name and region of all hospitals", HOSPITAL_VIEW))
    last = found.options[-1]
    assert (last.id, last.reading, last.label) == (OPEN_OPTION, "open", LEAVE_OPEN_LABEL)
    assert last.event.type == "ambiguity_open"
    assert last.event.payload == {
        "question": found.prompt,
        "options": [o.label for o in found.readings],
        "unanswerable": False,
    }


def test_a_reading_names_the_other_readings_as_alternatives() -> None:
    found = only(detect_ambiguities("Show name and region of all hospitals", HOSPITAL_VIEW))
    first, second = found.readings
    assert first.event.payload["target"] == "hospitals.region"
    assert first.event.payload["alternatives"] == ["hospitals_region.region"]
    assert second.event.payload["alternatives"] == ["hospitals.region"]
    assert "hospital_id" in second.event.payload["meaning"]  # informed: how it joins
