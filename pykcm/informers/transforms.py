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
is shared with the input, which is left untouched).
"""

from __future__ import annotations

from typing import Any

__all__ = ["strip_managed_fields"]


def strip_managed_fields(obj: Any) -> Any:
    """``obj`` without ``metadata.managedFields`` (``obj`` itself when it has none)."""
    if not isinstance(obj, dict):
        return obj
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    out = obj.copy()
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out
