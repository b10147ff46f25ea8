"""Routing on the held-out sets of issue 17 (``golden/routing/evals/heldout17``, its README).

Builds the two real catalogs into a temporary folder the way a user would (``--skills`` +
``--mcp``, no overrides) and, for tesisquare, also with the project's curated overrides; runs the
deterministic router on the held-out cases and on the 23 real tesisquare prompts; prints one
table. Dev sets by default; ``--locked`` runs the locked sets instead (report them once, at the
end of the work: nobody tunes on them); ``--adversarial`` the adversarial set of
``golden/routing/evals/adversarial18`` (injection and negation forms by another author, locked:
measured before and after a router change, never tuned on). ``EVAL_JSON=FILE`` also writes the
rows as JSON.

    .venv/bin/python -m benchmarks.eval_routing_heldout [--locked | --adversarial]
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


def build_pack(catalog: str, *, curated: bool, folder: Path) -> Any:
    """Compile one catalog (as ``tht route catalog build`` does) and open it."""
    from modules.routing.catalog_build import build_catalog
    from modules.routing.pack import open_pack
    from modules.routing.sources import load_mcp_manifest, load_overrides, read_skills

    root = CATALOGS / catalog
    manifest = root / MANIFESTS[catalog]
    data, _ = build_catalog(
        read_skills(root / "skills"),
        overrides=load_overrides(root / OVERRIDES) if curated else None,
        overrides_name=OVERRIDES if curated else "overrides",
        manifests=[(manifest.name, load_mcp_manifest(manifest))],
    )
    path = folder / f"{catalog}-{'curated' if curated else 'uncurated'}.pack"
    path.write_bytes(data)
    return open_pack(str(path))


def load_cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def evaluate(pack: Any, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The overall metrics of ``tht route eval`` (deterministic router only)."""
    from modules.routing.evaluation import case_result, summarize
    from modules.routing.pipeline import run_routing

    results = [
        case_result(case, [h.id for h in run_routing(case["prompt"], pack).resolution.hints])
        for case in cases
    ]
    overall: dict[str, Any] = summarize(results)["overall"]
    return overall


def run(split: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tht-heldout17-") as tmp:
        for catalog, curated in BUILDS:
            pack = build_pack(catalog, curated=curated, folder=Path(tmp))
            if split == "adversarial18":
                sets = [(split, ADVERSARIAL / f"{catalog}.jsonl")]
            else:
                sets = [(f"heldout17-{split}", HELDOUT / f"{catalog}-{split}.jsonl")]
            if catalog == "tesisquare" and split != "adversarial18":
                sets.append(("real-23", REAL))
            for name, path in sets:
                metrics = evaluate(pack, load_cases(path))
                rows.append(
                    {
                        "catalog": catalog,
                        "curation": "curated" if curated else "uncurated",
                        "set": name,
                        **metrics,
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
    unknown = [a for a in argv if a not in ("--locked", "--adversarial")]
    if unknown or len(argv) > 1:
        bad = unknown[0] if unknown else " ".join(argv)
        usage = "python -m benchmarks.eval_routing_heldout [--locked | --adversarial]"
        print(f"usage: {usage} ({bad}?)")
        return 2
    splits = {"--locked": "locked", "--adversarial": "adversarial18"}
    split = splits.get(argv[0] if argv else "", "dev")
    rows = run(split)
    print(f"routing, held-out {split} sets (P@1 over emitted hints, top-1/R@2 over routable)")
    print(table(rows))
    out = os.environ.get("EVAL_JSON")
    if out:
        Path(out).write_text(json.dumps({"split": split, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
