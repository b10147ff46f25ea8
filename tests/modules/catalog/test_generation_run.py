"""The Description Generation Run's pure rules (modules/catalog/generation_run.py) and its fold
(modules/catalog/fold.py): targets, bounded batches, a prompt that carries no value, local
validation of the structured answer, and the run entries the fold accepts or refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError, NotFoundError, UsageError
from modules.catalog import Catalog, run_sync
from modules.catalog.generation_run import (
    MAX_DESCRIPTION_CHARS,
    NON_GENERATABLE_TEXT,
    GenerationBatch,
    GenerationTarget,
    RunCounts,
    build_prompt,
    finish_status,
    plan_batches,
    plan_finished,
    plan_generated,
    plan_started,
    select_targets,
    validate_answer,
)
from modules.catalog.records import CatalogColumn, CatalogState, CatalogTable
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, folded_alike, shop

T = GenerationTarget


@pytest.fixture
def catalog() -> Catalog:
    db: FakeDatabase = shop()
    catalog = catalog_on(db=db)
    run_sync(catalog)
    return catalog


def answer(*items: dict[str, Any]) -> str:
    return json.dumps({"descriptions": list(items)})


def item(
    target: str, text: str = "what it is", ng: bool = False, reason: str = ""
) -> dict[str, Any]:
    return {"target": target, "description": text, "non_generatable": ng, "reason": reason}


# ----------------------------------------------------------------------------- targets


def test_targets_are_each_table_then_its_columns_in_position_order(catalog: Catalog) -> None:
    state = catalog.load().state
    chosen = select_targets(state, ["orders", "countries"])
    assert [t.ref for t in chosen.requested] == [
        "orders",
        "orders.id",
        "orders.customer_id",
        "orders.placed",
        "countries",
        "countries.code",
        "countries.name",
    ]
    assert chosen.scope == ("orders", "countries") and chosen.wanted == chosen.requested
    assert select_targets(state).scope is None
    assert len(select_targets(state).requested) == 5 + 13


def test_missing_only_skips_what_has_a_description_or_a_generated_one(catalog: Catalog) -> None:
    loaded = catalog.load_for_write()
    results = validate_answer(
        answer(item("orders.id"), item("orders", ng=True)),
        GenerationBatch("orders", (T("orders"), T("orders", "id"))),
        "it",
    ).results
    drafts = plan_generated("r1", results, profile="p", language="it")
    drafts.append(
        ev.EventDraft(
            type="description_set",
            actor="human:ann",
            payload=cev.DescriptionSetPayload(target="orders.placed", text="when", reason="x"),
        )
    )
    forged = [
        plan_started(
            "r1",
            select_targets(loaded.state),
            profile="p",
            model="m",
            missing_only=False,
            language="it",
        ),
        *drafts,
    ]
    catalog.append(loaded, forged)
    state = catalog.load().state
    missing = select_targets(state, ["orders"], missing_only=True)
    assert [t.ref for t in missing.wanted] == ["orders.customer_id"]
    assert missing.already_described == 3  # a non-generatable one counts: the model said so


def test_an_unknown_table_or_an_empty_catalog_is_refused() -> None:
    with pytest.raises(NotFoundError, match="empty"):
        select_targets(CatalogState())
    state = CatalogState(tables={"a": CatalogTable(name="a")})
    with pytest.raises(NotFoundError, match="nope"):
        select_targets(state, ["nope"])
    with pytest.raises(UsageError):
        select_targets(state, [" "])


targets_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 30)), max_size=60
).map(lambda pairs: [T(table) if n == 0 else T(table, f"c{n}") for table, n in sorted(set(pairs))])


@settings(max_examples=60, deadline=None)
@given(targets=targets_strategy, size=st.integers(1, 7))
def test_batches_are_one_table_and_bounded_and_keep_every_target_in_order(
    targets: list[GenerationTarget], size: int
) -> None:
    batches = plan_batches(targets, size)
    assert [t for b in batches for t in b.targets] == targets
    for b in batches:
        assert {t.table for t in b.targets} == {b.table}
        assert sum(t.column is not None for t in b.targets) <= size
        assert all(t.column is not None for t in b.targets[1:])  # the table rides first
    with pytest.raises(UsageError):
        plan_batches(targets, 0)


# ----------------------------------------------------------------------------- the prompt

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=8, unique=True
    ),
    comments=st.lists(text, min_size=8, max_size=8),
    sensitive=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_a_prompt_carries_structural_metadata_only(
    names: list[str], comments: list[str], sensitive: list[bool]
) -> None:
    """Every string the request holds is a name, a type, a comment, a Description or a
    target: there is no field a value could travel in, sensitive column or not."""
    columns = tuple(
        CatalogColumn(name=n, position=i, type="TEXT", comment=comments[i], sensitive=sensitive[i])
        for i, n in enumerate(names)
    )
    state = CatalogState(tables={"t": CatalogTable(name="t", columns=columns, comment="c")})
    batch = plan_batches(select_targets(state).wanted, 3)[0]
    prompt = build_prompt(state, batch, "it")
    request = json.loads(prompt.user)
    assert list(request) == ["table", "columns", "targets"]
    assert set(request["table"]) == {
        "name",
        "kind",
        "comment",
        "description",
        "primary_key",
        "column_count",
    }
    for column in request["columns"]:
        assert set(column) == {"name", "type", "primary_key", "nullable", "comment", "description"}
    assert len(request["columns"]) <= 3
    assert request["targets"] == [t.ref for t in batch.targets]
    assert "Italian" in prompt.system


# ----------------------------------------------------------------------------- the answer

BATCH = GenerationBatch("orders", (T("orders"), T("orders", "id"), T("orders", "placed")))


def test_a_valid_answer_gives_one_result_per_target() -> None:
    out = validate_answer(
        answer(
            item("orders", "Gli ordini."),
            item("ORDERS.ID", "  La\nchiave.  "),
            item("orders.placed", "Data."),
        ),
        BATCH,
        "it",
    )
    assert [(r.target.ref, r.text) for r in out.results] == [
        ("orders", "Gli ordini."),
        ("orders.id", "La chiave."),
        ("orders.placed", "Data."),
    ]
    assert out.failed == () and out.problem == ""


@pytest.mark.parametrize(
    ("raw", "problem"),
    [("not json", "invalid-json"), ('{"x": 1}', "invalid-shape"), ("42", "invalid-shape")],
)
def test_an_answer_that_is_not_the_schema_fails_the_whole_batch(raw: str, problem: str) -> None:
    out = validate_answer(raw, BATCH, "it")
    assert out.results == () and out.failed == BATCH.targets and out.problem == problem


def test_invalid_items_count_as_failed_and_never_displace_a_valid_one() -> None:
    out = validate_answer(
        answer(
            item("orders", ""),  # empty
            item("orders.id", "x" * (MAX_DESCRIPTION_CHARS + 1)),  # over-long
            item("customers", "not asked for"),  # unknown target
            item("orders.placed", "first"),
            item("orders.placed", "second"),  # repeated
            {"target": "orders", "description": 3},  # wrong type
            "junk",
        ),
        BATCH,
        "en",
    )
    assert [(r.target.ref, r.text) for r in out.results] == [("orders.placed", "first")]
    assert [t.ref for t in out.failed] == ["orders", "orders.id"]
    assert out.invalid_items == 6


def test_a_bare_list_is_accepted_for_prompt_json_profiles() -> None:
    out = validate_answer(json.dumps([item("orders")]), BATCH, "it")
    assert [r.target.ref for r in out.results] == ["orders"]


@pytest.mark.parametrize("language", ["it", "en"])
def test_a_non_generatable_answer_is_the_standard_text_in_the_workspace_language(
    language: str,
) -> None:
    out = validate_answer(
        answer(item("orders.id", "ignored", ng=True, reason="  too\x00 little\n")), BATCH, language
    )
    (result,) = out.results
    assert result.non_generatable and result.text == NON_GENERATABLE_TEXT[language]
    assert result.reason == "too little"


# ----------------------------------------------------------------------------- status


def test_a_run_fails_when_it_stopped_or_nothing_came_back_valid() -> None:
    assert finish_status(RunCounts(requested=3, generated=1, failed=2), "") == "completed"
    assert finish_status(RunCounts(requested=3, failed=3), "") == "failed"
    assert finish_status(RunCounts(requested=3, generated=2), "timeout") == "failed"
    assert finish_status(RunCounts(requested=3), "interrupted") == "interrupted"
    assert finish_status(RunCounts(requested=3, skipped=3), "") == "completed"


# ----------------------------------------------------------------------------- the fold


def forge(catalog: Catalog, *drafts: ev.EventDraft) -> None:
    ledger = catalog.caps.ledger
    ledger.append(list(drafts), expected_last_seq=ledger.tail().last_seq, clock=FixedClock())


def started(catalog: Catalog, run: str = "r1") -> None:
    state = catalog.load().state
    chosen = select_targets(state, ["orders"])
    forge(
        catalog,
        plan_started(run, chosen, profile="p", model="m", missing_only=False, language="it"),
    )


def generated(run: str, ref: str, ng: bool = False) -> ev.EventDraft:
    table, _, column = ref.partition(".")
    result = validate_answer(
        answer(item(ref, ng=ng)), GenerationBatch(table, (T(table, column or None),)), "it"
    ).results
    (draft,) = plan_generated(run, result, profile="p", language="it")
    return draft


def test_the_fold_follows_a_run_and_counts_what_it_saved(catalog: Catalog) -> None:
    started(catalog)
    assert catalog.load().state.active_generation == "r1"
    forge(catalog, generated("r1", "orders"), generated("r1", "orders.id", ng=True))
    mid = catalog.load().state.generation_runs["r1"]
    assert (mid.status, mid.generated, mid.non_generatable, mid.requested) == ("active", 1, 1, 4)
    counts = RunCounts(requested=4, generated=1, non_generatable=1, failed=1, skipped=1)
    forge(catalog, plan_finished("r1", counts, "completed"))
    state = catalog.load_for_write().state
    done = state.generation_runs["r1"]
    assert (done.status, done.failed, done.skipped, state.active_generation) == (
        "completed",
        1,
        1,
        None,
    )
    assert state.tables["orders"].columns[0].generated is not None


@pytest.mark.parametrize(
    "forged",
    [
        "second_start",
        "result_of_another_run",
        "finish_counts_disagree",
        "finish_does_not_add_up",
        "finish_unknown_run",
    ],
)
def test_the_fold_refuses_a_run_entry_no_run_could_have_written(
    catalog: Catalog, forged: str
) -> None:
    started(catalog)
    if forged == "second_start":
        started(catalog, "r2")
    elif forged == "result_of_another_run":
        forge(catalog, generated("r9", "orders"))
    elif forged == "finish_counts_disagree":
        forge(catalog, plan_finished("r1", RunCounts(requested=4, generated=4), "completed"))
    elif forged == "finish_does_not_add_up":
        forge(catalog, plan_finished("r1", RunCounts(requested=4, skipped=3), "completed"))
    else:
        forge(catalog, plan_finished("r9", RunCounts(requested=4, skipped=4), "completed"))
    problems = catalog.load().state.problems
    assert [p.code for p in problems] == ["run"]
    with pytest.raises(IntegrityError):
        catalog.load_for_write()


# ----------------------------------------------------------------------------- fold property

_ENTRIES = st.lists(
    st.tuples(
        st.sampled_from(["start", "result", "result_ng", "finish", "finish_wrong"]),
        st.sampled_from(["r1", "r2"]),
        st.sampled_from(["orders", "orders.id", "orders.placed", "gone.x"]),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=40, deadline=None)
@given(entries=_ENTRIES, cut=st.integers(min_value=0, max_value=30))
def test_folding_runs_in_two_parts_equals_folding_at_once_and_every_end_adds_up(
    entries: list[tuple[str, str, str]], cut: int
) -> None:
    """Any sequence of run entries, legal or forged: the fold is incremental, at most one run
    is active, and every run it records ended accounts for exactly what it requested."""
    catalog = catalog_on(db=shop())
    run_sync(catalog)
    for kind, run, ref in entries:
        state = catalog.load().state
        if kind == "start":
            chosen = select_targets(state, ["orders"])
            draft = plan_started(
                run, chosen, profile="p", model="m", missing_only=False, language="it"
            )
        elif kind.startswith("result"):
            table, _, column = ref.partition(".")
            draft = plan_generated(
                run,
                [
                    validate_answer(
                        answer(item(ref, ng=kind == "result_ng")),
                        GenerationBatch(table, (T(table, column or None),)),
                        "it",
                    ).results[0]
                ],
                profile="p",
                language="it",
            )[0]
        else:
            found = state.generation_runs.get(run)
            requested = found.requested if found is not None else 4
            g, n = (found.generated, found.non_generatable) if found is not None else (0, 0)
            skipped = requested - g - n + (1 if kind == "finish_wrong" else 0)
            counts = RunCounts(requested=requested, generated=g, non_generatable=n, skipped=skipped)
            draft = plan_finished(run, counts, "completed")
        forge(catalog, draft)
    whole = folded_alike(catalog, cut)
    active = [r for r in whole.generation_runs.values() if r.status == "active"]
    assert [r.id for r in active] == ([whole.active_generation] if whole.active_generation else [])
    for record in whole.generation_runs.values():
        if record.status != "active":
            total = record.generated + record.non_generatable + record.failed + record.skipped
            assert total == record.requested
