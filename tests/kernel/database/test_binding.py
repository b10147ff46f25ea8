"""The Database Binding from workspace.yaml: its rules, its errors (file and field named, exit 2),
and the URL and password that never appear in a display, a repr or an error."""

from __future__ import annotations

import copy
import pickle
import typing
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel import workspace as ws
from kernel import workspace_settings as wss
from kernel.database import DatabaseBinding, binding_from_settings, binding_from_url
from kernel.errors import UsageError

PASSWORD = "s3cr3t-PASS"
PG_URL = f"postgresql://ann:{PASSWORD}@db.example:5432/shop"


def _settings(tmp_path: Path, text: str) -> wss.WorkspaceSettingsView:
    workspace, _ = ws.init_workspace(tmp_path / "w")
    with workspace.settings_file.open("a", encoding="utf-8") as out:
        out.write(text)
    return workspace.settings()


def _bind(
    tmp_path: Path, text: str, environ: dict[str, str] | None = None
) -> DatabaseBinding | None:
    settings = _settings(tmp_path, text)
    root = tmp_path / "w"
    return binding_from_settings(root, root / "workspace.yaml", settings.database, environ or {})


def _usage(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> UsageError:
    with pytest.raises(UsageError) as caught:
        _bind(tmp_path, text, environ)
    assert caught.value.exit_code == 2
    return caught.value


def test_a_workspace_without_database_has_no_binding(tmp_path: Path) -> None:
    assert _bind(tmp_path, "") is None


def test_a_sqlite_url_is_a_file_relative_to_the_workspace(tmp_path: Path) -> None:
    binding = _bind(tmp_path, 'database: {url: "sqlite:///data/shop.db", row_limit: 50}\n')
    assert binding is not None
    assert binding.dialect == "sqlite" and binding.sqlglot_dialect == "sqlite"
    assert binding.sqlite_path == (tmp_path / "w" / "data" / "shop.db").resolve()
    assert binding.display == "sqlite:///data/shop.db" and binding.schema is None
    assert (binding.row_limit, binding.timeout_ms) == (50, 30_000)
    assert not (tmp_path / "w" / "data").exists()  # binding never creates anything


def test_a_postgres_url_comes_from_the_environment(tmp_path: Path) -> None:
    binding = _bind(tmp_path, "database: {url_env: SHOP_DB, schema: sales}\n", {"SHOP_DB": PG_URL})
    assert binding is not None
    assert binding.dialect == "postgresql" and binding.sqlglot_dialect == "postgres"
    assert binding.schema == "sales"
    assert (
        binding.display == "postgresql://ann:***@db.example:5432/shop (schema sales, from $SHOP_DB)"
    )


def test_the_default_postgres_schema_is_public(tmp_path: Path) -> None:
    binding = _bind(tmp_path, "database: {url_env: SHOP_DB}\n", {"SHOP_DB": PG_URL})
    assert binding is not None and binding.schema == "public"


@pytest.mark.parametrize(
    ("text", "field", "says"),
    [
        ("database: {}\n", "database:", "exactly one of url or url_env"),
        ('database: {url: "sqlite:///a.db", url_env: X}\n', "database:", "exactly one"),
        (f'database: {{url: "{PG_URL}"}}\n', "database.url:", "url_env"),
        ('database: {url: "sqlite:///../outside.db"}\n', "database.url:", "outside the workspace"),
        (
            'database: {url: "sqlite:///data/../../x.db"}\n',
            "database.url:",
            "outside the workspace",
        ),
        ('database: {url: "sqlite:///:memory:"}\n', "database.url:", "names no file"),
        ('database: {url: "sqlite://"}\n', "database.url:", "three slashes"),
        ('database: {url: "sqlite:///a.db?mode=rwc"}\n', "database.url:", "query parameters"),
        ('database: {url: "mysql://u@h/db"}\n', "database.url:", "expected sqlite:///PATH"),
        ('database: {url: "sqlite:///a.db", schema: other}\n', "database.schema:", "one schema"),
        (
            "database: {url_env: 'not a name'}\n",
            "database.url_env:",
            "not an environment variable name",
        ),
        ("database: {url_env: X, schema: ''}\n", "database.schema:", "is empty"),
    ],
)
def test_binding_mistakes_name_the_file_and_the_field(
    tmp_path: Path, text: str, field: str, says: str
) -> None:
    err = _usage(tmp_path, text, {"X": PG_URL})
    assert f"workspace.yaml: {field}" in err.message
    assert says in err.message
    assert PASSWORD not in err.message + repr(err.details)


def test_a_postgres_url_in_the_file_is_refused_without_echoing_it(tmp_path: Path) -> None:
    err = _usage(tmp_path, f'database: {{url: "{PG_URL}"}}\n')
    assert "credentials" in err.message and "url_env" in err.message
    assert PASSWORD not in str(err) and "db.example" not in str(err)
    assert err.__context__ is None or PASSWORD not in str(err.__context__)


@pytest.mark.parametrize(
    ("environ", "state"), [({}, "is not set"), ({"SHOP_DB": "  "}, "is empty")]
)
def test_a_missing_environment_variable_is_named(
    tmp_path: Path, environ: dict[str, str], state: str
) -> None:
    err = _usage(tmp_path, "database: {url_env: SHOP_DB}\n", environ)
    assert f"database.url_env: the environment variable SHOP_DB {state}" in err.message


def test_a_malformed_environment_url_names_the_variable_not_its_value(tmp_path: Path) -> None:
    err = _usage(
        tmp_path, "database: {url_env: SHOP_DB}\n", {"SHOP_DB": f"mysql://ann:{PASSWORD}@h/x"}
    )
    assert "$SHOP_DB does not hold" in err.message and PASSWORD not in err.message


def test_an_absolute_sqlite_path_is_an_explicit_choice(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "x.db"
    binding = _bind(tmp_path, f'database: {{url: "sqlite:///{elsewhere}"}}\n')
    assert binding is not None and binding.sqlite_path == elsewhere


def test_the_settings_model_checks_types_and_ranges(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"database\.row_limit"):
        _settings(tmp_path, "database: {url: 'sqlite:///a.db', row_limit: 0}\n")
    with pytest.raises(UsageError, match=r"database\.schema_name|database\.bogus"):
        _settings(tmp_path / "b", "database: {url: 'sqlite:///a.db', bogus: 1}\n")


def test_the_database_settings_view_names_the_models_fields() -> None:
    model = typing.get_args(wss._models().model_fields["database"].annotation)[0]
    view = {n for n, v in vars(wss.DatabaseSettingsView).items() if isinstance(v, property)}
    assert view == set(model.model_fields)


# -- the secret ------------------------------------------------------------------------------


def _pg(url: str = PG_URL) -> DatabaseBinding:
    return binding_from_url(Path("/w"), url, origin="$THT_DATABASE_URL")


def test_repr_str_and_display_are_redacted() -> None:
    binding = _pg()
    for text in (
        repr(binding),
        str(binding),
        binding.display,
        repr(binding._secret),
        f"{binding!r}",
    ):
        assert PASSWORD not in text
    assert "***" in binding.display and "$THT_DATABASE_URL" in binding.display


def test_the_secret_cannot_be_pickled_copied_or_encoded() -> None:
    binding = _pg()
    with pytest.raises(TypeError):
        pickle.dumps(binding)
    with pytest.raises(TypeError):
        copy.deepcopy(binding)
    with pytest.raises(TypeError):
        msgspec.json.encode(binding)


def test_secret_query_parameters_are_hidden_too() -> None:
    binding = _pg(f"postgresql://ann@db/shop?sslmode=require&password={PASSWORD}")
    assert PASSWORD not in binding.display and "sslmode" not in binding.display
    assert binding.scrub(f"libpq said password={PASSWORD}") == "libpq said password=***"


def test_scrub_removes_the_url_and_the_percent_decoded_password() -> None:
    binding = _pg("postgresql://ann:p%40ss-w0rd-long@db/shop")
    assert binding.scrub("bad token p%40ss-w0rd-long and p@ss-w0rd-long\nsecond line") == (
        "bad token *** and *** second line"
    )


@given(
    password=st.text(
        alphabet=st.characters(codec="ascii", categories=("L", "N", "P", "S")),
        min_size=6,
        max_size=24,
    ).filter(lambda p: "@" not in p and "/" not in p and "?" not in p and "#" not in p)
)
def test_no_password_survives_into_display_repr_or_a_scrubbed_message(password: str) -> None:
    url = f"postgresql://ann:{password}@db.example:5432/shop"
    try:
        binding = binding_from_url(Path("/w"), url)
    except ValueError as err:
        assert password not in str(err)
        return
    assert password not in binding.display + repr(binding) + str(binding)
    assert password not in binding.scrub(f"x {url} y {password} z")


def test_a_url_in_the_wrong_place_is_not_echoed_by_the_settings_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        _settings(tmp_path, f'database: "{PG_URL}"\n')
    chain: BaseException | None = caught.value
    while chain is not None:  # what a --debug traceback would print (pydantic elides the
        assert "s3cr3t" not in str(chain)  # middle of a long value: look for a fragment)
        chain = chain.__cause__ or chain.__context__
