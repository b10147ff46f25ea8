"""``question.md``, rendered by tht (F3; ARCHITECTURE §4.1): the question the SQL must answer.

A pure, byte-stable function of the session's effective decisions — never text an agent wrote:
the original question; the rewritten one (the latest effective ``question_rewritten``); the
clarified concepts with their targets (F1's ``concept_clarified`` and the memories applied in F2);
the grounded values; the assumptions; and the ambiguities left open (an *unanswerable* one said
so). Every line names the seq of the decision it shows, so the reviewer approving it can trace
each statement to the ledger.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from kernel import events as ev
from kernel.errors import PolicyError
from kernel.fold import SessionState

__all__ = ["QUESTION_DOCUMENT", "render_question_document"]

QUESTION_DOCUMENT: Final = "question.md"


def _inline(text: object) -> str:
    """One line of text: NFC, control characters and line breaks folded into spaces."""
    raw = unicodedata.normalize("NFC", str(text))
    kept = "".join(" " if unicodedata.category(c)[0] in ("C", "Z") else c for c in raw)
    return " ".join(kept.split())


def _code(text: object) -> str:
    shown = _inline(text).replace("`", "'")
    return f"`{shown}`"


def render_question_document(state: SessionState) -> bytes:
    """The document, UTF-8 with ``\\n`` line ends; ``PolicyError`` (exit 5) when the session
    has no effective ``question_rewritten`` yet (F3 closes with the rewritten question)."""
    rewritten: ev.QuestionRewritten | None = None
    concepts: list[str] = []
    values: list[str] = []
    open_: list[str] = []
    for record in state.effective_decisions():
        event = record.event
        if isinstance(event, ev.QuestionRewritten):
            rewritten = event
        elif isinstance(event, ev.ConceptClarified):
            target = f" → {_code(event.payload.target)}" if event.payload.target else ""
            concepts.append(
                f"- **{_inline(event.subject or '')}**: {_inline(event.payload.meaning)}{target} "
                f"(seq {event.seq}, {event.actor})"
            )
        elif isinstance(event, ev.MemoryApplied) and event.payload.kind == "memory":
            payload = event.payload
            target = f" → {_code(payload.target)}" if isinstance(payload.target, str) else ""
            meaning = payload.meaning if isinstance(payload.meaning, str) else payload.content
            source = (
                f", from session {payload.source_session} seq {payload.source_seq}"
                if isinstance(payload.source_session, str)
                else ""
            )
            concepts.append(
                f"- **{_inline(event.subject or '')}**: {_inline(meaning)}{target} "
                f"(seq {event.seq}: memory {payload.memory_id}{source})"
            )
        elif isinstance(event, ev.ValueGrounded):
            meaning = f": {_inline(event.payload.meaning)}" if event.payload.meaning else ""
            values.append(
                f"- **{_inline(event.payload.value)}** → {_code(event.payload.column)}{meaning} "
                f"(seq {event.seq})"
            )
        elif isinstance(event, ev.AmbiguityOpen):
            options = " | ".join(_inline(o) for o in event.payload.options)
            shown = f" (readings: {options})" if options else ""
            kind = "unanswerable" if event.payload.unanswerable else "left open"
            open_.append(f"- {_inline(event.payload.question)}{shown}: {kind} (seq {event.seq})")
    if rewritten is None:
        raise PolicyError(
            f"{QUESTION_DOCUMENT} is rendered by tht from the rewritten question: choose a "
            "question_rewritten first (a select), then propose the confirm"
        )
    lines = [
        "# Question",
        "",
        f"**Asked.** {_inline(state.question)}",
        "",
        f"**Rewritten** (seq {rewritten.seq}). {_inline(rewritten.payload.question)}",
    ]
    sections = (
        ("Clarified concepts", concepts),
        ("Grounded values", values),
        ("Assumptions", [f"- {_inline(a)}" for a in rewritten.payload.assumptions]),
        ("Open ambiguities", open_),
    )
    for title, items in sections:
        lines += ["", f"## {title}", ""]
        lines += items or ["- none"]
    return ("\n".join(lines) + "\n").encode("utf-8")
