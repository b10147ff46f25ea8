"""The Disambiguation → Memory contract (spec 001 §6.3, ARCHITECTURE §4.3), tested on both sides.

``kernel.memory_events.MEMORY_CONTRACT`` names the session decisions Memory reuses and the fields
it reads. A change on either side — Disambiguation's payload losing or retyping a field, Memory
reading a field the contract does not name, the contract itself changing without a new version —
fails here."""

from __future__ import annotations

import msgspec

from kernel import events as ev
from kernel.fold import DecisionRecord
from kernel.memory_events import MEMORY_CONTRACT

PINNED = {
    "version": 1,
    "reusable": {"concept_clarified": ["meaning", "target"]},
    "envelope": ["seq", "subject", "stage", "actor"],
}


def test_the_contract_is_pinned() -> None:
    """Changing what Memory reuses is a new contract version, on purpose."""
    shown = {
        "version": MEMORY_CONTRACT.version,
        "reusable": {k: list(v) for k, v in MEMORY_CONTRACT.reusable.items()},
        "envelope": list(MEMORY_CONTRACT.envelope),
    }
    assert shown == PINNED


def test_disambiguation_side_every_reusable_type_carries_the_fields() -> None:
    for kind, fields in MEMORY_CONTRACT.reusable.items():
        info = ev.EVENT_TYPES[kind]
        assert info.owner == "disambiguation" and info.category == "decision"
        assert kind in ev.HUMAN_DECISION_TYPES  # Memory reuses only what a human decided
        declared = {f.name: f for f in msgspec.structs.fields(info.payload)}
        for name in fields:
            assert name in declared, f"{kind} lost {name!r}: Memory reads it"
    types = {f.name: f.type for f in msgspec.structs.fields(ev.ConceptClarifiedPayload)}
    assert types["meaning"] is str
    assert types["target"] == (str | None)
    envelope = {f.name for f in msgspec.structs.fields(ev.ConceptClarified)}
    assert set(MEMORY_CONTRACT.envelope) <= envelope


class _Recorder:
    """A payload that records which fields are read."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def __getattr__(self, name: str) -> object:
        self.read.append(name)
        return "x" if name == "meaning" else None


def test_memory_side_reads_only_the_contracts_fields() -> None:
    from modules.memory.candidates import _read

    recorder = _Recorder()

    class _Event:
        payload = recorder

    record = DecisionRecord(
        seq=8,
        type="concept_clarified",
        stage="disambiguation",
        subject="ablazione",
        status="effective",
        event=_Event(),  # type: ignore[arg-type]
    )
    fields = _read(record)
    assert sorted(recorder.read) == sorted(MEMORY_CONTRACT.reusable["concept_clarified"])
    assert set(fields) == set(MEMORY_CONTRACT.reusable["concept_clarified"])


def test_memory_promotes_only_reusable_types() -> None:
    """A candidate is never built from a decision type outside the contract."""
    from modules.memory import candidates

    assert set(MEMORY_CONTRACT.reusable) == {"concept_clarified"}
    from pathlib import Path

    text = Path(candidates.__file__ or "").read_text(encoding="utf-8")
    assert "MEMORY_CONTRACT.reusable" in text
