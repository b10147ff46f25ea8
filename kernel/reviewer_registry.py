"""The reviewer registry on disk: ``reviewers/ledger.jsonl`` and its writers (ARCHITECTURE §3.9).

The pure side — records, the folded :class:`~kernel.reviewers.RegistryState`, the rules every
entry must pass — is :mod:`kernel.reviewers`; this module reads, verifies and appends the ledger,
checking each signed entry against the folded state under the ledger's lock before it is written.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from kernel.clock import Clock
from kernel.errors import ConflictError, IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.events import Event, EventDraft, Payload, decode_event
from kernel.ledger import Ledger
from kernel.ledger_verify import Problem, VerifyReport, genesis_hash, verify_ledger_bytes
from kernel.ledger_witness import WitnessedLedger, WitnessFile
from kernel.reviewer_events import (
    LedgerStart,
    ReviewerAddedPayload,
    ReviewerRevokedPayload,
    WorkflowApprovedPayload,
)
from kernel.reviewers import REGISTRY_LEDGER_ID, RegistryState, check_entry, fold_registry
from kernel.signing import SigningKey, proof_message

__all__ = ["ReviewerRegistry"]

_VERIFY_ATTEMPTS = 5
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ReviewerRegistry:
    """The registry ledger in ``folder`` (a workspace's ``reviewers/``)."""

    def __init__(self, folder: Path, *, witness: Path | None = None) -> None:
        """``witness``: the registry's witness file (:mod:`kernel.ledger_witness`), a rollback
        tripwire: :meth:`verify` reports a registry that ends before it or holds another line
        there (``rolled_back``), and moves it to the registry's end when it verifies."""
        self.folder = folder
        self.ledger = Ledger(folder / "ledger.jsonl", REGISTRY_LEDGER_ID)
        #: the registry's ledger with its witness (None: no witness kept)
        self.witnessed_ledger = (
            WitnessedLedger(
                self.ledger,
                WitnessFile(witness, REGISTRY_LEDGER_ID),
                label="the reviewer registry",
                remedy="tht reviewer verify --accept-rollback --as human:<id>",
            )
            if witness is not None
            else None
        )

    def exists(self) -> bool:
        """Whether the registry has any entry (an empty file left by a refused first append
        is not a registry)."""
        try:
            return self.ledger.path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def state(self) -> RegistryState:
        """The folded registry (empty when there is none). A line that does not decode raises
        :class:`~kernel.errors.IntegrityError`: nothing may be decided on a damaged registry."""
        return fold_registry(self.ledger.read().events)

    def verify(self) -> VerifyReport:
        """Chain, seq, batches, head anchor (as ``tht ledger verify``) plus every entry the fold
        rejected; ``ok`` is False if there is any problem."""
        if not self.exists():
            deleted = self.witnessed_ledger.problem(0) if self.witnessed_ledger else None
            if deleted is not None:  # it was there: deleted whole, a rollback to nothing
                missing = Problem("missing_ledger", f"{self.ledger.path.name} is missing")
                head = genesis_hash(REGISTRY_LEDGER_ID)
                return VerifyReport(ok=False, events=0, head=head, problems=[missing, deleted])
            raise NotFoundError(
                f"{self.folder}: no reviewer registry; the first reviewer creates it with "
                "`tht reviewer add human:<id>`"
            )
        data, anchor = self._snapshot()
        report = verify_ledger_bytes(
            REGISTRY_LEDGER_ID,
            data,
            anchor,
            anchor_name=self.ledger.head_path.name,
            first_type="reviewer_added",
        )
        problems = list(report.problems)  # a missing anchor is one of them
        decoded = _decodable(data)
        problems.extend(fold_registry(decoded).problems)
        problems.sort(key=lambda p: p.line or 0)
        witnessed = self.witnessed_ledger
        if witnessed is not None:
            rolled = witnessed.problem(decoded[-1].seq if decoded else 0)
            if rolled is not None:
                problems.append(rolled)
            elif not problems:
                witnessed.record()
        return VerifyReport(
            ok=not problems, events=report.events, head=report.head, problems=problems
        )

    def witnessed(self) -> bool:
        """Whether this workspace's tht has verified a registry here (its witness says so)."""
        found = self.witnessed_ledger.witness.read() if self.witnessed_ledger else None
        return found is not None and found.seq > 0

    def _snapshot(self) -> tuple[bytes, tuple[int, str] | None]:
        # the anchor never runs ahead of the ledger: read it before and after the lines
        anchor = self.ledger.read_anchor()
        data = self.ledger.read_bytes()
        for _ in range(_VERIFY_ATTEMPTS):
            again = self.ledger.read_anchor()
            if again == anchor:
                break
            anchor, data = again, self.ledger.read_bytes()
        return data, anchor

    # ------------------------------------------------------------------ writers

    def add_reviewer(
        self,
        new: SigningKey,
        *,
        by: SigningKey | None,
        clock: Clock,
        signed_from: Mapping[str, LedgerStart] | None = None,
    ) -> Event:
        """Append ``reviewer_added`` for ``new``: self-signed when the registry is empty (then
        ``by`` must be None or ``new``), else signed by ``by``, an active member.

        ``signed_from`` (the first reviewer only): where signed mode begins in each
        workspace-level ledger — its last human entry now
        (:func:`kernel.signature_rules.ledger_start`, which ``tht reviewer add`` applies to the
        store's ledgers): a human entry after it must be signed from then on."""
        state = self._writable_state()
        if state.last_seq == 0:
            if by is not None and by.key_id != new.key_id:
                raise PolicyError(
                    "the registry is empty: its first reviewer adds themselves (drop --by)"
                )
            signer = new
        else:
            if by is None:
                raise PolicyError(
                    f"the registry already has reviewers ({', '.join(state.reviewers())}); "
                    "an existing reviewer must add the new one: pass --by human:<id>"
                )
            if signed_from is not None:
                raise PolicyError(
                    "only the registry's first reviewer records where signed mode began; "
                    "nothing was written"
                )
            signer = by
        if new.key_id in state.keys:
            raise PolicyError(f"key {new.key_id} of {new.reviewer} is already in the registry")
        payload = ReviewerAddedPayload(
            reviewer=new.reviewer,
            key_id=new.key_id,
            public_key=new.public_key,
            proof=new.sign(proof_message(new.reviewer, new.key_id)),
            added_by=None if state.last_seq == 0 else signer.reviewer,
            signed_from=None if signed_from is None else dict(signed_from),
        )
        return self._append(state, "reviewer_added", payload, new.reviewer, signer, clock)

    def revoke(
        self,
        reviewer: str,
        key_id: str,
        reason: str,
        *,
        by: SigningKey,
        clock: Clock,
        compromised: bool = False,
    ) -> Event:
        """Append ``reviewer_revoked``; refused when it would leave no active key at all
        (nobody could ever sign the registry again). ``compromised``: retroactive (see
        :class:`~kernel.reviewer_events.ReviewerRevokedPayload`)."""
        state = self._writable_state()
        if not reason.strip():
            raise UsageError("a revocation needs a reason: pass --reason TEXT")
        record = state.keys.get(key_id)
        if record is None or record.reviewer != reviewer:
            mine = [r.key_id for r in state.keys.values() if r.reviewer == reviewer]
            raise NotFoundError(
                f"{reviewer} has no key {key_id} in the registry"
                + (f" (their keys: {', '.join(mine)})" if mine else "")
            )
        if not record.active and not (compromised and not record.compromised):
            raise PolicyError(
                f"key {key_id} was already revoked at {record.revoked_ts}"
                + ("" if record.compromised else " (`--compromised` marks it compromised too)")
            )
        if record.active and not any(r.active for r in state.keys.values() if r.key_id != key_id):
            raise PolicyError(
                f"key {key_id} is the registry's last active key; add another reviewer first"
            )
        payload = ReviewerRevokedPayload(
            reviewer=reviewer, key_id=key_id, reason=reason, compromised=compromised
        )
        return self._append(state, "reviewer_revoked", payload, reviewer, by, clock)

    def approve_workflow(
        self, sha256: str, name: str, version: int, reason: str, *, by: SigningKey, clock: Clock
    ) -> Event:
        """Append ``workflow_approved`` for a workflow file's SHA-256."""
        state = self._writable_state()
        if not _SHA256.match(sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256 in lowercase hex")
        payload = WorkflowApprovedPayload(sha256=sha256, name=name, version=version, reason=reason)
        return self._append(state, "workflow_approved", payload, sha256, by, clock)

    def _writable_state(self) -> RegistryState:
        """The state a write follows: refused on a registry that fails verification."""
        if self.exists():
            report = self.verify()
            if not report.ok:
                first = report.problems[0]
                raise IntegrityError(
                    f"the reviewer registry failed verification ({first.code}: "
                    f"{first.message}); nothing was written. Run `tht reviewer verify`"
                )
        return self.state()

    def _append(
        self,
        state: RegistryState,
        event_type: str,
        payload: Payload,
        subject: str,
        by: SigningKey,
        clock: Clock,
    ) -> Event:
        if state.last_seq:
            self._check_member(state, by)
        draft = EventDraft(type=event_type, actor=by.reviewer, payload=payload, subject=subject)
        self._prepare_files()
        try:
            result = self.ledger.append(
                [draft],
                expected_last_seq=state.last_seq,
                clock=clock,
                signer=_checked_signer(state, by),
            )
        except ConflictError as err:
            raise ConflictError(
                "the reviewer registry changed while this command ran; run it again",
                details=err.details,
            ) from err
        finally:
            self.ledger.close()
        with contextlib.suppress(OSError):
            os.chmod(self.ledger.head_path, 0o600)
        if self.witnessed_ledger is not None:
            self.witnessed_ledger.record()
        return result.events[0]

    @staticmethod
    def _check_member(state: RegistryState, by: SigningKey) -> None:
        record = state.keys.get(by.key_id)
        if record is None or record.public_key != by.public_key or record.reviewer != by.reviewer:
            raise PolicyError(
                f"{by.reviewer}'s key {by.key_id} is not in this workspace's reviewer registry; "
                "an existing reviewer must add it (`tht reviewer add ... --by human:<id>`)"
            )
        if not record.active:
            raise PolicyError(
                f"{by.reviewer}'s key {by.key_id} was revoked at {record.revoked_ts}; "
                "it can no longer sign"
            )

    def _prepare_files(self) -> None:
        """The folder 0700 and the files 0600 before the ledger first opens them (its own
        ``os.open`` would create them 0644)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in (self.ledger.path, self.ledger.lock_path):
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _checked_signer(state: RegistryState, key: SigningKey) -> Callable[[Event], str | None]:
    """Sign the stamped entry, then refuse it (nothing written) if the fold would reject it."""

    def sign(event: Event) -> str | None:
        sig = key.sign_event(event)
        problem = check_entry(state, msgspec.structs.replace(event, sig=sig))
        if problem is not None:
            raise PolicyError(f"refused: {problem.message}; nothing was written")
        return sig

    return sign


def _decodable(data: bytes) -> list[Event]:
    """Every complete line that decodes (the others are already verification problems)."""
    events = []
    for line in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        try:
            events.append(decode_event(line))
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
    return events
