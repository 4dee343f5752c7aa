"""apps/v1 DaemonSets (pkg/registry/apps/daemonset): the template generation.

spec.templateGeneration (the ``deprecated.daemonset.template.generation``
annotation in apps/v1) is the server's: 1 on create, one more with every change of
the pod template. Defaults, validation and printer are still the flat modules'.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register

Obj = dict[str, Any]

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_generation(meta: Obj) -> int:
    """A DaemonSet's templateGeneration, which apps/v1 carries in an annotation."""
    v = (meta.get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(v) if v is not None else 0
    except (TypeError, ValueError):
        return 0


def _set_template_generation(obj: Obj, value: int) -> None:
    meta = obj["metadata"]
    annotations = dict(meta.get("annotations") or {})
    annotations[TEMPLATE_GENERATION] = str(value)
    meta["annotations"] = annotations


@register
class DaemonSetStrategy(FlatModulesStrategy):
    group = "apps"
    kind = "DaemonSet"

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        _set_template_generation(obj, max(1, _template_generation(obj["metadata"])))

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        tg = _template_generation(old["metadata"])
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            tg += 1
        _set_template_generation(new, tg)
