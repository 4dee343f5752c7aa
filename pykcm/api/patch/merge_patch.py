"""RFC 7386 JSON Merge Patch (``application/merge-patch+json``).

Data flow: a decoded target and a decoded patch object go in; the patch is
walked key by key (``null`` deletes, an object merges recursively into the
target's value, anything else replaces it) and a new document comes out.
Each object on a patched path is shallow-copied once, so the result shares
every untouched subtree with the target; values taken from the patch are
copied (with the ``null`` members of new objects dropped, as the RFC's
recursion into an empty target does), so the result never aliases the patch.
Neither input is modified.
"""

from __future__ import annotations

from typing import Any

from pykcm.api.patch._errors import InvalidPatchError

__all__ = ["apply_merge_patch"]


def _copy_plain(value: Any) -> Any:
    # Array members are taken as they are (the RFC replaces arrays wholesale,
    # nulls inside them included); only copied so the result owns them.
    if isinstance(value, dict):
        return {k: _copy_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_plain(v) for v in value]
    return value


def _merge(target: Any, patch: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = _merge(result.get(key), value)
        elif isinstance(value, list):
            result[key] = [_copy_plain(v) for v in value]
        else:
            result[key] = value
    return result


def apply_merge_patch(original: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch and return the merged document.

    ``patch`` must be a JSON object (the only kind kube-apiserver accepts;
    anything else raises :class:`InvalidPatchError` with ``http_status`` 400).
    A non-object ``original`` is treated as ``{}``, as the RFC says. Inputs
    are not modified; the result shares unchanged subtrees with
    ``original`` and must be treated as immutable where it does.
    """
    if not isinstance(patch, dict):
        raise InvalidPatchError("Invalid JSON Patch", http_status=400)
    return _merge(original, patch)
