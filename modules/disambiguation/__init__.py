"""Disambiguation module: Question Admission (first release: usable vs garbage, workspace scope).

The SecurityGate, the IntentParser and the clarification policy belong here too; until they land,
the kernel's generic reviewer tools handle the module's stages.
"""

from modules.disambiguation.admission import AdmissionVerdict, admit, judge_question

__all__ = ["AdmissionVerdict", "admit", "judge_question"]
