"""The documentation site builds with no warning (`mkdocs build --strict`).

Strict mode fails on a broken link between pages, a missing nav entry, or a docstring
mkdocstrings cannot render; the checks after the build make sure the generated parts
(API reference, compatibility tables) are really there, not silently empty.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pykcm.api.resources import BUILTIN_RESOURCES
from tests.docs.markdown_blocks import ROOT


def test_site_builds_strict_with_its_generated_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # material's end-of-life notice
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                         check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    reference = (site / "reference" / "controller" / "index.html").read_text()
    assert "process_next_work_item" in reference and "ErrorReporter" in reference
    compat = (site / "compatibility" / "index.html").read_text()
    assert "generated:" not in compat
    for r in BUILTIN_RESOURCES:
        assert f"<code>{r.plural}</code>" in compat
    assert "<code>kubectl rollout undo</code>" in compat
    assert "<code>replicaset-controller</code>" in compat
    assert (site / "tutorial" / "index.html").exists()
