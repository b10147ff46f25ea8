"""Evidence consultation in a session: the stage's pack, and the receipt it leaves.

``tht search pack [SESSION] --stage STAGE`` searches the active generation with the purpose the
stage serves, using the Evidence query text built from the session (original question, clarified
concepts, linked tables and columns), and projects the top results as
``{id, title, kind, excerpt[:400]}``. An ``available`` consultation — even an empty one — leaves
an Evidence receipt in the session ledger (``evidence_consulted``: stage, purpose, generation,
returned ids; never content), returned as a ``ModuleOutcome`` the kernel applies. An
``unavailable`` one leaves no receipt: the stage must not advance until a retry succeeds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kernel import events as ev
from kernel.capabilities import SessionView
from kernel.errors import UsageError
from kernel.outcomes import ModuleOutcome
from modules.evidence.capabilities import EvidenceCapabilities
from modules.evidence.query_text import evidence_query_text
from modules.evidence.search import SearchOutcome, search_evidence

__all__ = ["PACK_SIZE", "STAGE_PURPOSES", "EvidencePack", "evidence_pack", "pack_query_text"]

STAGE_PURPOSES: dict[str, str] = {
    "disambiguation": "disambiguation",
    "rewriting": "rewriting",
    "schema_linking": "schema_linking",
    "cte": "sql_generation",
    "sql": "sql_generation",
}
PACK_SIZE = 5


@dataclass(frozen=True)
class EvidencePack:
    stage: str
    purpose: str
    outcome: SearchOutcome
    receipt: ModuleOutcome | None

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "status": self.outcome.status,
            "stage": self.stage,
            "purpose": self.purpose,
            "generation": self.outcome.generation,
            "evidence": [
                {"id": r.unit_id, "title": r.title, "kind": r.kind, "excerpt": r.excerpt[:400]}
                for r in self.outcome.results
            ],
        }
        if self.outcome.warning is not None:
            body["warning"] = self.outcome.warning
        return body


def _strings(values: Iterable[object]) -> list[str]:
    return [v for v in values if isinstance(v, str)]


def pack_query_text(view: SessionView) -> str:
    """The Evidence query text of a session: question, clarified concepts, linked schema."""
    concepts: list[str] = []
    tables: list[str] = []
    columns: list[str] = []
    for record in view.effective_decisions:
        payload = record.event.payload
        if record.type == "concept_clarified" and record.subject:
            concepts.append(record.subject)
        elif record.type == "schema_linked":
            tables.extend(_strings(getattr(payload, "tables", ())))
            columns.extend(_strings(getattr(payload, "columns", ())))
    return evidence_query_text(view.question, concepts=concepts, tables=tables, columns=columns)


def evidence_pack(
    caps: EvidenceCapabilities, view: SessionView, *, limit: int = PACK_SIZE
) -> EvidencePack:
    """Search for the stage's pack; a receipt outcome only when the search was available."""
    purpose = STAGE_PURPOSES.get(view.stage)
    if purpose is None:
        stages = ", ".join(STAGE_PURPOSES)
        raise UsageError(f"stage {view.stage} has no evidence pack (stages with one: {stages})")
    outcome = search_evidence(caps, pack_query_text(view), purpose=purpose, limit=limit)
    receipt = None
    if outcome.status == "available" and outcome.generation is not None:
        receipt = ModuleOutcome(
            status="applied",
            invocation=None,  # the kernel knows the current invocation
            events=(
                ev.ProposedEvent(
                    type="evidence_consulted",
                    payload={
                        "purpose": purpose,
                        "generation": outcome.generation,
                        "returned": [r.unit_id for r in outcome.results],
                    },
                ),
            ),
        )
    return EvidencePack(stage=view.stage, purpose=purpose, outcome=outcome, receipt=receipt)
