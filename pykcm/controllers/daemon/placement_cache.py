"""Memo of where a DaemonSet's pods should run: node_should_run_daemon_pod per template and node.

Role
----
Every DaemonSet sync asks, for every node, whether the DaemonSet should run
(and keep running) a pod there: in manage, in the rolling update and in the
status, and the node-update queue asks it for every DaemonSet. Each answer
builds the daemon pod's view (the template's tolerations plus the six daemon
tolerations, each merged by add_or_update_toleration) and matches the node's
labels, fields and taints against it. With 100 nodes that was most of the
sync's time in a rollout (bench/workloads.py's profile), where every pod
change syncs the DaemonSet again and nothing the answer depends on changes.

Data flow
---------
::

    DaemonSet ─► fingerprint of what placement reads of its template
                 (nodeName, nodeSelector, affinity, tolerations, hostNetwork)
        │ LRU of fingerprints (at most ``max_templates``)
        ▼
    DaemonPlacement: the DaemonPod view, built once, and per node name
        (resourceVersion, (should run, should continue))
        │ should_run(node): the stored answer when the node's resourceVersion is
        ▼ the one it was computed for, else computed anew and stored

The answer is a pure function of the template's placement fields and the
node (name, labels, taints); a node's resourceVersion changes with any change
of it, so an answer stored for (fingerprint, node name, resourceVersion) is
the answer a fresh computation gives. A node without a resourceVersion (a
hand-made object) is never memoised. Entries of nodes gone from the node list
are dropped by :meth:`DaemonPlacement.retain`.

Deviation from upstream: kube-controller-manager v1.36 evaluates
NodeShouldRunDaemonPod afresh every time (cheap in Go); the answers are the same.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import Any, Final

import orjson

from pykcm.controllers.daemon.util import DaemonPod, daemon_pod, node_should_run_daemon_pod

__all__ = ["DaemonPlacement", "PlacementCache", "placement_fingerprint"]

DEFAULT_MAX_TEMPLATES: Final = 256
"""Distinct templates remembered (a DaemonSet has one at a time, two in a rollout)."""

_PLACEMENT_FIELDS: Final = ("nodeName", "nodeSelector", "affinity", "tolerations",
                            "hostNetwork")


def _as_json(obj: Any) -> Any:
    """orjson's fallback for read-only mappings and sequences of cached objects."""
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (tuple, list)):
        return list(obj)
    raise TypeError(f"not JSON: {type(obj).__name__}")


def placement_fingerprint(ds: Mapping[str, Any]) -> bytes:
    """What placement reads of ``ds``'s template, as canonical bytes (keys sorted)."""
    template = (ds.get("spec") or {}).get("template") or {}
    tspec = template.get("spec") or {}
    return orjson.dumps([tspec.get(f) for f in _PLACEMENT_FIELDS], default=_as_json,
                        option=orjson.OPT_SORT_KEYS)


class DaemonPlacement:
    """The placement answers of one template, per node."""

    __slots__ = ("_answers", "view")

    def __init__(self, view: DaemonPod) -> None:
        self.view = view
        self._answers: dict[str, tuple[str, tuple[bool, bool]]] = {}

    def should_run(self, node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
        """(should run, should continue running) on ``node``, as
        node_should_run_daemon_pod(node, ds) answers."""
        meta = node.get("metadata") or {}
        rv = meta.get("resourceVersion")
        if not rv:
            return node_should_run_daemon_pod(node, ds, self.view)
        name = str(meta.get("name") or "")
        got = self._answers.get(name)
        if got is not None and got[0] == rv:
            return got[1]
        answer = node_should_run_daemon_pod(node, ds, self.view)
        self._answers[name] = (str(rv), answer)
        return answer

    def retain(self, node_names: Collection[str]) -> None:
        """Forget the nodes not in ``node_names`` (deleted nodes)."""
        if len(self._answers) > len(node_names):
            for name in [n for n in self._answers if n not in node_names]:
                del self._answers[name]

    def __len__(self) -> int:
        return len(self._answers)


class PlacementCache:
    """The DaemonPlacement of each template fingerprint, least recently used dropped."""

    def __init__(self, max_templates: int = DEFAULT_MAX_TEMPLATES) -> None:
        self.max_templates = max(1, max_templates)
        self._templates: OrderedDict[bytes, DaemonPlacement] = OrderedDict()

    def for_daemon_set(self, ds: Mapping[str, Any]) -> DaemonPlacement:
        key = placement_fingerprint(ds)
        placement = self._templates.get(key)
        if placement is not None:
            self._templates.move_to_end(key)
            return placement
        placement = self._templates[key] = DaemonPlacement(daemon_pod(ds))
        while len(self._templates) > self.max_templates:
            self._templates.popitem(last=False)
        return placement

    def should_run(self, node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
        """node_should_run_daemon_pod(node, ds), memoised."""
        return self.for_daemon_set(ds).should_run(node, ds)

    def __len__(self) -> int:
        return len(self._templates)
