"""Descriptions, Generated Descriptions and Description Consolidation through the planners, the
ledger and the fold: a Generated Description is a proposal that never changes the Description;
only a human writes a Description (by hand or by consolidating pending Generated Descriptions);
the metadata follows its column through resyncs and goes with it. Forged lines are problems."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import generate_signing_key
from kernel.store.memory import MemoryStore
from modules.catalog import Catalog, fold_catalog, fold_catalog_from, plan_cleanup, run_sync
from modules.catalog.descriptions import (
    blocker,
    plan_consolidation,
    plan_description,
    plan_proposal,
    resolve_target,
)
from modules.catalog.projections import show_json
from modules.catalog.records import CatalogColumn, CatalogState, CatalogTable
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, shop

ANN = "human:ann"


@pytest.fixture
def db() -> FakeDatabase:
    return shop()


@pytest.fixture
def catalog(db: FakeDatabase) -> Catalog:
    catalog = catalog_on(db=db)
    run_sync(catalog)
    return catalog


def describe(catalog: Catalog, target: str, text: str, actor: str = ANN) -> None:
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_description(loaded.state, target, text=text, reason="r", actor=actor)]
    )


def propose(catalog: Catalog, target: str, text: str) -> None:
    loaded = catalog.load_for_write()
    catalog.append(loaded, [plan_proposal(loaded.state, target, text=text, language="it")])


def consolidate(catalog: Catalog, *targets: str, all_generated: bool = False) -> list[str]:
    loaded = catalog.load_for_write()
    plan = plan_consolidation(
        loaded.state, list(targets), all_generated=all_generated, reason="ok", actor=ANN
    )
    catalog.append(loaded, [plan.draft])
    return plan.consolidated


def record(catalog: Catalog, target: str) -> CatalogTable | CatalogColumn:
    state = catalog.load().state
    table, _, column = target.partition(".")
    found = state.tables[table]
    if not column:
        return found
    col = found.column(column)
    assert col is not None
    return col


def forge(catalog: Catalog, draft: ev.EventDraft) -> None:
    """A line written straight into the ledger, past every command (anyone in the shell)."""
    ledger = catalog.caps.ledger
    ledger.append([draft], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())


def generated_draft(
    target: str,
    text: str = "x",
    *,
    actor: str = "agent",
    source: str = "agent",
    run: str | None = None,
    non_generatable: bool = False,
) -> ev.EventDraft:
    return ev.EventDraft(
        type="description_generated",
        actor=actor,
        payload=cev.DescriptionGeneratedPayload(
            target=target,
            text=text,
            language="it",
            source=source,
            run=run,
            non_generatable=non_generatable,
        ),
    )


def consolidated_draft(target: str, seq: int, actor: str = ANN) -> ev.EventDraft:
    return ev.EventDraft(
        type="descriptions_consolidated",
        actor=actor,
        payload=cev.DescriptionsConsolidatedPayload(
            targets=(cev.ConsolidatedTargetPayload(target=target, generated_seq=seq),),
            reason="r",
        ),
    )


# ----------------------------------------------------------------------------- by hand


def test_a_human_describes_a_table_and_a_column_and_show_reports_both(catalog: Catalog) -> None:
    describe(catalog, "ORDERS", "Gli ordini")
    describe(catalog, "orders.Customer_ID", "Chi ha ordinato")
    state = catalog.load().state
    orders = state.tables["orders"]
    assert orders.description == "Gli ordini" and orders.comment == ""
    column = orders.column("customer_id")
    assert column is not None and column.description == "Chi ha ordinato"
    assert [h.kind for h in column.description_history] == ["set"]
    assert column.description_seq == state.last_seq
    shown = show_json(state, "orders", None)["tables"][0]
    assert (shown["description"], shown["generated"]) == ("Gli ordini", None)
    assert shown["columns"][1]["description"] == "Chi ha ordinato"
    assert catalog.verify().ok


@pytest.mark.parametrize(
    ("target", "text", "reason", "error"),
    [
        ("orders", "", "r", UsageError),
        ("orders", "   ", "r", UsageError),
        ("orders", None, "r", UsageError),
        ("orders", "t", " ", UsageError),
        ("orders", "t", None, UsageError),
        ("nope", "t", "r", NotFoundError),
        ("orders.nope", "t", "r", NotFoundError),
        ("nope.id", "t", "r", NotFoundError),
        ("", "t", "r", UsageError),
    ],
)
def test_a_bad_description_is_refused_before_anything_is_planned(
    catalog: Catalog, target: str, text: str | None, reason: str | None, error: type[Exception]
) -> None:
    state = catalog.load_for_write().state
    with pytest.raises(error):
        plan_description(state, target, text=text, reason=reason, actor=ANN)


def test_the_same_description_again_changes_nothing_and_is_refused(catalog: Catalog) -> None:
    describe(catalog, "orders", "Gli ordini")
    with pytest.raises(PolicyError, match="already has that Description"):
        describe(catalog, "orders", "  Gli ordini ")


def test_an_empty_catalog_has_nothing_to_describe() -> None:
    with pytest.raises(NotFoundError, match="catalog sync"):
        resolve_target(CatalogState(), "orders")


# ----------------------------------------------------------------------------- generated


def test_a_generated_description_is_a_proposal_that_never_changes_the_description(
    catalog: Catalog,
) -> None:
    describe(catalog, "orders.placed", "Data d'ordine")
    propose(catalog, "orders.placed", "Quando è stato fatto l'ordine")
    placed = record(catalog, "orders.placed")
    assert placed.description == "Data d'ordine"  # untouched
    assert placed.generated is not None and placed.generated.source == "agent"
    assert placed.generated.language == "it" and placed.generated.run is None
    assert blocker(placed) is None  # pending
    shown = show_json(catalog.load().state, "orders", None)["tables"][0]["columns"][2]
    assert shown["description"] == "Data d'ordine"
    assert shown["generated"]["text"] == "Quando è stato fatto l'ordine"
    assert shown["generated"]["pending"] is True


def test_consolidation_copies_the_generated_text_and_keeps_the_generated_description(
    catalog: Catalog,
) -> None:
    propose(catalog, "orders", "Ordini dei clienti")
    propose(catalog, "orders.placed", "Data")
    assert consolidate(catalog, "orders", "orders.placed", "orders") == ["orders", "orders.placed"]
    orders = record(catalog, "orders")
    assert orders.description == "Ordini dei clienti"
    assert orders.generated is not None and orders.generated.text == "Ordini dei clienti"
    assert [h.kind for h in orders.description_history] == ["generated", "consolidated"]
    assert blocker(orders) == "already_consolidated"
    assert record(catalog, "orders.placed").description == "Data"
    assert catalog.verify().ok


def test_only_pending_generated_descriptions_are_consolidated_the_others_say_why(
    catalog: Catalog,
) -> None:
    propose(catalog, "orders", "A")
    propose(catalog, "customers", "B")
    consolidate(catalog, "customers")  # customers: already consolidated
    propose(catalog, "products", "C")
    describe(catalog, "products", "by hand")  # products: edited after it
    describe(catalog, "countries", "same")
    propose(catalog, "countries", "same")  # countries: the Description already
    state = catalog.load_for_write().state
    plan = plan_consolidation(state, [], all_generated=True, reason="r", actor=ANN)
    assert plan.consolidated == ["orders"]
    assert plan.skipped == [
        {"target": "countries", "why": "unchanged"},
        {"target": "customers", "why": "already_consolidated"},
        {"target": "products", "why": "edited_after"},
    ]
    with pytest.raises(PolicyError, match="no_generated") as refused:
        plan_consolidation(state, ["orders.id"], all_generated=False, reason="r", actor=ANN)
    assert refused.value.details["skipped"] == [{"target": "orders.id", "why": "no_generated"}]


def test_a_non_generatable_description_is_never_consolidated(catalog: Catalog) -> None:
    forge(catalog, generated_draft("orders", "Non è possibile descriverla.", non_generatable=True))
    assert catalog.verify().ok  # a valid outcome
    state = catalog.load_for_write().state
    assert blocker(state.tables["orders"]) == "non_generatable"
    with pytest.raises(PolicyError, match="non_generatable"):
        plan_consolidation(state, ["orders"], all_generated=False, reason="r", actor=ANN)


@pytest.mark.parametrize(
    ("targets", "all_generated", "reason"),
    [([], False, "r"), (["orders"], True, "r"), (["orders"], False, None), (["orders"], False, "")],
)
def test_a_bad_consolidation_request_is_a_usage_error(
    catalog: Catalog, targets: list[str], all_generated: bool, reason: str | None
) -> None:
    propose(catalog, "orders", "A")
    state = catalog.load_for_write().state
    with pytest.raises(UsageError):
        plan_consolidation(state, targets, all_generated=all_generated, reason=reason, actor=ANN)


# ----------------------------------------------------------------------------- sync and cleanup


def test_a_resync_keeps_descriptions_and_generated_ones_for_the_same_names(
    catalog: Catalog, db: FakeDatabase
) -> None:
    describe(catalog, "orders", "Gli ordini")
    propose(catalog, "orders.placed", "Data")
    before = record(catalog, "orders.placed")
    db.add_column("orders", "note:TEXT")  # a real resync
    run_sync(catalog)
    assert record(catalog, "orders").description == "Gli ordini"
    assert record(catalog, "orders.placed") == before
    note = record(catalog, "orders.note")
    assert note.generated is None and note.description_history == ()


def test_a_column_dropped_and_observed_again_gets_its_description_not_its_proposal(
    catalog: Catalog, db: FakeDatabase
) -> None:
    propose(catalog, "orders.placed", "Data")
    consolidate(catalog, "orders.placed")
    consolidated = record(catalog, "orders.placed").description_seq
    propose(catalog, "orders.placed", "Data dell'ordine")  # pending: not a human's decision
    db.drop_column("orders", "placed")
    run_sync(catalog)
    db.add_column("orders", "placed:TEXT")  # another type: the same identity
    run_sync(catalog)
    placed = record(catalog, "orders.placed")
    assert (placed.description, placed.generated) == ("Data", None)
    assert placed.description_seq == consolidated
    assert [(h.seq, h.kind, h.actor) for h in placed.description_history] == [
        (consolidated, "consolidated", ANN)
    ]
    assert catalog.verify().ok


def test_a_cleaned_up_table_takes_its_descriptions_with_it(catalog: Catalog) -> None:
    propose(catalog, "orders", "A")
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_cleanup(loaded.state, tables=["orders"], reason="tidy", actor=ANN)]
    )
    run_sync(catalog)  # it comes back as a new table
    assert record(catalog, "orders").generated is None
    with pytest.raises(PolicyError, match="no_generated"):
        consolidate(catalog, "orders")


# ----------------------------------------------------------------------------- forged lines


@pytest.mark.parametrize("actor", ["agent", "module:catalog", "kernel"])
def test_a_consolidation_forged_by_anyone_but_a_human_is_a_problem(
    catalog: Catalog, actor: str
) -> None:
    propose(catalog, "orders", "A")
    seq = catalog.load().state.last_seq
    forge(catalog, consolidated_draft("orders", seq, actor=actor))
    assert record(catalog, "orders").description == ""  # ignored
    assert [p.code for p in catalog.verify().problems] == ["actor"]
    with pytest.raises(IntegrityError, match="failed verification"):
        catalog.load_for_write()


def test_a_description_set_forged_by_an_agent_is_a_problem(catalog: Catalog) -> None:
    forge(
        catalog,
        ev.EventDraft(
            type="description_set",
            actor="agent",
            payload=cev.DescriptionSetPayload(target="orders", text="mine", reason="r"),
        ),
    )
    assert record(catalog, "orders").description == ""
    assert [p.code for p in catalog.verify().problems] == ["actor"]


@pytest.mark.parametrize(
    ("draft", "code"),
    [
        (generated_draft("orders", actor="human:ann"), "source"),  # a human is not a proposer
        (generated_draft("orders", actor="module:catalog"), "source"),
        (generated_draft("orders", source="model:p"), "source"),  # an agent posing as a model
        (generated_draft("orders", actor="module:catalog", source="model:"), "source"),
        (generated_draft("orders", source="human"), "source"),
        (generated_draft("orders", run="r1"), "source"),  # an agent's proposal has no run
        (generated_draft("nope"), "description"),
        (generated_draft("orders.nope"), "description"),
        (generated_draft("orders", text="  "), "description"),
        # a model's proposal belongs to the active Description Generation Run
        (generated_draft("orders", actor="module:catalog", source="model:p", run="r9"), "run"),
    ],
)
def test_a_malformed_generated_description_is_a_problem(
    catalog: Catalog, draft: ev.EventDraft, code: str
) -> None:
    forge(catalog, draft)
    assert record(catalog, "orders").generated is None
    assert [p.code for p in catalog.verify().problems] == [code]


def test_a_consolidation_of_another_generated_seq_is_a_problem(catalog: Catalog) -> None:
    propose(catalog, "orders", "A")
    first = catalog.load().state.last_seq
    propose(catalog, "orders", "B")
    forge(catalog, consolidated_draft("orders", first))  # not the latest one
    assert record(catalog, "orders").description == ""
    assert [p.code for p in catalog.verify().problems] == ["consolidation"]


def test_a_consolidation_naming_a_target_twice_is_a_problem_and_changes_nothing(
    catalog: Catalog,
) -> None:
    propose(catalog, "orders", "A")
    seq = catalog.load().state.last_seq
    item = cev.ConsolidatedTargetPayload(target="orders", generated_seq=seq)
    forge(
        catalog,
        ev.EventDraft(
            type="descriptions_consolidated",
            actor=ANN,
            payload=cev.DescriptionsConsolidatedPayload(targets=(item, item), reason="r"),
        ),
    )
    assert record(catalog, "orders").description == ""
    assert [p.code for p in catalog.verify().problems] == ["consolidation"]


def test_in_signed_mode_a_description_is_signed_and_an_unsigned_one_is_a_forgery(
    tmp_path: Path,
) -> None:
    key = generate_signing_key(ANN)
    registry = ReviewerRegistry(tmp_path / "reviewers")
    registry.add_reviewer(key, by=None, clock=FixedClock())

    def signer_for(actor: str) -> object:
        return lambda event: key.sign_event(event) if event.actor == actor else None

    catalog = catalog_on(
        MemoryStore(),
        db=shop(),
        signer_for=signer_for,
        human_check=registry.state().check_human_event,
    )
    run_sync(catalog)
    propose(catalog, "orders", "A")
    consolidate(catalog, "orders")
    describe(catalog, "orders.id", "La chiave")
    events = catalog.caps.ledger.read().events
    assert events[-3].sig is None  # the agent's proposal is not a human decision
    assert all(e.sig is not None for e in events[-2:])
    assert catalog.verify().ok
    seq = events[-3].seq
    forge(catalog, consolidated_draft("orders", seq))  # a human's name, no signature
    assert "signature" in [p.code for p in catalog.verify().problems]


# ----------------------------------------------------------------------------- properties

_TARGETS = ["orders", "orders.placed", "customers.name", "nope", "orders.nope"]
_ACTORS = [ANN, "agent", "module:catalog"]
_step = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(_TARGETS), st.sampled_from(["a", "b", ""]),
              st.sampled_from(_ACTORS)),
    st.tuples(st.just("gen"), st.sampled_from(_TARGETS), st.sampled_from(["a", "b", "c"]),
              st.sampled_from(_ACTORS)),
    st.tuples(st.just("ngen"), st.sampled_from(_TARGETS), st.just("?"), st.just("agent")),
    st.tuples(st.just("cons"), st.sampled_from(_TARGETS), st.integers(0, 12),
              st.sampled_from(_ACTORS)),
)  # fmt: skip


def _draft(step: tuple[object, ...]) -> ev.EventDraft:
    kind, target, value, actor = step
    assert isinstance(target, str) and isinstance(actor, str)
    if kind == "set":
        return ev.EventDraft(
            type="description_set",
            actor=actor,
            payload=cev.DescriptionSetPayload(target=target, text=str(value), reason="r"),
        )
    if kind in ("gen", "ngen"):
        return generated_draft(target, str(value), actor=actor, non_generatable=kind == "ngen")
    assert isinstance(value, int)
    return consolidated_draft(target, value, actor=actor)


def _descriptions(state: CatalogState) -> dict[str, str]:
    found = {}
    for name, table in state.tables.items():
        found[name] = table.description
        for column in table.columns:
            found[f"{name}.{column.name}"] = column.description
    return found


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_step, max_size=12))
def test_only_humans_change_descriptions_and_consolidation_copies_a_generated_text(
    steps: list[tuple[object, ...]],
) -> None:
    catalog = catalog_on(db=shop())
    run_sync(catalog)
    ledger = catalog.caps.ledger
    base = ledger.tail().last_seq
    for step in steps:
        ledger.append([_draft(step)], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())
    events = ledger.read().events
    state = fold_catalog(events[:base], catalog.load_snapshot)
    generated_texts: dict[str, set[str]] = {}
    for event in events[base:]:
        after = fold_catalog_from(state, [event], catalog.load_snapshot)
        changed = {t for t, d in _descriptions(after).items() if _descriptions(state).get(t) != d}
        accepted = len(after.problems) == len(state.problems)
        if isinstance(event, cev.DescriptionGenerated):
            assert changed == set()  # a Generated Description never changes a Description
            if accepted and not event.payload.non_generatable:
                generated_texts.setdefault(event.payload.target, set()).add(event.payload.text)
        if changed:
            assert accepted and event.actor.startswith("human:")
            assert isinstance(event, cev.DescriptionSet | cev.DescriptionsConsolidated)
        if isinstance(event, cev.DescriptionsConsolidated) and accepted:
            for item in event.payload.targets:  # only from a generated text
                assert _descriptions(after)[item.target] in generated_texts[item.target]
        state = after
    whole = fold_catalog(events, catalog.load_snapshot)
    assert whole == state  # fold(a + b) == fold_from(fold(a), b), one event at a time
