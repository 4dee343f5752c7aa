"""core/v1 PodTemplates (pkg/registry/core/podtemplate): the generation follows the template.

Defaults, validation and printer are still the flat modules'.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register


@register
class PodTemplateStrategy(FlatModulesStrategy):
    kind = "PodTemplate"

    def generation_changed(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return new.get("template") != old.get("template")
