"""Accessors of an object's ``metadata``, ``spec`` and ``status`` in its JSON wire form.

apimachinery's ``meta.Accessor`` for dicts: controllers read fields of
objects from caches and events, where a part may be missing, null or (in a
tombstone, a malformed object) not a mapping at all. Each accessor answers
the part, or an empty mapping, so ``meta_of(obj).get("name")`` never fails;
``name_of``, ``namespace_of`` and ``uid_of`` answer those metadata strings ("" when
missing), as Go's ``GetName()`` and friends; ``labels_of`` the labels (None when
absent), which a label selector reads for every cached pod a claim or an orphan's
handler looks at: a cache's own object type may register a faster reading of them
(``register_labels_of``; the compact cached objects hand out their shared labels dict
instead of a read-only copy per access).
The answer is the object's own mapping, not a copy: read it, never mutate
it (objects from a cache are shared).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["labels_of", "meta_of", "name_of", "namespace_of", "register_labels_of", "spec_of",
           "status_of", "uid_of"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})

# Each accessor tests whether the value's type is in the set of the types already found
# to be Mappings (dict from the start): isinstance against the Mapping ABC costs an
# __instancecheck__ call (these run for every object every handler and sync looks at; the
# compact cached objects' metadata is a FrozenMeta, not a dict). A type never stops being
# a Mapping (ABCs only gain registrations), so a type found once is one forever.
_MAPPING_TYPES: set[type] = {dict}
_MAPPING_TYPES_MAX = 64


def _mapping_or_empty(v: Any) -> Mapping[str, Any]:
    t = type(v)
    if t in _MAPPING_TYPES:
        m: Mapping[str, Any] = v
        return m
    if isinstance(v, Mapping):
        if len(_MAPPING_TYPES) < _MAPPING_TYPES_MAX:
            _MAPPING_TYPES.add(t)
        return v
    return _EMPTY


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.metadata``, or an empty mapping."""
    m: Any = obj.get("metadata")
    return m if type(m) in _MAPPING_TYPES else _mapping_or_empty(m)


_LABELS_OF_BY_TYPE: dict[type, Callable[[Any], Mapping[str, str] | None]] = {}


def register_labels_of(t: type, labels_of: Callable[[Any], Mapping[str, str] | None]) -> None:
    """Make :func:`labels_of` answer ``labels_of(obj)`` for objects of type ``t`` (which
    must read the same labels as ``meta_of(obj).get("labels")``, only faster)."""
    _LABELS_OF_BY_TYPE[t] = labels_of


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str] | None:
    """``obj.metadata.labels`` (None when absent), for reading only: it may be the cached
    object's own mapping, shared with every object that has the same labels."""
    fast = _LABELS_OF_BY_TYPE.get(type(obj))
    if fast is not None:
        return fast(obj)
    labels: Any = meta_of(obj).get("labels")
    return labels  # type: ignore[no-any-return]


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.spec``, or an empty mapping."""
    s: Any = obj.get("spec")
    return s if type(s) in _MAPPING_TYPES else _mapping_or_empty(s)


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.status``, or an empty mapping."""
    s: Any = obj.get("status")
    return s if type(s) in _MAPPING_TYPES else _mapping_or_empty(s)


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, or ""."""
    return str(meta_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, or "" (cluster-scoped objects)."""
    return str(meta_of(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``, or ""."""
    return str(meta_of(obj).get("uid") or "")
