"""``store:`` of a PostgreSQL workspace read from the text of workspace.yaml
(kernel/store/postgres_selection.py), which spares ``tht session status`` the settings models.
Its one rule: it answers only what the full validation would answer — and when the full
validation refuses the file's ``store:``, it does not answer at all."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kernel import workspace_settings as workspace_module
from kernel.store.postgres_selection import PostgresSelection, read_postgres_selection
from tht.store_runtime import choice_from_settings

# the settings models, built once for the whole file (building them is what the reader spares)
_SETTINGS = workspace_module._models()


def _full(text: str) -> tuple[str, str] | None:
    """(url_env, namespace) by the full validation; None when it refuses the file."""
    data = yaml.safe_load(text)
    try:
        settings: Any = _SETTINGS.model_validate(data)
    except ValidationError:
        return None
    if settings.store.kind != "postgres":
        return None
    choice = choice_from_settings(settings, "postgres")
    return choice.url_env, choice.namespace


def _quick(text: str) -> tuple[str, str] | None:
    from tht.store_runtime import DEFAULT_STORE_URL_ENV, namespace_of

    found = read_postgres_selection(text)
    if found is None:
        return None
    namespace = found.workspace or namespace_of(found.name or "")
    return found.url_env or DEFAULT_STORE_URL_ENV, namespace


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("store: {kind: postgres, url_env: TEAM_URL, workspace: shop}\n", ("TEAM_URL", "shop")),
        ("name: Shop Team\nstore: {kind: postgres}\n", ("THT_STORE_URL", "Shop-Team")),
        ("store:\n  kind: postgres   # shared\n  dsn_env: OLD\nname: 'a.b'\n", ("OLD", "a.b")),
        ('store: {kind: "postgres", workspace: "01team", url_env: \'X\'}  # c\n', ("X", "01team")),
        ("store:\n  # the server\n\n  kind: postgres\n  workspace: w-1\nscope: {}\n", None),
        ("store: {kind: postgres, url_env: A, dsn_env: A, workspace: w}\n", ("A", "w")),
    ],
)  # fmt: skip
def test_the_plain_shapes_are_read_as_the_full_validation_reads_them(
    text: str, expected: tuple[str, str] | None
) -> None:
    found = _quick(text)
    full = _full(text)
    assert full is not None
    assert found == full == (expected or full)


@pytest.mark.parametrize(
    "text",
    [
        "store: {kind: postgres, url_env: A, dsn_env: B, workspace: w}\n",  # two variables
        "store: {kind: postgres, url_env: 1A, workspace: w}\n",  # not a variable's name
        "store: {kind: postgres, workspace: 12}\n",  # YAML reads a number
        "store: {kind: postgres, workspace: 'a b'}\n",  # not a store id
        "store: {kind: postgres, workspace: yes}\n",  # YAML 1.1 reads a boolean
        "store: {kind: postgres, workspace: w, extra: 1}\n",  # an unknown key
        "store: {kind: postgres, workspace: w, workspace: v}\n",  # a repeated key
        "store: {kind: postgres}\nname: 2024\n",  # a name YAML reads as a number
        "store: {kind: postgres}\nname: null\n",
        "store: {kind: postgres}\n",  # no name, no store.workspace: the default name
        "store: &s {kind: postgres, workspace: w}\n",  # an anchor
        "store: {kind: postgres, workspace: w}\nstore: {kind: postgres, workspace: v}\n",
        "store:\n  kind: postgres\n    workspace: w\n",  # a shape this reader does not take
        "store:\n\tkind: postgres\n",  # a tab
        "store: {kind: fs}\n",
    ],
)
def test_anything_else_is_left_to_the_full_validation(text: str) -> None:
    assert read_postgres_selection(text) is None


_WORDS = st.sampled_from(
    ["postgres", "fs", "A", "THT_STORE_URL", "_x", "1A", "12", "1.5", ".inf", "yes", "No",
     "null", "~", "w", "w-1", "a.b", "01team", "a b", "a:b", "-x", "x#y", "é"]
)  # fmt: skip
_KEYS = st.sampled_from(["kind", "kind", "url_env", "dsn_env", "workspace", "other"])
_QUOTE = st.sampled_from(["", "'", '"'])


@st.composite
def _workspace_yaml(draw: st.DrawFn) -> str:
    pairs = draw(st.lists(st.tuples(_KEYS, _WORDS, _QUOTE), min_size=1, max_size=5))
    if draw(st.booleans()):
        pairs = [("kind", "postgres", ""), *pairs[1:]]
    rendered = [f"{k}: {q}{v}{q}" for k, v, q in pairs]
    if draw(st.booleans()):
        store = "store: {" + ", ".join(rendered) + "}\n"
    else:
        store = "store:\n" + "".join(f"  {line}\n" for line in rendered)
    name = draw(st.none() | st.tuples(_WORDS, _QUOTE))
    head = "" if name is None else f"name: {name[1]}{name[0]} team{name[1]}\n"
    return head + store if draw(st.booleans()) else store + head


@given(_workspace_yaml())
def test_the_reader_never_answers_otherwise_than_the_full_validation(text: str) -> None:
    try:
        full = _full(text)
    except yaml.YAMLError:
        full = None
    found = _quick(text)
    assert found is None or found == full, (text, found, full)


def test_a_selection_says_nothing_it_was_not_given() -> None:
    found = read_postgres_selection("store: {kind: postgres, workspace: w}\n")
    assert found == PostgresSelection(url_env=None, workspace="w", name=None)
