"""core/v1 PodTemplates (pkg/registry/core/podtemplate): defaults and validation of the
template, printer; the generation follows the template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import Cause, validate_object_meta_update
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import child_dict, go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_map, validate_meta

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

def _default_pod_template_kind(obj: Obj, create: bool) -> None:
    default_pod_template(child_dict(obj, "template"))


# --- validation ------------------------------------------------------------------------

def _create_pod_template(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, True)
    errs.extend(podspec.validate_pod_template_spec(as_map(obj.get("template")), "template"))
    return errs


def _update_pod_template(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(podspec.validate_pod_template_spec(as_map(new.get("template")), "template"))
    return errs


# --- printer ---------------------------------------------------------------------------

_POD_TEMPLATE_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Containers", "string", pr.CONTAINERS_DESCRIPTION),
    pr.column("Images", "string", pr.IMAGES_DESCRIPTION),
    pr.column("Pod Labels", "string", "The labels for the pod template."),
)


def _pod_template_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    template = pr.as_dict(obj.get("template"))
    names, images = pr.layout_container_cells(pr.as_dict(template.get("spec")).get("containers"))
    labels = pr.format_labels(pr.as_dict(template.get("metadata")).get("labels"))
    return pr.Row([pr.object_name(obj), names, images, labels])


# --- the strategy ----------------------------------------------------------------------

@register
class PodTemplateStrategy(Strategy):
    kind = "PodTemplate"
    printer = pr.Printer(_POD_TEMPLATE_COLUMNS, _pod_template_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_pod_template_kind(obj, create)
        go_order_object(obj)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        return new.get("template") != old.get("template")

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_pod_template(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_pod_template(new, old)
