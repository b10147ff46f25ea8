"""Fixtures: real catalogs compiled from golden/routing/catalogs, and a small rules catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modules.routing.catalog_build import build_catalog
from modules.routing.pack import CatalogPack, open_pack
from modules.routing.sources import (
    OverridesFile,
    load_mcp_manifest,
    load_overrides,
    read_skills,
)

REPO = Path(__file__).resolve().parents[3]
CATALOGS = REPO / "golden" / "routing" / "catalogs"


def build_tesisquare() -> bytes:
    root = CATALOGS / "tesisquare"
    data, _ = build_catalog(
        read_skills(root / "skills"),
        overrides=load_overrides(root / "routing-semantic-overrides.json"),
        manifests=[("mcp-servers.json", load_mcp_manifest(root / "mcp-servers.json"))],
    )
    return data


def build_anthropic() -> bytes:
    root = CATALOGS / "anthropic"
    data, _ = build_catalog(
        read_skills(root / "skills"),
        manifests=[
            ("mcp-reference-servers.json", load_mcp_manifest(root / "mcp-reference-servers.json"))
        ],
    )
    return data


@pytest.fixture(scope="session")
def tesisquare(tmp_path_factory: pytest.TempPathFactory) -> CatalogPack:
    path = tmp_path_factory.mktemp("cat") / "tesisquare.pack"
    path.write_bytes(build_tesisquare())
    return open_pack(path)


@pytest.fixture(scope="session")
def anthropic(tmp_path_factory: pytest.TempPathFactory) -> CatalogPack:
    path = tmp_path_factory.mktemp("cat") / "anthropic.pack"
    path.write_bytes(build_anthropic())
    return open_pack(path)


def write_skill(root: Path, name: str, description: str, body: str = "") -> None:
    folder = root / name
    folder.mkdir(parents=True)
    text = f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n{body}"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")


RULES_OVERRIDES = {
    "version": 1,
    "overrides": {
        "alpha-report": {
            "category": "analysis",
            "routingRole": "specialist",
            "semanticSummary": "Reports.",
            "keywords": ["quarterly report", "weekly digest"],
            "intents": [{"id": "reporting", "phrases": ["board pack"], "priority": 5}],
            "antiPatterns": ["invoice"],
            "patterns": ["compile ... figures"],
        },
        "beta-review": {
            "category": "review",
            "routingRole": "specialist",
            "semanticSummary": "Reviews.",
            "keywords": ["code review", "quarterly report", "weekly digest"],
            "locks": [{"phrases": ["security audit"], "priority": 20}],
            "exclusions": [{"phrases": ["marketing copy"]}],
        },
        "gamma-plan": {
            "category": "orchestration",
            "routingRole": "orchestrator",
            "semanticSummary": "Plans.",
            "keywords": ["roadmap", "code review"],
            "suppressions": [
                {"phrases": ["quick fix"], "mode": "hard"},
                {"phrases": ["small change"], "mode": "soft", "penalty": 4},
            ],
            "compatibleWith": ["tracker"],
        },
    },
}


@pytest.fixture
def rules(tmp_path: Path) -> CatalogPack:
    """Three skills and two MCP servers exercising every curated rule kind."""
    skills = tmp_path / "skills"
    write_skill(skills, "alpha-report", "Writes polished summaries of numbers.")
    write_skill(skills, "beta-review", "Reviews changes for defects.")
    write_skill(skills, "gamma-plan", "Coordinates multi-phase plans.")
    manifest = {
        "version": 1,
        "servers": [
            {
                "id": "tracker",
                "semanticSummary": "Ticket tracker access.",
                "capabilities": ["ticket-read"],
                "availability": "configured",
            },
            {
                "id": "vault",
                "semanticSummary": "Secret vault access.",
                "capabilities": ["vault-read"],
                "availability": "unavailable",
            },
        ],
    }
    data, _ = build_catalog(
        read_skills(skills),
        overrides=OverridesFile.model_validate(RULES_OVERRIDES),
        manifests=[("mcp.json", load_mcp_manifest(_dump(tmp_path / "mcp.json", manifest)))],
    )
    path = tmp_path / "rules.pack"
    path.write_bytes(data)
    return open_pack(path)


def _dump(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
