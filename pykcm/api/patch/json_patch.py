"""RFC 6902 JSON Patch (``application/json-patch+json``).

Data flow: a decoded patch document (a list of operation objects) and a
decoded target document go in; each operation is checked and applied in
order to a copy-on-write view of the target; the patched document comes out.
The inputs are never modified: a container is shallow-copied the first time
an operation writes into it (or below it), so the result shares every
untouched subtree with ``document``. Values taken from the patch are
deep-copied, so the result never aliases the patch document.

Error messages follow evanphx/json-patch (the library kube-apiserver uses),
e.g. ``testing value /spec/replicas failed: test failed`` and
``replace operation does not apply: doc is missing key: /spec/foo: missing value``.
As that library does for kube-apiserver (``AccumulatedCopySizeLimit``, set from
``JSONPatchMaxCopyBytes``), ``copy`` operations may together copy at most
:data:`ACCUMULATED_COPY_SIZE_LIMIT` bytes of JSON: a patch of a few dozen
``copy`` operations that each double a value would otherwise build gigabytes.
Where that library is looser than the RFC (negative array indices, leading
zeros, a missing ``value`` member, ``test`` of an absent member against
``null``), this module follows the RFC and rejects the operation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson

from pykcm.api.patch._errors import InvalidPatchError, PatchTestFailedError

__all__ = ["ACCUMULATED_COPY_SIZE_LIMIT", "apply_json_patch", "parse_pointer"]

# kube-apiserver's JSONPatchMaxCopyBytes (3 MiB): the JSON bytes all copy operations of one
# patch may copy together.
ACCUMULATED_COPY_SIZE_LIMIT = 3 * 1024 * 1024

_MISSING: Any = object()
_Container = dict[str, Any] | list[Any]


class _Missing(Exception):
    """Internal: a pointer does not resolve (caught and turned into an upstream message)."""


@functools.lru_cache(maxsize=4096)
def parse_pointer(pointer: str) -> tuple[str, ...]:
    """Split an RFC 6901 JSON pointer into unescaped reference tokens ("" is the whole document)."""
    if pointer == "":
        return ()
    if pointer[0] != "/":
        raise InvalidPatchError(f'invalid JSON pointer "{pointer}": must start with "/"')
    tokens = pointer[1:].split("/")
    for i, token in enumerate(tokens):
        if "~" in token:
            # Every "~" must start one of the two escapes; "~1" is undone
            # before "~0" so that "~01" means "~1" and not "/".
            rest = token.replace("~0", "").replace("~1", "")
            if "~" in rest:
                raise InvalidPatchError(
                    f'invalid JSON pointer "{pointer}": bad escape in "{token}"'
                )
            tokens[i] = token.replace("~1", "/").replace("~0", "~")
    return tuple(tokens)


def _array_index(token: str) -> int | None:
    """The RFC 6901 array index a token names: ASCII digits without leading zeros."""
    if token.isascii() and token.isdigit() and (token == "0" or token[0] != "0"):
        return int(token)
    return None


def _deepcopy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deepcopy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deepcopy(v) for v in value]
    return value


def json_equal(a: Any, b: Any) -> bool:
    """RFC 6902 section 4.6 equality: numbers by value, booleans distinct from numbers."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for k, v in a.items():
            w = b.get(k, _MISSING)
            if w is _MISSING or not json_equal(v, w):
                return False
        return True
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(b, (dict, list)):
        return False
    return bool(a == b)


def _resolve(root: Any, tokens: tuple[str, ...]) -> Any:
    cur = root
    for token in tokens:
        if isinstance(cur, dict):
            cur = cur.get(token, _MISSING)
            if cur is _MISSING:
                raise _Missing
        elif isinstance(cur, list):
            idx = _array_index(token)
            if idx is None or idx >= len(cur):
                raise _Missing
            cur = cur[idx]
        else:
            raise _Missing
    return cur


class _Doc:
    """The document being patched, copy-on-write.

    ``owned`` holds the ids of containers this apply created; only those are
    written in place. ``keep`` pins them so an id cannot be reused by a new
    object while the apply runs.
    """

    __slots__ = ("copied", "keep", "owned", "root")

    def __init__(self, root: Any) -> None:
        self.root = root
        self.owned: set[int] = set()
        self.keep: list[_Container] = []
        self.copied = 0  # JSON bytes copied by copy operations so far

    def _own(self, container: _Container) -> _Container:
        if id(container) in self.owned:
            return container
        copy: _Container = dict(container) if isinstance(container, dict) else list(container)
        self.owned.add(id(copy))
        self.keep.append(copy)
        return copy

    def parent(self, tokens: tuple[str, ...]) -> _Container | None:
        """The writable container holding ``tokens[-1]``, or None if the path to it is missing."""
        cur = self.root
        if not isinstance(cur, (dict, list)):
            return None
        cur = self.root = self._own(cur)
        for token in tokens[:-1]:
            if isinstance(cur, dict):
                child = cur.get(token, _MISSING)
                if not isinstance(child, (dict, list)):
                    return None
                child = self._own(child)
                cur[token] = child
            else:
                idx = _array_index(token)
                if idx is None or idx >= len(cur):
                    return None
                child = cur[idx]
                if not isinstance(child, (dict, list)):
                    return None
                child = self._own(child)
                cur[idx] = child
            cur = child
        return cur


def _op_path(op: dict[str, Any], name: str, field: str = "path") -> tuple[str, tuple[str, ...]]:
    path = op.get(field, _MISSING)
    if path is _MISSING:
        raise InvalidPatchError(
            f"{name} operation failed to decode {field}: operation missing {field} field: missing value"
        )
    if not isinstance(path, str):
        raise InvalidPatchError(
            f"{name} operation failed to decode {field}: {field} must be a string"
        )
    return path, parse_pointer(path)


def _op_value(op: dict[str, Any], name: str) -> Any:
    value = op.get("value", _MISSING)
    if value is _MISSING:
        raise InvalidPatchError(f"{name} operation missing value field: missing value")
    return value


def _add(doc: _Doc, path: str, tokens: tuple[str, ...], value: Any, what: str) -> None:
    """Insert ``value`` at ``tokens``; ``what`` prefixes the missing-parent message."""
    if not tokens:
        doc.root = value
        return
    parent = doc.parent(tokens)
    if parent is None:
        raise InvalidPatchError(f"{what}: missing value")
    key = tokens[-1]
    if isinstance(parent, dict):
        parent[key] = value
        return
    if key == "-":
        parent.append(value)
        return
    idx = _array_index(key)
    if idx is None:
        raise InvalidPatchError(
            f"error in add for path: '{path}': value was not a proper array index: '{key}'"
        )
    if idx > len(parent):
        raise InvalidPatchError(
            f"error in add for path: '{path}': unable to access invalid index: {idx}: "
            "invalid index referenced"
        )
    parent.insert(idx, value)


def _remove(doc: _Doc, path: str, tokens: tuple[str, ...], missing: str | None) -> Any:
    """Remove and return the value at ``tokens``; ``missing`` overrides all not-found messages."""
    if not tokens:
        raise InvalidPatchError(
            missing or "remove operation does not apply: cannot remove the whole document"
        )
    parent = doc.parent(tokens)
    if parent is None:
        raise InvalidPatchError(
            missing
            or f'remove operation does not apply: doc is missing path: "{path}": missing value'
        )
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise InvalidPatchError(
                missing
                or f"error in remove for path: '{path}': Unable to remove nonexistent key: {key}: "
                "missing value"
            )
        return parent.pop(key)
    idx = _array_index(key)
    if idx is None or idx >= len(parent):
        raise InvalidPatchError(
            missing
            or f"error in remove for path: '{path}': Unable to remove invalid index: {key}: "
            "invalid index referenced"
        )
    return parent.pop(idx)


def _op_add(doc: _Doc, op: dict[str, Any]) -> None:
    path, tokens = _op_path(op, "add")
    value = _deepcopy(_op_value(op, "add"))
    _add(doc, path, tokens, value, f'add operation does not apply: doc is missing path: "{path}"')


def _op_remove(doc: _Doc, op: dict[str, Any]) -> None:
    path, tokens = _op_path(op, "remove")
    _remove(doc, path, tokens, None)


def _op_replace(doc: _Doc, op: dict[str, Any]) -> None:
    path, tokens = _op_path(op, "replace")
    value = _deepcopy(_op_value(op, "replace"))
    if not tokens:
        doc.root = value
        return
    parent = doc.parent(tokens)
    if parent is None:
        raise InvalidPatchError(
            f"replace operation does not apply: doc is missing path: {path}: missing value"
        )
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise InvalidPatchError(
                f"replace operation does not apply: doc is missing key: {path}: missing value"
            )
        parent[key] = value
        return
    idx = _array_index(key)
    if idx is None or idx >= len(parent):
        raise InvalidPatchError(
            f"replace operation does not apply: doc is missing key: {path}: missing value"
        )
    parent[idx] = value


def _op_move(doc: _Doc, op: dict[str, Any]) -> None:
    from_path, from_tokens = _op_path(op, "move", "from")
    path, tokens = _op_path(op, "move")
    missing_from = (
        f"move operation does not apply: doc is missing from path: {from_path}: missing value"
    )
    if from_tokens == tokens:
        # Moving a value onto itself is a no-op, but it must exist.
        try:
            _resolve(doc.root, from_tokens)
        except _Missing:
            raise InvalidPatchError(missing_from) from None
        return
    if len(tokens) > len(from_tokens) and tokens[: len(from_tokens)] == from_tokens:
        raise InvalidPatchError(
            f"move operation does not apply: from path {from_path} is a prefix of path {path}"
        )
    value = _remove(doc, from_path, from_tokens, missing_from)
    _add(
        doc,
        path,
        tokens,
        value,
        f"move operation does not apply: doc is missing destination path: {path}",
    )


def _op_copy(doc: _Doc, op: dict[str, Any]) -> None:
    from_path, from_tokens = _op_path(op, "copy", "from")
    path, tokens = _op_path(op, "copy")
    try:
        value = _resolve(doc.root, from_tokens)
    except _Missing:
        raise InvalidPatchError(
            f"copy operation does not apply: doc is missing from path: {from_path}: missing value"
        ) from None
    # The copy must be independent: later operations may write into either. Its size is
    # that of its JSON encoding, as evanphx/json-patch counts it.
    encoded = orjson.dumps(value)
    doc.copied += len(encoded)
    if doc.copied > ACCUMULATED_COPY_SIZE_LIMIT:
        raise InvalidPatchError(
            "Unable to complete the copy, the accumulated size increase of copy is "
            f"{doc.copied}, exceeding the limit {ACCUMULATED_COPY_SIZE_LIMIT}")
    _add(
        doc,
        path,
        tokens,
        orjson.loads(encoded),
        f"copy operation does not apply: doc is missing destination path: {path}",
    )


def _op_test(doc: _Doc, op: dict[str, Any]) -> None:
    path, tokens = _op_path(op, "test")
    expected = _op_value(op, "test")
    try:
        actual = _resolve(doc.root, tokens)
    except _Missing:
        raise PatchTestFailedError(f"testing value {path} failed: test failed") from None
    if not json_equal(actual, expected):
        raise PatchTestFailedError(f"testing value {path} failed: test failed")


_OPS: dict[str, Callable[[_Doc, dict[str, Any]], None]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"


def apply_json_patch(document: Any, patch: Any) -> Any:
    """Apply an RFC 6902 patch (a decoded list of operations) and return the patched document.

    ``document`` and ``patch`` are not modified. The result shares unchanged
    subtrees with ``document``: callers treat both as immutable afterwards
    (the API server does), or deep-copy before mutating.

    Raises :class:`InvalidPatchError` (``http_status`` 400 when ``patch`` is
    not a list of objects, 422 when an operation is malformed or does not
    apply) and :class:`PatchTestFailedError` (422) when a ``test`` fails.
    """
    if not isinstance(patch, list):
        raise InvalidPatchError(
            f"json: cannot unmarshal {_json_kind(patch)} into Go value of type jsonpatch.Patch",
            http_status=400,
        )
    for op in patch:
        if not isinstance(op, dict):
            raise InvalidPatchError(
                f"json: cannot unmarshal {_json_kind(op)} into Go value of type jsonpatch.Operation",
                http_status=400,
            )
    doc = _Doc(document)
    for op in patch:
        kind = op.get("op")
        handler = _OPS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise InvalidPatchError(
                f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}"
            )
        handler(doc, op)
    return doc.root
