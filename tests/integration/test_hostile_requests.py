"""Hostile clients against pykcm's API server (issue 17): the server stays responsive and
bounded. A watch whose client never reads is dropped and its timeoutSeconds holds; expensive
bodies are refused before they cost (answers compared with kube-apiserver in
tests/differential/apiserver: cases errors, limits); writes without a resourceVersion on the
scale subresource and events.k8s.io never answer 409 beside concurrent writers."""

from __future__ import annotations

import socket
import ssl
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pykcm.apiserver.storage.watcher import MAX_QUEUE_BYTES
from pykcm.testing.server_thread import ServerThread
from tests.conftest import Api


def _raw_watch(api: Api, path: str, query: str) -> ssl.SSLSocket:
    """A watch request on a socket nobody reads (a tiny receive buffer)."""
    u = urllib.parse.urlsplit(api.base)
    ctx = ssl.create_default_context(cafile=api.ca_path)
    raw = socket.create_connection((u.hostname or "127.0.0.1", u.port or 443))
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock = ctx.wrap_socket(raw, server_hostname=u.hostname)
    token = api.session.headers["Authorization"]
    sock.sendall(f"GET {path}?watch=1&{query} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                 f"Authorization: {token!s}\r\n\r\n".encode())
    return sock


def _watch_ends(api: Api, baseline: int, limit: float = 60) -> bool:
    """Whether the server ends the watch (its handler task returns) within `limit`. (The
    client may still be reading what the kernel had buffered before the server let go.)"""
    st = api.st
    assert isinstance(st, ServerThread) and st.server.handlers is not None
    tasks = st.server.handlers.watch_tasks
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if len(tasks) <= baseline:
            return True
        time.sleep(0.1)
    return False


def _watches(api: Api) -> int:
    st = api.st
    assert isinstance(st, ServerThread) and st.server.handlers is not None
    return len(st.server.handlers.watch_tasks)


def test_watch_timeout_holds_while_the_client_does_not_read(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    for i in range(6):  # some 6 MB of initial state: far more than the socket buffers hold
        code, body = api.post(path, {"metadata": {"name": f"c{i}"}, "data": {"x": "a" * 1_000_000}})
        assert code == 201, body
    baseline = _watches(api)
    sock = _raw_watch(api, path, "timeoutSeconds=2")
    try:
        time.sleep(1)
        assert _watches(api) == baseline + 1  # blocked in a write to a client that waits
        code, _ = api.get("/readyz")  # the server answers meanwhile
        assert code == 200
        assert _watch_ends(api, baseline), "the watch outlived its timeoutSeconds"
    finally:
        sock.close()


def test_watcher_that_never_reads_is_dropped_when_its_buffer_is_full(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, lst = api.get(path)
    assert code == 200
    baseline = _watches(api)
    sock = _raw_watch(api, path, f"resourceVersion={lst['metadata']['resourceVersion']}")
    try:
        time.sleep(0.5)
        assert _watches(api) == baseline + 1
        # live events past the watcher's byte bound, while nobody reads
        big = "a" * 900_000
        for i in range(MAX_QUEUE_BYTES // 900_000 + 8):
            code, body = api.post(path, {"metadata": {"name": f"c{i}"}, "data": {"x": big}})
            assert code == 201, body
        code, _ = api.get("/readyz")
        assert code == 200
        # the default timeout is 30-60 minutes: only the drop ends this stream
        assert _watch_ends(api, baseline), "a watcher that never reads was kept"
    finally:
        sock.close()


def _concurrently(*jobs: Callable[[], list[int]]) -> list[list[int]]:
    with ThreadPoolExecutor(len(jobs)) as pool:
        return [f.result() for f in [pool.submit(j) for j in jobs]]


def test_scale_and_events_patch_without_resource_version_never_conflict(
        pykcm_apiserver_factory: Callable[..., ServerThread], tmp_path: Path) -> None:
    """A write that names no resourceVersion builds on the newest version, a write in flight
    included: PATCH/PUT on deployments/X/scale and the events.k8s.io PATCH answered 409 about
    1% of the time beside other writers (kube-apiserver retries internally)."""
    st = pykcm_apiserver_factory(data_dir=str(tmp_path), fsync=False)  # writes have a window
    a, b = Api(st), Api(st)
    ns = a.ns()
    deploy = f"/apis/apps/v1/namespaces/{ns}/deployments"
    code, body = a.post(deploy, {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}},
                     "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    assert code == 201, body
    code, body = a.post(f"/api/v1/namespaces/{ns}/events", {
        "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p",
                                                      "namespace": ns},
        "reason": "R", "message": "m", "type": "Normal", "count": 1})
    assert code == 201, body

    def other_writes() -> list[int]:
        out = []
        for i in range(150):
            out.append(a.patch(f"{deploy}/d", {"metadata": {"annotations": {"n": str(i)}}})[0])
            out.append(a.patch(f"/api/v1/namespaces/{ns}/events/e", {"count": i + 2})[0])
        return out

    def scale_and_event_writes() -> list[int]:
        out = []
        for i in range(150):
            out.append(b.patch(f"{deploy}/d/scale", {"spec": {"replicas": i % 5}})[0])
            out.append(b.put(f"{deploy}/d/scale", {"metadata": {"name": "d"},
                                                   "spec": {"replicas": i % 3}})[0])
            out.append(b.patch(f"/apis/events.k8s.io/v1/namespaces/{ns}/events/e",
                               {"metadata": {"annotations": {"n": str(i)}}})[0])
        return out

    others, ours = _concurrently(other_writes, scale_and_event_writes)
    assert set(others) == {200}
    assert Counter(ours) == Counter({200: len(ours)})
