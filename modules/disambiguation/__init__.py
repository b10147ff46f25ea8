"""Disambiguation module: the SecurityGate (always first, on the raw question) and Question
Admission (first release: usable vs garbage, workspace scope).

The IntentParser and the clarification policy belong here too; until they land, the kernel's
generic reviewer tools handle the module's stages.
"""

from modules.disambiguation.admission import (
    AdmissionVerdict,
    admit,
    judge_question,
    session_question,
)
from modules.disambiguation.gate import GateEntity, GateVerdict, SecurityGate

__all__ = [
    "AdmissionVerdict",
    "GateEntity",
    "GateVerdict",
    "SecurityGate",
    "admit",
    "judge_question",
    "session_question",
]
