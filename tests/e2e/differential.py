"""Differential controller tests: one scenario under the real kube-controller-manager and
under pykcm's, on the same real kube-apiserver, and what a user observes compared.

Used by test_differential_controllers.py. The pieces, in the order data flows::

    Differential.run(name, scenario)
      for manager in (the one running now, the other):     # one swap per scenario
          KubeCluster.start_manager(manager)                # never two managers at once
          Run(api, fresh namespace)  ── scenario(run) ──►  observation (plain JSON)
              run.watch(...)   Recorder: real watches, every event in resourceVersion order
              run.masker       generated names → stable placeholders
      compare(kube observation, pykcm observation)
          differences − allowlist (differential_allowlist.py, each entry with its reason)
          ──► AssertionError with a readable diff, or nothing

A scenario returns only what the algorithm fixes for its inputs (sizes the
Deployment controller must step through, conditions, events, names,
annotations), never timestamps or interleavings that depend on the machine's
speed. Names the API server or the clock make up are masked through
:class:`Masker`: a pod's random suffix becomes ``{rand}``, a CronJob Job's
scheduled-minute suffix ``{minute}`` (checked separately against its
scheduled-timestamp annotation), UIDs ``{uid:Kind/name}``, the namespace
``{namespace}``. Pod-template-hashes are registered (their format checked,
:func:`check_hash_format`, and their creation order kept) but compared as
they are: pykcm computes upstream's (pykcm.api.deep_hash), so a ReplicaSet
has the same name under either manager. ``Masker(mask_hashes=True)`` numbers
them ``{hash1}``, ``{hash2}``, ... for a comparison that should not depend on
them.
"""

from __future__ import annotations

import contextlib
import fnmatch
import http.client
import json
import pprint
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

if TYPE_CHECKING:
    from pykcm.testing.upstream import KubeCluster

WAIT = 90.0
"""Upper bound of every wait (a loaded 2-core machine runs other tests at the same time)."""

RESOURCES: dict[str, str] = {
    "pods": "/api/v1", "events": "/api/v1", "namespaces": "/api/v1",
    "serviceaccounts": "/api/v1", "configmaps": "/api/v1", "resourcequotas": "/api/v1", "secrets": "/api/v1",
    "services": "/api/v1", "endpoints": "/api/v1",
    "endpointslices": "/apis/discovery.k8s.io/v1",
    "deployments": "/apis/apps/v1", "replicasets": "/apis/apps/v1",
    "daemonsets": "/apis/apps/v1", "statefulsets": "/apis/apps/v1",
    "controllerrevisions": "/apis/apps/v1", "persistentvolumeclaims": "/api/v1",
    "replicationcontrollers": "/api/v1",
    "jobs": "/apis/batch/v1", "cronjobs": "/apis/batch/v1",
    "poddisruptionbudgets": "/apis/policy/v1",
}
HASH_RE = re.compile(r"^[bcdfghjklmnpqrstvwxz2456789]{1,10}$")
"""A pod-template-hash: the decimal digits of a 32-bit FNV sum, each mapped by
``rand.SafeEncodeString`` into an alphabet without vowels (so 1 to 10 characters)."""
NOT_UNDER_TEST = frozenset({"default-scheduler", "kubelet"})
"""Event sources of the simulator (``pykcm sim``), the same under either manager."""


# -- a small client of the real API server ----------------------------------------------------

class ApiError(AssertionError):
    pass


class Api:
    """Raw JSON requests to the API server (standard library only, one connection per call)."""

    def __init__(self, url: str, token: str, ca_file: str) -> None:
        u = urlsplit(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 443
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca_file)

    def _conn(self, timeout: float | None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json",
                query: dict[str, str] | None = None) -> tuple[int, Any]:
        if query:
            path += "?" + urlencode(query)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        conn = self._conn(30)
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
        finally:
            conn.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode(errors="replace")

    @staticmethod
    def path(resource: str, ns: str | None = None, name: str | None = None,
             sub: str | None = None) -> str:
        p = RESOURCES[resource]
        if ns is not None:
            p += f"/namespaces/{ns}"
        p += f"/{resource}"
        if name is not None:
            p += f"/{name}"
        if sub is not None:
            p += f"/{sub}"
        return p

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        code, out = self.request(method, path, body, **kw)
        if code >= 300:
            raise ApiError(f"{method} {path}: {code} {out}")
        return out


class Watch:
    """One real watch (``?watch=1``) in a thread, from a resourceVersion; stopped by stop()."""

    def __init__(self, api: Api, path: str, rv: str, sink: Callable[[dict[str, Any]], None]
                 ) -> None:
        self.api, self.path, self.rv, self.sink = api, path, rv, sink
        self._stop = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._once()
        except BaseException as e:  # noqa: BLE001 - reported by the recorder's check
            if not self._stop.is_set():
                self.error = e

    def _once(self) -> None:
        q = urlencode({"watch": "1", "resourceVersion": self.rv, "allowWatchBookmarks": "true",
                       "timeoutSeconds": "600"})
        conn = self.api._conn(None)
        self._conn = conn
        conn.request("GET", f"{self.path}?{q}",
                     headers={"Authorization": f"Bearer {self.api.token}"})
        r = conn.getresponse()
        if r.status != 200:
            raise ApiError(f"watch {self.path}: {r.status} {r.read()!r}")
        while not self._stop.is_set():
            line = r.readline()
            if not line:
                break
            ev = json.loads(line)
            obj = ev.get("object") or {}
            if ev.get("type") == "ERROR":
                raise ApiError(f"watch {self.path}: {obj}")
            self.rv = obj.get("metadata", {}).get("resourceVersion", self.rv)
            if ev.get("type") != "BOOKMARK":
                self.sink(ev)
        conn.close()

    def stop(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(10)


@dataclass
class Event:
    """A watch event as recorded: the resource watched, the type and the object."""

    resource: str
    type: str
    obj: dict[str, Any]

    @property
    def rv(self) -> int:
        return int(self.obj["metadata"]["resourceVersion"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


class Recorder:
    """Watches of several resources of one namespace; their events kept in resourceVersion
    order (one etcd revision counter orders every resource) and the current objects."""

    def __init__(self, api: Api, ns: str, resources: tuple[str, ...]) -> None:
        self.api, self.ns = api, ns
        self._cond = threading.Condition()
        self.events: list[Event] = []
        self.store: dict[str, dict[str, dict[str, Any]]] = {r: {} for r in resources}
        self.watches: list[Watch] = []
        for res in resources:
            listing = api.ok("GET", Api.path(res, ns))
            for o in listing["items"]:
                self._sink(res, {"type": "ADDED", "object": o})
            self.watches.append(Watch(api, Api.path(res, ns), listing["metadata"]["resourceVersion"],
                                      lambda ev, res=res: self._sink(res, ev)))

    def _sink(self, res: str, ev: dict[str, Any]) -> None:
        obj = ev["object"]
        with self._cond:
            e = Event(res, ev["type"], obj)
            self.events.append(e)
            if e.type == "DELETED":
                self.store[res].pop(e.name, None)
            else:
                self.store[res][e.name] = obj
            self._cond.notify_all()

    def wait_for(self, pred: Callable[[Recorder], Any], what: str, timeout: float = WAIT) -> Any:
        """Until ``pred(self)`` is truthy (re-evaluated after every event); its value."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = pred(self)
                if got:
                    return got
                left = deadline - time.monotonic()
                self.check()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what} in {self.ns}; last "
                                         f"state:\n{pprint.pformat(self.summary(), width=100)}")
                self._cond.wait(min(left, 0.5))

    def check(self) -> None:
        for w in self.watches:
            if w.error is not None:
                raise AssertionError(f"watch {w.path} failed: {w.error!r}")

    def ordered(self, *resources: str) -> list[Event]:
        """The events of ``resources`` (all when none) in resourceVersion order."""
        with self._cond:
            evs = [e for e in self.events if not resources or e.resource in resources]
        return sorted(evs, key=lambda e: e.rv)

    def objects(self, resource: str) -> list[dict[str, Any]]:
        with self._cond:
            return list(self.store[resource].values())

    def get(self, resource: str, name: str) -> dict[str, Any] | None:
        with self._cond:
            return self.store[resource].get(name)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for res, objs in self.store.items():
            if res == "events":
                out[res] = sorted(f"{o.get('reason')}: {o.get('message')}" for o in objs.values())
                continue
            out[res] = {n: (o.get("spec", {}).get("replicas"), o.get("status"))
                        for n, o in objs.items()}
        return out

    def stop(self) -> None:
        for w in self.watches:
            w.stop()


# -- masking generated names ------------------------------------------------------------------

class Masker:
    """Replaces generated parts of names by placeholders in every string of an observation.

    ``hash(h)`` registers pod-template-hashes in the order the scenario gives them
    (ReplicaSet creation order), and with ``mask_hashes`` numbers them; ``literal``
    maps any other generated string. Pod names (``<owner>-<5 random>``) get
    ``{rand}``.
    """

    def __init__(self, *, mask_hashes: bool = False) -> None:
        self.map: dict[str, str] = {}
        self.hashes: list[str] = []
        self.mask_hashes = mask_hashes

    def hash(self, h: str) -> str:
        if h not in self.hashes:
            self.hashes.append(h)
            if self.mask_hashes:
                self.map[h] = f"{{hash{len(self.hashes)}}}"
        return self.map.get(h, h)

    def literal(self, text: str, placeholder: str) -> None:
        self.map[text] = placeholder

    def mask(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._mask_str(value)
        if isinstance(value, dict):
            return {self._mask_str(k): self.mask(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask(v) for v in value]
        return value

    def _mask_str(self, s: str) -> str:
        # longest first: a pod name holds its ReplicaSet's name, which holds the hash
        for k in sorted(self.map, key=len, reverse=True):
            if k in s:
                s = re.sub(rf"(?<![a-z0-9]){re.escape(k)}(?![a-z0-9])", self.map[k], s)
        return re.sub(r"(?<=-)[bcdfghjklmnpqrstvwxz2456789]{5}(?![a-z0-9-])", "{rand}", s) \
            if "-" in s else s


def check_hash_format(h: str) -> None:
    assert HASH_RE.match(h), f"pod-template-hash {h!r} is not a SafeEncodeString'd uint32"


# -- comparing observations ------------------------------------------------------------------

@dataclass(frozen=True)
class Allowed:
    """A reviewed difference between the real kcm and pykcm's: paths (fnmatch patterns) of
    the observation of scenarios (fnmatch patterns) where both may differ, and why."""

    scenario: str
    path: str
    reason: str


@dataclass
class Difference:
    path: str
    kube: Any
    pykcm: Any

    def render(self) -> str:
        return (f"  {self.path}:\n    kube-controller-manager: {_short(self.kube)}\n"
                f"    pykcm:                   {_short(self.pykcm)}")


_MISSING = "<absent>"


def _short(v: Any) -> str:
    s = json.dumps(v, sort_keys=True) if v != _MISSING else v
    return s if len(s) <= 400 else s[:400] + " ..."


def diff(kube: Any, pykcm: Any, path: str = "") -> list[Difference]:
    """Differences between two observations, by path (``a.b[2].c``); lists compare by index."""
    if isinstance(kube, dict) and isinstance(pykcm, dict):
        out: list[Difference] = []
        for k in sorted(set(kube) | set(pykcm), key=str):
            sub = f"{path}.{k}" if path else str(k)
            out += diff(kube.get(k, _MISSING), pykcm.get(k, _MISSING), sub)
        return out
    if isinstance(kube, list) and isinstance(pykcm, list):
        out = []
        for i in range(max(len(kube), len(pykcm))):
            out += diff(kube[i] if i < len(kube) else _MISSING,
                        pykcm[i] if i < len(pykcm) else _MISSING, f"{path}[{i}]")
        return out
    return [] if kube == pykcm else [Difference(path, kube, pykcm)]


def allowed_by(scenario: str, d: Difference, allowlist: list[Allowed]) -> Allowed | None:
    for a in allowlist:
        if fnmatch.fnmatchcase(scenario, a.scenario) and fnmatch.fnmatchcase(d.path, a.path):
            return a
    return None


def compare(scenario: str, kube: Any, pykcm: Any, allowlist: list[Allowed]) -> list[Difference]:
    """The differences no allowlist entry covers."""
    return [d for d in diff(kube, pykcm) if allowed_by(scenario, d, allowlist) is None]


def report(scenario: str, kube: Any, pykcm: Any, bad: list[Difference]) -> str:
    lines = [(f"{scenario}: pykcm's controllers differ from kube-controller-manager v1.36 in "
             f"{len(bad)} place(s) not in tests/e2e/differential_allowlist.py:")]
    lines += [d.render() for d in bad]
    lines.append("kube-controller-manager observed:\n" + pprint.pformat(kube, width=100))
    lines.append("pykcm observed:\n" + pprint.pformat(pykcm, width=100))
    return "\n".join(lines)


# -- one run of a scenario --------------------------------------------------------------------

@dataclass
class Run:
    """A scenario's run under one manager: the API, its own namespace, and helpers."""

    api: Api
    ns: str
    manager: str
    masker: Masker = field(default_factory=Masker)
    recorders: list[Recorder] = field(default_factory=list)
    _events_key: Any = None

    def path(self, resource: str, name: str | None = None, sub: str | None = None) -> str:
        return Api.path(resource, self.ns, name, sub)

    def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.api.ok("POST", self.path(resource), obj)
        return out

    def get(self, resource: str, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self.api.ok("GET", self.path(resource, name))
        return out

    def list(self, resource: str, selector: str | None = None) -> list[dict[str, Any]]:
        q = {"labelSelector": selector} if selector else None
        out: list[dict[str, Any]] = self.api.ok("GET", self.path(resource), query=q)["items"]
        return out

    def patch(self, resource: str, name: str, body: Any, *, sub: str | None = None,
              kind: str = "merge") -> dict[str, Any]:
        ct = {"merge": "application/merge-patch+json",
              "strategic": "application/strategic-merge-patch+json",
              "json": "application/json-patch+json"}[kind]
        out: dict[str, Any] = self.api.ok("PATCH", self.path(resource, name, sub), body,
                                          content_type=ct)
        return out

    def delete(self, resource: str, name: str, propagation: str | None = None) -> Any:
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        return self.api.ok("DELETE", self.path(resource, name), body)

    def watch(self, *resources: str) -> Recorder:
        r = Recorder(self.api, self.ns, resources)
        self.recorders.append(r)
        return r

    def wait(self, pred: Callable[[], Any], what: str, timeout: float = WAIT,
             interval: float = 0.2) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = pred()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"{self.manager}: timed out waiting for {what} in {self.ns} "
                             f"(last: {last!r})")

    def settled_events(self, quiet: float = 1.0) -> list[dict[str, Any]]:
        """The namespace's events once two listings ``quiet`` seconds apart agree (a
        controller records events asynchronously, behind its own writes; under load
        well after them). A later call compares with the last listing first."""
        def key(evs: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
            return sorted((e["metadata"]["name"], e.get("count"), e.get("message"))
                          for e in evs)

        deadline = time.monotonic() + WAIT
        while True:
            evs = self.list("events")
            k = key(evs)
            if k == self._events_key or time.monotonic() > deadline:
                return evs
            self._events_key = k
            time.sleep(quiet)

    def events(self, *, kinds: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The namespace's core/v1 events as (kind, name, type, reason, message), with the
        reporting component, in creation order; not yet masked. Only the controllers'
        events: the simulated scheduler's and kubelets' are left out."""
        evs = self.settled_events()
        evs.sort(key=lambda e: (e.get("firstTimestamp") or e.get("eventTime") or "",
                                int(e["metadata"]["resourceVersion"])))
        out = []
        for e in evs:
            inv = e.get("involvedObject") or {}
            if kinds and inv.get("kind") not in kinds:
                continue
            if (e.get("source") or {}).get("component") in NOT_UNDER_TEST:
                continue
            out.append({"object": f"{inv.get('kind')}/{inv.get('name')}", "type": e.get("type"),
                        "reason": e.get("reason"), "message": e.get("message"),
                        "source": (e.get("source") or {}).get("component"),
                        "count": e.get("count")})
        return out

    def close(self) -> None:
        for r in self.recorders:
            r.stop()


Scenario = Callable[[Run], Any]


class Differential:
    """Runs scenarios under both managers on one KubeCluster (the real API server)."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.cluster = cluster
        self.api = Api(cluster.url, cluster.token, cluster.ca_file)

    def use(self, manager: str) -> None:
        c = self.cluster
        if c.manager is None or c.manager_kind != manager or c.controllers != "*":
            c.start_manager(manager=manager, controllers="*")

    def restore(self) -> None:
        """Leave the session's cluster as the other tests expect it: pykcm's manager, every
        controller."""
        self.use("pykcm")

    def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        deadline = time.monotonic() + WAIT
        while self.api.request("GET", Api.path("serviceaccounts", name, "default"))[0] != 200:
            if time.monotonic() > deadline:
                raise AssertionError(f"no ServiceAccount {name}/default")
            time.sleep(0.1)
        return name

    @contextlib.contextmanager
    def run_one(self, manager: str, prefix: str) -> Iterator[Run]:
        self.use(manager)
        run = Run(self.api, self.namespace(prefix), manager)
        run.masker.literal(run.ns, "{namespace}")
        try:
            yield run
        finally:
            run.close()
            self.api.request("DELETE", f"/api/v1/namespaces/{run.ns}")

    def run(self, scenario: str, fn: Scenario, allowlist: list[Allowed],
            prefix: str = "diff") -> tuple[Any, Any]:
        """``fn`` under both managers (the running one first: one swap per scenario);
        fails with a readable diff where they differ beyond ``allowlist``."""
        first = self.cluster.manager_kind if self.cluster.manager is not None else "kube"
        order = [first, "pykcm" if first == "kube" else "kube"]
        seen: dict[str, Any] = {}
        for manager in order:
            with self.run_one(manager, prefix) as run:
                seen[manager] = json.loads(json.dumps(run.masker.mask(fn(run))))
        bad = compare(scenario, seen["kube"], seen["pykcm"], allowlist)
        if bad:
            raise AssertionError(report(scenario, seen["kube"], seen["pykcm"], bad))
        return seen["kube"], seen["pykcm"]
