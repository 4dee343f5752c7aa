"""The field manager of a served resource and endpoint: what the wiring calls.

Role: kube-apiserver builds one FieldManager per resource endpoint (main resource,
``/status``, ``/scale``) from the kind's schema, the strategy's reset fields and the
kind's typed zero value. :func:`field_manager_for` does the same from pykcm's
:class:`~pykcm.api.resources.ResourceInfo` (and, for a custom resource, its version's
``openAPIV3Schema``); results are cached per endpoint (built-in schemas) since a
manager holds no per-request state.

Every create, update and patch is tracked, as kube-apiserver does (its skip-non-applied
manager is off by default). A custom resource's manager is kept per served version as
long as the version's schema object is the same (a changed CRD gives a new one), so its
resolved schema atoms are reused across writes.

How the server uses it:

- every create/update/patch that is not an apply: ``fm.update(live, new, manager)``
  with ``manager = manager_name.manager_or_user_agent(?fieldManager, User-Agent)``,
  on the decoded and defaulted object before the strategy's PrepareForCreate/Update;
- ``PATCH application/apply-patch+yaml``: :func:`apply_options.validate_patch_options`,
  the YAML body decoded, :func:`apply_options.check_applied_name`, then
  ``fm.apply(live or None, applied, manager, force)``; the result goes through the
  update (or create) path as the patched object, its managedFields kept;
- ``/scale``: the Scale is built with :func:`scale_handler.to_subresource` entries, the
  Scale's field manager runs on it, the parent stores :func:`scale_handler.to_parent`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pykcm.api.resources import ResourceInfo
from pykcm.apiserver.fieldmanager.field_manager import FieldManager
from pykcm.apiserver.fieldmanager.reset_fields import custom_resource_reset_fields, reset_fields
from pykcm.apiserver.fieldmanager.schema import for_builtin, for_crd
from pykcm.apiserver.registry.defaults import zero_object_fields


@lru_cache(maxsize=512)
def _builtin(info: ResourceInfo, subresource: str) -> FieldManager | None:
    if subresource == "scale":
        s = for_builtin("autoscaling", "v1", "Scale")
        return None if s is None else FieldManager(s, "autoscaling", "v1", "Scale",
                                                   subresource="scale")
    s = for_builtin(info.group, info.version, info.kind)
    if s is None:
        return None
    return FieldManager(s, info.group, info.version, info.kind, subresource=subresource,
                        reset_fields=reset_fields(info.group, info.plural, subresource),
                        zero_fields=zero_object_fields(info.group, info.kind)[0])


def field_manager_for(info: ResourceInfo, subresource: str = "",
                      crd_schema: Mapping[str, Any] | None = None,
                      custom: bool = False) -> FieldManager | None:
    """The field manager of an endpoint (None: a kind pykcm has no schema for)."""
    if not custom:
        return _builtin(info, subresource)
    if subresource == "scale":
        return _builtin(info, "scale")
    key = (info, subresource)
    hit = _custom.get(key)
    if hit is not None and hit[0] is crd_schema:
        return hit[1]
    fm = FieldManager(for_crd(crd_schema), info.group, info.version, info.kind,
                      subresource=subresource,
                      reset_fields=custom_resource_reset_fields(info.status_subresource,
                                                                subresource))
    if len(_custom) >= 1024:
        _custom.clear()
    _custom[key] = (crd_schema, fm)
    return fm


# (resource, subresource) -> (the version's schema object, its manager)
_custom: dict[tuple[ResourceInfo, str], tuple[Mapping[str, Any] | None, FieldManager]] = {}
