"""apps/v1 ControllerRevisions (pkg/registry/apps/controllerrevision): validation (data required
and immutable, revision non-negative) and printer. No defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import Cause, required, validate_object_meta_update
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import immutable, nonnegative_field, validate_meta

Obj = dict[str, Any]

# --- validation ------------------------------------------------------------------------

def _create_controller_revision(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, True)
    errs.extend(nonnegative_field(obj, "revision", "revision"))
    if obj.get("data") is None:
        errs.append(required("data", "data is mandatory"))
    return errs


def _update_controller_revision(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_create_controller_revision(new))
    errs.extend(immutable(new.get("data"), old.get("data"), "data"))
    return errs


# --- printer ---------------------------------------------------------------------------

_CONTROLLER_REVISION_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Controller", "string", "Controller of the object"),
    pr.column("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    pr.AGE_COLUMN,
)


def _controller_revision_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    controller = "<none>"
    for ref in pr.as_list(pr.as_dict(obj.get("metadata")).get("ownerReferences")):
        ref = pr.as_dict(ref)
        if ref.get("controller") is not True:
            continue
        api_version = pr.as_str(ref.get("apiVersion"))
        if api_version in ("", "/") or api_version.count("/") == 0:
            group = ""
        elif api_version.count("/") == 1:
            group = api_version.split("/", 1)[0]
        else:
            raise ValueError(f"unexpected GroupVersion string: {api_version}")
        kind = pr.as_str(ref.get("kind"))
        name = pr.as_str(ref.get("name"))
        if not group and not kind:
            controller = name
        else:
            group_kind = f"{kind}.{group}" if group else kind
            controller = f"{group_kind.lower()}/{name}"
        break
    return pr.Row([pr.object_name(obj), controller, pr.as_int(obj.get("revision")), pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

@register
class ControllerRevisionStrategy(Strategy):
    group = "apps"
    kind = "ControllerRevision"
    printer = pr.Printer(_CONTROLLER_REVISION_COLUMNS, _controller_revision_row)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_controller_revision(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_controller_revision(new, old)
