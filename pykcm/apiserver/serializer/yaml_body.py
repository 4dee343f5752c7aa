"""YAML request bodies decoded as kube-apiserver decodes them, with its limits.

kube-apiserver turns a YAML body into JSON (sigs.k8s.io/yaml over go-yaml v2)
before decoding it. Two things make that safe there and must here too:

- **Alias expansion.** An anchor referenced many times, nested a few levels,
  expands to gigabytes (a 465-byte "billion laughs" body stored a 62 MB pod).
  go-yaml counts every node it decodes and every node decoded inside an alias
  and refuses a document whose alias share grows too large
  (``yaml: document contains excessive aliasing``): up to 99% for documents of
  up to 400,000 nodes, falling to 10% at 4,000,000. :func:`decode_yaml` applies the
  same rule to PyYAML's composed node graph (an alias there is the anchored
  node object met again), before anything is built.
- **Decoded size.** The JSON the document expands to is bounded by the
  request body limit (3 MiB): a larger result is refused with 413, as the
  body itself would be. (A deliberate deviation: kube-apiserver has no such
  check, such an object fails later at etcd's 1.5 MiB limit.)

Data flow: raw bytes → PyYAML's C parser composes one node graph (aliases
shared, nothing expanded) → :func:`_check` walks it with go-yaml's counters
and the size bound, stopping at the first excess → the constructor builds the
value with go-yaml's readings of the tags that JSON cannot hold (timestamps
stay their text, ``!!binary`` becomes the decoded string, ``!!set`` a map with
null values) → :func:`_jsonable` makes a fresh JSON value (string keys as Go
formats them; no shared subtrees; NaN and infinities refused as Go's JSON
encoder refuses them).

Errors are :class:`YAMLBodyError` with the text after ``yaml: `` in
kube-apiserver's message; the handler words the rest.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import yaml

__all__ = ["DecodedTooLarge", "YAMLBodyError", "decode_yaml"]

# go-yaml v2's alias limits (decode.go: allowedAliasRatio)
_ALIAS_RATIO_RANGE_LOW = 400_000
_ALIAS_RATIO_RANGE_HIGH = 4_000_000
_ALIAS_RATIO_RANGE = float(_ALIAS_RATIO_RANGE_HIGH - _ALIAS_RATIO_RANGE_LOW)

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YAMLBodyError(ValueError):
    """A YAML body kube-apiserver would not decode; str() follows its "yaml: "."""


class DecodedTooLarge(ValueError):
    """The document expands to more JSON than the body limit allows."""


def _allowed_alias_ratio(decode_count: int) -> float:
    if decode_count <= _ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decode_count - _ALIAS_RATIO_RANGE_LOW) / _ALIAS_RATIO_RANGE)


def _check(root: yaml.Node, max_size: int) -> None:
    """go-yaml's alias accounting over the node graph, plus the expanded size bound."""
    decode_count = 0
    alias_count = 0
    size = 0
    seen: set[int] = set()
    # (node, inside an alias) in document order; iterative: nesting depth is the client's
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, in_alias = stack.pop()
        if not in_alias and id(node) in seen:
            # the alias node itself, then its target decoded as part of an alias
            decode_count += 1
            in_alias = True
        seen.add(id(node))
        decode_count += 1
        if in_alias:
            alias_count += 1
        if (alias_count > 100 and decode_count > 1000
                and alias_count / decode_count > _allowed_alias_ratio(decode_count)):
            raise YAMLBodyError("document contains excessive aliasing")
        if isinstance(node, yaml.ScalarNode):
            size += len(node.value) + 3  # quotes and a separator
        elif isinstance(node, yaml.SequenceNode):
            size += 2
            stack.extend((child, in_alias) for child in reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            size += 2
            for key, value in reversed(node.value):
                stack.append((value, in_alias))
                stack.append((key, in_alias))
        if size > max_size:
            raise DecodedTooLarge(f"the decoded document is larger than {max_size} bytes")


class _BodyLoader(_Loader):  # type: ignore[valid-type,misc]
    """A safe loader with go-yaml's readings of the tags JSON has no value for."""


def _timestamp(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # go-yaml v2 decodes a timestamp into interface{} as its text
    return loader.construct_scalar(node)  # type: ignore[arg-type]


def _binary(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    text = loader.construct_scalar(node)  # type: ignore[arg-type]
    try:
        data = base64.b64decode("".join(str(text).split()), validate=True)
    except (binascii.Error, ValueError):
        raise YAMLBodyError(f"!!binary value contains invalid base64 data (line "
                            f"{node.start_mark.line + 1})") from None
    return data.decode("utf-8", errors="replace")


def _set(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    return {k: None for k in loader.construct_mapping(node)}  # type: ignore[arg-type]


_BodyLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_BodyLoader.add_constructor("tag:yaml.org,2002:binary", _binary)
_BodyLoader.add_constructor("tag:yaml.org,2002:set", _set)


def _go_key(k: Any) -> str:
    """A map key as sigs.k8s.io/yaml writes it into JSON (fmt's %v of the decoded value)."""
    if isinstance(k, str):
        return k
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, float):
        if k == int(k) and abs(k) < 1e21:
            return str(int(k))
        return repr(k)
    if isinstance(k, (int, bytes)):
        return k.decode("utf-8", "replace") if isinstance(k, bytes) else str(k)
    raise YAMLBodyError(f"invalid map key: {k!r}")


def _jsonable(v: Any) -> Any:
    """A fresh JSON value (no subtree shared between two places, as Go's decoding makes)."""
    if isinstance(v, dict):
        return {_go_key(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise YAMLBodyError(f"json: unsupported value: {_go_float(v)}")
        return v
    if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**64:
        return float(v)  # go-yaml falls back to float64 past 64 bits
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _go_float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    return "+Inf" if v > 0 else "-Inf"


def decode_yaml(raw: bytes, max_size: int) -> Any:
    """The JSON value of a YAML body (None for an empty one).

    Raises YAMLBodyError (the document does not decode, or aliases too much),
    DecodedTooLarge (it expands past `max_size` bytes of JSON), or yaml.YAMLError
    from the parser.
    """
    loader = _BodyLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node, max_size)
        return _jsonable(loader.construct_document(node))
    except RecursionError:
        raise YAMLBodyError("exceeded max depth") from None
    finally:
        loader.dispose()
