"""Routing on the held-out sets of issue 17 (``golden/routing/evals/heldout17``, its README).

Builds the two real catalogs into a temporary folder the way a user would (``--skills`` +
``--mcp``, no overrides) and, for tesisquare, also with the project's curated overrides; runs the
deterministic router on the held-out cases and on the 23 real tesisquare prompts; prints one
table. Dev sets by default; ``--locked`` runs the locked sets instead (report them once, at the
end of the work: nobody tunes on them); ``--adversarial`` the adversarial set of
``golden/routing/evals/adversarial18`` (injection and negation forms by another author, locked:
measured before and after a router change, never tuned on). ``--semantic`` adds, beside each
row, the same run with the semantic rescue (:mod:`modules.routing.semantic`: skill vectors built
with the catalog, the model in-process, its default thresholds). ``EVAL_JSON=FILE`` also writes
the rows as JSON.

    .venv/bin/python -m benchmarks.eval_routing_heldout [--locked | --adversarial] [--semantic]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CATALOGS = REPO / "golden" / "routing" / "catalogs"
EVALS = REPO / "golden" / "routing" / "evals"
HELDOUT = EVALS / "heldout17"
ADVERSARIAL = EVALS / "adversarial18"
REAL = EVALS / "tesisquare" / "real-evals.jsonl"

# (catalog, curated): the packs every run builds.
BUILDS = (("tesisquare", False), ("tesisquare", True), ("anthropic", False))
MANIFESTS = {"tesisquare": "mcp-servers.json", "anthropic": "mcp-reference-servers.json"}
OVERRIDES = "routing-semantic-overrides.json"
COLUMNS = (
    ("P@1", "precision_at_1"),
    ("top-1", "top1"),
    ("R@2", "recall_at_2"),
    ("none-acc", "none_accuracy"),
    ("FP", "false_positive_rate"),
    ("forbidden", "forbidden_hits"),
    ("pass", "pass_rate"),
)


def build_pack(catalog: str, *, curated: bool, folder: Path, semantic: bool = False) -> Any:
    """Compile one catalog (as ``tht route catalog build [--semantic]`` does) and open it."""
    from modules.routing.catalog_build import build_catalog
    from modules.routing.pack import open_pack
    from modules.routing.sources import load_mcp_manifest, load_overrides, read_skills

    root = CATALOGS / catalog
    manifest = root / MANIFESTS[catalog]
    sources = read_skills(root / "skills")
    data, report = build_catalog(
        sources,
        overrides=load_overrides(root / OVERRIDES) if curated else None,
        overrides_name=OVERRIDES if curated else "overrides",
        manifests=[(manifest.name, load_mcp_manifest(manifest))],
    )
    path = folder / f"{catalog}-{'curated' if curated else 'uncurated'}.pack"
    path.write_bytes(data)
    if semantic:
        from modules.routing.semantic import build_vectors, sidecar_path

        Path(sidecar_path(str(path))).write_bytes(build_vectors(report.fingerprint, sources))
    return open_pack(str(path))


def semantic_rescue(pack: Any) -> Any:
    """The semantic rescue plug for a pack built with ``semantic=True`` (in-process model)."""
    from modules.routing.semantic import SemanticSettings, semantic_plug, sidecar_path

    def fail(reason: str) -> None:
        raise RuntimeError(f"semantic rescue unavailable: {reason}")

    return semantic_plug(
        SemanticSettings(enabled=True), sidecar_path(pack.path), pack.fingerprint, on_skip=fail
    )


def load_cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def evaluate(pack: Any, cases: list[dict[str, Any]], semantic: Any = None) -> dict[str, Any]:
    """The overall metrics of ``tht route eval`` (deterministic router, and the semantic rescue
    when ``semantic`` is its plug)."""
    from modules.routing.evaluation import case_result, summarize
    from modules.routing.pipeline import run_routing

    results = [
        case_result(
            case,
            [h.id for h in run_routing(case["prompt"], pack, semantic=semantic).resolution.hints],
        )
        for case in cases
    ]
    overall: dict[str, Any] = summarize(results)["overall"]
    return overall


def run(split: str, *, semantic: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tht-heldout17-") as tmp:
        for catalog, curated in BUILDS:
            pack = build_pack(catalog, curated=curated, folder=Path(tmp), semantic=semantic)
            rescue = semantic_rescue(pack) if semantic else None
            if split == "adversarial18":
                sets = [(split, ADVERSARIAL / f"{catalog}.jsonl")]
            else:
                sets = [(f"heldout17-{split}", HELDOUT / f"{catalog}-{split}.jsonl")]
            if catalog == "tesisquare" and split != "adversarial18":
                sets.append(("real-23", REAL))
            for name, path in sets:
                cases = load_cases(path)
                for label, plug in (
                    (("", None), ("+semantic", rescue)) if semantic else (("", None),)
                ):
                    rows.append(
                        {
                            "catalog": catalog,
                            "curation": ("curated" if curated else "uncurated") + label,
                            "set": name,
                            **evaluate(pack, cases, plug),
                        }
                    )
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def table(rows: list[dict[str, Any]]) -> str:
    head = ["catalog", "curation", "set", "cases", *(label for label, _ in COLUMNS)]
    body = [
        [r["catalog"], r["curation"], r["set"], str(r["cases"])]
        + [_cell(r[key]) for _, key in COLUMNS]
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True))

    header = line(head)
    return "\n".join([header, "-" * len(header), *(line(cells) for cells in body)])


def main(argv: list[str]) -> int:
    semantic = "--semantic" in argv
    rest = [a for a in argv if a != "--semantic"]
    unknown = [a for a in rest if a not in ("--locked", "--adversarial")]
    if unknown or len(rest) > 1:
        bad = unknown[0] if unknown else " ".join(rest)
        usage = "python -m benchmarks.eval_routing_heldout [--locked | --adversarial] [--semantic]"
        print(f"usage: {usage} ({bad}?)")
        return 2
    splits = {"--locked": "locked", "--adversarial": "adversarial18"}
    split = splits.get(rest[0] if rest else "", "dev")
    rows = run(split, semantic=semantic)
    print(f"routing, held-out {split} sets (P@1 over emitted hints, top-1/R@2 over routable)")
    print(table(rows))
    out = os.environ.get("EVAL_JSON")
    if out:
        Path(out).write_text(json.dumps({"split": split, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
