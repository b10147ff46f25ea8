"""Routing — layer 2: a deterministic skill/MCP router for coding-agent prompts (spec 000).

Pure core: text normalization, the compiled catalog (``pack``), the router, the ambiguity gate,
the policy resolver, the renderer and the telemetry event, tied together by
:func:`run_routing`. The catalog builder (``catalog_build``, ``sources``, ``signals``) and the eval
runner (``evaluation``) are imported explicitly by the commands; they are not on the hook's path.
Everything exported here uses only the standard library (and ``snowballstemmer``).
"""

from modules.routing.gate import EvaluatorEnvironment, GateVerdict, assess_ambiguity
from modules.routing.pack import CatalogError, CatalogPack, open_pack
from modules.routing.pipeline import EvaluatorOutcome, Outcome, run_routing
from modules.routing.policy import Hint, Resolution, resolve
from modules.routing.render import render_hints
from modules.routing.router import Candidate, Routing, route

__all__ = [
    "Candidate",
    "CatalogError",
    "CatalogPack",
    "EvaluatorEnvironment",
    "EvaluatorOutcome",
    "GateVerdict",
    "Hint",
    "Outcome",
    "Resolution",
    "Routing",
    "assess_ambiguity",
    "open_pack",
    "render_hints",
    "resolve",
    "route",
    "run_routing",
]
