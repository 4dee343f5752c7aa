"""Durability: acknowledged writes survive SIGKILL; revisions continue upward."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import yaml


class Proc:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.p = subprocess.Popen(
            [sys.executable, "-m", "pykcm", "apiserver", "--data-dir", data_dir, "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        if "serving on" not in line:
            rest = self.p.stdout.read() if self.p.poll() is not None else ""
            raise RuntimeError(f"server did not start: {line}{rest}")
        self.url = line.strip().rsplit(" ", 1)[-1]
        with open(os.path.join(data_dir, "kubeconfig")) as f:
            cfg = yaml.safe_load(f)
        self.s = requests.Session()
        self.s.trust_env = False  # REQUESTS_CA_BUNDLE would override verify=
        self.s.headers["Authorization"] = "Bearer " + cfg["users"][0]["user"]["token"]
        self.s.verify = os.path.join(data_dir, "pki", "ca.crt")

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.s.get(self.url + path, timeout=30, **kw)

    def post(self, path: str, body: Any) -> requests.Response:
        return self.s.post(self.url + path, json=body, timeout=30)

    def kill(self) -> None:
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()


@pytest.fixture
def data_dir(tmp_path: Any) -> Iterator[str]:
    yield str(tmp_path / "data")


def test_acknowledged_writes_survive_sigkill(data_dir: str) -> None:
    srv = Proc(data_dir)
    acked: list[tuple[str, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        i = 0
        sess = requests.Session()
        sess.trust_env = False
        sess.headers.update(srv.s.headers)
        sess.verify = srv.s.verify
        while not stop.is_set():
            name = f"w{w}-{i}"
            try:
                r = sess.post(srv.url + "/api/v1/namespaces/default/configmaps",
                              json={"metadata": {"name": name}, "data": {"i": str(i)}},
                              timeout=5)
            except requests.RequestException:
                return
            if r.status_code == 201:
                with lock:
                    acked.append((name, int(r.json()["metadata"]["resourceVersion"])))
            i += 1

    try:
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        # a revision a client saw before the crash, to resume a watch from afterwards
        mid_rv = max(rv for _, rv in acked)
        srv.kill()
        stop.set()
        for t in threads:
            t.join(10)
        assert len(acked) > 50
        last_rv = max(rv for _, rv in acked)

        srv2 = Proc(data_dir)
        try:
            lst = srv2.get("/api/v1/namespaces/default/configmaps").json()
            have = {i["metadata"]["name"]: int(i["metadata"]["resourceVersion"])
                    for i in lst["items"]}
            missing = [n for n, _ in acked if n not in have]
            assert not missing, f"{len(missing)} acknowledged writes lost"
            assert all(have[n] == rv for n, rv in acked)
            assert int(lst["metadata"]["resourceVersion"]) >= last_rv
            r = srv2.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after"}})
            assert r.status_code == 201
            assert int(r.json()["metadata"]["resourceVersion"]) > last_rv
            # a watch from the pre-crash revision resumes with every later event, or gets 410
            with srv2.s.get(srv2.url + "/api/v1/namespaces/default/configmaps",
                            params={"watch": "1", "resourceVersion": str(mid_rv)},
                            stream=True, timeout=30) as resp:
                seen: list[int] = []
                import json

                for line in resp.iter_lines():
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        assert ev["object"]["code"] == 410
                        break
                    seen.append(int(ev["object"]["metadata"]["resourceVersion"]))
                    if ev["object"]["metadata"]["name"] == "after":
                        break
                if seen:
                    expect = sorted(rv for _, rv in acked if rv > mid_rv)
                    got = [rv for rv in seen if rv <= last_rv]
                    # every acknowledged write after mid_rv, in order, no gaps or duplicates
                    assert got == sorted(set(got))
                    assert set(expect) <= set(got)
        finally:
            srv2.stop()
    finally:
        stop.set()
        srv.stop()


def test_clean_shutdown_and_restart_keeps_everything(data_dir: str) -> None:
    srv = Proc(data_dir)
    try:
        for i in range(20):
            assert srv.post("/api/v1/namespaces/default/configmaps",
                            {"metadata": {"name": f"c{i}"}}).status_code == 201
        before = srv.get("/api/v1/namespaces/default/configmaps").json()
        rv = int(before["metadata"]["resourceVersion"])
    finally:
        srv.stop()
    assert srv.p.returncode == 0
    srv2 = Proc(data_dir)
    try:
        lst = srv2.get("/api/v1/namespaces/default/configmaps").json()
        assert lst["items"] == before["items"]
        # the revision goes on from where it was (the server's own writes to the kubernetes
        # Service's endpoints, emptied at the stop and filled at the start, come after)
        assert int(lst["metadata"]["resourceVersion"]) >= rv
        # the kubeconfig and certificates stay valid across restarts
        assert srv2.get("/api/v1/namespaces").status_code == 200
    finally:
        srv2.stop()


def test_second_server_on_same_data_dir_fails_clearly(data_dir: str) -> None:
    srv = Proc(data_dir)
    try:
        p = subprocess.run([sys.executable, "-m", "pykcm", "apiserver", "--data-dir", data_dir,
                            "--port", "0"], capture_output=True, text=True, timeout=30,
                           check=False)
        assert p.returncode != 0
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and "another pykcm API server" in err[0]
    finally:
        srv.stop()
