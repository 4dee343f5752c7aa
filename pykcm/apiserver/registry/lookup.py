"""Which strategy serves a resource: the registration of per-kind strategies and the lookup.

Data flow: every module of a group package (``registry/<group>/<resource>.py``)
decorates its Strategy subclass with :func:`register`, which files it under the
class's ``(group, kind)``. The first lookup imports every module below
``pykcm.apiserver.registry`` (so a new file is all a new kind needs: no list to
edit), then :func:`strategy_for` answers with an instance of the registered
class bound to the ``ResourceInfo`` (one per resource, cached), or the default
strategy for a kind without a module.

Custom resources are not looked up here: the generic store builds their
strategy from the CRD version it serves (``CustomResourceStrategy``).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from typing import TypeVar

from pykcm.api.resources import BUILTIN_RESOURCES, ResourceInfo
from pykcm.apiserver.registry.strategy import Strategy

S = TypeVar("S", bound=type[Strategy])

_REGISTERED: dict[tuple[str, str], type[Strategy]] = {}
_INSTANCES: dict[ResourceInfo, Strategy] = {}
_loaded = False
_lock = threading.Lock()


def register(cls: S) -> S:
    """Class decorator: ``cls`` is the strategy of its ``(group, kind)``."""
    key = (cls.group, cls.kind)
    if not cls.kind:
        raise TypeError(f"{cls.__name__} names no kind")
    other = _REGISTERED.get(key)
    if other is not None and other is not cls:
        raise TypeError(f"{key} has two strategies: {other.__name__} and {cls.__name__}")
    _REGISTERED[key] = cls
    return cls


def _load() -> None:
    """Import every module of the group packages once (each registers its strategies)."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        import pykcm.apiserver.registry as root

        for mod in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
            # a resource module sits in a group package: registry.<group>.<resource>
            if mod.name.count(".") >= 4 and not mod.name.startswith(root.__name__ + ".generic"):
                importlib.import_module(mod.name)
        _loaded = True


def strategy_class(group: str, kind: str) -> type[Strategy]:
    """The class serving (group, kind): its registered strategy, else the default."""
    _load()
    return _REGISTERED.get((group, kind), Strategy)


def strategy_for(info: ResourceInfo) -> Strategy:
    """The strategy of a built-in resource (cached per ResourceInfo)."""
    st = _INSTANCES.get(info)
    if st is None:
        st = _INSTANCES[info] = strategy_class(info.group, info.kind)(info)
    return st


def strategy_for_kind(group: str, kind: str) -> Strategy:
    """The strategy of a built-in kind by name (tests, tools): bound to its ResourceInfo."""
    for info in BUILTIN_RESOURCES:
        if info.group == group and info.kind == kind:
            return strategy_for(info)
    raise KeyError(f"no built-in resource of kind {kind!r} in group {group!r}")
