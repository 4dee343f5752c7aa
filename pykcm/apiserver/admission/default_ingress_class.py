"""Admission plugin DefaultIngressClass (kube-apiserver
``plugin/pkg/admission/network/defaultingressclass``), on by default in v1.36.

On the create of an Ingress that names no class (neither ``spec.ingressClassName`` nor the
deprecated ``kubernetes.io/ingress.class`` annotation), ``spec.ingressClassName`` becomes the
default IngressClass: the one annotated ``ingressclass.kubernetes.io/is-default-class:
"true"``, the newest when several are (ties by name). Updates and subresources are left
alone, as upstream.

Data flow: rest_storage calls :func:`admit` on an Ingress create, with its committed
IngressClasses (the plugin's informer lister).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from pykcm.api.timestamps import parse_time

__all__ = ["admit"]

CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"


def _created(cls: dict[str, Any]) -> float:
    return parse_time((cls.get("metadata") or {}).get("creationTimestamp")) or 0.0


def default_class(classes: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """getDefaultClass: the newest class marked default (ties: the first name)."""
    marked = [c for c in classes
              if ((c.get("metadata") or {}).get("annotations") or {}).get(
                  DEFAULT_CLASS_ANNOTATION) == "true"]
    if not marked:
        return None
    return min(marked, key=lambda c: (-_created(c), str(c["metadata"].get("name") or "")))


def admit(obj: dict[str, Any], classes: Callable[[], Iterable[dict[str, Any]]]) -> None:
    """Default a new Ingress's class in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("ingressClassName") is not None:
        return
    if CLASS_ANNOTATION in ((obj.get("metadata") or {}).get("annotations") or {}):
        return
    found = default_class(classes())
    if found is not None:
        spec["ingressClassName"] = found["metadata"]["name"]
