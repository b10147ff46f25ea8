"""How the executor words what the database did (never how it decides): the first keyword
behind comments, positions, and the argument checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.database import QueryFailed, binding_from_url, run_read_only
from kernel.database.executor import first_keyword, line_and_column
from kernel.errors import UsageError


@pytest.mark.parametrize(
    ("sql", "keyword"),
    [
        ("select 1", "SELECT"),
        ("  /* a */ -- b\n ((WITH x AS (SELECT 1) SELECT * FROM x))", "WITH"),
        ("/* harmless */ DeLeTe FROM t", "DELETE"),
        ("-- only a comment", ""),
        ("", ""),
        ("/* unterminated", ""),
    ],
)
def test_the_first_keyword_skips_comments_and_parentheses(sql: str, keyword: str) -> None:
    assert first_keyword(sql) == keyword


noise = st.lists(
    st.sampled_from([" ", "\n", "\t", "(", "/* x */", "-- y\n", "/* multi\nline */"]), max_size=6
).map("".join)


@given(noise, st.sampled_from(["SELECT 1", "delete from t", "Insert into t values (1)"]))
def test_comments_and_white_space_never_change_the_keyword(prefix: str, sql: str) -> None:
    assert first_keyword(prefix + sql) == first_keyword(sql)


def test_line_and_column_are_one_based() -> None:
    sql = "SELECT a,\n  nope\nFROM t"
    assert line_and_column(sql, sql.index("nope")) == (2, 3)
    assert line_and_column(sql, 0) == (1, 1)
    assert line_and_column(sql, 10_000) == (3, 7)


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    binding = binding_from_url(tmp_path, "sqlite:///x.db")
    with pytest.raises(UsageError, match="row limit"):
        run_read_only(binding, "SELECT 1", limit=-1, timeout_ms=10)
    with pytest.raises(UsageError, match="timeout"):
        run_read_only(binding, "SELECT 1", limit=1, timeout_ms=0)
    with pytest.raises(QueryFailed, match="empty"):
        run_read_only(binding, " \n ", limit=1, timeout_ms=10)
