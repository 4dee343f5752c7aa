"""Test helper: the registry strategy of a built-in kind named by its kind alone.

The unit tests of defaults, validation and tables name kinds ("Deployment",
"Pod"); the server looks strategies up by (group, kind). A kind served by two
groups (Event) is the first one's (core).
"""

from __future__ import annotations

from typing import Any

from pykcm.api.resources import BUILTIN_RESOURCES, ResourceInfo
from pykcm.api.validation import Cause
from pykcm.apiserver.registry.lookup import strategy_for
from pykcm.apiserver.registry.strategy import Strategy

_BY_KIND: dict[str, ResourceInfo] = {}
for _info in BUILTIN_RESOURCES:
    _BY_KIND.setdefault(_info.kind, _info)


def strategy(kind: str) -> Strategy:
    """The kind's strategy; a kind the server does not serve gets the default strategy (as
    a namespaced core resource)."""
    info = _BY_KIND.get(kind) or ResourceInfo(group="", version="v1", kind=kind,
                                             plural=kind.lower() + "s",
                                             singular=kind.lower(), namespaced=True)
    return strategy_for(info)


def apply_defaults(kind: str, obj: dict[str, Any], *, create: bool = True) -> None:
    strategy(kind).default(obj, create=create)


def validate_create(kind: str, obj: dict[str, Any]) -> list[Cause]:
    return strategy(kind).validate_create(obj)


def validate_update(kind: str, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    return strategy(kind).validate_update(new, old)


def validate_status_update(kind: str, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    return strategy(kind).validate_status_update(new, old)
