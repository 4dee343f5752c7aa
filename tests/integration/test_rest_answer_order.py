"""What a client may infer from the order of the API server's answers.

Found running the real kube-controller-manager on pykcm's server (docs/upstream.md):

- A watcher receives a committed event no later than the writer its response,
  as kube-apiserver's watch cache mostly delivers it. v1.36's controllers
  (KEP-5647) refuse to sync until their informer has seen their own last
  write; when the event lagged the response, every sync started right after
  a write failed and was retried ("read version: N is not as new as written
  version: M").
- An answer that rests on another client's write still in flight (pykcm's
  pending overlay) is given only once that write is committed, as etcd's
  linearizable writes imply: a DELETE collection that found an object "already
  deleted" by a concurrent DELETE, or a 409 on a resourceVersion
  precondition, must not be followed by a read that still shows the old
  object (the namespace controller's "unexpected items still remain", the
  garbage collector's precondition retry reading the old resourceVersion).
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from pykcm.testing.server_thread import ServerThread
from pykcm.testing.upstream import request_json


@pytest.fixture(scope="module")
def memory_server() -> Iterator[ServerThread]:
    with ServerThread() as st:
        yield st


@pytest.fixture(scope="module")
def durable_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    with ServerThread(data_dir=str(tmp_path_factory.mktemp("state")), fsync=False) as st:
        yield st


class Gate:
    """Holds the durable log's commits while closed: writes stay in flight (pending)."""

    def __init__(self, st: ServerThread) -> None:
        store = st.server.store
        assert store is not None
        self.store = store
        log_ = store._log
        assert log_ is not None
        self.open = threading.Event()
        self.open.set()
        append = log_.append

        def gated(rows: Any) -> None:
            self.open.wait(30)
            append(rows)

        log_.append = gated  # type: ignore[method-assign]

    def wait_in_flight(self) -> None:
        deadline = time.monotonic() + 30
        while self.store._next_rv <= self.store.rv:
            assert time.monotonic() < deadline, "the write never got in flight"
            time.sleep(0.005)


def call(st: ServerThread, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
    return request_json(st.url + path, st.token, method=method, body=body, content_type=ctype)


def new_namespace(st: ServerThread, name: str) -> str:
    code, body = call(st, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert code == 201, body
    return name


def open_watch(st: ServerThread, path: str) -> ssl.SSLSocket:
    """A raw HTTP/1.1 watch: the test sees exactly when the server's bytes arrive."""
    u = urlparse(st.url)
    raw = socket.create_connection((u.hostname, u.port), timeout=30)
    s = ssl._create_unverified_context().wrap_socket(raw, server_hostname=u.hostname)
    s.sendall(f"GET {path}?watch=1 HTTP/1.1\r\nHost: {u.netloc}\r\n"
              f"Authorization: Bearer {st.token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(65536)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s


@pytest.mark.parametrize("store", ["memory", "durable"])
def test_watch_event_is_sent_before_the_write_response(request: pytest.FixtureRequest,
                                                       store: str) -> None:
    server: ServerThread = request.getfixturevalue(f"{store}_server")
    ns = new_namespace(server, "watch-order")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, _ = call(server, "POST", path, {"metadata": {"name": "c"}})
    assert code == 201
    w = open_watch(server, path)
    try:
        for i in range(20):
            code, obj = call(server, "PATCH", f"{path}/c", {"data": {"i": str(i)}})
            assert code == 200, obj
            # The event was written to the watch connection before the response to
            # ours: on loopback its bytes are already here, no waiting needed.
            assert w.pending() or select.select([w], [], [], 0)[0], f"write {i}: no event yet"
            want = f'"resourceVersion":"{obj["metadata"]["resourceVersion"]}"'.encode()
            got = b""
            while want not in got:
                got += w.recv(65536)
    finally:
        w.close()


def test_delete_collection_answers_after_a_concurrent_delete_commits(
        durable_server: ServerThread) -> None:
    st = durable_server
    ns = new_namespace(st, "collection-order")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    assert call(st, "POST", path, {"metadata": {"name": "a"}})[0] == 201
    gate = Gate(st)
    seen: dict[str, Any] = {}

    def delete_one() -> None:
        seen["delete"] = call(st, "DELETE", f"{path}/a")[0]

    def delete_collection_then_list() -> None:
        seen["collection"] = call(st, "DELETE", path)[0]
        seen["listed"] = [o["metadata"]["name"] for o in call(st, "GET", path)[1]["items"]]

    gate.open.clear()
    one = threading.Thread(target=delete_one)
    one.start()
    try:
        gate.wait_in_flight()
        coll = threading.Thread(target=delete_collection_then_list)
        coll.start()
        coll.join(0.5)  # without the fix it answers (and lists) while the gate is shut
    finally:
        gate.open.set()
    one.join(30)
    coll.join(30)
    assert seen == {"delete": 200, "collection": 200, "listed": []}


def test_precondition_conflict_answers_after_the_write_it_met_commits(
        durable_server: ServerThread) -> None:
    st = durable_server
    ns = new_namespace(st, "conflict-order")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, created = call(st, "POST", path, {"metadata": {"name": "a"}})
    assert code == 201, created
    old_rv = created["metadata"]["resourceVersion"]
    gate = Gate(st)
    seen: dict[str, Any] = {}

    def update() -> None:
        code, obj = call(st, "PATCH", f"{path}/a", {"data": {"x": "1"}})
        seen["update"] = code, obj["metadata"]["resourceVersion"]

    def delete_then_get() -> None:
        seen["delete"] = call(st, "DELETE", f"{path}/a", {
            "preconditions": {"resourceVersion": old_rv}})[0]
        seen["read"] = call(st, "GET", f"{path}/a")[1]["metadata"]["resourceVersion"]

    gate.open.clear()
    writer = threading.Thread(target=update)
    writer.start()
    try:
        gate.wait_in_flight()
        deleter = threading.Thread(target=delete_then_get)
        deleter.start()
        deleter.join(0.5)
    finally:
        gate.open.set()
    writer.join(30)
    deleter.join(30)
    code, new_rv = seen["update"]
    assert code == 200 and new_rv != old_rv
    # The 409 is answered once the update it met is committed: a GET then shows it,
    # so the garbage collector's "retry without the precondition" check can work.
    assert (seen["delete"], seen["read"]) == (409, new_rv)
