"""The live view's model: snapshots of a running controller manager's control loop.

Role: what the web page shows, computed once per tick for every browser at once. Its
sources are the manager's own state, never requests to the API server:

- the manager's shared informer factory: per informer the resource, the cached object
  count, the last synced resourceVersion and the LIST count of its Reflector; the
  workloads (Deployments with their ReplicaSets, Jobs, Nodes and the pods on each) read
  from the informers' caches (the live view asks the factory for those five informers
  before it starts, so they exist whatever ``--controllers`` enables);
- the process's metrics (:mod:`pykcm.manager.ui.metrics_window`): events/s per informer
  (``informer_processing_latency_seconds_count``), per work queue its depth, adds/s,
  retries, longest running item, reconciles/s and work-duration percentiles
  (``workqueue_*``), the manager's API requests/s by HTTP method
  (``rest_client_requests_total``);
- leader election: whether this replica leads, its identity and Lease;
- a feed of the latest informer events of the workload kinds (a handler of its own on
  those informers while a browser watches), so that a user applying a manifest sees the
  events arrive.

Data flow::

    ControllerManager._lead ── context hook ──► LiveView.attach(ctx)  (informers + feed)
    subscriber (SSE) ──► LiveView.subscribe() ──► ticker every ``period`` s while any:
        read_samples() → Window → snapshot() → each subscriber's latest-value slot

Deliberate deviation from nothing upstream: kube-controller-manager has no such page.
A slow browser never holds the ticker up: its slot keeps only the newest snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from pykcm.api.owner_refs import get_controller_of
from pykcm.cache.event_handlers import ResourceEventHandlerRegistration
from pykcm.cache.keys import deleted_object
from pykcm.cache.shared_informer import InformerStoppedError, SharedIndexInformer
from pykcm.manager.ui.metrics_window import Key, Window, labels_of, quantile, read_samples

if TYPE_CHECKING:
    from pykcm.manager.context import ControllerContext
    from pykcm.manager.controller_manager import ControllerManager

__all__ = ["LiveView"]

FEED_LENGTH: Final = 40
DEFAULT_PERIOD: Final = 1.0


def _meta(obj: Any) -> Mapping[str, Any]:
    m = obj.get("metadata") if isinstance(obj, Mapping) else None
    return m if isinstance(m, Mapping) else {}


def _key_of(obj: Any) -> str:
    m = _meta(obj)
    ns = m.get("namespace")
    return f"{ns}/{m.get('name')}" if ns else str(m.get("name"))


class _Feed:
    """An informer handler that records each event of one kind into the shared feed."""

    def __init__(self, view: LiveView, kind: str) -> None:
        self._view = view
        self._kind = kind

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list:  # the initial list is the cache filling, not news
            self._view.record(self._kind, "ADDED", obj)

    def on_update(self, old: Any, new: Any) -> None:
        if _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion"):
            self._view.record(self._kind, "MODIFIED", new)

    def on_delete(self, obj: Any) -> None:
        found = deleted_object(obj)
        if found is not None:
            self._view.record(self._kind, "DELETED", found)


class LiveView:
    """Snapshots of ``manager`` for the page; ``attach`` must run before informers start."""

    def __init__(self, manager: ControllerManager, *, period: float = DEFAULT_PERIOD) -> None:
        self.manager = manager
        self.period = period
        self.window = Window()
        self.feed: deque[dict[str, Any]] = deque(maxlen=FEED_LENGTH)
        self._ctx: ControllerContext | None = None
        self._sources: dict[str, SharedIndexInformer] = {}
        self._feed_regs: list[tuple[SharedIndexInformer, ResourceEventHandlerRegistration]] = []
        self._slots: set[asyncio.Queue[dict[str, Any]]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._started = time.time()

    # -- wiring ----------------------------------------------------------------------------

    def attach(self, ctx: ControllerContext) -> None:
        """The manager's context hook: make sure the workload informers exist."""
        self._ctx = ctx
        f = ctx.informer_factory
        self._sources = {"Deployment": f.apps_v1.deployments.informer,
                         "ReplicaSet": f.apps_v1.replicasets.informer,
                         "Job": f.batch_v1.jobs.informer, "Node": f.core_v1.nodes.informer,
                         "Pod": f.core_v1.pods.informer}

    def _start_feed(self) -> None:
        """Feed handlers while someone watches (joining a running informer replays its
        cache as the initial list, which the feed skips); none otherwise, so an unwatched
        manager pays nothing for the page."""
        for kind, informer in self._sources.items():
            with contextlib.suppress(InformerStoppedError):
                self._feed_regs.append((informer, informer.add_event_handler(_Feed(self, kind))))

    def _stop_feed(self) -> None:
        for informer, reg in self._feed_regs:
            informer.remove_event_handler(reg)
        self._feed_regs.clear()

    def record(self, kind: str, event: str, obj: Any) -> None:
        self.feed.appendleft({"t": time.time(), "kind": kind, "type": event,
                              "key": _key_of(obj)})

    # -- subscribers -----------------------------------------------------------------------

    async def subscribe(self) -> AsyncIterator[dict[str, Any]]:
        """Snapshots as they are made, the newest only if the reader falls behind."""
        slot: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1)
        if not self._slots:
            self._start_feed()
        self._slots.add(slot)
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._tick(), name="live-view-ticker")
        try:
            slot.put_nowait(self.snapshot())
            while True:
                yield await slot.get()
        finally:
            self._slots.discard(slot)
            if not self._slots:
                self._stop_feed()

    async def _tick(self) -> None:
        while self._slots:
            await asyncio.sleep(self.period)
            snap = self.snapshot()
            for slot in list(self._slots):
                with contextlib.suppress(asyncio.QueueEmpty):
                    slot.get_nowait()  # drop what the reader has not taken yet
                slot.put_nowait(snap)

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker

    # -- the snapshot ----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        now = time.time()
        self.window.push(time.monotonic(), read_samples())
        return {
            "time": now,
            "uptime": now - self._started,
            "leader": self._leader(),
            "controllers": self._controllers(),
            "informers": self._informers(),
            "queues": self._queues(),
            "requests": self._requests(),
            "workloads": self._workloads(),
            "feed": list(self.feed),
        }

    def _series(self, name: str) -> list[Key]:
        return [k for k in self.window.latest if k[0] == name]

    def _leader(self) -> dict[str, Any]:
        o = self.manager.options
        return {"enabled": bool(o.leader_elect), "leading": self.manager.leading.is_set(),
                "identity": self.manager.identity,
                "lease": f"{o.leader_elect_resource_namespace}/{o.leader_elect_resource_name}"}

    def _controllers(self) -> list[dict[str, Any]]:
        return [{"name": name, "workers": r.workers, "failure": r.failure}
                for name, r in sorted(self.manager.controllers.items())]

    def _informers(self) -> list[dict[str, Any]]:
        if self._ctx is None:
            return []
        latest = self.window.latest
        events: dict[tuple[str, str], list[Key]] = {}
        for k in self._series("informer_processing_latency_seconds_count"):
            lab = labels_of(k)
            events.setdefault((lab.get("group", ""), lab.get("resource", "")), []).append(k)
        out = []
        for gvr, gi in sorted(self._ctx.informer_factory.informers().items()):
            inf = gi.informer
            keys = events.get((gvr.group, gvr.resource), [])
            # The Reflector is the informer's private part; its LIST count is public.
            reflector = getattr(inf, "_reflector", None)
            out.append({
                "resource": gvr.resource + (f".{gvr.group}" if gvr.group else ""),
                "cached": len(inf.get_store().list_keys()),
                "synced": inf.has_synced(),
                "events_per_s": self.window.rate_sum(keys),
                "events_total": sum(latest.get(k, 0.0) for k in keys),
                "last_rv": inf.last_sync_resource_version(),
                "lists": getattr(reflector, "list_count", 0),
                "watches": getattr(reflector, "watch_count", 0),
            })
        return out

    def _queues(self) -> list[dict[str, Any]]:
        latest = self.window.latest
        out = []
        for k in sorted(self._series("workqueue_depth")):
            name = labels_of(k).get("name", "")
            lab = (("name", name),)
            buckets = self.window.histogram_delta("workqueue_work_duration_seconds",
                                                  {"name": name})
            out.append({
                "name": name,
                "depth": latest.get(k, 0.0),
                "adds_total": latest.get(("workqueue_adds_total", lab), 0.0),
                "adds_per_s": self.window.rate(("workqueue_adds_total", lab)),
                "retries_total": latest.get(("workqueue_retries_total", lab), 0.0),
                "retries_per_s": self.window.rate(("workqueue_retries_total", lab)),
                "reconciles_per_s": self.window.rate(
                    ("workqueue_work_duration_seconds_count", lab)),
                "longest_running_s": latest.get(
                    ("workqueue_longest_running_processor_seconds", lab), 0.0),
                "work_p50_s": quantile(0.5, buckets),
                "work_p90_s": quantile(0.9, buckets),
                "work_p99_s": quantile(0.99, buckets),
            })
        return out

    def _requests(self) -> list[dict[str, Any]]:
        latest = self.window.latest
        by_method: dict[str, list[Key]] = {}
        for k in self._series("rest_client_requests_total"):
            by_method.setdefault(labels_of(k).get("method", "?"), []).append(k)
        return [{"method": m, "per_s": self.window.rate_sum(keys),
                 "total": sum(latest.get(k, 0.0) for k in keys)}
                for m, keys in sorted(by_method.items())]

    def _workloads(self) -> dict[str, Any]:
        if self._ctx is None:
            return {"deployments": [], "jobs": [], "nodes": []}
        f = self._ctx.informer_factory
        rs_by_owner: dict[str, list[dict[str, Any]]] = {}
        for rs in f.apps_v1.replicasets.informer.get_store().list():
            ref = get_controller_of(rs)
            if ref is None or ref.get("kind") != "Deployment":
                continue
            spec, status, m = rs.get("spec") or {}, rs.get("status") or {}, _meta(rs)
            rs_by_owner.setdefault(f"{m.get('namespace')}/{ref.get('name')}", []).append({
                "name": m.get("name"),
                "revision": (m.get("annotations") or {}).get(
                    "deployment.kubernetes.io/revision", ""),
                "replicas": spec.get("replicas", 0),
                "current": status.get("replicas", 0),
                "ready": status.get("readyReplicas", 0),
            })
        deployments: list[dict[str, Any]] = []
        for d in f.apps_v1.deployments.informer.get_store().list():
            spec, status = d.get("spec") or {}, d.get("status") or {}
            key = _key_of(d)
            deployments.append({
                "key": key, "replicas": spec.get("replicas", 1),
                "updated": status.get("updatedReplicas", 0),
                "ready": status.get("readyReplicas", 0),
                "available": status.get("availableReplicas", 0),
                "replicasets": sorted(rs_by_owner.get(key, []),
                                      key=lambda r: str(r["revision"]).zfill(9), reverse=True),
            })
        jobs: list[dict[str, Any]] = []
        for j in f.batch_v1.jobs.informer.get_store().list():
            spec, status = j.get("spec") or {}, j.get("status") or {}
            done = [c.get("type") for c in status.get("conditions") or []
                    if c.get("status") == "True" and c.get("type") in ("Complete", "Failed")]
            jobs.append({"key": _key_of(j), "completions": spec.get("completions"),
                         "active": status.get("active", 0),
                         "succeeded": status.get("succeeded", 0),
                         "failed": status.get("failed", 0),
                         "state": done[0] if done else "Running"})
        pods_by_node: dict[str, dict[str, int]] = {}
        for p in f.core_v1.pods.informer.get_store().list():
            node = (p.get("spec") or {}).get("nodeName") or ""
            phase = (p.get("status") or {}).get("phase") or "Pending"
            counts = pods_by_node.setdefault(node, {})
            counts[phase] = counts.get(phase, 0) + 1
        nodes: list[dict[str, Any]] = []
        for n in f.core_v1.nodes.informer.get_store().list():
            name = str(_meta(n).get("name"))
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (n.get("status") or {}).get("conditions") or [])
            nodes.append({"name": name, "ready": ready, "pods": pods_by_node.pop(name, {})})
        nodes.sort(key=lambda n: n["name"])
        if pods_by_node.get(""):
            nodes.append({"name": "(unscheduled)", "ready": None, "pods": pods_by_node[""]})
        return {"deployments": sorted(deployments, key=lambda d: d["key"]),
                "jobs": sorted(jobs, key=lambda j: j["key"]), "nodes": nodes}
