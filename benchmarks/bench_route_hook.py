"""The routing hook's process cost against ``python -c "import json"`` (same run, same machine).

Target (issue 3): on a 200-skill catalog the ``tht-route-hook`` process's p50 wall time is at most
2.0x the baseline's; on 20 and 1,000 skills its cost must grow sublinearly with catalog size.

Catalogs are synthesized (deterministic pseudo-words, seeded) as SKILL.md folders plus an MCP
manifest, compiled with the real builder, and the hook runs as the real console script with a
real host payload on stdin. Bytecode is compiled first (an installed package has its .pyc files;
this machine's environment sets PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (20, 200, 1000)
RUNS = int(os.environ.get("BENCH_RUNS", "40"))
ROOT = Path(__file__).resolve().parents[1]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    consonants, vowels = "bcdfglmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        length = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length)))
    return sorted(words)


def synthesize(folder: Path, skills: int, seed: int = 7) -> tuple[Path, Path, list[str]]:
    """``skills`` SKILL.md folders and a 20-server MCP manifest; returns them and prompts."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 4000)
    root = folder / "skills"
    prompts: list[str] = []
    for index in range(skills):
        words = rng.sample(vocab, 14)
        name = f"skill-{words[0]}-{index}"
        description = (
            f"Handle {words[1]} {words[2]} and {words[3]} tasks for {words[4]} projects. "
            f"Use when the user asks about {words[5]} {words[6]}, '{words[7]} {words[8]}' or "
            f".{words[9][:4]} files. Do not use for {words[10]} or {words[11]} work."
        )
        body = f"# {name}\n\n## When to use\n\n- {words[12]} {words[13]}\n- {words[1]} reviews\n"
        target = root / name
        target.mkdir(parents=True)
        (target / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n{body}",
            encoding="utf-8",
        )
        if index % max(1, skills // 10) == 0:
            prompts.append(f"Please help with the {words[5]} {words[6]} for {words[4]}, thanks")
    servers = [
        {
            "id": f"server-{vocab[i]}",
            "semanticSummary": f"Access to {vocab[i + 1]} and {vocab[i + 2]} data.",
            "capabilities": [f"{vocab[i + 3]}-read"],
            "availability": "configured",
        }
        for i in range(0, 80, 4)
    ]
    manifest = folder / "mcp.json"
    manifest.write_text(json.dumps({"version": 1, "servers": servers}), encoding="utf-8")
    return root, manifest, prompts


def _hook_command() -> list[str]:
    script = Path(sys.executable).with_name("tht-route-hook")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "tht.hooks.route_hook"]


def _time(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    from modules.routing.catalog_build import build_catalog
    from modules.routing.sources import load_mcp_manifest, read_skills

    for package in ("kernel", "modules", "tht"):
        compileall.compile_dir(str(ROOT / package), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="tht-bench-route-"))
    env = {**os.environ, "THT_HOME": str(work / "home"), "THT_CONFIG": str(work / "none.yaml")}
    baseline_cmd = [sys.executable, "-c", "import json"]
    hook_cmd = _hook_command()
    results: dict[int, tuple[float, float, int]] = {}
    try:
        for size in SIZES:
            folder = work / f"cat{size}"
            skills_dir, manifest, prompts = synthesize(folder, size)
            started = time.perf_counter()
            data, report = build_catalog(
                read_skills(skills_dir), manifests=[("mcp.json", load_mcp_manifest(manifest))]
            )
            build_s = time.perf_counter() - started
            catalog = folder / "catalog.pack"
            catalog.write_bytes(data)
            payloads = [
                json.dumps(
                    {
                        "session_id": "bench",
                        "transcript_path": "/dev/null",
                        "cwd": str(folder),
                        "permission_mode": "default",
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": prompt,
                    }
                ).encode()
                for prompt in prompts
            ]
            command = [*hook_cmd, "--catalog", str(catalog)]
            for payload in payloads[:3]:  # warm the page cache
                _time(command, payload, env)
                _time(baseline_cmd, b"", env)
            base_times, hook_times = [], []
            for run in range(RUNS):
                base_times.append(_time(baseline_cmd, b"", env))
                hook_times.append(_time(command, payloads[run % len(payloads)], env))
            base_p50 = statistics.median(base_times)
            hook_p50 = statistics.median(hook_times)
            results[size] = (base_p50, hook_p50, len(data))
            sys.stdout.write(
                f"skills={size:5d}  catalog={len(data) / 1024:8.1f} KiB"
                f"  keys={report.index_keys:6d}"
                f"  build={build_s:6.2f}s  baseline p50={base_p50 * 1000:6.1f} ms"
                f"  hook p50={hook_p50 * 1000:6.1f} ms  ratio={hook_p50 / base_p50:4.2f}x\n"
            )
            sys.stdout.flush()
        small, mid, large = (results[s] for s in SIZES)
        extra = [max(r[1] - r[0], 1e-6) for r in (small, mid, large)]
        sys.stdout.write(
            f"target: ratio at 200 skills <= 2.0x -> {mid[1] / mid[0]:.2f}x "
            f"({'met' if mid[1] / mid[0] <= 2.0 else 'NOT met'})\n"
            f"growth: hook cost above baseline 20 -> 200 -> 1000 skills: "
            f"{extra[0] * 1000:.1f} -> {extra[1] * 1000:.1f} -> {extra[2] * 1000:.1f} ms "
            f"(x{extra[2] / extra[0]:.2f} for x50 skills; catalog bytes x"
            f"{large[2] / small[2]:.0f})\n"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
