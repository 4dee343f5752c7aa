"""The 409 of an apply that would change fields other managers own.

Role: apimachinery's ``managedfields/internal/conflict.go``: one cause per
conflicting field (type ``FieldManagerConflict``, ``conflict with "<manager>"``,
the field's path as SMD prints it) and a message that names the single conflict,
or groups them per manager (managers sorted by their identifier, each path on
its own ``- `` line). An Update manager is printed with its apiVersion
(``"kubectl-edit" using apps/v1``), a subresource with ``with subresource "status"``.

Data flow: :class:`~.updater.Conflicts` (manager identifiers and paths, in SMD's
order: manager by manager, paths in set order) -> :func:`conflict_error`.
Deviation: upstream lists the causes in Go's map order (random between managers);
pykcm lists them manager by manager in the message's order.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager.path import path_string

if TYPE_CHECKING:
    from pykcm.apiserver.fieldmanager.updater import Conflict


def _go_q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def print_manager(ident: str) -> str:
    try:
        entry = json.loads(ident)
    except ValueError:
        return _go_q(ident)
    if not isinstance(entry, dict):
        return _go_q(ident)
    out = _go_q(entry.get("manager", ""))
    if entry.get("subresource"):
        out += f" with subresource {_go_q(entry['subresource'])}"
    if entry.get("operation") == "Update":
        out += f" using {entry.get('apiVersion', '')}"
    return out


def conflict_message(conflicts: list[Conflict]) -> str:
    if len(conflicts) == 1:
        c = conflicts[0]
        return (f"Apply failed with 1 conflict: conflict with {print_manager(c.manager)}: "
                f"{path_string(c.path)}")
    by_manager: dict[str, list[str]] = {}
    for c in conflicts:
        by_manager.setdefault(c.manager, []).append(path_string(c.path))
    lines = []
    for m in sorted(by_manager):
        lines.append(f"conflicts with {print_manager(m)}:")
        lines.extend(f"- {p}" for p in by_manager[m])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


def conflict_error(conflicts: list[Conflict]) -> StatusError:
    ordered = sorted(conflicts, key=lambda c: c.manager)   # stable: paths keep set order
    causes = [{"reason": "FieldManagerConflict",
               "message": f"conflict with {print_manager(c.manager)}",
               "field": path_string(c.path)} for c in ordered]
    return StatusError(409, "Conflict", conflict_message(conflicts), details={"causes": causes})
