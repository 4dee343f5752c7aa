"""Ownership of ``.spec.replicas`` across a resource and its ``/scale`` subresource.

Role: apimachinery's ``managedfields.ScaleHandler``. A Scale (autoscaling/v1) is a
view of its parent's replica count, so its managedFields are a view too:

- :func:`to_subresource`: the parent's entries that own the replicas path (per the
  parent's apiVersion, e.g. ``apps/v1`` -> ``.spec.replicas``) become Scale entries
  owning ``.spec.replicas`` at ``autoscaling/v1``; the others are left out;
- :func:`to_parent`: after a write through ``/scale`` the parent's entries are
  rebuilt: managers still in the Scale keep their parent entry; managers that lost
  the replicas lose that path; managers new in the Scale get the replicas path at
  the parent's apiVersion (with the parent's time for them: none, as upstream).

Data flow: the scale endpoint builds the live Scale with :func:`to_subresource`,
runs a :class:`~.field_manager.FieldManager` for the Scale kind (subresource
``scale``), then stores the parent with :func:`to_parent`'s entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykcm.apiserver.fieldmanager.managed_fields import Managed, VersionedSet, decode, encode
from pykcm.apiserver.fieldmanager.path import Path, field
from pykcm.apiserver.fieldmanager.path_set import PathSet

SCALE_GROUP_VERSION = "autoscaling/v1"
REPLICAS_IN_SCALE: Path = (field("spec"), field("replicas"))
# the replicas path of the built-in scalable kinds, per parent apiVersion
REPLICAS_PATHS: Mapping[str, Path] = {
    "apps/v1": REPLICAS_IN_SCALE, "v1": REPLICAS_IN_SCALE,
}


def to_subresource(parent_entries: list[dict[str, Any]] | None,
                   mappings: Mapping[str, Path] = REPLICAS_PATHS) -> list[dict[str, Any]] | None:
    parent = decode(parent_entries)
    out = Managed()
    for ident, vs in parent.fields.items():
        path = mappings.get(vs.api_version)
        if path is None or not vs.set.has(path):
            continue
        out.fields[ident] = VersionedSet(PathSet.of(REPLICAS_IN_SCALE), SCALE_GROUP_VERSION,
                                         vs.applied)
        out.times[ident] = parent.times.get(ident)
    return encode(out)


def to_parent(parent_entries: list[dict[str, Any]] | None,
              scale_entries: list[dict[str, Any]] | None, group_version: str,
              mappings: Mapping[str, Path] = REPLICAS_PATHS) -> list[dict[str, Any]] | None:
    parent = decode(parent_entries)
    scale = decode(scale_entries).fields
    out = Managed()
    for ident, vs in parent.fields.items():
        if vs.api_version not in mappings:
            continue
        path = mappings[vs.api_version]
        if not vs.set.has(path):
            out.fields[ident] = vs
            out.times[ident] = parent.times.get(ident)
        elif ident not in scale:
            rest = vs.set.difference(PathSet.of(path))
            if not rest.empty():
                out.fields[ident] = VersionedSet(rest, vs.api_version, vs.applied)
                out.times[ident] = parent.times.get(ident)
        else:
            out.fields[ident] = vs
            out.times[ident] = parent.times.get(ident)
            del scale[ident]
    for ident, vs in scale.items():
        if not vs.set.has(REPLICAS_IN_SCALE):
            continue
        out.fields[ident] = VersionedSet(PathSet.of(mappings[group_version]), group_version,
                                         vs.applied)
        out.times[ident] = parent.times.get(ident)
    return encode(out)
