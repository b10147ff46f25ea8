"""A reviewer's approval of an Evidence generation (modules/evidence/approval.py): in signed mode
a generation goes live only signed by a trusted reviewer, and a search uses it only while that
signature verifies; in every mode a point changed in the vector store is refused, not shown.

Real engines (Qdrant Edge in the workspace, the real BM25 encoder, the hashing embedder) and a
real reviewer registry; what an agent would do is done the way it would do it: rewrite
``generations.json``, re-upsert the points of the active generation with its own text and
vectors computed for that text.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.clock import FixedClock
from kernel.errors import PolicyError
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import SigningKey
from modules.evidence import EvidencePaths, prepare
from modules.evidence.approval import (
    ApprovalProblem,
    DigestTable,
    approval_message,
    check_approval,
    check_points,
    digests_path,
    load_digests,
    point_digest,
)
from modules.evidence.capabilities import EvidenceCapabilities
from modules.evidence.catalog import load_evidence
from modules.evidence.generations import (
    GENERATIONS_FILE,
    GenerationState,
    load_generation_state,
    save_generation_state,
)
from modules.evidence.index import fragments_of, write_generation
from modules.evidence.publish import publish
from modules.evidence.query_text import evidence_query_text
from modules.evidence.search import search_evidence
from tests.modules.evidence.conftest import snapshot
from tests.modules.evidence.conftest_index import Engines

ANN = "human:ann"
ANN_KEY = SigningKey(ANN, Ed25519PrivateKey.from_private_bytes(bytes([1]) * 32))
BOB_KEY = SigningKey("human:bob", Ed25519PrivateKey.from_private_bytes(bytes([2]) * 32))
EVE = "human:eve"  # a key nobody registered (an agent's own)
EVE_KEY = SigningKey(EVE, Ed25519PrivateKey.from_private_bytes(bytes([9]) * 32))
QUERY = "Tasso di occupazione dei posti letto"


@pytest.fixture
def registry(tmp_path: Path) -> ReviewerRegistry:
    found = ReviewerRegistry(tmp_path / "reviewers")
    found.add_reviewer(ANN_KEY, by=None, clock=FixedClock())
    return found


def _signed(engines: Engines, registry: ReviewerRegistry, approver: SigningKey | None = None):
    """The capabilities of a signed workspace (``approver``: a reviewer publishing)."""
    return dataclasses.replace(
        engines.caps(),
        approval_required=True,
        check_signature=registry.state().signature_valid,
        approver=approver,
    )


def _find(caps: EvidenceCapabilities):  # type: ignore[no-untyped-def]
    return search_evidence(caps, evidence_query_text(QUERY), purpose="schema_linking")


def _active(paths: EvidencePaths):  # type: ignore[no-untyped-def]
    active = load_generation_state(paths.state_dir).active
    assert active is not None
    return active


def test_a_signed_workspace_refuses_a_publish_without_a_reviewer_and_writes_nothing(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry
) -> None:
    prepare(paths, max_chunk_chars=4000)
    before = snapshot(paths.root)
    with pytest.raises(PolicyError, match="reviewer's approval"):
        publish(_signed(engines, registry))
    assert snapshot(paths.root) == before  # not even the reconciled manifest
    assert not (paths.state_dir / GENERATIONS_FILE).exists()
    assert _find(_signed(engines, registry)).reason == "missing"


def test_a_reviewer_s_publish_is_signed_and_searched_while_the_signature_verifies(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry
) -> None:
    prepare(paths, max_chunk_chars=4000)
    report = publish(_signed(engines, registry, ANN_KEY))
    record = report.generation
    assert report.status == "activated"
    assert record.approval is not None and record.approval.reviewer == ANN
    assert record.approval.approved_at == "2026-01-01T00:00:00Z"
    assert record.digests is not None and record.digests["fragments"] == record.fragments
    table = load_digests(paths.state_dir, record)
    assert table is not None and table.rows == record.fragments
    at = record.approval.approved_at
    message = approval_message(record, ANN, at)
    assert registry.state().signature_valid(ANN, message, record.approval.sig, at)
    found = _find(_signed(engines, registry))
    assert (
        found.status == "available" and found.results[0].unit_id == "evidence:tasso-di-occupazione"
    )
    shown = record.to_json()
    assert shown["approval"]["reviewer"] == ANN and shown["digests"] == record.digests
    # nothing changed, the approval verifies: nothing is built again
    assert publish(_signed(engines, registry, ANN_KEY)).status == "unchanged"


def test_a_generation_published_unsigned_is_not_searched_once_the_workspace_is_signed(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry
) -> None:
    prepare(paths, max_chunk_chars=4000)
    first = publish(engines.caps()).generation  # the agent's publish, or one before signed mode
    assert first.approval is None
    found = _find(_signed(engines, registry))
    assert (found.status, found.reason, found.results) == ("unavailable", "unapproved", ())
    assert "tht evidence publish --as human:<id>" in (found.warning or "")
    assert _find(engines.caps()).status == "available"  # unsigned: no approval required
    # the reviewer's publish of the same content approves a new generation
    second = publish(_signed(engines, registry, ANN_KEY))
    assert second.status == "activated" and second.generation.number == first.number + 1
    assert _find(_signed(engines, registry)).status == "available"


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda r: {**r, "fusion": {**r["fusion"], "k": 1}}, id="another-fusion"),
        pytest.param(lambda r: {**r, "approval": {**r["approval"], "reviewer": EVE}}, id="signer"),
        pytest.param(
            lambda r: {**r, "approval": {**r["approval"], "approved_at": "2020-01-01T00:00:00Z"}},
            id="approved-at",
        ),
        pytest.param(
            lambda r: {**r, "digests": {**r["digests"], "sha256": "0" * 64}},
            id="digests",
        ),
        pytest.param(lambda r: {**r, "approval": None}, id="approval-removed"),
    ],
)
def test_a_hand_edited_record_is_unapproved(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry, edit
) -> None:  # type: ignore[no-untyped-def]
    prepare(paths, max_chunk_chars=4000)
    publish(_signed(engines, registry, ANN_KEY))
    file = paths.state_dir / GENERATIONS_FILE
    state = json.loads(file.read_bytes())
    state["active"] = edit(state["active"])
    file.write_text(json.dumps(state), encoding="utf-8")
    found = _find(_signed(engines, registry))
    assert (found.status, found.reason) == ("unavailable", "unapproved")


def test_a_key_the_registry_does_not_trust_is_refused_and_the_candidate_deleted(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry
) -> None:
    prepare(paths, max_chunk_chars=4000)
    publish(_signed(engines, registry, ANN_KEY))
    approved = _active(paths)
    (paths.sources_dir / "extra.md").write_text("Una nuova regola sulle dimissioni.\n", "utf-8")
    prepare(paths, max_chunk_chars=4000)
    for key in (EVE_KEY, ANN_KEY):  # an unregistered key; then ann's, revoked
        if key is ANN_KEY:
            registry.add_reviewer(BOB_KEY, by=ANN_KEY, clock=FixedClock())
            registry.revoke(ANN, ANN_KEY.key_id, "left", by=BOB_KEY, clock=FixedClock())
        with pytest.raises(PolicyError, match="cannot approve evidence"):
            publish(_signed(engines, registry, key))
        assert _active(paths) == approved  # the active generation is unchanged
        from kernel.vectors import VectorFilter

        store = engines.open_store()
        assert store.count(VectorFilter(kind="evidence")) == approved.fragments + 1


def _tamper(engines: Engines, paths: EvidencePaths, text: str) -> str:
    """Re-upsert the active generation's first fragment with ``text``: its own point id, its
    vectors computed for the new text (an agent with the Qdrant folder and this package)."""
    active = _active(paths)
    loaded = load_evidence(paths, max_chunk_chars=4000)
    items = fragments_of(loaded.state.publishable, 4000)
    target = next(i for i in items if i.unit.id == "evidence:tasso-di-occupazione")
    forged = dataclasses.replace(target.fragment, text=text, rendered=f"{QUERY}\n{text}")
    write_generation(
        engines.open_store(),
        engines.embedder,
        engines.bm25,
        [dataclasses.replace(target, fragment=forged)],
        active.id,
    )
    return target.fragment.id


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_a_point_rewritten_in_the_vector_store_makes_the_search_unavailable(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry, signed: bool
) -> None:
    prepare(paths, max_chunk_chars=4000)
    caps = _signed(engines, registry, ANN_KEY) if signed else engines.caps()
    publish(caps)
    assert _find(caps).status == "available"
    fragment = _tamper(engines, paths, "Tasso di occupazione: conta anche i letti chiusi.")
    found = _find(caps)
    assert (found.status, found.reason, found.results) == ("unavailable", "tampered", ())
    assert fragment in (found.warning or "")
    # the record cannot be made to agree: its digests are signed (signed mode) — and a
    # republish rebuilds the index from the units
    assert publish(caps).status == "activated"
    assert _find(caps).status == "available"


def test_a_record_from_before_digests_checks_no_point(
    paths: EvidencePaths, engines: Engines
) -> None:
    prepare(paths, max_chunk_chars=4000)
    publish(engines.caps())
    state = load_generation_state(paths.state_dir)
    assert state.active is not None
    old = msgspec.structs.replace(state.active, digests=None)
    save_generation_state(paths.state_dir, msgspec.structs.replace(state, active=old))
    assert _find(engines.caps()).status == "available"
    with pytest.raises(ApprovalProblem, match="no reviewer's approval"):
        check_approval(old, lambda *a: True)  # and signed mode never accepts it


_SCALARS = st.one_of(st.text(max_size=20), st.integers(), st.booleans())


@settings(max_examples=200, deadline=None)
@given(
    payload=st.dictionaries(st.text(min_size=1, max_size=10), _SCALARS, min_size=1, max_size=8),
    data=st.data(),
)
def test_any_change_to_a_point_payload_is_refused_and_key_order_never_matters(
    payload: dict[str, object], data: st.DataObject
) -> None:
    """``check_points`` accepts a payload exactly when it is the recorded one (but ``kind``,
    the store's own filter key), in any key order."""
    from modules.evidence.generations import GenerationRecord

    payload = {**payload, "fragment_id": "evidence:a#0"}
    record = GenerationRecord(
        id="g1-x",
        number=1,
        created_at="t",
        fingerprint="f",
        embedder="e",
        dense_size=1,
        bm25="b",
        units=1,
        fragments=1,
    )
    table = DigestTable.build({"evidence:a#0": point_digest(payload), "evidence:b#1": "1" * 64})
    reordered = dict(reversed(list(payload.items())))
    check_points(record, table, [reordered, {**payload, "kind": "evidence"}])
    key = data.draw(st.sampled_from(sorted(payload)))
    old = payload[key]
    value = data.draw(_SCALARS.filter(lambda v: v != old or type(v) is not type(old)))
    changed = {**payload, key: value}
    with pytest.raises(ApprovalProblem) as raised:
        check_points(record, table, [changed])
    assert raised.value.reason == "tampered"


def test_an_old_approved_record_put_back_is_stale_not_searched(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry
) -> None:
    """A rollback of the record to an older approved generation: its points were deleted when
    the newer one went live, so the search finds it stale (docs/security.md: rollbacks)."""
    prepare(paths, max_chunk_chars=4000)
    publish(_signed(engines, registry, ANN_KEY))
    old = (paths.state_dir / GENERATIONS_FILE).read_bytes()
    (paths.sources_dir / "extra.md").write_text("Una nuova regola sulle dimissioni.\n", "utf-8")
    prepare(paths, max_chunk_chars=4000)
    assert publish(_signed(engines, registry, ANN_KEY)).status == "activated"
    (paths.state_dir / GENERATIONS_FILE).write_bytes(old)
    found = _find(_signed(engines, registry))
    assert (found.status, found.reason) == ("unavailable", "stale")
    assert isinstance(load_generation_state(paths.state_dir), GenerationState)


@pytest.mark.parametrize("damage", ["removed", "changed", "symlink"])
def test_a_digest_table_that_is_not_the_recorded_one_is_tampered(
    paths: EvidencePaths, engines: Engines, damage: str
) -> None:
    """Unsigned mode too: the table is checked against the record's SHA-256 before a point is
    looked up; an agent that rewrites a point and its row still has to rewrite the record."""
    prepare(paths, max_chunk_chars=4000)
    record = publish(engines.caps()).generation
    path = digests_path(paths.state_dir, record.id)
    if damage == "removed":
        path.unlink()
    elif damage == "changed":
        data = bytearray(path.read_bytes())
        data[-1] ^= 1
        path.write_bytes(bytes(data))
    else:
        copy = path.with_name("copy.bin")
        path.rename(copy)
        path.symlink_to(copy)
    found = _find(engines.caps())
    assert (found.status, found.reason, found.results) == ("unavailable", "tampered", ())
    assert "digest table" in (found.warning or "")
    rebuilt = publish(engines.caps())  # not `unchanged`: the next publish rebuilds it
    assert rebuilt.status == "activated" and _find(engines.caps()).status == "available"
    assert sorted(p.name for p in path.parent.iterdir()) == [f"{rebuilt.generation.id}.bin"]


def test_the_digest_table_finds_every_fragment_and_nothing_else() -> None:
    digests = {f"evidence:u{i}#{i % 3}": f"{i:064x}" for i in range(500)}
    table = DigestTable.build(digests)
    assert table.rows == 500
    assert all(table.get(fid) == digest for fid, digest in digests.items())
    assert table.get("evidence:u1#2") is None and table.get("") is None
    with pytest.raises(ValueError, match="whole number of rows"):
        DigestTable(table.data[:-1])


def test_a_fragment_deleted_from_the_vector_store_is_not_silently_missing(
    paths: EvidencePaths, engines: Engines, registry: ReviewerRegistry
) -> None:
    """Signed mode: hiding a unit (deleting its points) would change what a reviewer is shown
    as much as rewriting it: the search counts the generation's points against its record."""
    from kernel.vectors import VectorFilter

    prepare(paths, max_chunk_chars=4000)
    caps = _signed(engines, registry, ANN_KEY)
    publish(caps)
    engines.open_store().delete(
        VectorFilter(kind="evidence", match={"unit_id": "evidence:tasso-di-occupazione"})
    )
    found = _find(caps)
    assert (found.status, found.reason, found.results) == ("unavailable", "tampered", ())
    assert "were deleted or added" in (found.warning or "")
    assert publish(caps).status == "activated" and _find(caps).status == "available"
