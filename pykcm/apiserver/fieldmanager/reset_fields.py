"""The fields a write through one endpoint never sets: the strategies' ``GetResetFields``.

Role: kube-apiserver's registry strategies tell the field manager which fields
their PrepareForCreate/PrepareForUpdate put back from the live object, so no
writer through that endpoint owns them: ``status`` through the main resource of
a kind with a status subresource; ``spec`` (and for some kinds metadata fields)
through ``/status``. A path here excludes everything under it.

Data flow: :func:`reset_fields` (resource, subresource) -> the
:class:`~.path_set.PathSet` the :class:`~.field_manager.FieldManager` filters with.
Custom resources: ``status`` on the main resource when the CRD has a status
subresource; ``metadata`` and ``spec``... everything but ``status`` on ``/status``
is reset by its strategy, but only ``metadata`` and ``spec`` are declared, as upstream.
"""

from __future__ import annotations

from pykcm.apiserver.fieldmanager.path import field
from pykcm.apiserver.fieldmanager.path_set import PathSet

# (group, resource) -> (main resource, status subresource); kinds without a status
# subresource reset nothing
_STATUS = [["status"]]
_SPEC = [["spec"]]
_TABLE: dict[tuple[str, str], tuple[list[list[str]], list[list[str]]]] = {
    ("apps", "deployments"): (_STATUS, [["spec"], ["metadata", "labels"]]),
    ("apps", "replicasets"): (_STATUS, _SPEC),
    ("apps", "statefulsets"): (_STATUS, _SPEC),
    ("apps", "daemonsets"): (_STATUS, _SPEC),
    ("batch", "jobs"): (_STATUS, _SPEC),
    ("batch", "cronjobs"): (_STATUS, _SPEC),
    ("", "pods"): (_STATUS, [["spec"], ["metadata", "deletionTimestamp"],
                             ["metadata", "ownerReferences"]]),
    ("", "services"): (_STATUS, _SPEC),
    ("", "namespaces"): (_STATUS, _SPEC),
    ("", "nodes"): (_STATUS, _SPEC),
    ("", "replicationcontrollers"): (_STATUS, _SPEC),
    ("", "persistentvolumeclaims"): (_STATUS, _SPEC),
    ("", "persistentvolumes"): (_STATUS, _SPEC),
}


def _set(paths: list[list[str]]) -> PathSet:
    return PathSet.of(*[[field(p) for p in path] for path in paths])


def reset_fields(group: str, resource: str, subresource: str = "") -> PathSet | None:
    """The reset fields of a built-in resource's endpoint (None: nothing is reset)."""
    entry = _TABLE.get((group, resource))
    if entry is None:
        return None
    return _set(entry[1] if subresource == "status" else entry[0]) if subresource in (
        "", "status") else None


def custom_resource_reset_fields(has_status: bool, subresource: str = "") -> PathSet | None:
    if not has_status:
        return None
    if subresource == "status":
        return _set([["metadata"], ["spec"]])
    return _set(_STATUS) if subresource == "" else None
