"""node.k8s.io/v1 RuntimeClasses (kube-apiserver ``pkg/registry/node/runtimeclass`` and
``pkg/apis/node/validation``): validation and printer.

- validation: ``handler`` required, a DNS-1123 label, immutable; ``overhead.podFixed``
  resource names and non-negative quantities (the container resource rules);
  ``scheduling.nodeSelector`` labels and ``scheduling.tolerations`` (the pod rules, each
  toleration once by key/operator/value/effect);
- a PUT of a missing RuntimeClass creates it, an update needs a resourceVersion
  (AllowCreateOnUpdate, no unconditional update: ``pykcm.api.resources`` and
  rest_storage);
- printer: Name, Handler, Age.

Deviation: upstream warns about deprecated node labels in ``scheduling.nodeSelector``;
pykcm does not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.validation import (
    Cause,
    GoValue,
    duplicate,
    invalid,
    name_is_dns_label,
    required,
    validate_immutable,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.core.podspec_validation import validate_tolerations
from pykcm.apiserver.registry.core.resource_names import (
    validate_container_resource_name,
    validate_quantity_value,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_list,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["RuntimeClassStrategy"]

_TOLERATION_KEY: Final = ("key", "operator", "value", "effect")


def _validate_overhead(overhead: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    for name, value in as_dict(overhead.get("podFixed")).items():
        # (checked as a container's limits: upstream's paths say so)
        path = f"overhead.limits[{name}]"
        errs += validate_container_resource_name(name, path)
        errs += validate_quantity_value(name, value, path)
    return errs


def _validate_scheduling(scheduling: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    selector = scheduling.get("nodeSelector")
    if selector is not None:
        errs += validate_labels(as_dict(selector), "scheduling.nodeSelector")
    tolerations = as_list(scheduling.get("tolerations"))
    errs += validate_tolerations(tolerations, "scheduling.tolerations")
    seen: set[tuple[str, ...]] = set()
    for i, t in enumerate(tolerations):
        t = as_dict(t)
        key = tuple(as_str(t.get(k)) for k in _TOLERATION_KEY)
        if key in seen:
            errs.append(duplicate(f"scheduling.tolerations[{i}]", _go_toleration(t)))
        seen.add(key)
    return errs


def _go_toleration(t: Mapping[str, Any]) -> Any:
    """An internal core.Toleration as field.Duplicate prints it: JSON with Go's field names
    (the internal type has no json tags)."""
    out: dict[str, Any] = {k.capitalize(): as_str(t.get(k)) for k in _TOLERATION_KEY}
    out["TolerationSeconds"] = t.get("tolerationSeconds")
    return GoValue(json.dumps(out, separators=(",", ":")))


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    handler = as_str(obj.get("handler"))
    if not handler:
        errs.append(required("handler"))
    else:
        errs += [invalid("handler", handler, m) for m in name_is_dns_label(handler)]
    if obj.get("overhead") is not None:
        errs += _validate_overhead(as_dict(obj.get("overhead")))
    if obj.get("scheduling") is not None:
        errs += _validate_scheduling(as_dict(obj.get("scheduling")))
    return errs


_COLUMNS: Final = (
    NAME_COLUMN,
    # (upstream's description is ObjectMeta's SwaggerDoc of "handler": there is none)
    column("Handler", "string", ""),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    return Row([object_name(obj), as_str(obj.get("handler")), age(obj, now)])


@register
class RuntimeClassStrategy(Strategy):
    group = "node.k8s.io"
    kind = "RuntimeClass"
    printer = Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        # overhead quantities are stored in canonical form, as Go's round trip writes them
        fixed = as_dict(obj.get("overhead")).get("podFixed")
        if isinstance(fixed, dict):
            for name, value in list(fixed.items()):
                try:
                    fixed[name] = str(Quantity.of(value))
                except (ValueError, TypeError):
                    pass

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = _validate(new)
        errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return errs + validate_immutable(as_str(new.get("handler")), as_str(old.get("handler")),
                                         "handler")
