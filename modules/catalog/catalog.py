"""``Catalog``: the Metadata Catalog's ledger, folded — reading, appending, verifying.

- :meth:`Catalog.load` — what reads show (``show``, ``relationships``, ``status``, the display
  SchemaView): in signed mode the verified ledger (:meth:`load_for_write`); else the fold cache
  plus the events after it when the cache still matches the ledger, else a full fold.
- :meth:`Catalog.load_for_write` — what every write decides on: the ledger verified first (hash
  chain, anchor, torn tail, signatures), no fold problem; refused with exit 7 otherwise, nothing
  written.
- :meth:`Catalog.append` — one batch at the expected last seq (a stale writer gets exit 4),
  human entries signed in signed mode; the fold cache follows.
- :meth:`Catalog.verify` — ``tht catalog verify``: the ledger's own checks, every snapshot
  loaded, the fold's problems, signatures, and the fold cache compared with a fresh fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernel import events as ev
from kernel.database.types import Introspection
from kernel.errors import ConflictError, IntegrityError, NotFoundError
from kernel.ledger_records import Signer
from kernel.ledger_verify import Problem, VerifyReport, genesis_hash, line_hash
from kernel.signature_rules import is_human_actor, signature_problems
from modules.catalog.cache import CatalogCache, decode_cache, encode_cache
from modules.catalog.capabilities import CatalogCapabilities
from modules.catalog.catalog_schema_view import CatalogSchemaView
from modules.catalog.fold import fold_catalog, fold_catalog_from
from modules.catalog.records import CatalogState
from modules.catalog.snapshots import decode_introspection

__all__ = ["Catalog", "LoadedCatalog"]

_SNAPSHOT_MEMO = 4  # decoded snapshots kept per process (an unchanged resync reuses its own)


@dataclass(frozen=True)
class LoadedCatalog:
    state: CatalogState
    head: str


class Catalog:
    def __init__(self, caps: CatalogCapabilities) -> None:
        self.caps = caps
        self._snapshots: dict[str, Introspection] = {}

    # ------------------------------------------------------------------ snapshots

    def load_snapshot(self, sha256: str) -> Introspection:
        found = self._snapshots.get(sha256)
        if found is not None:
            return found
        try:
            data = self.caps.get_object(sha256)
        except NotFoundError as err:
            raise IntegrityError(
                f"catalog snapshot {sha256[:12]}… is missing; run `tht catalog verify`"
            ) from err
        snapshot = decode_introspection(data, sha256)
        if len(self._snapshots) >= _SNAPSHOT_MEMO:
            self._snapshots.pop(next(iter(self._snapshots)))
        self._snapshots[sha256] = snapshot
        return snapshot

    def remember_snapshot(self, sha256: str, snapshot: Introspection) -> None:
        """A snapshot just stored by this process (no need to read it back)."""
        self._snapshots[sha256] = snapshot

    # ------------------------------------------------------------------ reading

    def load(self) -> LoadedCatalog:
        """The catalog for display. In signed mode it is :meth:`load_for_write` — the verified
        ledger, exit 7 when it does not verify — never the fold cache: a reviewer reads this
        before curating (``show``, ``tht sql check``'s sensitive columns, schema linking), and
        anyone with the user's account can rewrite the cache with the ledger's real head and a
        state of their own (flags cleared, a "human" Description forged). Unsigned, the cache
        serves (an agent can write legal-looking curation there anyway)."""
        if self.caps.signed():
            return self.load_for_write()
        return self._load_cached()

    def _load_cached(self) -> LoadedCatalog:
        ledger = self.caps.ledger
        cache = decode_cache(self.caps.read_cache())
        if cache is not None and cache.last_seq > 0:
            line = ledger.line_at(cache.last_seq, cache.hint)
            if line is not None and line_hash(line) == cache.head:
                read = ledger.read_after(cache.last_seq, cache.hint)
                if not read.events:
                    return LoadedCatalog(cache.state, cache.head)
                state = fold_catalog_from(cache.state, read.events, self.load_snapshot)
                self._write_cache(state)
                return LoadedCatalog(state, read.head)
        read = ledger.read()
        state = fold_catalog(read.events, self.load_snapshot)
        if read.events:
            self._write_cache(state)
        return LoadedCatalog(state, read.head)

    def schema_view(self, *, verified: bool = False) -> CatalogSchemaView | None:
        """The SchemaView of the catalog; None when no sync ever completed. ``verified``: from
        the verified ledger (:meth:`load_for_write`), for a command that decides on it (a
        proposal's SQL check, the snapshot a session records) or writes a projection from it
        (the schema index); else the display path (:meth:`load`)."""
        loaded = self.load_for_write() if verified else self.load()
        if not loaded.state.synced:
            return None
        return CatalogSchemaView(loaded.state, loaded.head)

    def _write_cache(self, state: CatalogState) -> None:
        tail = self.caps.ledger.tail()
        if tail.last_seq != state.last_seq or state.batch is not None:
            return  # someone appended meanwhile; the next load refreshes
        data = encode_cache(
            CatalogCache(hint=tail.hint, last_seq=tail.last_seq, head=tail.head, state=state)
        )
        if data is not None:
            self.caps.write_cache(data)

    # ------------------------------------------------------------------ writing

    def _fresh(self) -> bool:
        """No ledger yet: no line, and nothing acknowledged (an anchor file left empty by a
        first append that never completed acknowledges nothing either)."""
        anchor = self.caps.ledger.read_anchor()
        return self.caps.ledger.tail().last_seq == 0 and (anchor is None or anchor[0] <= 0)

    def load_for_write(self) -> LoadedCatalog:
        """The verified ledger's state: its chain, anchor and signatures checked, and folded
        from the verified lines themselves — never from the fold cache, which anyone who can
        write the workspace's files could have crafted (ARCHITECTURE §3.9 rule 4: what a
        command decides on comes from the verified ledger). The cache is refreshed from it."""
        if self._fresh() and not self.caps.ledger.read().torn:
            return LoadedCatalog(CatalogState(), genesis_hash(self.caps.ledger.session_id))
        report = self.caps.ledger.verify()
        events = [e for e in report.decoded if e is not None]
        problems = list(report.problems)
        problems += self.signature_problems(events)
        state = fold_catalog(events, self.load_snapshot)
        if not report.problems:
            self._write_cache(state)
        loaded = LoadedCatalog(state, report.head)
        problems += [Problem(p.code, p.message, seq=p.seq) for p in loaded.state.problems]
        if problems:
            first = problems[0]
            raise IntegrityError(
                f"the catalog ledger failed verification ({first.code}: {first.message}); "
                "nothing was written. Run `tht catalog verify`",
                details={"problems": [p.to_json() for p in problems[:5]]},
            )
        return loaded

    def _signer(self, drafts: Sequence[ev.EventDraft]) -> Signer | None:
        humans = sorted({d.actor for d in drafts if is_human_actor(d.actor)})
        if not humans:
            return None
        if len(humans) > 1:
            from kernel.errors import UsageError

            raise UsageError("one command records the decisions of one reviewer")
        return self.caps.signer_for(humans[0])

    def append(self, loaded: LoadedCatalog, drafts: Sequence[ev.EventDraft]) -> LoadedCatalog:
        """Append one batch after ``loaded``; the state after it."""
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
                "the catalog changed while this command ran; run it again", details=err.details
            ) from err
        state = fold_catalog_from(loaded.state, result.events, self.load_snapshot)
        self._write_cache(state)
        return LoadedCatalog(state, result.head)

    # ------------------------------------------------------------------ verification

    def verify(self) -> VerifyReport:
        report = self.caps.ledger.verify()
        events = [e for e in report.decoded if e is not None]
        problems = list(report.problems)
        state: CatalogState | None
        try:
            state = fold_catalog(events, self.load_snapshot)
        except IntegrityError as err:
            problems.append(Problem("snapshot", err.message))
            state = None
        if state is not None:
            problems += [Problem(p.code, p.message, seq=p.seq) for p in state.problems]
            cached = decode_cache(self.caps.read_cache())
            if (
                cached is not None
                and (cached.last_seq, cached.head) == (state.last_seq, report.head)
                and cached.state != state
            ):
                problems.append(
                    Problem("fold_cache", "the fold cache disagreed with the ledger (rebuilt)")
                )
            if report.ok:
                self._write_cache(state)
        problems += self.signature_problems(events)
        return VerifyReport(
            ok=not problems,
            events=report.events,
            head=report.head,
            problems=problems,
            decoded=report.decoded,
        )

    def signature_problems(self, events: Sequence[ev.Event]) -> list[Problem]:
        """The signature rule over ``events`` (kernel.signature_rules.signature_problems): what
        verify reports, and what a repair's cut must not leave behind."""
        return [
            Problem("signature", reason, seq=seq)
            for seq, reason in signature_problems(events, self.caps.human_check, ledger="catalog")
        ]
