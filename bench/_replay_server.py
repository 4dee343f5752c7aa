"""Replay API server for bench/informer.py: pre-encoded pods, LIST and WATCH at socket speed.

    python bench/_replay_server.py            # prints "port: N", serves until SIGTERM/SIGINT

An aiohttp application on 127.0.0.1 (plain HTTP, no auth) that answers what
informers ask of a Kubernetes API server for pods, from bytes encoded once at
start, so that the server's own cost stays out of the client's figures (it
runs in its own process, hence on the other core):

- ``GET /api/v1/pods`` and ``/api/v1/namespaces/{ns}/pods`` (LIST): the first
  ``n`` pods as a PodList at resourceVersion ``LIST_RV``. With
  ``resourceVersion=0`` the whole list in one response, ``limit`` ignored
  (kube-apiserver serves that from its watch cache the same way); otherwise
  ``limit``/``continue`` pages (continue = the offset). Items carry no
  kind/apiVersion, as kube-apiserver's lists.
- ``?watch=true`` (WATCH): from ``resourceVersion=LIST_RV`` the configured
  replay: ``events`` MODIFIED events cycling over the first ``watch_pods``
  pods, resourceVersions LIST_RV+1, LIST_RV+2, ..., written in ~64 KiB chunks
  as fast as the socket takes them; then the stream ends. A watch from any
  later resourceVersion (the client re-watching after the replay) stays open
  and silent until the client leaves or its timeoutSeconds pass.
  ``sendInitialEvents=true`` (watch-list) gets 422 Invalid, as from a server
  without the WatchList feature, so every client syncs with LIST; with
  ``watchlist=1`` in the config it gets the proper ADDED events and the
  ``k8s.io/initial-events-end`` bookmark instead, then the same replay.
- Discovery for clients that need it: ``/api``, ``/api/v1``, ``/apis``,
  ``/version``.
- ``POST /_bench/config?n=..&events=..&watch_pods=..&watchlist=0|1`` sets
  what the next requests get (the benchmark runs one client at a time);
  ``GET /_bench/stats`` returns request counts since start (by kind; "other"
  counts 404s) and bytes written.

The pods (``make_pod``) are realistic: about 2.2 KB of JSON each with labels,
annotations, an owner reference, 2 containers (env, resources, ports,
volumeMounts), volumes, tolerations, a managedFields entry, and a status
with conditions and containerStatuses.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import orjson

NS = "bench"
LIST_RV = 1_000_000  # the list's resourceVersion; watch events follow it
MAX_PODS = 50_000
CHUNK_EVENTS = 28  # ~64 KiB of watch lines per write
JSON = "application/json"


def make_pod(i: int, *, server_fields: bool = True) -> dict[str, Any]:
    """A realistic pod of about 2.2 KB of JSON (server_fields=False: what a client creates)."""
    name = f"web-7d9f8b6c5-{i:06d}"
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "generateName": "web-7d9f8b6c5-",
            "namespace": NS,
            "labels": {
                "app.kubernetes.io/name": "web",
                "pod-template-hash": "7d9f8b6c5",
                "tier": "frontend",
            },
            "annotations": {"prometheus.io/scrape": "true"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5",
                "uid": "0d3c5e7a-8b1f-4a2e-9c6d-2f4e6a8b0c1d",
                "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "restartPolicy": "Always",
            "nodeName": f"node-{i % 200:03d}",
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.name"}}},
                    ],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                  "limits": {"memory": "256Mi"}},
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/etc/nginx/conf.d", "readOnly": True},
                        {"name": "cache", "mountPath": "/var/cache/nginx"},
                    ],
                },
                {
                    "name": "exporter",
                    "image": "nginx/exporter:1.1.0",
                    "ports": [{"containerPort": 9113, "protocol": "TCP"}],
                },
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": "web-config"}},
                {"name": "cache", "emptyDir": {}},
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
        },
    }
    if not server_fields:
        meta = pod["metadata"]
        del meta["generateName"], meta["ownerReferences"]
        del pod["spec"]["nodeName"]
        return pod
    meta = pod["metadata"]
    meta["uid"] = f"6f1c{i:04x}-3b2a-4c1d-9e8f-{(i * 2654435761) % (1 << 48):012x}"[-36:]
    meta["resourceVersion"] = str(1000 + i)
    meta["creationTimestamp"] = "2026-11-29T08:00:00Z"
    meta["managedFields"] = [{
        "manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
        "time": "2026-11-29T08:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {
            "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:tier": {}}},
            "f:spec": {"f:nodeName": {}}}}]
    ts = "2026-11-29T08:00:05Z"
    pod["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": ts}
            for t in ("Ready", "PodScheduled")],
        "hostIP": f"10.0.{i % 200}.1",
        "podIP": f"10.244.{(i // 250) % 256}.{i % 250 + 2}",
        "containerStatuses": [
            {"name": c, "ready": True, "restartCount": 0, "image": img,
             "imageID": f"sha256:{'4f' * 32}",
             "state": {"running": {"startedAt": ts}}}
            for c, img in (("web", "nginx:1.27.3"), ("exporter", "nginx/exporter:1.1.0"))],
        "qosClass": "Burstable",
    }
    return pod


def encode_pods(n: int) -> list[bytes]:
    """The list items (no kind/apiVersion), each encoded once."""
    return [orjson.dumps(make_pod(i)) for i in range(n)]


def event_parts(item: bytes) -> tuple[bytes, bytes]:
    """A MODIFIED watch line split around the resourceVersion value (without quotes)."""
    rv_key = b'"resourceVersion":"'
    at = item.index(rv_key) + len(rv_key)
    end = item.index(b'"', at)
    head = b'{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",' + item[1:at]
    tail = item[end:] + b"}\n"
    return head, tail


def list_body(items: list[bytes], start: int, end: int, cont: str = "") -> bytes:
    meta = b'{"resourceVersion":"%d"' % LIST_RV
    if cont:
        meta += b',"continue":"' + cont.encode() + b'","remainingItemCount":%d' % (
            len(items) - end)
    meta += b"}"
    return (b'{"kind":"PodList","apiVersion":"v1","metadata":' + meta + b',"items":['
            + b",".join(items[start:end]) + b"]}")


def status(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Failure", "message": message, "reason": reason,
                         "code": code})


DISCOVERY = {
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"], "shortNames": ["po"]},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False,
         "kind": "Namespace", "verbs": ["get", "list", "watch"], "shortNames": ["ns"]},
    ]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/version": {"major": "1", "minor": "36", "gitVersion": "v1.36.0-replay",
                 "platform": "linux/amd64"},
}


def main() -> int:
    from aiohttp import web

    try:
        import uvloop
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass

    items = encode_pods(MAX_PODS)
    parts = [event_parts(it) for it in items]
    cfg: dict[str, int] = {"n": 10_000, "events": 0, "watch_pods": 10_000, "watchlist": 0}
    stats: dict[str, int] = {"list": 0, "watch_replay": 0, "watch_idle": 0, "watch_list": 0,
                             "watch_refused": 0, "bytes": 0, "other": 0}
    full_lists: dict[int, bytes] = {}
    idle: set[asyncio.Task[Any]] = set()

    def full_list(n: int) -> bytes:
        body = full_lists.get(n)
        if body is None:
            full_lists.clear()
            body = full_lists[n] = list_body(items, 0, n)
        return body

    async def configure(request: web.Request) -> web.Response:
        for k in cfg:
            if k in request.query:
                cfg[k] = int(request.query[k])
        cfg["n"] = min(cfg["n"], MAX_PODS)
        cfg["watch_pods"] = max(1, min(cfg["watch_pods"], cfg["n"]))
        full_list(cfg["n"])  # encoded now, not during the measured LIST
        return web.json_response(cfg)

    async def get_stats(request: web.Request) -> web.Response:
        return web.json_response(stats)

    async def discovery(request: web.Request) -> web.Response:
        doc = DISCOVERY.get(request.path.rstrip("/"))
        if doc is None:
            stats["other"] += 1
            return web.Response(status=404, body=status(404, "NotFound", "not found"),
                                content_type=JSON)
        return web.Response(body=orjson.dumps(doc), content_type=JSON)

    async def replay(resp: web.StreamResponse, first_rv: int) -> None:
        events, m = cfg["events"], cfg["watch_pods"]
        k = 0
        write = resp.write
        while k < events:
            end = min(events, k + CHUNK_EVENTS)
            buf = []
            for j in range(k, end):
                head, tail = parts[j % m]
                buf.append(head)
                buf.append(b"%d" % (first_rv + j))
                buf.append(tail)
            chunk = b"".join(buf)
            stats["bytes"] += len(chunk)
            await write(chunk)
            k = end

    async def pods(request: web.Request) -> web.StreamResponse:
        q = request.query
        n = cfg["n"]
        if q.get("watch") in ("true", "1"):
            resp = web.StreamResponse(headers={"Content-Type": JSON})
            rv = q.get("resourceVersion", "")
            if q.get("sendInitialEvents") == "true":
                if not cfg["watchlist"]:
                    stats["watch_refused"] += 1
                    return web.Response(
                        status=422, content_type=JSON, body=status(
                            422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for "
                            "watch unless the WatchList feature gate is enabled"))
                stats["watch_list"] += 1
                resp.enable_chunked_encoding()
                await resp.prepare(request)
                buf: list[bytes] = []
                for it in items[:n]:
                    buf.append(b'{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",'
                               + it[1:] + b"}\n")
                    if len(buf) >= CHUNK_EVENTS:
                        chunk = b"".join(buf)
                        stats["bytes"] += len(chunk)
                        await resp.write(chunk)
                        buf = []
                buf.append(b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1",'
                           b'"metadata":{"resourceVersion":"%d","annotations":'
                           b'{"k8s.io/initial-events-end":"true"}}}}\n' % LIST_RV)
                await resp.write(b"".join(buf))
                await replay(resp, LIST_RV + 1)
                await resp.write_eof()
                return resp
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            if rv in ("", "0", str(LIST_RV)) and cfg["events"] > 0:
                stats["watch_replay"] += 1
                await replay(resp, LIST_RV + 1)
                await resp.write_eof()
                return resp
            # A re-watch after the replay: open and silent.
            stats["watch_idle"] += 1
            timeout = float(q.get("timeoutSeconds") or 3600)
            task = asyncio.current_task()
            assert task is not None
            idle.add(task)
            try:
                await asyncio.sleep(timeout)
            finally:
                idle.discard(task)
            await resp.write_eof()
            return resp
        stats["list"] += 1
        limit = int(q.get("limit") or 0)
        rv = q.get("resourceVersion", "")
        cont = q.get("continue", "")
        if rv == "0" or (not limit and not cont):
            body = full_list(n)
        else:
            start = int(cont or 0)
            end = min(n, start + limit) if limit else n
            body = list_body(items[:n], start, end, str(end) if end < n else "")
        stats["bytes"] += len(body)
        return web.Response(body=body, content_type=JSON)

    app = web.Application(client_max_size=1 << 20)
    app.router.add_post("/_bench/config", configure)
    app.router.add_get("/_bench/stats", get_stats)
    app.router.add_get("/api/v1/pods", pods)
    app.router.add_get("/api/v1/namespaces/{ns}/pods", pods)
    app.router.add_route("*", "/{tail:.*}", discovery)

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=128)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        print(f"port: {port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        for t in list(idle):
            t.cancel()
        await runner.cleanup()

    import gc
    gc.freeze()
    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
    os._exit(0)
