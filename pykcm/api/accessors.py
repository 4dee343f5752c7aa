"""Accessors of an object's ``metadata``, ``spec`` and ``status`` in its JSON wire form.

apimachinery's ``meta.Accessor`` for dicts: controllers read fields of
objects from caches and events, where a part may be missing, null or (in a
tombstone, a malformed object) not a mapping at all. Each accessor answers
the part, or an empty mapping, so ``meta_of(obj).get("name")`` never fails;
``name_of``, ``namespace_of`` and ``uid_of`` answer those metadata strings ("" when
missing), as Go's ``GetName()`` and friends.
The answer is the object's own mapping, not a copy: read it, never mutate
it (objects from a cache are shared).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["meta_of", "name_of", "namespace_of", "spec_of", "status_of", "uid_of"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})

# Each accessor tests ``type(x) is dict`` first: the objects are dicts nearly always, and
# isinstance against the Mapping ABC costs an __instancecheck__ call (these run for every
# object every handler and sync looks at).


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.metadata``, or an empty mapping."""
    m = obj.get("metadata")
    return m if type(m) is dict or isinstance(m, Mapping) else _EMPTY


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.spec``, or an empty mapping."""
    s = obj.get("spec")
    return s if type(s) is dict or isinstance(s, Mapping) else _EMPTY


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.status``, or an empty mapping."""
    s = obj.get("status")
    return s if type(s) is dict or isinstance(s, Mapping) else _EMPTY


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, or ""."""
    return str(meta_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, or "" (cluster-scoped objects)."""
    return str(meta_of(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``, or ""."""
    return str(meta_of(obj).get("uid") or "")
