"""A paused leader writes nothing once it resumes, and exits non-zero (issue 17).

Two ``pykcm controller-manager`` processes (the replicaset controller, short lease
settings) on one pykcm API server, each through its own recording proxy
(:class:`pykcm.testing.fault_proxy.FaultProxy`): the proxies are the audit of who
wrote what, and when. The leader creates a ReplicaSet's 2 pods; it is stopped with
SIGSTOP; the ReplicaSet is scaled to 4 while it sleeps; the standby takes over and
creates the 2 missing pods; the old leader gets SIGCONT with a cache that still says
2 of 4. Before the write fence it created pods again (8 instead of 4 in the issue's
runs); now: exactly 4 pods, no write from the old leader after it resumed, exit 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from pykcm.apiserver.auth.kubeconfig import build_kubeconfig, write_kubeconfig
from pykcm.testing.fault_proxy import FaultProxy
from pykcm.testing.server_thread import ServerThread

REPO = Path(__file__).resolve().parents[2]
LEASE = ("--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=1500ms",
         "--leader-elect-retry-period=250ms")


def poll(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Manager:
    """``pykcm controller-manager`` through a proxy of its own."""

    def __init__(self, server: ServerThread, ns: str, lease: str, work: Path, name: str) -> None:
        host, _, port = server.url.removeprefix("http://").rpartition(":")
        self.proxy = FaultProxy(host, int(port)).start()
        kubeconfig = str(work / f"{name}.kubeconfig")
        write_kubeconfig(kubeconfig, build_kubeconfig(self.proxy.url, server.token, None))
        self.log_path = work / f"{name}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "pykcm", "controller-manager", "--kubeconfig", kubeconfig,
             "--controllers=replicaset-controller", "--bind-address=127.0.0.1",
             "--secure-port=0", f"--leader-elect-resource-namespace={ns}",
             f"--leader-elect-resource-name={lease}", *LEASE],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGCONT)
            self.p.kill()
            self.p.wait(30)
        self.log.close()
        self.proxy.stop()


@pytest.fixture
def server() -> Iterator[ServerThread]:
    st = ServerThread(tls=False).start()
    yield st
    st.stop()


def test_paused_leader_makes_no_write_after_it_resumes(server: ServerThread,
                                                       tmp_path: Path) -> None:
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {server.token}"

    def call(method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)
             ) -> Any:
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        r = api.request(method, server.url + path, json=body, headers=headers, timeout=30)
        assert r.status_code in ok, r.text
        return r.json()

    ns = "paused-" + uuid.uuid4().hex[:8]
    call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}})
    lease_name = "kcm-" + uuid.uuid4().hex[:8]
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lease_name}"

    def holder() -> str:
        r = api.get(server.url + lease_path, timeout=30)
        return str(r.json()["spec"].get("holderIdentity") or "") if r.status_code == 200 else ""

    managers: list[Manager] = []
    try:
        a = Manager(server, ns, lease_name, tmp_path, "a")
        managers.append(a)
        a_id = poll(holder, 60, "a to lead")
        b = Manager(server, ns, lease_name, tmp_path, "b")
        managers.append(b)
        poll(lambda: any(r.path.startswith(lease_path) for r in b.proxy.requests), 60,
             "b to stand by")

        labels = {"app": "paused"}
        call("POST", f"/apis/apps/v1/namespaces/{ns}/replicasets", {
            "metadata": {"name": "rs"},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})

        def pods() -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = call("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
            return [p for p in items if not p["metadata"].get("deletionTimestamp")]

        poll(lambda: len(pods()) == 2, 60, f"a's 2 pods\n{a.output()}")
        assert len([w for w in a.proxy.writes() if w.path.endswith("/pods")]) == 2
        assert not b.proxy.writes()

        os.kill(a.p.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        call("PATCH", f"/apis/apps/v1/namespaces/{ns}/replicasets/rs/scale",
             {"spec": {"replicas": 4}})
        b_id = poll(lambda: (h := holder()) != a_id and h, 60, f"b to take over\n{b.output()}")
        poll(lambda: len(pods()) == 4, 60, f"b's 2 more pods\n{b.output()}")
        assert len([w for w in b.proxy.writes() if w.path.endswith("/pods")]) == 2

        os.kill(a.p.pid, signal.SIGCONT)
        resumed = time.monotonic()
        assert a.p.wait(60) != 0, a.output()  # it lost the lease: exit 1, as upstream
        # the old leader's writes: none from its controllers once it resumed; its
        # leader-election client only records client-go's "stopped leading" Event
        after = a.proxy.writes(since=resumed)
        assert all(w.method == "POST" and w.path == f"/api/v1/namespaces/{ns}/events"
                   and w.user_agent.endswith("/leader-election") for w in after), after
        assert [w for w in a.proxy.writes() if stopped <= w.time < resumed] == []
        events = call("GET", f"/api/v1/namespaces/{ns}/events")["items"]
        a_events = [e["message"] for e in events
                    if e["involvedObject"].get("kind") == "Lease" and a_id in e["message"]]
        assert len(after) <= a_events.count(f"{a_id} stopped leading"), (after, a_events)
        assert holder() == b_id
        # the new leader settles on the ReplicaSet's size; nobody made a fifth pod
        status = poll(lambda: (rs := call("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets/rs"))
                      ["status"].get("replicas") == 4 and rs, 60, "the status")
        assert status["spec"]["replicas"] == 4
        assert len(pods()) == 4
        creates = [w for m in managers for w in m.proxy.writes() if w.method == "POST"
                   and w.path.endswith("/pods")]
        assert len(creates) == 4
    finally:
        for m in managers:
            m.stop()
