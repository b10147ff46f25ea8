"""``MemoryRegistry``: the Memory registry's ledger, folded — reading, appending, verifying.

- :meth:`MemoryRegistry.load` — what reads show (``tht memory list`` / ``show``): the fold cache
  plus the entries after it when the cache still matches the ledger, else a full fold.
- :meth:`MemoryRegistry.load_for_write` — what every write decides on (promote, forget, a solved
  question, reindex): the ledger verified first (hash chain, anchor, torn tail, signatures), no
  fold problem; refused with exit 7 otherwise, nothing written. Never the fold cache, which
  anyone who can write the workspace's files could have crafted (ARCHITECTURE §3.9 rule 4).
- :meth:`MemoryRegistry.append` — one batch at the expected last seq (a stale writer gets exit
  4), human entries signed in signed mode; the fold cache follows.
- :meth:`MemoryRegistry.verify` — ``tht memory verify``: the ledger's own checks, the fold's
  problems, signatures, and the fold cache compared with a fresh fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernel import events as ev
from kernel.errors import ConflictError, IntegrityError, UsageError
from kernel.ledger_records import Signer
from kernel.ledger_verify import Problem, VerifyReport, genesis_hash, line_hash
from kernel.log import get_logger
from kernel.signature_rules import is_human_actor, signature_problems
from modules.memory.cache import MemoryCache, decode_cache, encode_cache
from modules.memory.capabilities import MemoryCapabilities
from modules.memory.fold import fold_registry, fold_registry_from
from modules.memory.records import MemoryState

__all__ = ["LoadedRegistry", "MemoryRegistry"]

logger = get_logger(__name__)

_SHOWN_PROBLEMS = 5  # problems listed in an IntegrityError's details


@dataclass(frozen=True)
class LoadedRegistry:
    state: MemoryState
    head: str


class MemoryRegistry:
    def __init__(self, caps: MemoryCapabilities) -> None:
        self.caps = caps

    # ------------------------------------------------------------------ reading

    def load(self) -> LoadedRegistry:
        """Display only: nothing decides on it (see :meth:`load_for_write`)."""
        ledger = self.caps.ledger
        cache = decode_cache(self.caps.read_cache())
        if cache is not None and cache.last_seq > 0:
            line = ledger.line_at(cache.last_seq, cache.hint)
            if line is not None and line_hash(line) == cache.head:
                read = ledger.read_after(cache.last_seq, cache.hint)
                if not read.events:
                    return LoadedRegistry(cache.state, cache.head)
                state = fold_registry_from(cache.state, read.events)
                self._write_cache(state)
                return LoadedRegistry(state, read.head)
            logger.debug("memory fold cache at seq %d no longer matches", cache.last_seq)
        read = ledger.read()
        state = fold_registry(read.events)
        if read.events:
            self._write_cache(state)
        return LoadedRegistry(state, read.head)

    def _write_cache(self, state: MemoryState) -> None:
        tail = self.caps.ledger.tail()
        if tail.last_seq != state.last_seq:
            return  # someone appended meanwhile; the next load refreshes
        data = encode_cache(
            MemoryCache(hint=tail.hint, last_seq=tail.last_seq, head=tail.head, state=state)
        )
        if data is not None:
            self.caps.write_cache(data)

    # ------------------------------------------------------------------ writing

    def _fresh(self) -> bool:
        """No registry yet: no line, and nothing acknowledged (an anchor left empty by a first
        append that never completed acknowledges nothing either)."""
        anchor = self.caps.ledger.read_anchor()
        return self.caps.ledger.tail().last_seq == 0 and (anchor is None or anchor[0] <= 0)

    def load_for_write(self) -> LoadedRegistry:
        """The verified registry's state, folded from the verified lines themselves; the fold
        cache is refreshed from it. ``IntegrityError`` (exit 7) naming ``tht memory verify``
        when the ledger, a signature or the fold has a problem."""
        ledger = self.caps.ledger
        if self._fresh() and not ledger.read().torn:
            return LoadedRegistry(MemoryState(), genesis_hash(ledger.session_id))
        report = ledger.verify()
        events = [e for e in report.decoded if e is not None]
        problems = list(report.problems)
        problems += self._signature_problems(events)
        state = fold_registry(events)
        if not report.problems:
            self._write_cache(state)
        problems += [Problem(p.code, p.message, seq=p.seq) for p in state.problems]
        if problems:
            first = problems[0]
            raise IntegrityError(
                f"the memory registry failed verification ({first.code}: {first.message}); "
                "nothing was written. Run `tht memory verify`",
                details={"problems": [p.to_json() for p in problems[:_SHOWN_PROBLEMS]]},
            )
        return LoadedRegistry(state, report.head)

    def _signer(self, drafts: Sequence[ev.EventDraft]) -> Signer | None:
        humans = sorted({d.actor for d in drafts if is_human_actor(d.actor)})
        if not humans:
            return None
        if len(humans) > 1:
            raise UsageError("one command records the decisions of one reviewer")
        return self.caps.signer_for(humans[0])

    def append(self, loaded: LoadedRegistry, drafts: Sequence[ev.EventDraft]) -> LoadedRegistry:
        """Append one batch after ``loaded`` (from :meth:`load_for_write`); the state after it.
        Nothing to append: ``loaded`` itself."""
        if not drafts:
            return loaded
        signer = self._signer(drafts)
        try:
            result = self.caps.ledger.append(
                drafts,
                expected_last_seq=loaded.state.last_seq,
                clock=self.caps.clock,
                signer=signer,
            )
        except ConflictError as err:
            raise ConflictError(
                "the workspace memory changed while this command ran; run it again",
                details=err.details,
            ) from err
        state = fold_registry_from(loaded.state, result.events)
        self._write_cache(state)
        return LoadedRegistry(state, result.head)

    # ------------------------------------------------------------------ verification

    def verify(self) -> VerifyReport:
        report = self.caps.ledger.verify()
        codes = [p.code for p in report.problems]
        if codes == ["missing_ledger"] and self.caps.ledger.read_anchor() is None:
            return VerifyReport(ok=True, events=0, head=report.head)  # no registry yet
        events = [e for e in report.decoded if e is not None]
        problems = list(report.problems)
        state = fold_registry(events)
        problems += [Problem(p.code, p.message, seq=p.seq) for p in state.problems]
        cached = decode_cache(self.caps.read_cache())
        if (
            cached is not None
            and (cached.last_seq, cached.head) == (state.last_seq, report.head)
            and cached.state != state
        ):
            problems.append(
                Problem("fold_cache", "the fold cache disagreed with the registry (rebuilt)")
            )
        if report.ok:
            self._write_cache(state)
        problems += self._signature_problems(events)
        return VerifyReport(
            ok=not problems, events=report.events, head=report.head, problems=problems
        )

    def _signature_problems(self, events: Sequence[ev.Event]) -> list[Problem]:
        return [
            Problem("signature", reason, seq=seq)
            for seq, reason in signature_problems(events, self.caps.human_check, ledger="memory")
        ]
