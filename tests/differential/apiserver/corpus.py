"""The corpus: the YAML case files in cases/ and the mechanical families of generators.py.

Groups are the unit the pytest module runs as one test (one per file or family),
so a failure report lists every failing case of the group at once.
"""

from __future__ import annotations

from pathlib import Path

from tests.differential.apiserver import generators
from tests.differential.apiserver.runner import Case, _check_unique, load_file

CASES_DIR = Path(__file__).resolve().parent / "cases"


def case_files() -> list[Path]:
    return sorted(CASES_DIR.glob("*.yaml"))


def load_corpus() -> dict[str, list[Case]]:
    """group name -> its cases: files first (cases/NAME.yaml), then generated families."""
    groups: dict[str, list[Case]] = {}
    for f in case_files():
        groups[f.stem] = load_file(f)
    for family, cases in generators.families().items():
        if family in groups:
            raise ValueError(f"generated family {family!r} clashes with cases/{family}.yaml")
        _check_unique(cases, f"generators.py family {family}")
        groups[family] = cases
    return groups
