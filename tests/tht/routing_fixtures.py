"""Shared helpers for tests that run the real ``tht-route-hook`` process with the evaluator.

The catalog is the real Tesisquare catalog under ``golden/routing/catalogs`` compiled once per
module; the provider is a real OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CATALOG_SRC = REPO / "golden" / "routing" / "catalogs" / "tesisquare"

# Prompts whose deterministic routing the gate finds ambiguous (spec §9.1) on that catalog.
AMBIGUOUS_WITH_HINT = "rivedi il codice coldfusion e aggiorna la documentazione"
AMBIGUOUS_NO_HINT = "crea un word con la procedura"  # office-expert 3.4 vs docs-navigator 3.2
CLEAR = "Verifica il diff rispetto ai requisiti e segnala regressioni"


def build_catalog(out: Path) -> Path:
    from modules.routing.catalog_build import build_catalog as build
    from modules.routing.sources import load_mcp_manifest, load_overrides, read_skills

    overrides = CATALOG_SRC / "routing-semantic-overrides.json"
    manifest = CATALOG_SRC / "mcp-servers.json"
    data, _ = build(
        read_skills(CATALOG_SRC / "skills"),
        overrides=load_overrides(overrides),
        overrides_name=str(overrides),
        manifests=[(str(manifest), load_mcp_manifest(manifest))],
    )
    out.write_bytes(data)
    return out


def evaluation(
    skill: str = "mcp-office-expert",
    *,
    decision: str = "single",
    relevance: float = 0.95,
    confidence: float = 0.9,
    reason: str = "office-artifact-required",
) -> str:
    skills = (
        []
        if decision == "none"
        else [{"id": skill, "role": "primary", "relevance": relevance, "reasonCode": reason}]
    )
    return json.dumps(
        {
            "schemaVersion": 1,
            "decision": decision,
            "skills": skills,
            "mcps": [],
            "confidence": confidence,
            "ambiguityResolved": True,
        }
    )


@dataclass
class HookRun:
    stdout: str
    stderr: str
    returncode: int
    event: dict[str, Any] | None


class HookRunner:
    """Runs the hook as a subprocess with its own THT_HOME and user config."""

    def __init__(self, tmp: Path, catalog: Path) -> None:
        self.tmp = tmp
        self.catalog = catalog
        self.home = tmp / "home"
        self.config = tmp / "config.yaml"

    @property
    def log(self) -> Path:
        return self.home / "logs" / "route-hook.jsonl"

    @property
    def state_dir(self) -> Path:
        return self.home / "cache"

    def configure(self, evaluator: dict[str, Any] | None) -> None:
        import yaml

        body: dict[str, Any] = {"routing": {}}
        if evaluator is not None:
            body["routing"]["evaluator"] = evaluator
        self.config.write_text(yaml.safe_dump(body), encoding="utf-8")

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MCP_ROUTING_EVALUATOR_", "THT_"))
        }
        env.update({"THT_HOME": str(self.home), "THT_CONFIG": str(self.config)})
        env.update(extra or {})
        return env

    def start(self, prompt: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "tht.hooks.route_hook", "--catalog", str(self.catalog)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(extra),
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps({"prompt": prompt, "hook_event_name": "UserPromptSubmit"}))
        process.stdin.close()
        return process

    def finish(self, process: subprocess.Popen[str]) -> HookRun:
        assert process.stdout is not None and process.stderr is not None
        out, err = process.stdout.read(), process.stderr.read()
        process.wait(30)
        return HookRun(out, err, process.returncode, self.last_event())

    def run(self, prompt: str, extra: dict[str, str] | None = None) -> HookRun:
        return self.finish(self.start(prompt, extra))

    def last_event(self) -> dict[str, Any] | None:
        if not self.log.exists():
            return None
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return json.loads(lines[-1]) if lines else None
