"""What the seam tests share (test_clock_seams.py, test_randomness_seams.py).

A seam test parses pykcm's sources, lists each direct use of what must go through one
home (the clock, the random source) as ``(line, what)`` with its own ``findings``
function, and fails on any not in its allowlist of ``(path under pykcm/, what)`` pairs
(each with a reason); an allowlist entry nothing needs any more fails too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

Findings = Callable[[ast.AST], list[tuple[int, str]]]


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a name or an attribute chain; ``f()`` for a call; else ``?``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{dotted(node.func)}()"
    return "?"


def violations(root: Path, files: Iterable[Path], findings: Findings,
               allowed: Mapping[tuple[str, str], str]) -> list[str]:
    """``pykcm/<path>:<line>: <what>`` for each finding in ``files`` not allowed."""
    bad = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        for line, what in findings(ast.parse(f.read_text())):
            if (rel, what) not in allowed:
                bad.append(f"pykcm/{rel}:{line}: {what}")
    return bad


def unneeded_allowances(root: Path, findings: Findings,
                        allowed: Mapping[tuple[str, str], str]) -> set[tuple[str, str]]:
    """The allowlist entries no finding uses any more."""
    used = set()
    for rel, _ in allowed:
        for _, what in findings(ast.parse((root / rel).read_text())):
            used.add((rel, what))
    return set(allowed) - used
