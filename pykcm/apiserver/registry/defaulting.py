"""What every strategy's defaulting shares: Go's struct field order and the small helpers
over wire-form objects.

kube-apiserver defaults an object as it decodes a request body (the generated
``SetDefaults_*`` of each API group) and then writes it in Go's struct order; the
strategies default wire-form dicts in place and re-key what they touched with
:class:`GoOrder` so responses read like a real server's (``go_order_object`` for
the top level and the metadata). A JSON null counts as unset for the pointer
fields defaulting fills (:func:`set_default`).

This runs on every write: the hot paths test exact ``dict``/``list`` types (what a
JSON decoder produces).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any, Final

Obj = dict[str, Any]

MAX_INT32: Final = 2**31 - 1


class GoOrder:
    """The field order of one Go struct, and how to re-key a dict into it.

    Known keys come in struct order, unknown ones after them in their
    current order. Every object written goes through several of these, and
    the key sequences repeat (a client sends the same shapes over and over),
    so the plan for each sequence seen is memoized: the usual answer is
    "already in order" or "move these few keys to the end".
    """

    __slots__ = ("_keys", "_known", "_plans")

    _MAX_PLANS: Final = 256
    _MAX_SHAPE_CHARS: Final = 1024

    def __init__(self, *keys: str) -> None:
        self._keys = keys
        self._known = frozenset(keys)
        # key sequence -> the keys to move to the end, in order (() if none)
        self._plans: dict[tuple[str, ...], tuple[str, ...]] = {}

    def _plan(self, current: tuple[str, ...]) -> tuple[str, ...]:
        present = [k for k in self._keys if k in current]
        wanted = present + [k for k in current if k not in self._known]
        # Keys already in their final place at the front need not move.
        start = 0
        for have, want in zip(current, wanted, strict=True):
            if have != want:
                break
            start += 1
        return tuple(wanted[start:])

    def apply(self, d: MutableMapping[str, Any]) -> None:
        current = tuple(d)
        move = self._plans.get(current)
        if move is None:
            move = self._plan(current)
            # Bounded memo; odd shapes (huge or non-string keys) are not kept.
            if all(k.__class__ is str for k in current) and (
                    sum(map(len, current)) <= self._MAX_SHAPE_CHARS):
                if len(self._plans) >= self._MAX_PLANS:
                    self._plans.clear()
                self._plans[current] = move
        for k in move:
            d[k] = d.pop(k)


TOP_ORDER: Final = GoOrder(
    "kind", "apiVersion", "metadata", "immutable", "data", "binaryData", "stringData", "type",
    "spec", "status")


META_ORDER: Final = GoOrder(
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields")


TEMPLATE_ORDER: Final = GoOrder("metadata", "spec")


REPLICASET_SPEC_ORDER: Final = GoOrder("replicas", "minReadySeconds", "selector", "template")


STRATEGY_ORDER: Final = GoOrder("type", "rollingUpdate")


RESOURCES_ORDER: Final = GoOrder("limits", "requests", "claims")


SELECTOR_ORDER: Final = GoOrder("matchLabels", "matchExpressions")


def child_dict(parent: MutableMapping[str, Any], key: str) -> Obj:
    """parent[key] as a dict, creating it (or replacing a null) when missing."""
    v = parent.get(key)
    if not isinstance(v, dict):
        v = {}
        parent[key] = v
    return v


def dicts_in(v: Any) -> Iterable[Obj]:
    if isinstance(v, list):
        for item in v:
            if isinstance(item, dict):
                yield item


def set_default(d: MutableMapping[str, Any], key: str, value: Any) -> None:
    # A JSON null means "unset" for the pointer fields defaulting fills.
    if d.get(key) is None:
        d[key] = value


def default_rolling_strategy(strategy: Obj, rolling_type: str,
                              defaults: tuple[tuple[str, Any], ...]) -> None:
    if not strategy.get("type"):
        strategy["type"] = rolling_type
    if strategy["type"] == rolling_type:
        ru = child_dict(strategy, "rollingUpdate")
        for k, v in defaults:
            set_default(ru, k, v)
    STRATEGY_ORDER.apply(strategy)



def go_order_object(obj: Obj) -> None:
    """Re-key the top level and the metadata of a defaulted object into Go's struct order."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        META_ORDER.apply(meta)
    TOP_ORDER.apply(obj)
