"""Small-rollout latency and its per-step trace, for bench/controllers.py.

Role: the latency rows of issue 19. One Deployment of 10 replicas (pods
ready 0.5 s after they start: ``sim.pykcm.io/ready-after-seconds``) per
strategy (RollingUpdate with the default 25%/25%, and Recreate) is created
and left to become Available; then its image is changed (a merge patch, as
``kubectl set image`` sends) ``reps`` times, each time waiting until
``kubectl rollout status`` would say done (observedGeneration current,
updatedReplicas == replicas == status.replicas == availableReplicas) and
until the old pods are gone. The wall time of one rollout runs from the
PATCH being sent to the watch event that completes it.

Data flow::

    driver ── PATCH image ──► API server ──► controller manager under test
       ▲                          │ watch (Deployments, ReplicaSets, pods, events of
       │                          ▼ the namespace; each event stamped on arrival)
       └──── NamespaceLog: the completing event ends the clock; with trace=True the
             events of each rollout are kept, and format_trace prints them relative to
             the PATCH, each with the fields that changed since the object's last event

The trace shows the same thing for both managers (what each write did, when
the API server told its watchers), so a gap between one step and the next
is where a manager spends its time; bench/controllers.py --trace adds the
managers' own log lines at -v 4 (sync start / end), merged by wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

NS_LAT = "bench-lat"
REPLICAS = 10
STRATEGIES = ("RollingUpdate", "Recreate")
KINDS = (("Deployment", "/apis/apps/v1/namespaces/{ns}/deployments"),
         ("ReplicaSet", "/apis/apps/v1/namespaces/{ns}/replicasets"),
         ("Pod", "/api/v1/namespaces/{ns}/pods"),
         ("Event", "/api/v1/namespaces/{ns}/events"))


def lat_deployment(name: str, strategy: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": REPLICAS,
            "strategy": {"type": strategy},
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name},
                             # ready 0.5 s after start; on SIGTERM the containers exit
                             # at once (a web server's clean shutdown), so Recreate waits
                             # for the kubelet's round trip, not a 30 s grace period
                             "annotations": {"sim.pykcm.io/ready-after-seconds": "0.5",
                                             "sim.pykcm.io/termination-seconds": "0"}},
                "spec": {"containers": [{"name": "app", "image": image,
                                         "resources": {"requests": {"cpu": "1m",
                                                                    "memory": "1Mi"}}}]},
            },
        },
    }


def summary(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The fields of an object a rollout moves (what the trace prints when they change)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    if kind == "Deployment":
        conds = {c.get("type"): c.get("reason") for c in st.get("conditions") or ()}
        return {"gen": meta.get("generation"), "obsGen": st.get("observedGeneration"),
                "replicas": st.get("replicas"), "updated": st.get("updatedReplicas"),
                "ready": st.get("readyReplicas"), "available": st.get("availableReplicas"),
                "unavailable": st.get("unavailableReplicas"),
                "terminating": st.get("terminatingReplicas"),
                "Progressing": conds.get("Progressing"), "Available": conds.get("Available")}
    if kind == "ReplicaSet":
        return {"spec": spec.get("replicas"), "replicas": st.get("replicas"),
                "ready": st.get("readyReplicas"), "available": st.get("availableReplicas"),
                "terminating": st.get("terminatingReplicas"),
                "obsGen": st.get("observedGeneration")}
    if kind == "Pod":
        ready = next((c.get("status") for c in st.get("conditions") or ()
                      if c.get("type") == "Ready"), None)
        return {"node": spec.get("nodeName"), "phase": st.get("phase"), "ready": ready,
                "deleting": bool(meta.get("deletionTimestamp"))}
    if kind == "Event":
        return {"reason": obj.get("reason"), "count": obj.get("count"),
                "msg": str(obj.get("message") or "")[:70]}
    return {}


@dataclass
class Rec:
    """One watch event as the driver received it."""

    mono: float
    wall: float
    kind: str
    type: str
    name: str
    fields: dict[str, Any]
    changed: dict[str, Any] = field(default_factory=dict)


class NamespaceLog:
    """LIST + WATCH of the namespace's Deployments, ReplicaSets, pods and events.

    ``deployments`` holds the latest Deployment objects; every event after the
    initial list is appended to ``records`` while ``recording`` is set, with
    the fields that changed since that object's previous event.
    """

    def __init__(self, drv: Any, ns: str = NS_LAT) -> None:
        self.drv, self.ns = drv, ns
        self.deployments: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.last: dict[tuple[str, str], dict[str, Any]] = {}
        self.records: list[Rec] = []
        self.recording = False
        self.changed = asyncio.Event()
        self.synced: list[asyncio.Event] = []
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for kind, path in KINDS:
            ev = asyncio.Event()
            self.synced.append(ev)
            self.tasks.append(asyncio.ensure_future(
                self._run(kind, path.format(ns=self.ns), ev)))

    async def wait_synced(self) -> None:
        for ev in self.synced:
            await ev.wait()

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    def _apply(self, kind: str, typ: str, obj: dict[str, Any], record: bool) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        if kind == "Deployment":
            if typ == "DELETED":
                self.deployments.pop(name, None)
            else:
                self.deployments[name] = obj
        elif kind == "Pod":
            if typ == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = obj
        fields = summary(kind, obj)
        prev = self.last.get((kind, name))
        self.last[(kind, name)] = fields
        if not record:
            return
        changed = ({k: v for k, v in fields.items() if prev.get(k) != v} if prev is not None
                   else {k: v for k, v in fields.items() if v not in (None, False)})
        self.records.append(Rec(time.monotonic(), time.time(), kind, typ, name, fields,
                                changed))

    async def _run(self, kind: str, path: str, synced: asyncio.Event) -> None:
        drv = self.drv
        res = kind.lower() + "s"
        while True:
            try:
                st, body = await drv.request("LIST", res, "GET", path)
                if st != 200:
                    await asyncio.sleep(0.2)
                    continue
                for it in body["items"]:
                    self._apply(kind, "ADDED", it, False)
                rv = body["metadata"]["resourceVersion"]
                synced.set()
                drv.own[("WATCH", res, "")] += 1
                url = (f"{drv.base}{path}?watch=1&resourceVersion={rv}"
                       "&allowWatchBookmarks=true&timeoutSeconds=3600")
                async with drv.session.get(url) as r:
                    if r.status != 200:
                        await asyncio.sleep(0.2)
                        continue
                    buf = b""
                    async for chunk in r.content.iter_any():
                        buf += chunk
                        if b"\n" not in buf:
                            continue
                        *lines, buf = buf.split(b"\n")
                        for ln in lines:
                            if not ln.strip():
                                continue
                            ev = orjson.loads(ln)
                            t, obj = ev.get("type"), ev.get("object") or {}
                            if t in ("ADDED", "MODIFIED", "DELETED"):
                                self._apply(kind, t, obj, self.recording)
                            elif t == "ERROR":
                                raise ConnectionResetError(f"watch error: {obj}")
                        self.changed.set()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - re-list
                await asyncio.sleep(0.2)

    async def wait(self, pred: Callable[[], bool], timeout: float, what: str,
                   check: Callable[[], None]) -> float:
        """Wait until ``pred()``; the monotonic time of the event that made it true."""
        deadline = time.monotonic() + timeout
        while not pred():
            self.changed.clear()
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            check()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 1.0)
        return time.monotonic()


def _dstate(d: dict[str, Any] | None) -> tuple[int, int, int, int, int, int, str]:
    if d is None:
        return (1, 0, 0, 0, 0, 0, "")
    st = d.get("status") or {}
    spec = d.get("spec") or {}
    return ((d.get("metadata") or {}).get("generation", 0), st.get("observedGeneration", 0),
            spec.get("replicas", 1), st.get("replicas", 0), st.get("updatedReplicas", 0),
            st.get("availableReplicas", 0), spec["template"]["spec"]["containers"][0]["image"])


def complete(d: dict[str, Any] | None, image: str) -> bool:
    """`kubectl rollout status`'s test, and the image is the one asked for."""
    g, og, want, reps, upd, avail, img = _dstate(d)
    return img == image and og >= g and upd == want and reps == want and avail == want


@dataclass
class RolloutResult:
    strategy: str
    walls: list[float]
    traces: list[tuple[float, float, list[Rec]]]  # (t0 mono, t0 wall, records)


async def measure_rollouts(drv: Any, nslog: NamespaceLog, strategy: str, reps: int, *,
                           timeout: float, check: Callable[[], None], trace: bool = False
                           ) -> RolloutResult:
    """Create the strategy's Deployment, wait for it, then time ``reps`` image changes."""
    name = "lat-" + strategy.lower()
    base = f"/apis/apps/v1/namespaces/{nslog.ns}/deployments"
    image = "nginx:1.25"
    await drv.request("POST", "deployments.apps", "POST", base,
                      lat_deployment(name, strategy, image))

    def settled() -> bool:
        pods = [p for p in nslog.pods.values()
                if p["metadata"].get("labels", {}).get("app") == name]
        return (complete(nslog.deployments.get(name), image) and len(pods) == REPLICAS
                and not any(p["metadata"].get("deletionTimestamp") for p in pods))

    await nslog.wait(settled, timeout, f"{name} available", check)
    out = RolloutResult(strategy, [], [])
    for k in range(reps):
        await asyncio.sleep(0.5)  # let the last status writes and events of the previous pass
        image = f"nginx:1.{26 + k}"
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "app",
                                                                "image": image}]}}}}
        nslog.records = []
        nslog.recording = trace
        t0, w0 = time.monotonic(), time.time()
        await drv.request("PATCH", "deployments.apps", "PATCH", f"{base}/{name}", patch,
                          ctype="application/merge-patch+json")
        def done(img: str = image) -> bool:
            return complete(nslog.deployments.get(name), img)

        t1 = await nslog.wait(done, timeout,
                              f"{name} rolled out to {image}", check)
        out.walls.append(t1 - t0)
        await nslog.wait(settled, timeout, f"{name}'s old pods gone", check)
        if trace:
            await asyncio.sleep(0.3)  # the trailing events
            out.traces.append((t0, w0, list(nslog.records)))
        nslog.recording = False
    return out


_KLOG = re.compile(r"^(?:\?\?\? )?[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})\s+\S+\s+"
                   r"\S+\] (.*)$")


def klog_lines(text: str, needle: str, since: float, until: float) -> list[tuple[float, str]]:
    """Log lines mentioning ``needle`` in [since, until] (epoch), with their epoch time.

    klog's timestamps carry no year or zone: the current year and UTC are
    assumed (the kit's and pykcm's processes log in UTC here)."""
    year = _dt.datetime.now(_dt.UTC).year
    out: list[tuple[float, str]] = []
    for ln in text.splitlines():
        if needle not in ln:
            continue
        m = _KLOG.match(ln)
        if not m:
            continue
        mo, dd, hh, mi, ss, us, msg = m.groups()
        t = _dt.datetime(year, int(mo), int(dd), int(hh), int(mi), int(ss), int(us),
                         tzinfo=_dt.UTC).timestamp()
        if since <= t <= until:
            out.append((t, msg))
    return out


def format_trace(title: str, t0_wall: float, records: list[Rec],
                 log_lines: Sequence[tuple[float, str]] = ()) -> list[str]:
    """The rollout as a timeline: ms after the PATCH, what the watch saw (or the log said)."""
    rows: list[tuple[float, str]] = []
    for r in records:
        ch = ", ".join(f"{k}={v}" for k, v in r.changed.items())
        rows.append((r.wall, f"{r.kind:<10} {r.type:<8} {r.name:<34} {ch}"))
    for t, msg in log_lines:
        rows.append((t, f"{'log':<10} {'':<8} {msg[:150]}"))
    rows.sort(key=lambda x: x[0])
    lines = [f"#### {title}", "", "```", "    ms  what"]
    for t, txt in rows:
        lines.append(f"{(t - t0_wall) * 1000:6.0f}  {txt}")
    lines.append("```")
    return lines
