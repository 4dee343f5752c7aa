"""The layers of DESIGN.md: each package imports only from the packages above it.

Also: the simulator talks to an API server over HTTP only (never imports the
embedded one), and nothing on the controller side knows the API server is
embedded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pykcm

ORDER = ["api", "client", "cache", "informers", "workqueue", "leaderelection", "controller",
         "controllers", "manager", "apiserver", "sim", "cli", "testing"]
ROOT = Path(pykcm.__file__).parent


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m.split(".")[1] for m in out if m.startswith("pykcm.") and m.count(".") >= 1}


def _violations(allowed: dict[str, set[str]]) -> list[str]:
    bad = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT)
        if len(rel.parts) < 2 or rel.parts[0] not in ORDER:
            continue
        pkg = rel.parts[0]
        for target in _imports(f):
            if target in ORDER and target != pkg and target not in allowed[pkg]:
                bad.append(f"{rel} imports pykcm.{target}")
    return bad


def test_every_package_imports_only_the_layers_above_it() -> None:
    allowed = {p: set(ORDER[:i]) for i, p in enumerate(ORDER)}
    assert _violations(allowed) == []


def test_the_simulator_and_the_controller_side_never_import_the_api_server() -> None:
    allowed = {p: set(ORDER[:i]) for i, p in enumerate(ORDER)}
    for pkg in ("cache", "informers", "controller", "controllers", "manager", "sim"):
        allowed[pkg].discard("apiserver")
    allowed["sim"] -= {"controllers", "manager"}
    assert _violations(allowed) == []
