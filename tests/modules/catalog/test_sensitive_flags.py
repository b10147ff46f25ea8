"""Sensitive Data Flags through the planners, the ledger and the fold: human-only, false by
default (also for new columns), kept by a resync for the same name, and a human's decision
given back to a column that leaves the catalog and is observed again; the Suggestion Run keeps
aggregate counts only. Forged lines are problems of the fold."""

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
from modules.catalog import Catalog, plan_cleanup, run_sync
from modules.catalog.records import CatalogState
from modules.catalog.sensitive_flags import plan_flags, plan_suggestion_run, suggest
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, folded_alike, shop

ANN = "human:ann"


def people() -> FakeDatabase:
    db = shop()
    db.add("people", "id:INTEGER:pk", "first_name:TEXT", "email:TEXT", "birth_date:DATE")
    return db


@pytest.fixture
def db() -> FakeDatabase:
    return people()


@pytest.fixture
def catalog(db: FakeDatabase) -> Catalog:
    catalog = catalog_on(db=db)
    run_sync(catalog)
    return catalog


def flag(catalog: Catalog, *refs: str, on: bool = True, actor: str = ANN) -> list[str]:
    loaded = catalog.load_for_write()
    plan = plan_flags(loaded.state, list(refs), sensitive=on, reason="personal data", actor=actor)
    catalog.append(loaded, plan.drafts)
    return plan.changed


def flags(catalog: Catalog) -> set[str]:
    state = catalog.load().state
    return {f"{t.name}.{c.name}" for t in state.tables.values() for c in t.columns if c.sensitive}


def forge(catalog: Catalog, draft: ev.EventDraft) -> None:
    """A line written straight into the ledger, past every command (anyone in the shell)."""
    ledger = catalog.caps.ledger
    ledger.append([draft], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())


def draft(table: str, column: str, sensitive: bool, actor: str = ANN) -> ev.EventDraft:
    return ev.EventDraft(
        type="sensitive_flag_set",
        actor=actor,
        payload=cev.SensitiveFlagSetPayload(
            table=table, column=column, sensitive=sensitive, reason="x"
        ),
    )


# ----------------------------------------------------------------------------- the flag


def test_every_column_starts_not_sensitive(catalog: Catalog) -> None:
    assert flags(catalog) == set()


def test_a_human_sets_and_clears_flags_in_one_batch(catalog: Catalog) -> None:
    before = catalog.load().state.last_seq
    assert flag(catalog, "people.email", "PEOPLE.First_Name") == [
        "people.email",
        "people.first_name",
    ]
    events = catalog.caps.ledger.read().events[before:]
    assert [e.batch_left for e in events] == [1, 0]  # one batch
    assert all(isinstance(e, cev.SensitiveFlagSet) and e.actor == ANN for e in events)
    assert flags(catalog) == {"people.email", "people.first_name"}
    flag(catalog, "people.email", on=False)
    assert flags(catalog) == {"people.first_name"}
    assert catalog.verify().ok


def test_columns_already_at_the_value_are_reported_unchanged(catalog: Catalog) -> None:
    flag(catalog, "people.email")
    state = catalog.load_for_write().state
    plan = plan_flags(
        state, ["people.email", "people.birth_date"], sensitive=True, reason="r", actor=ANN
    )
    assert (plan.changed, plan.unchanged) == (["people.birth_date"], ["people.email"])
    assert len(plan.drafts) == 1
    with pytest.raises(PolicyError, match="already sensitive"):
        plan_flags(state, ["people.email"], sensitive=True, reason="r", actor=ANN)


@pytest.mark.parametrize(
    ("refs", "reason", "error"),
    [
        (["people.nope"], "r", NotFoundError),
        (["nope.email"], "r", NotFoundError),
        (["people"], "r", UsageError),
        (["people."], "r", UsageError),
        ([], "r", UsageError),
        (["people.email"], "  ", UsageError),
        (["people.email"], None, UsageError),
    ],
)
def test_a_bad_flag_request_is_refused_before_anything_is_planned(
    catalog: Catalog, refs: list[str], reason: str | None, error: type[Exception]
) -> None:
    state = catalog.load_for_write().state
    with pytest.raises(error):
        plan_flags(state, refs, sensitive=True, reason=reason, actor=ANN)


def test_an_empty_catalog_has_nothing_to_flag() -> None:
    with pytest.raises(NotFoundError, match="catalog sync"):
        plan_flags(CatalogState(), ["a.b"], sensitive=True, reason="r", actor=ANN)


# ----------------------------------------------------------------------------- the fold's rules


def test_a_resync_keeps_the_flag_of_the_same_column(catalog: Catalog, db: FakeDatabase) -> None:
    flag(catalog, "people.email")
    db.add_column("people", "phone:TEXT")  # the structure changes: a real resync
    run_sync(catalog)
    assert flags(catalog) == {"people.email"}
    table = catalog.load().state.tables["people"]
    new = table.column("phone")
    assert new is not None and new.sensitive is False  # a new column: false


def test_a_column_dropped_and_observed_again_gets_its_flag_back(
    catalog: Catalog, db: FakeDatabase
) -> None:
    flag(catalog, "people.email")
    db.drop_column("people", "email")
    run_sync(catalog)
    assert catalog.load().state.tables["people"].column("email") is None
    db.add_column("people", "email:TEXT")
    run_sync(catalog)
    assert flags(catalog) == {"people.email"}  # the human's decision outlives the column
    assert catalog.verify().ok


def test_a_cleaned_up_column_gets_its_flag_back_when_observed_again(catalog: Catalog) -> None:
    flag(catalog, "people.email")
    loaded = catalog.load_for_write()
    cleaned = plan_cleanup(loaded.state, columns=["people.email"], reason="tidy", actor=ANN)
    catalog.append(loaded, [cleaned])
    run_sync(catalog)  # unchanged structure: the column comes back
    assert catalog.load().state.tables["people"].column("email") is not None
    assert flags(catalog) == {"people.email"}


def test_a_humans_explicit_off_also_outlives_the_column(catalog: Catalog, db: FakeDatabase) -> None:
    flag(catalog, "people.email")
    flag(catalog, "people.email", on=False)
    db.drop("people")
    run_sync(catalog)
    db.add("people", "id:INTEGER:pk", "first_name:TEXT", "email:TEXT", "birth_date:DATE")
    run_sync(catalog)
    assert flags(catalog) == set()
    state = catalog.load().state
    assert [(d.column, d.sensitive) for d in state.flag_decisions] == [("email", False)]


@pytest.mark.parametrize("spelling", ["PEOPLE.EMAIL", "People.Email", "people.EMAIL"])
def test_a_column_renamed_in_case_is_the_same_identity(
    catalog: Catalog, db: FakeDatabase, spelling: str
) -> None:
    """SQLite's names are case-insensitive: ``SELECT email`` reads ``EMAIL`` too."""
    flag(catalog, "people.email")
    table, column = spelling.split(".")
    db.drop("people")
    db.add(table, "id:INTEGER:pk", "first_name:TEXT", f"{column}:TEXT")
    run_sync(catalog)
    assert flags(catalog) == {spelling}
    db.drop(table)
    db.add("people", "id:INTEGER:pk", "first_name:TEXT", "email:TEXT")
    run_sync(catalog)
    assert flags(catalog) == {"people.email"}
    assert catalog.verify().ok


def test_a_column_renamed_away_and_back_gets_its_flag_back(
    catalog: Catalog, db: FakeDatabase
) -> None:
    flag(catalog, "people.email")
    db.drop_column("people", "email")
    db.add_column("people", "mail_2:TEXT")  # renamed in a copy the agent synced
    run_sync(catalog)
    assert flags(catalog) == set()  # another column: no human decided about it
    db.drop_column("people", "mail_2")
    db.add_column("people", "email:TEXT")
    run_sync(catalog)
    assert flags(catalog) == {"people.email"}


def test_a_later_decision_under_another_spelling_replaces_the_earlier_one(
    catalog: Catalog, db: FakeDatabase
) -> None:
    """The same column renamed in case: the human's last word is the one that comes back."""
    flag(catalog, "people.email")
    db.drop_column("people", "email")
    db.add_column("people", "EMAIL:TEXT")
    run_sync(catalog)
    assert flags(catalog) == {"people.EMAIL"}
    flag(catalog, "people.EMAIL", on=False)
    db.drop_column("people", "EMAIL")
    db.add_column("people", "email:TEXT")
    run_sync(catalog)
    assert flags(catalog) == set()


def test_two_columns_that_differ_only_in_case_keep_their_own_decisions(
    catalog: Catalog, db: FakeDatabase
) -> None:
    """PostgreSQL's quoted identifiers: ``"Email"`` and ``email`` are two columns."""
    db.add_column("people", "Email:TEXT")
    run_sync(catalog)
    flag(catalog, "people.email")
    flag(catalog, "people.Email")
    flag(catalog, "people.Email", on=False)  # the last decision, about the other column
    db.drop("people")
    run_sync(catalog)
    db.add("people", "id:INTEGER:pk", "email:TEXT", "Email:TEXT", "EMAIL:TEXT")
    run_sync(catalog)
    # each spelling its own decision; a spelling no human decided about: on when any is on
    assert flags(catalog) == {"people.email", "people.EMAIL"}


def test_a_scoped_resync_of_another_table_keeps_the_flag(
    catalog: Catalog, db: FakeDatabase
) -> None:
    flag(catalog, "people.email")
    db.add_column("orders", "note:TEXT")
    run_sync(catalog, scope=["orders"])
    assert flags(catalog) == {"people.email"}


def test_a_flag_forged_by_an_agent_is_a_problem_and_blocks_every_write(catalog: Catalog) -> None:
    forge(catalog, draft("people", "email", True, actor="agent"))
    report = catalog.verify()
    assert [p.code for p in report.problems] == ["actor"]
    assert flags(catalog) == set()  # the fold ignores it
    with pytest.raises(IntegrityError, match="failed verification"):
        catalog.load_for_write()


def test_an_agent_cannot_unflag_a_column_by_forging_a_line(catalog: Catalog) -> None:
    flag(catalog, "people.email")
    forge(catalog, draft("people", "email", False, actor="module:catalog"))
    assert flags(catalog) == {"people.email"}  # still sensitive
    assert [p.code for p in catalog.verify().problems] == ["actor"]


@pytest.mark.parametrize(
    ("table", "column", "sensitive", "code"),
    [
        ("people", "nope", True, "sensitive"),
        ("nope", "email", True, "sensitive"),
        ("people", "email", False, "sensitive"),  # already not sensitive: no command records it
    ],
)
def test_a_flag_on_what_is_not_there_or_changes_nothing_is_a_problem(
    catalog: Catalog, table: str, column: str, sensitive: bool, code: str
) -> None:
    forge(catalog, draft(table, column, sensitive))
    assert [p.code for p in catalog.verify().problems] == [code]


# ----------------------------------------------------------------------------- signed mode


def test_in_signed_mode_a_flag_is_signed_and_an_unsigned_one_is_a_forgery(
    tmp_path: Path,
) -> None:
    key = generate_signing_key(ANN)
    registry = ReviewerRegistry(tmp_path / "reviewers")
    registry.add_reviewer(key, by=None, clock=FixedClock())

    def signer_for(actor: str) -> object:
        return lambda event: key.sign_event(event) if event.actor == actor else None

    catalog = catalog_on(
        MemoryStore(),
        db=people(),
        signer_for=signer_for,
        human_check=registry.state().check_human_event,
    )
    run_sync(catalog)
    flag(catalog, "people.email")
    last = catalog.caps.ledger.read().events[-1]
    assert isinstance(last, cev.SensitiveFlagSet) and last.sig is not None
    assert catalog.verify().ok
    forge(catalog, draft("people", "email", False))  # a human's name, no signature
    assert [p.code for p in catalog.verify().problems] == ["signature"]
    with pytest.raises(IntegrityError):
        catalog.load_for_write()


# ----------------------------------------------------------------------------- suggestion runs


def test_a_suggestion_proposes_only_unflagged_columns_of_its_scope(catalog: Catalog) -> None:
    flag(catalog, "people.email")
    state = catalog.load_for_write().state
    whole = suggest(state)
    assert [p.ref for p in whole.proposals] == [
        "customers.name",  # a bare name in a table of persons
        "people.first_name",
        "people.birth_date",
    ]
    assert whole.already_flagged == 1
    assert whole.considered == sum(len(t.columns) for t in state.tables.values())
    scoped = suggest(state, ["orders"])
    assert (scoped.scope, scoped.proposals, scoped.considered) == (("orders",), [], 3)
    with pytest.raises(NotFoundError):
        suggest(state, ["nope"])


def test_a_suggestion_run_records_counts_only(catalog: Catalog) -> None:
    loaded = catalog.load_for_write()
    suggestion = suggest(loaded.state, ["people"])
    catalog.append(loaded, [plan_suggestion_run("run1", suggestion)])
    line = catalog.caps.ledger.read().events[-1]
    assert isinstance(line, cev.SensitiveSuggestionRun) and line.actor == "module:catalog"
    assert ev.encode_event(line).count(b"first_name") == 0  # no per-column proposal
    assert line.payload == cev.SensitiveSuggestionRunPayload(
        run="run1", mode="offline", scope=("people",), considered=4, proposed=3
    )
    run = catalog.load().state.suggestion_runs["run1"]
    assert (run.mode, run.scope, run.considered, run.proposed) == ("offline", ("people",), 4, 3)
    assert flags(catalog) == set()  # a suggestion saves no flag
    catalog.append(catalog.load_for_write(), [plan_suggestion_run("run1", suggestion)])
    assert [p.code for p in catalog.verify().problems] == ["run"]  # one id, one run


# ----------------------------------------------------------------------------- fold property


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["people.email", "people.first_name", "orders.placed"]), st.booleans()
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25)
@given(steps=_STEPS, cut=st.integers(min_value=0, max_value=20))
def test_folding_in_two_parts_equals_folding_at_once(
    steps: list[tuple[str, bool]], cut: int
) -> None:
    catalog = catalog_on(db=people())
    run_sync(catalog)
    for ref, on in steps:
        state = catalog.load_for_write().state
        try:
            plan = plan_flags(state, [ref], sensitive=on, reason="r", actor=ANN)
        except PolicyError:
            continue  # already at that value: nothing recorded
        catalog.append(catalog.load_for_write(), plan.drafts)
    whole = folded_alike(catalog, cut)
    assert not whole.problems
