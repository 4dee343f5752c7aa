"""The write-a-controller tutorial and its test page run as a reader would run them.

docs/tutorial.md's ```python blocks, in order, are ``replicas_controller.py``;
docs/testing.md's ```python blocks are ``test_replicas_controller.py`` and its ```toml
block the ``pyproject.toml`` beside them. pytest runs that folder in a subprocess (its
own rootdir and settings, the pykcm plugin found through its entry point, as in a
user's project), so every code block of both pages runs in the test suite.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from pykcm.manager import builtin_registry
from tests.docs.markdown_blocks import ROOT, blocks, python_blocks


def _page(name: str) -> str:
    return (ROOT / "docs" / name).read_text()


def _write_project(folder: Path) -> None:
    (folder / "replicas_controller.py").write_text("\n".join(python_blocks(_page("tutorial.md"))))
    (folder / "test_replicas_controller.py").write_text(
        "\n".join(python_blocks(_page("testing.md"))))
    (toml,) = blocks(_page("testing.md"), "toml")
    (folder / "pyproject.toml").write_text(toml)


def test_tutorial_controller_passes_the_test_on_the_testing_page(tmp_path: Path) -> None:
    _write_project(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                          "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
                         check=False, cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    # Every test the page shows runs and passes (none skipped or deselected).
    tests = sum(len(re.findall(r"^(?:async )?def test_", block, re.MULTILINE))
                for block in python_blocks(_page("testing.md")))
    assert tests >= 3 and f"{tests} passed" in run.stdout, run.stdout[-2000:]


def test_tutorial_controller_registers_with_the_manager(tmp_path: Path) -> None:
    _write_project(tmp_path)
    spec = importlib.util.spec_from_file_location("replicas_controller",
                                                  tmp_path / "replicas_controller.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    registry = builtin_registry()
    mod.register(registry)
    enabled = registry.resolve_enabled(["replicas-configmap-controller"])
    assert "replicas-configmap-controller" in enabled
    assert "replicaset-controller" not in enabled
