"""Replay against the strongest attacker: a legal ledger (built through the kernel) is mutated —
a line deleted, two swapped, one duplicated, an earlier event re-inserted, an actor, stage or
constrained payload field changed — then every seq renumbered, every ``prev`` recomputed and the
head anchor moved to match. ``WorkflowKernel.verify`` must still report a problem, unless the
result is byte-identical to the original or is honestly legal (a prefix ending on a batch
boundary: removing the final commands leaves a history a legal run could have written).

And: whatever bytes sit in the status cache, ``kernel.load(session).state`` is the fold of the
ledger."""

from __future__ import annotations

import shutil
import tempfile
from functools import cache
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.fold import fold
from kernel.store.fs import FileSystemStore
from kernel.workflow_kernel import WorkflowKernel
from tests.adversarial.test_ledger_forgery import read_events, write_chained
from tests.golden import scenarios as sc

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
SCENARIOS = ("happy_path", "reopen_stale", "retraction")
_TOP = Path(tempfile.mkdtemp(prefix="tht-replay-props-"))


@cache
def built(name: str) -> tuple[Path, str, bytes]:
    """A workspace with the scenario's session (built once per process)."""
    root = _TOP / "base" / name
    run = sc.make_kernel(root)
    sc.SCENARIOS[name](run)
    ledger = run.workspace.sessions_dir / run.session / "ledger.jsonl"
    return root, run.session, ledger.read_bytes()


def kernel_at(root: Path) -> WorkflowKernel:
    cache_dir = root / ".tht" / "cache"
    return WorkflowKernel(
        FileSystemStore(root / "sessions", cache_dir),
        clock=FixedClock(),
        ids=SeededIds(42),
        workflow_cache=cache_dir,
    )


_COUNTER = iter(range(10**9))


def fresh_copy(name: str) -> tuple[Path, str]:
    root, session, _ = built(name)
    dest = _TOP / "runs" / str(next(_COUNTER))
    shutil.copytree(root, dest)
    return dest, session


# --------------------------------------------------------------------------- mutations

ACTORS = ("agent", "kernel", "human:ann", "module:disambiguation")
STAGES = (None, "admission", "disambiguation", "rewriting", "sql", "finalize")


def _retype(value: object, draw_int: int) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 + draw_int
    if isinstance(value, str):
        return value + "-forged"
    if isinstance(value, tuple):
        return (*value, "forged") if not value or isinstance(value[0], str) else value[:-1]
    return value


class Mutated:
    def __init__(self, kind: str, index: int, events: list[ev.Event], desc: list[object]) -> None:
        self.kind, self.index, self.events, self.desc = kind, index, events, desc

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example
        return f"Mutated({self.kind} at line {self.index + 1}: {self.desc})"


@st.composite
def mutation(draw: st.DrawFn, events: list[ev.Event]) -> Mutated:
    n = len(events)
    kind = draw(
        st.sampled_from(["delete", "swap", "duplicate", "actor", "stage", "payload", "insert"])
    )
    out = list(events)
    i = draw(st.integers(1, n - 1))  # never the first line (session_created seeds everything)
    desc: list[object] = [ev.info_of(out[i]).type, out[i].actor, out[i].stage]
    if kind == "delete":
        del out[i]
    elif kind == "swap":
        j = draw(st.integers(1, n - 1).filter(lambda j: j != i))
        out[i], out[j] = out[j], out[i]
        desc += ["with", j + 1, ev.info_of(out[i]).type]
    elif kind == "duplicate":
        out.insert(i + 1, out[i])
    elif kind == "insert":
        j = draw(st.integers(i + 1, n))
        out.insert(j, out[i])
        desc += ["at", j + 1]
    elif kind == "actor":
        actor = draw(st.sampled_from([a for a in ACTORS if _role(a) != _role(out[i].actor)]))
        out[i] = msgspec.structs.replace(out[i], actor=actor)
        desc += ["->", actor]
    elif kind == "stage":
        stage = draw(st.sampled_from([s for s in STAGES if s != out[i].stage]))
        out[i] = msgspec.structs.replace(out[i], stage=stage)
        desc += ["->", stage]
    else:
        fields = [f for f in msgspec.structs.fields(out[i].payload) if _constrained(out[i], f.name)]
        if not fields:
            kind = "payload-none"
        else:
            field = draw(st.sampled_from(fields)).name
            value = getattr(out[i].payload, field)
            new = _retype(value, draw(st.integers(0, 3)))
            if field == "via":
                new = draw(st.sampled_from([v for v in ("auto", "review", "kernel") if v != value]))
            try:
                payload = msgspec.structs.replace(out[i].payload, **{field: new})
                out[i] = msgspec.structs.replace(out[i], payload=payload)
                desc += [field, value, "->", new]
            except (TypeError, msgspec.ValidationError):
                kind = "payload-none"
    renumbered = [msgspec.structs.replace(e, seq=k) for k, e in enumerate(out, start=1)]
    return Mutated(kind, i, renumbered, desc)


def _role(actor: str) -> str:
    """Who may write an event: ``agent`` and ``module:<name>`` both apply module outcomes, so
    trading one for the other is a legal history (not a forgery replay can see)."""
    kind = actor.split(":")[0]
    return "outcome" if kind in ("agent", "module") else kind


def _constrained(event: ev.Event, field: str) -> bool:
    """Payload fields a legal command fixes: the answer to a review (its choice/approval), how a
    stage completed, and decisions recorded from a chosen option (which must equal the option)."""
    if isinstance(event, ev.ReviewAnswered):
        return field in ("choice", "approved")
    if isinstance(event, ev.StageCompleted):
        return field == "via"
    info = ev.info_of(event)
    return (
        info.category == "decision"
        and event.causation is not None
        and event.actor.startswith("human:")
    )


_REQUESTS = (ev.ReviewRequested, ev.RevisionRequested)


def _excluded(original: list[ev.Event], m: Mutated) -> bool:
    """Mutations whose result is a legal history."""
    event = original[m.index]
    # an agent may ask again while a request is open (the kernel accepts it)
    return m.kind in ("duplicate", "insert") and isinstance(event, _REQUESTS)


def _legal_prefix(original: list[ev.Event], mutated: list[ev.Event]) -> bool:
    k = len(mutated)
    return (
        k < len(original)
        and [ev.encode_event(e) for e in original[:k]] == [ev.encode_event(e) for e in mutated]
        and original[k - 1].batch_left == 0
    )


@SETTINGS
@given(data=st.data(), name=st.sampled_from(SCENARIOS))
def test_a_rechained_mutation_never_verifies(data: st.DataObject, name: str) -> None:
    root, session, original_bytes = built(name)
    original = read_events(root / "sessions" / session / "ledger.jsonl")
    m = data.draw(mutation(original), label="mutation")
    kind, i, mutated = m.kind, m.index, m.events
    if kind == "payload-none":
        return
    dest, _ = fresh_copy(name)
    written = write_chained(dest / "sessions" / session, session, mutated)
    if written == original_bytes or _legal_prefix(original, mutated) or _excluded(original, m):
        return
    report = kernel_at(dest).verify(session)
    near = [(e.seq, ev.info_of(e).type, e.actor, e.stage) for e in mutated[max(0, i - 1) : i + 3]]
    assert not report.ok, (m, near)


@SETTINGS
@given(
    name=st.sampled_from(SCENARIOS),
    junk=st.one_of(
        st.binary(min_size=0, max_size=2048),
        st.binary(min_size=1, max_size=64).map(lambda b: b"\x89" + b),
    ),
)
def test_status_cache_bytes_never_change_the_loaded_state(name: str, junk: bytes) -> None:
    dest, session = fresh_copy(name)
    kernel = kernel_at(dest)
    ledger = dest / "sessions" / session / "ledger.jsonl"
    if name == "torn_tail":  # pragma: no cover - not sampled
        return
    truth = kernel.load(session)
    cache_file = dest / ".tht" / "cache" / "status" / f"{session}.msgpack"
    assert cache_file.exists()
    cache_file.write_bytes(junk)
    loaded = kernel_at(dest).load(session)
    expected = fold(loaded.workflow, read_events(ledger))
    assert loaded.state == expected == truth.state


# --------------------------------------------------------------------------- pinned findings


def _mutated_verifies(name: str, edit) -> tuple[bool, list]:
    root, session, _ = built(name)
    original = read_events(root / "sessions" / session / "ledger.jsonl")
    mutated = [msgspec.structs.replace(e, seq=k) for k, e in enumerate(edit(original), start=1)]
    dest, _ = fresh_copy(name)
    write_chained(dest / "sessions" / session, session, mutated)
    report = kernel_at(dest).verify(session)
    return report.ok, report.problems


def _reopen_index(events: list[ev.Event]) -> int:
    return next(i for i, e in enumerate(events) if isinstance(e, ev.StageReopened))


def test_a_reopen_whose_answer_was_deleted_is_caught() -> None:
    def edit(events: list[ev.Event]) -> list[ev.Event]:
        i = _reopen_index(events)
        assert isinstance(events[i - 1], ev.ReviewAnswered)
        return events[: i - 1] + events[i:]

    ok, problems = _mutated_verifies("reopen_stale", edit)
    assert not ok, problems


def test_a_second_stage_reopened_answering_nothing_is_caught() -> None:
    def edit(events: list[ev.Event]) -> list[ev.Event]:
        i = _reopen_index(events)
        return [*events[: i + 1], events[i], *events[i + 1 :]]

    ok, problems = _mutated_verifies("reopen_stale", edit)
    assert not ok, problems


@pytest.mark.parametrize("stage", ["sql", "finalize", None])
def test_a_retraction_with_a_forged_stage_is_caught(stage: str | None) -> None:
    def edit(events: list[ev.Event]) -> list[ev.Event]:
        i = next(i for i, e in enumerate(events) if isinstance(e, ev.DecisionRetracted))
        return [*events[:i], msgspec.structs.replace(events[i], stage=stage), *events[i + 1 :]]

    ok, problems = _mutated_verifies("retraction", edit)
    assert not ok, problems
