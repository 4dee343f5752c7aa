"""networking.k8s.io/v1 IngressClasses (kube-apiserver ``pkg/registry/networking/ingressclass``):
defaults, validation, printer.

- defaults: ``spec.parameters.scope`` ``Cluster`` when parameters are given without one;
- create: generation 1, moved by spec changes;
- validation: ``spec.controller`` a domain-prefixed path of at most 250 characters,
  immutable; parameters: ``apiGroup`` a DNS subdomain, ``kind`` and ``name`` required
  path segments, ``scope`` ``Cluster`` or ``Namespace`` (a namespace required with
  ``Namespace``, forbidden with ``Cluster``);
- printer: Name (``(default)`` appended for the class annotated
  ``ingressclass.kubernetes.io/is-default-class: "true"``), Controller, Parameters
  (``Kind.group/name``), Age.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    name_is_path_segment,
    not_supported,
    regex_error,
    required,
    too_long,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.defaulting import set_default
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["IngressClassStrategy", "is_default_class"]

DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"
SCOPES: Final = ("Cluster", "Namespace")
_MAX_CONTROLLER_LEN: Final = 250
_HTTP_PATH_FMT: Final = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE: Final = re.compile(_HTTP_PATH_FMT)


def is_default_class(obj: Mapping[str, Any]) -> bool:
    """networking's HasDefaultAnnotation."""
    notes = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    return notes.get(DEFAULT_CLASS_ANNOTATION) == "true"


def _domain_prefixed_path(path: str, value: str) -> list[Cause]:
    """IsDomainPrefixedPath."""
    if not value:
        return [required(path)]
    host, sep, rest = value.partition("/")
    if not sep or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, host, m) for m in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.fullmatch(rest):
        errs.append(invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


def _validate_parameters(params: Any) -> list[Cause]:
    if params is None:
        return []
    p = as_dict(params)
    path = "spec.parameters"
    errs: list[Cause] = []
    group = p.get("apiGroup")
    if group is not None:
        errs += [invalid(f"{path}.apiGroup", group, m) for m in is_dns1123_subdomain(as_str(group))]
    for key in ("kind", "name"):
        value = as_str(p.get(key))
        if not value:
            errs.append(required(f"{path}.{key}"))
        else:
            errs += [invalid(f"{path}.{key}", value, m) for m in name_is_path_segment(value)]
    scope = p.get("scope")
    if scope is None:
        errs.append(required(f"{path}.scope"))
        return errs
    namespace = p.get("namespace")
    if scope not in SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, SCOPES))
    elif scope == "Namespace":
        if namespace is None:
            errs.append(required(f"{path}.namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            errs += [invalid(f"{path}.namespace", namespace, m)
                     for m in is_dns1123_label(as_str(namespace))]
    elif namespace is not None:
        errs.append(forbidden(f"{path}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return errs


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    spec = as_dict(obj.get("spec"))
    controller = as_str(spec.get("controller"))
    if len(controller) > _MAX_CONTROLLER_LEN:
        errs.append(too_long("spec.controller", _MAX_CONTROLLER_LEN))
    errs += _domain_prefixed_path("spec.controller", controller)
    return errs + _validate_parameters(spec.get("parameters"))


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Controller", "string", "Controller that is responsible for handling this class"),
    column("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    name = object_name(obj) + (" (default)" if is_default_class(obj) else "")
    spec = as_dict(obj.get("spec"))
    params = spec.get("parameters")
    shown = "<none>"
    if params is not None:
        p = as_dict(params)
        shown = as_str(p.get("kind"))
        if p.get("apiGroup") is not None:
            shown += "." + as_str(p.get("apiGroup"))
        shown += "/" + as_str(p.get("name"))
    return Row([name, as_str(spec.get("controller")), shown, age(obj, now)])


@register
class IngressClassStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "IngressClass"
    printer = Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        params = as_dict(obj.get("spec")).get("parameters")
        if isinstance(params, dict):
            set_default(params, "scope", "Cluster")

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        errs += validate_immutable(as_dict(new.get("spec")).get("controller") or "",
                                   as_dict(old.get("spec")).get("controller") or "",
                                   "spec.controller")
        return errs + _validate(new)
