"""Transforms for informer caches: what to drop from objects before they are cached.

client-go's ``cache.TransformFunc`` use (``informers.WithTransform``), as
kube-controller-manager does to strip ``metadata.managedFields``.

Data flow::

    Reflector ── object from the API server ──► DeltaFIFO ── transform(obj) ──► queue
                                                                              ──► Indexer

A transform runs once per object arriving from the server (list items and
watch events; not resyncs, not tombstones) before the object is queued, so
the cache, the handlers and the listers all see the transformed object.

:func:`strip_managed_fields` copies only what it must: an object without
``metadata.managedFields`` is returned as is; otherwise a new top-level dict
and a new ``metadata`` dict are built (two shallow copies: every other value
is shared with the input, which is left untouched). A compact ``FrozenObject``
(the opt-in compact cache) is rebuilt without them
(``FrozenObject.without_managed_fields``); with
``SharedInformerFactory(compact_objects=True)`` they are dropped while
decoding instead, never copied.
"""

from __future__ import annotations

from typing import Any

__all__ = ["strip_managed_fields"]


def strip_managed_fields(obj: Any) -> Any:
    """``obj`` without ``metadata.managedFields`` (``obj`` itself when it has none)."""
    if not isinstance(obj, dict):
        # A compact cached object (pykcm.cache.frozen_object.FrozenObject).
        strip = getattr(obj, "without_managed_fields", None)
        return strip() if strip is not None else obj
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    out = obj.copy()
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out
