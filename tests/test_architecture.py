"""The layers (ARCHITECTURE §2) and the public API, pinned so neither drifts silently.

- ``kernel/`` imports nothing above it (no ``modules``, no ``tht``);
- a module under ``modules/<name>/`` imports ``kernel`` and itself, never another module and
  never ``tht``;
- every import anywhere counts, also those inside functions (lazy imports are still imports).

The public API is each module's ``__all__`` under ``kernel/`` and ``modules/`` (and the packages'
``__init__``): ``golden/api/public_api.json`` holds it; a change is a deliberate act
(``pytest tests/test_architecture.py --update-golden`` and a commit that says why).
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden" / "api" / "public_api.json"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> list[str]:
    package = _module_name(path).split(".")
    return package if path.name == "__init__.py" else package[:-1]


def _imports(path: Path, package: list[str] | None = None) -> list[tuple[int, str]]:
    """Every absolute module name ``path`` imports (relative imports resolved against its
    ``package``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(path) if package is None else package
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_the_kernel_imports_nothing_above_it() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in _sources("kernel")
        for line, name in _imports(path)
        if name.split(".")[0] in ("modules", "tht")
    ]
    assert bad == []


def _module_violations(
    path: Path, own: str | None, package: list[str] | None = None
) -> list[tuple[int, str]]:
    bad = []
    for line, name in _imports(path, package):
        top = name.split(".")
        if top[0] == "tht" or (top[0] == "modules" and len(top) > 1 and top[1] != own):
            bad.append((line, name))
    return bad


def test_a_module_imports_only_the_kernel_and_itself() -> None:
    bad = []
    for path in _sources("modules"):
        parts = path.relative_to(ROOT / "modules").parts
        own = parts[0] if len(parts) > 1 else None
        bad += [f"{path.relative_to(ROOT)}:{n}: {m}" for n, m in _module_violations(path, own)]
    assert bad == []


def test_the_layer_check_sees_lazy_and_relative_violations(tmp_path: Path) -> None:
    """The check itself can fail: imports inside a function, relative imports upwards."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from . import helpers\n"
        "from ..memory import recall\n"
        "def f():\n    from modules.memory import x\n    import tht.cli\n"
    )
    found = _module_violations(source, "evidence", package=["modules", "evidence"])
    assert found == [(2, "modules.memory"), (4, "modules.memory"), (5, "tht.cli")]


def _public_api() -> dict[str, list[str]]:
    api: dict[str, list[str]] = {}
    for folder in ("kernel", "modules"):
        for path in _sources(folder):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            declares = any(
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                for node in tree.body
            )
            if not declares:
                continue
            name = _module_name(path)
            module = importlib.import_module(name)
            exported = list(module.__all__)
            missing = [n for n in exported if not hasattr(module, n)]
            assert missing == [], f"{name}.__all__ names what it does not define: {missing}"
            api[name] = sorted(exported)
    return dict(sorted(api.items()))


def test_the_public_api_is_pinned(update_golden: bool) -> None:
    api = _public_api()
    if update_golden:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(api, indent=2) + "\n", encoding="utf-8")
    assert GOLDEN.exists(), "no pinned API: run with --update-golden"
    pinned = json.loads(GOLDEN.read_text(encoding="utf-8"))
    added = {m: sorted(set(v) - set(pinned.get(m, []))) for m, v in api.items()}
    removed = {m: sorted(set(v) - set(api.get(m, []))) for m, v in pinned.items()}
    drift = {
        **{f"+{m}": v for m, v in added.items() if v},
        **{f"-{m}": v for m, v in removed.items() if v},
    }
    assert drift == {}, "public API changed: run with --update-golden and say why in the commit"


@pytest.mark.parametrize("package", ["kernel.store", "kernel.vectors", "kernel.llm"])
def test_kernel_packages_export_names_from_their_modules(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__, package
    assert all(hasattr(module, name) for name in module.__all__)
