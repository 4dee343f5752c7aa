"""mkdocs hooks (mkdocs.yml `hooks:`): the tables of docs/compatibility.md, generated.

Role: a page line ``<!-- generated: served-resources -->`` becomes the table of the
resources pykcm's API server serves (pykcm.api.resources.BUILTIN_RESOURCES, the table
its discovery and handlers are built from); ``<!-- generated: controllers -->`` the
controllers of the manager's registry; ``<!-- generated: kubectl-verbs -->`` the
kubectl commands that the end-to-end tests run with the real kubectl, each with the test
files that run it (found in tests/e2e by the test helpers' call shape
``.run("verb"``, ``.ok(...``, ``.json(...``, ``.out(...``). So the matrix says what is
served and tested, never what someone remembered to write down.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from pykcm.api.resources import BUILTIN_RESOURCES
from pykcm.manager.registry import builtin_registry

ROOT = Path(__file__).resolve().parents[1]
_CALL = re.compile(r"\.(?:run|ok|json|out)\(\s*\"([a-z][a-z-]*)\"(?:,\s*\"([a-z][a-z-]*)\")?")
# kubectl's commands and the subcommands worth a row of their own; other first words
# in those calls are not kubectl commands (helpers of other tools share the call shape).
KUBECTL_COMMANDS = frozenset({
    "annotate", "api-resources", "api-versions", "apply", "attach", "auth", "autoscale",
    "certificate", "cluster-info", "config", "cordon", "cp", "create", "debug", "delete",
    "describe", "diff", "drain", "edit", "events", "exec", "explain", "expose", "get",
    "kustomize", "label", "logs", "patch", "port-forward", "proxy", "replace", "rollout",
    "run", "scale", "set", "taint", "top", "uncordon", "version", "wait"})
_WITH_SUBCOMMANDS = frozenset({"auth", "create", "rollout", "set", "config"})


def served_resources_table() -> str:
    rows = ["| resource | apiVersion | kind | scope | subresources | verbs |",
            "|---|---|---|---|---|---|"]
    for r in sorted(BUILTIN_RESOURCES, key=lambda r: (r.group, r.plural)):
        scope = "namespaced" if r.namespaced else "cluster"
        subs = ", ".join(r.subresources) or "—"
        verbs = "all" if len(r.verbs) == 8 else ", ".join(r.verbs)
        rows.append(f"| `{r.plural}` | `{r.api_version}` | {r.kind} | {scope} | {subs} "
                    f"| {verbs} |")
    return "\n".join(rows)


def tested_kubectl_commands(e2e: Path = ROOT / "tests" / "e2e") -> dict[str, list[str]]:
    """kubectl command (``rollout undo``, ``get``) → the e2e test files that run it."""
    found: dict[str, set[str]] = defaultdict(set)
    for f in sorted(e2e.glob("test_*.py")):
        for verb, sub in _CALL.findall(f.read_text()):
            if verb not in KUBECTL_COMMANDS:
                continue
            name = f"{verb} {sub}" if verb in _WITH_SUBCOMMANDS and sub else verb
            found[name].add(f.name)
    return {k: sorted(v) for k, v in sorted(found.items())}


def kubectl_table() -> str:
    rows = ["| kubectl command | run by |", "|---|---|"]
    for cmd, files in tested_kubectl_commands().items():
        rows.append(f"| `kubectl {cmd}` | {', '.join(f'`{f}`' for f in files)} |")
    return "\n".join(rows)


def controllers_list() -> str:
    """The controllers ``pykcm controller-manager`` knows, as ``--controllers`` names them."""
    reg = builtin_registry()
    off = set(reg.disabled_by_default())
    return ", ".join(f"`{n}`" + (" (disabled by default)" if n in off else "")
                     for n in reg.known_names())


def on_page_markdown(markdown: str, **_: Any) -> str:
    if "<!-- generated:" not in markdown:
        return markdown
    return (markdown.replace("<!-- generated: served-resources -->", served_resources_table())
            .replace("<!-- generated: kubectl-verbs -->", kubectl_table())
            .replace("<!-- generated: controllers -->", controllers_list()))
