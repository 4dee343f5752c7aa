"""Kubernetes strategic merge patch (``application/strategic-merge-patch+json``) for built-in kinds.

This is the apply half of apimachinery's ``pkg/util/strategicpatch`` (v1.36
semantics), driven by the compact schema of ``_schema`` instead of Go struct
tags.

Data flow: ``apply_strategic_merge_patch(original, patch, kind_ref)`` looks up
the :class:`TypeNode` of ``kind_ref`` and calls :func:`_merge_map`, which walks
``patch`` key by key alongside ``original`` and the schema:

* ``$patch`` (``replace`` / ``delete`` / ``merge``), then ``$retainKeys``, then
  every ``$setElementOrder/<list>`` of the map are handled first, as upstream
  does, so the ordered lists are final before the plain keys are merged;
* a ``null`` deletes the key; a key absent from the original takes the patch
  value, cleaned of directives and ``null`` members (it is merged into ``{}``);
* two objects merge recursively (unless the field's strategy is ``replace``);
* two lists merge by :func:`_merge_list` when the field's strategy is
  ``merge`` (maps matched by the merge key, primitives unioned, ``$patch``
  items applied, then upstream's ordering: patch items in patch order,
  server-only items in original order, interleaved by
  :func:`_merge_sorted`); other lists are replaced atomically;
* ``$deleteFromPrimitiveList/<list>`` removes values from a primitive list.

Fields the schema does not know fall back to JSON merge patch semantics for
their subtree (objects merge, lists are replaced), with directives still
honoured and never copied into the result.

Sharing contract: the inputs are never modified. Each object or list on a
patched path is rebuilt; every subtree the patch does not touch is the very
object from ``original``, and nothing in the result aliases ``patch``. The
API server treats stored objects and patch results as immutable, so this is
safe there; a caller that wants to mutate the result must deep-copy it first.

Deliberate differences from upstream, all on inputs kubectl and client-go
never generate: a patch value whose JSON type contradicts the schema raises
:class:`PatchConflictError` (upstream stores it and fails later, decoding into
the Go type); ``$patch: delete`` on a nested map removes the key (upstream
leaves ``{}``); ``$patch: replace`` on a map the original lacks yields the
map (upstream drops it); ``$patch: merge`` is accepted as the default
behaviour (upstream rejects it); ``null`` members and directives inside newly
added list items are cleaned like any other new value (upstream leaves them
for the typed decode to drop); unknown fields merge as JSON merge patch
(upstream fails the field lookup).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykcm.api.patch._errors import (
    InvalidPatchError,
    PatchConflictError,
    go_repr,
    go_type,
)
from pykcm.api.patch._schema import (
    KIND_LIST,
    KIND_MAP,
    KIND_OBJECT,
    FieldMeta,
    PatchSchema,
    TypeNode,
    load_patch_schema,
    schema_ref_for,
)

__all__ = ["apply_strategic_merge_patch", "schema_ref_for"]

_MISSING: Any = object()
# Returned by _merge_map for a map carrying "$patch": "delete".
_DELETE: Any = object()
_EMPTY: dict[str, Any] = {}
_NO_FIELDS: dict[str, FieldMeta] = {}

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList"

# apimachinery mergepatch error texts.
ERR_BAD_JSON_DOC = "invalid JSON document"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"
ERR_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_SET_ORDER = "invalid patch format of setElementOrder list"
ERR_UNSUPPORTED = "strategic merge patch format is not supported"

# Element kinds of a list, compared as Go compares reflect types.
_K_NONE, _K_MAP, _K_LIST, _K_STR, _K_NUM, _K_BOOL, _K_NULL = range(7)


class _ShapeError(Exception):
    """Internal: a patch value of the wrong JSON type; the field path is collected on unwind."""

    def __init__(self, parent: TypeNode | None, meta: FieldMeta, value: Any) -> None:
        super().__init__()
        self.parent = parent
        self.meta = meta
        self.value = value
        self.path: list[str] = []

    def render(self) -> str:
        path = ".".join(reversed(self.path))
        struct = self.parent.name.rsplit(".", 1)[-1] if self.parent is not None else "Object"
        value = self.value
        if isinstance(value, dict):
            got = "object"
        elif isinstance(value, list):
            got = "array"
        elif isinstance(value, str):
            got = "string"
        elif isinstance(value, bool):
            got = "bool"
        else:
            got = "number"
        return (
            f"json: cannot unmarshal {got} into Go struct field {struct}.{path} "
            f"of type {_go_field_type(self.meta)}"
        )


def _go_struct_name(ref: str) -> str:
    parts = ref.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else ref


def _go_field_type(meta: FieldMeta | None) -> str:
    if meta is None:
        return "interface {}"
    if meta.kind == KIND_OBJECT and meta.node is not None:
        return _go_struct_name(meta.node.name)
    if meta.kind == KIND_LIST:
        return "[]" + _go_field_type(meta.elem)
    if meta.kind == KIND_MAP:
        return "map[string]" + _go_field_type(meta.elem)
    return "interface {}"


def _bad_arg_type(expected: str, actual: Any) -> InvalidPatchError:
    return InvalidPatchError(f"expected a {expected}, but received a {go_type(actual)}")


def _no_merge_key(item: Any, merge_key: str) -> InvalidPatchError:
    return InvalidPatchError(
        f"map: {go_repr(item)} does not contain declared merge key: {merge_key}"
    )


def _bad_patch_type(directive: Any, item: Any) -> InvalidPatchError:
    return InvalidPatchError(f"unknown patch type: {go_repr(directive)} in map: {go_repr(item)}")


def _strip_prefix(key: str, prefix: str, error: str) -> str:
    head, sep, tail = key.partition("/")
    if not sep or head != prefix:
        raise InvalidPatchError(error, http_status=400)
    return tail


def _kind_tag(value: Any) -> int:
    if isinstance(value, dict):
        return _K_MAP
    if isinstance(value, list):
        return _K_LIST
    if isinstance(value, str):
        return _K_STR
    if isinstance(value, bool):
        return _K_BOOL
    if isinstance(value, (int, float)):
        return _K_NUM
    if value is None:
        return _K_NULL
    return _K_NONE


def _elem_kind(*lists: list[Any]) -> int:
    """The common element kind of the lists (upstream's sliceElementType); _K_NONE if all empty."""
    prev = _K_NONE
    for items in lists:
        for item in items:
            tag = _kind_tag(item)
            if prev == _K_NONE:
                if tag == _K_LIST:
                    raise InvalidPatchError(ERR_NO_LIST_OF_LISTS)
                prev = tag
            elif tag != prev:
                raise InvalidPatchError(
                    f"list element types are not identical: {go_repr(list(lists))}"
                )
    return prev


def _first_positions(values: list[Any]) -> dict[Any, int]:
    pos: dict[Any, int] = {}
    try:
        for i, value in enumerate(values):
            pos.setdefault(value, i)
    except TypeError:
        raise InvalidPatchError(
            f"merge key values must be scalars, got: {go_repr(values)}"
        ) from None
    return pos


def _order_by(items: list[Any], pos: Callable[[Any], int]) -> list[Any]:
    """Upstream's normalizeSliceOrder: stable sort by position in the order list.

    Items missing from the order list make upstream's comparator inconsistent
    ("less" is true whenever either side is missing); the insertion sort below
    reproduces what Go's sort.SliceStable does with it for lists of up to 20.
    """
    if len(items) < 2:
        return items
    keys = [pos(item) for item in items]
    if min(keys) >= 0:
        return [items[i] for i in sorted(range(len(items)), key=keys.__getitem__)]
    out = list(items)
    okeys = list(keys)
    for i in range(1, len(out)):
        j = i
        while j > 0:
            a, b = okeys[j], okeys[j - 1]
            if a >= 0 and b >= 0 and not a < b:
                break
            out[j], out[j - 1] = out[j - 1], out[j]
            okeys[j], okeys[j - 1] = okeys[j - 1], okeys[j]
            j -= 1
    return out


def _merge_sorted(left: list[Any], right: list[Any], pos: Callable[[Any], int]) -> list[Any]:
    """Upstream's mergeSortedSlice: interleave server-only items (left) into patch items (right).

    A left item goes first only when both items are in the original list and
    it came earlier there; otherwise the patch item wins, which is why a new
    item added without ``$setElementOrder`` lands before the server's items.
    """
    if not left:
        return right
    if not right:
        return left
    out: list[Any] = []
    i = j = 0
    n_left, n_right = len(left), len(right)
    while i < n_left and j < n_right:
        li = pos(left[i])
        ri = pos(right[j])
        if li >= 0 and ri >= 0 and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def _check_shape(parent: TypeNode | None, meta: FieldMeta, value: Any) -> None:
    kind = meta.kind
    wrong = (kind == KIND_LIST and not isinstance(value, list)) or (
        kind in (KIND_OBJECT, KIND_MAP) and not isinstance(value, dict)
    )
    if wrong:
        raise _ShapeError(parent, meta, value)


def _new_value(value: Any, meta: FieldMeta | None) -> Any:
    """A patch value entering the result without a counterpart: merged into nothing."""
    if isinstance(value, dict):
        return _merge_map(_EMPTY, value, meta.node if meta is not None else None)
    if isinstance(value, list):
        return _new_list(value, meta)
    return value


def _new_list(items: list[Any], meta: FieldMeta | None) -> list[Any]:
    """A patch list taken as the new value (atomic replace, or a list the original lacks).

    Items that are directives (``$patch`` maps) are dropped, as upstream's
    removeDirectives does; every other object item is cleaned recursively.
    """
    elem = meta.elem if meta is not None else None
    node = elem.node if elem is not None else None
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            directive = item.get(_DIRECTIVE, _MISSING)
            if directive is not _MISSING and directive != "merge":
                if directive == "delete" or directive == "replace":
                    continue
                raise _bad_patch_type(directive, item)
            if directive is not _MISSING and len(item) == 1:
                # A bare {"$patch": "merge"} marker carries nothing.
                continue
            out.append(_merge_map(_EMPTY, item, node))
        elif isinstance(item, list):
            out.append(_new_list(item, elem))
        else:
            out.append(item)
    return out


def _merge_scalars(original: list[Any], patch: list[Any]) -> list[Any]:
    """Union of two primitive lists (upstream: deduplicate, then enforce order)."""
    pos_patch = _first_positions(patch)
    pos_orig = _first_positions(original)
    # dicts keep first-occurrence order, which is the order upstream sorts into.
    patch_items = list(pos_patch)
    server_only = [v for v in pos_orig if v not in pos_patch]
    return _merge_sorted(server_only, patch_items, lambda v: pos_orig.get(v, -1))


def _merge_list(
    original: list[Any],
    patch: list[Any],
    meta: FieldMeta | None,
    delete_list: bool,
    view: list[Any] | None = None,
) -> list[Any]:
    """Upstream's mergeSlice: merge two lists of a ``merge``-strategy field.

    ``view``, when given, starts as a copy of ``original`` and is edited the
    way Go edits the original slice's backing array in place: deletions
    shift the survivors left, then appended items overwrite the vacated
    slots. ``$setElementOrder`` processing orders server-only items by that
    edited array, not by the pristine original, and upstream's results (its
    own tests included) depend on it: with a deletion, a server-only item
    can sort ahead of an added one.
    """
    if not original and not patch:
        return original
    kind = _elem_kind(original, patch)
    if kind != _K_MAP:
        if delete_list:
            drop = _first_positions(patch)
            return [v for v in original if v not in drop]
        return _merge_scalars(original, patch)
    if delete_list:
        raise InvalidPatchError(ERR_BAD_PRIMITIVE_LIST, http_status=400)
    merge_key = meta.merge_key if meta is not None else ""
    if not merge_key:
        name = meta.type_name if meta is not None and meta.type_name else "map"
        raise InvalidPatchError(f"cannot merge lists without merge key for {name}")
    elem = meta.elem if meta is not None else None
    node = elem.node if elem is not None else None

    # Directive items first (upstream's mergeSliceWithSpecialElements).
    base = original
    live_gap = 0  # how many slots of ``view`` deletions have vacated
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        directive = item.get(_DIRECTIVE, _MISSING)
        if directive is _MISSING:
            plain.append(item)
        elif directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            value = item[merge_key]
            base = [o for o in base if not (merge_key in o and o[merge_key] == value)]
            if view is not None:
                live = len(view) - live_gap
                k = 0
                while k < live:
                    o = view[k]
                    if isinstance(o, dict) and merge_key in o and o[merge_key] == value:
                        view[k : live - 1] = view[k + 1 : live]
                        live -= 1
                    else:
                        k += 1
                live_gap = len(view) - live
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            if len(item) > 1:
                plain.append(item)
        else:
            raise _bad_patch_type(directive, item)
    if replace:
        for item in plain:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        base = [_merge_map(_EMPTY, item, node) for item in plain]
        plain = []

    # Merge plain items into the matching original item, or append them.
    merged = list(base)
    index: dict[Any, int] = {}
    try:
        for i, o in enumerate(merged):
            if merge_key in o:
                index.setdefault(o[merge_key], i)
        for item in plain:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            value = item[merge_key]
            at = index.get(value)
            if at is not None:
                merged[at] = _merge_map(merged[at], item, node)
            else:
                index[value] = len(merged)
                new_item = _merge_map(_EMPTY, item, node)
                merged.append(new_item)
                if view is not None and live_gap > 0:
                    view[len(view) - live_gap] = new_item
                    live_gap -= 1
    except TypeError:
        raise InvalidPatchError(f"merge key {merge_key} must hold a scalar value") from None

    # Enforce upstream's order: patch items in patch order, server-only items
    # in original order, interleaved.
    for o in base:
        if merge_key not in o:
            raise _no_merge_key(o, merge_key)
    pos_patch = _first_positions([item[merge_key] for item in plain])
    pos_orig = _first_positions([o[merge_key] for o in base])
    patch_items: list[Any] = []
    server_only: list[Any] = []
    for m in merged:
        (patch_items if m[merge_key] in pos_patch else server_only).append(m)
    patch_items = _order_by(patch_items, lambda m: pos_patch.get(m[merge_key], -1))
    server_only = _order_by(server_only, lambda m: pos_orig.get(m[merge_key], -1))
    return _merge_sorted(server_only, patch_items, lambda m: pos_orig.get(m[merge_key], -1))


def _validate_set_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Upstream's validatePatchWithSetOrderList: patch items must follow the order list."""
    if not order or not patch_list:
        return
    if merge_key:
        items = []
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
            if item.get(_DIRECTIVE) != "delete":
                items.append(item)
    else:
        items = patch_list
    pi = si = 0
    while pi < len(items) and si < len(order):
        item = items[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        wanted = order[si]
        if merge_key:
            if not isinstance(wanted, dict):
                raise _bad_arg_type("map[string]interface {}", wanted)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            if merge_key not in wanted:
                raise _no_merge_key(wanted, merge_key)
            equal = item[merge_key] == wanted[merge_key]
        else:
            equal = item == wanted
        if equal:
            pi += 1
        si += 1
    if pi < len(items) and si >= len(order):
        raise InvalidPatchError(
            f"the order in patch list:\n{go_repr(patch_list)}\n doesn't match "
            f"{_SET_ORDER} list:\n{go_repr(order)}"
        )


def _apply_set_order(
    result: dict[str, Any], patch: dict[str, Any], key: str, node: TypeNode | None
) -> str | None:
    """Upstream's mergePatchIntoOriginal for one ``$setElementOrder/<field>``.

    Merges the field's patch list (if any) into ``result`` and orders it;
    returns the field name so the main loop skips that list, or None when
    neither side has the list.
    """
    field = _strip_prefix(key, _SET_ORDER, ERR_BAD_SET_ORDER)
    order = patch[key]
    if not isinstance(order, list):
        raise _bad_arg_type("[]interface {}", order)
    ov = result.get(field, _MISSING)
    pv = patch.get(field, _MISSING)
    if ov is not _MISSING and not isinstance(ov, list):
        raise _bad_arg_type("[]interface {}", ov)
    if pv is not _MISSING and not isinstance(pv, list):
        raise _bad_arg_type("[]interface {}", pv)
    meta = node.lookup(field) if node is not None else None
    if meta is not None and meta.kind and meta.kind != KIND_LIST:
        got = "struct" if meta.kind == KIND_OBJECT else "map"
        raise InvalidPatchError(f"expected slice or array type, but got: {got}")
    merge_key = meta.merge_key if meta is not None else ""
    orig_list: list[Any] = ov if ov is not _MISSING else []
    patch_list: list[Any] = pv if pv is not _MISSING else []
    # Server-only items are placed by their position here (see _merge_list).
    server_order = orig_list
    _validate_set_order(patch_list, order, merge_key)
    if ov is not _MISSING and pv is _MISSING:
        merged = orig_list
    elif ov is _MISSING and pv is not _MISSING:
        merged = _new_list(patch_list, meta)
    elif ov is not _MISSING:
        if meta is not None and meta.merge:
            server_order = list(orig_list)
            merged = _merge_list(orig_list, patch_list, meta, False, server_order)
        else:
            merged = _new_list(patch_list, meta)
    else:
        return None
    kind = _elem_kind(orig_list, patch_list)
    if kind == _K_NONE or (kind == _K_MAP and not merge_key):
        # Nothing to order (both lists empty), or an atomic list of objects,
        # which has no identity to order by (upstream panics on it).
        result[field] = merged
        return field
    if merge_key:
        if kind != _K_MAP:
            raise _bad_arg_type(
                "map[string]interface {}", orig_list[0] if orig_list else patch_list[0]
            )
        for i, wanted in enumerate(order):
            if not isinstance(wanted, dict):
                raise InvalidPatchError(f"value for key {i} is not a map")
            if merge_key not in wanted:
                raise _no_merge_key(wanted, merge_key)
        for o in server_order:
            if merge_key not in o:
                raise _no_merge_key(o, merge_key)
        pos_order = _first_positions([w[merge_key] for w in order])
        pos_orig = _first_positions([o[merge_key] for o in server_order])
        patch_items: list[Any] = []
        server_only: list[Any] = []
        for m in merged:
            if not isinstance(m, dict):
                raise _bad_arg_type("map[string]interface {}", m)
            if merge_key not in m:
                raise _no_merge_key(m, merge_key)
            (patch_items if m[merge_key] in pos_order else server_only).append(m)

        def order_pos(m: Any) -> int:
            return pos_order.get(m[merge_key], -1)

        def orig_pos(m: Any) -> int:
            return pos_orig.get(m[merge_key], -1)

    else:
        pos_order = _first_positions(order)
        pos_orig = _first_positions(orig_list)
        patch_items = [v for v in merged if v in pos_order]
        server_only = [v for v in merged if v not in pos_order]

        def order_pos(m: Any) -> int:
            return pos_order.get(m, -1)

        def orig_pos(m: Any) -> int:
            return pos_orig.get(m, -1)

    patch_items = _order_by(patch_items, order_pos)
    server_only = _order_by(server_only, orig_pos)
    result[field] = _merge_sorted(server_only, patch_items, orig_pos)
    return field


def _apply_retain_keys(result: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Upstream's applyRetainKeysDirective: validate the patch, drop unlisted keys."""
    keys = patch[_RETAIN_KEYS]
    if not isinstance(keys, list):
        raise InvalidPatchError(ERR_BAD_RETAIN_KEYS, http_status=400)
    try:
        keep = set(keys)
    except TypeError:
        raise InvalidPatchError(ERR_BAD_RETAIN_KEYS, http_status=400) from None
    for k, v in patch.items():
        if (
            v is None
            or k in (_RETAIN_KEYS, _DIRECTIVE)
            or k.startswith((_DELETE_PRIMITIVE, _SET_ORDER))
        ):
            continue
        if k not in keep:
            raise InvalidPatchError(ERR_BAD_RETAIN_KEYS, http_status=400)
    return {k: v for k, v in result.items() if k in keep}


def _merge_map(original: dict[str, Any], patch: dict[str, Any], node: TypeNode | None) -> Any:
    """Upstream's mergeMap: the merged map, or _DELETE for ``"$patch": "delete"``."""
    directive = patch.get(_DIRECTIVE, _MISSING)
    if directive is not _MISSING:
        if directive == "replace":
            original = _EMPTY
        elif directive == "delete":
            return _DELETE
        elif directive != "merge":
            raise _bad_patch_type(directive, patch)
    result = dict(original)

    # Directive keys are rare; find them in one cheap pass.
    special: list[str] | None = None
    for k in patch:
        if k[:1] == "$":
            if special is None:
                special = [k]
            else:
                special.append(k)
    ordered: set[str] | None = None
    if special is not None:
        if _RETAIN_KEYS in patch:
            result = _apply_retain_keys(result, patch)
        for k in special:
            if k.startswith(_SET_ORDER):
                try:
                    done = _apply_set_order(result, patch, k, node)
                except _ShapeError as e:
                    e.path.append(k[len(_SET_ORDER) + 1 :])
                    raise
                if done is not None:
                    if ordered is None:
                        ordered = set()
                    ordered.add(done)

    if node is not None:
        fields = node.fields
        default = node.default
    else:
        fields = _NO_FIELDS
        default = None
    for k, pv in patch.items():
        delete_list = False
        if k[:1] == "$":
            if k == _DIRECTIVE or k == _RETAIN_KEYS or k.startswith(_SET_ORDER):
                continue
            if k.startswith(_DELETE_PRIMITIVE):
                k = _strip_prefix(k, _DELETE_PRIMITIVE, ERR_BAD_PRIMITIVE_LIST)
                delete_list = True
                if pv is not None and not isinstance(pv, list):
                    raise InvalidPatchError(ERR_BAD_PRIMITIVE_LIST, http_status=400)
            # Any other "$key" is data, as upstream treats it.
        elif ordered is not None and k in ordered:
            continue
        meta = fields.get(k, default)
        if pv is None:
            result.pop(k, None)
            continue
        try:
            if meta is not None and meta.kind:
                _check_shape(node, meta, pv)
            ov = result.get(k, _MISSING)
            if ov is _MISSING:
                if not delete_list:
                    nv = _new_value(pv, meta)
                    if nv is not _DELETE:
                        result[k] = nv
                continue
            if isinstance(pv, dict):
                if isinstance(ov, dict):
                    if meta is not None and meta.replace:
                        nv = _new_value(pv, meta)
                    else:
                        nv = _merge_map(ov, pv, meta.node if meta is not None else None)
                else:
                    nv = _new_value(pv, meta)
                if nv is _DELETE:
                    del result[k]
                else:
                    result[k] = nv
            elif isinstance(pv, list):
                if isinstance(ov, list):
                    if delete_list or (meta is not None and meta.merge):
                        result[k] = _merge_list(ov, pv, meta, delete_list)
                    else:
                        result[k] = _new_list(pv, meta)
                elif not delete_list:
                    result[k] = _new_list(pv, meta)
            else:
                result[k] = pv
        except _ShapeError as e:
            e.path.append(k)
            raise
    return result


def apply_strategic_merge_patch(
    original: dict[str, Any],
    patch: dict[str, Any],
    kind_ref: str,
    schema: PatchSchema | None = None,
) -> dict[str, Any]:
    """Apply a strategic merge patch to a built-in object and return the patched object.

    ``kind_ref`` names the object's OpenAPI definition, e.g.
    ``io.k8s.api.apps.v1.Deployment`` (see :func:`schema_ref_for`); ``schema``
    defaults to the bundled v1.36 schema.

    Neither input is modified. The result shares every subtree the patch
    leaves unchanged with ``original`` (and nothing with ``patch``): both must
    be treated as immutable afterwards, as the API server does with stored
    objects, or deep-copied before being mutated.

    Raises :class:`InvalidPatchError` for malformed patches (``http_status``
    400 for bad directive formats, 415 for a ``kind_ref`` without schema,
    422 otherwise) and :class:`PatchConflictError` when a patch value's JSON
    type contradicts the schema (a list where an object belongs, ...).
    """
    if schema is None:
        schema = load_patch_schema()
    node = schema.node(kind_ref)
    if node is None:
        raise InvalidPatchError(ERR_UNSUPPORTED, http_status=415)
    if not isinstance(original, dict) or not isinstance(patch, dict):
        raise InvalidPatchError(ERR_BAD_JSON_DOC, http_status=400)
    try:
        result = _merge_map(original, patch, node)
    except _ShapeError as e:
        raise PatchConflictError(e.render()) from None
    if result is _DELETE:
        return {}
    merged: dict[str, Any] = result
    return merged
