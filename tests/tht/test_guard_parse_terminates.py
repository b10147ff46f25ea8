"""The guard's shell lexer always terminates, whatever the agent types (a hook that hangs is a
hook the host times out — and may then let the command run). Found by a differential fuzz of the
guard's refactor: a double-quoted word ending in a backslash looped forever."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from tht.hooks import guard_parse
from tht.hooks.guard_hook import check_tool_call

_CHARS = st.sampled_from(list("ab $`'\"\\(){}[]|&;<>\n\t#=~-*?!EOF"))
_TEXT = st.text(alphabet=_CHARS, max_size=40)
# plain random text, and the shapes that end inside a construct (an open quote, a substitution,
# a trailing backslash): where a lexer's loop has to notice the input ran out
_SHELL = st.one_of(
    _TEXT,
    st.builds(
        lambda a, opener, b: a + opener + b + "\\",
        _TEXT,
        st.sampled_from(['"', "'", "$(", "`", "${"]),
        _TEXT,
    ),
)


@contextmanager
def _at_most(seconds: float) -> Iterator[None]:
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_double_quoted_word_ending_in_a_backslash_terminates() -> None:
    payload = {"tool_name": "Bash", "tool_input": {"command": '|-EOF{))"~\\'}}
    done = subprocess.run(
        [sys.executable, "-m", "tht.hooks.guard_hook"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode == 0


@settings(max_examples=400, deadline=None)
@given(command=_SHELL)
def test_the_lexer_and_the_hook_always_terminate(command: str) -> None:
    with _at_most(2.0):
        with contextlib.suppress(guard_parse.ParseError):
            guard_parse.parse(command)
        check_tool_call({"tool_name": "Bash", "tool_input": {"command": command}})
