"""Transitional: the default strategy for built-in kinds whose defaults, validation and
printer still live in the flat modules (apiserver/defaults.py, validation.py, tables.py),
which dispatch on the kind's name.

Each kind moves to its own ``registry/<group>/<resource>.py`` (a ``Strategy``
subclass holding its rules); when none is left here this module and the
kind-keyed tables of those flat modules go.
"""

from __future__ import annotations

from typing import Any

from pykcm.api.resources import ResourceInfo
from pykcm.api.validation import Cause
from pykcm.apiserver import defaults as _defaults
from pykcm.apiserver import validation as _validation
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]

# The API groups the flat modules serve; kinds of other groups get no defaults or
# validation from them (events.k8s.io writes are routed to the core Event).
_FLAT_GROUPS = frozenset({"", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io",
                          "storage.k8s.io"})


class FlatModulesStrategy(Strategy):
    """The rules of a kind not yet in a module of its own: the flat modules' dispatch."""

    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self._flat = info.group in _FLAT_GROUPS

    def default(self, obj: Obj, *, create: bool) -> None:
        if self._flat:
            _defaults.apply_defaults(self.info.kind, obj, create=create)

    def validate_create(self, obj: Obj) -> list[Cause]:
        if not self._flat:
            return []
        return _validation.validate_create(self.info.kind, obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        if not self._flat:
            return []
        return _validation.validate_update(self.info.kind, new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        if not self._flat:
            return []
        return _validation.validate_status_update(self.info.kind, new, old)
