"""The controller manager against either API server, with test controllers.

In process: it builds the enabled controllers, starts the shared informers, runs
them (a ConfigMap labeler processes what it is given), serves /metrics (parsed
here), /healthz (unhealthy once a controller's run() has died), /configz, over
HTTP and HTTPS; a lost lease ends it with 1, an init error with 1, a stop with 0.

As processes: two ``pykcm controller-manager`` with leader election; the leader is
killed with SIGKILL; the other takes over and reconciles what changed meanwhile;
SIGTERM then ends it with 0 and releases the lease.

The test controllers are registered through the ``--extra-controllers`` testing
hook (:func:`register_test_controllers`, importable by the subprocesses).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import aiohttp
import orjson
import pytest
import requests
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from pykcm.client import Client, Conflict, is_not_found, load_kube_config
from pykcm.controller import Controller
from pykcm.manager import (
    ControllerContext,
    ControllerDescriptor,
    ControllerManager,
    ControllerManagerOptions,
    ControllerRegistry,
)
from tests.conftest import Api, Backend, create_namespace
from tests.polling import eventually

LABEL_ME = "pykcm.test/label-me"
LABELED_BY = "pykcm.test/labeled-by"
LABELER = "configmap-labeler-controller"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- the test controllers ------------------------------------------------------------------


async def init_labeler(ctx: ControllerContext, name: str) -> Controller:
    """Labels ConfigMaps marked ``label-me`` with the pid of the process that did it."""
    client = ctx.client_builder.client(name)
    recorder = ctx.event_recorder(name)
    configmaps = ctx.informer_factory.core_v1.configmaps

    async def reconcile(key: str) -> None:
        ns, _, cm_name = key.partition("/")
        try:
            cm = configmaps.lister.by_namespace(ns).get(cm_name)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        labels = (cm.get("metadata") or {}).get("labels") or {}
        if labels.get(LABEL_ME) != "true" or LABELED_BY in labels:
            return
        await client.patch("configmaps", cm_name,
                           {"metadata": {"labels": {LABELED_BY: str(os.getpid())}}},
                           "merge", ns)
        recorder.event(cm, "Normal", "Labeled", f"labeled by {os.getpid()}")

    ctl = Controller(name, reconcile)
    ctl.watch(configmaps)
    return ctl


def register_test_controllers(registry: ControllerRegistry) -> None:
    """The ``--extra-controllers`` hook of the subprocess tests."""
    registry.register(ControllerDescriptor(LABELER, init_labeler, aliases=("configmap-labeler",),
                                           concurrency=2))


class Doomed:
    """A controller whose run() raises once ``die`` is set."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.die = asyncio.Event()
        self.stopped = asyncio.Event()

    async def run(self, workers: int) -> None:
        stop = asyncio.create_task(self.stopped.wait())
        die = asyncio.create_task(self.die.wait())
        await asyncio.wait([stop, die], return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        die.cancel()
        if self.die.is_set():
            raise RuntimeError("doomed")

    def health_check(self) -> str | None:
        return None

    def shutdown(self) -> None:
        self.stopped.set()


# -- helpers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port




def metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for fam in text_string_to_metric_families(text)
            for s in fam.samples]


def sample(samples: list[tuple[str, dict[str, str], float]], metric: str, /,
           **labels: str) -> float | None:
    for n, lbl, v in samples:
        if n == metric and all(lbl.get(k) == val for k, val in labels.items()):
            return v
    return None


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "cm")


def options(st: Backend, ns: str, **kw: Any) -> ControllerManagerOptions:
    base: dict[str, Any] = {
        "kubeconfig": st.kubeconfig_path, "bind_address": "127.0.0.1", "secure_port": 0,
        "port": free_port(), "leader_elect_resource_namespace": ns,
        "leader_elect_resource_name": "kcm-" + uuid.uuid4().hex[:8],
        "leader_elect_lease_duration": 2.0, "leader_elect_renew_deadline": 1.0,
        "leader_elect_retry_period": 0.2, "controller_shutdown_timeout": 5.0}
    base.update(kw)
    return ControllerManagerOptions(**base)


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {LABEL_ME: "true"}}, "data": {"k": "v"}}


async def labeled_by(client: Client, ns: str, name: str) -> str | None:
    cm = await client.get("configmaps", name, ns)
    value: str | None = ((cm.get("metadata") or {}).get("labels") or {}).get(LABELED_BY)
    return value


# -- in process ----------------------------------------------------------------------------


async def test_manager_builds_runs_serves_and_reports_a_dead_controller(
        apiserver: Backend, client: Client, ns: str) -> None:
    doomed = Doomed("doomed-controller")

    async def init_doomed(ctx: ControllerContext, name: str) -> Doomed:
        assert not ctx.informers_started.is_set()  # built before the informers start
        return doomed

    async def init_skipped(ctx: ControllerContext, name: str) -> None:
        return None

    registry = ControllerRegistry()
    register_test_controllers(registry)
    registry.register(ControllerDescriptor("doomed-controller", init_doomed,
                                           disabled_by_default=True))
    registry.register(ControllerDescriptor("skipped-controller", init_skipped))
    registry.register(ControllerDescriptor("off-controller", init_skipped))
    secure = free_port()
    opts = options(apiserver, ns, secure_port=secure,
                   controllers=["*", "doomed-controller", "-off-controller"])
    manager = ControllerManager(opts, registry)
    run = asyncio.create_task(manager.run())
    http = f"http://127.0.0.1:{opts.port}"
    try:
        await asyncio.wait_for(manager.leading.wait(), 30)
        assert manager.urls == [f"https://127.0.0.1:{secure}", http]
        assert sorted(manager.controllers) == [LABELER, "doomed-controller"]
        assert manager.controllers[LABELER].workers == 2
        ctx = manager.context
        assert ctx is not None and ctx.informers_started.is_set()
        assert ctx.options is opts
        assert opts.min_resync_period <= ctx.resync_period() <= 2 * opts.min_resync_period
        ua = ctx.client_builder.client(LABELER).config.user_agent or ""
        # the product token names the field manager of the controllers' writes
        assert ua.startswith("kube-controller-manager/") and ua.endswith(
            f" controller-manager/{LABELER}")
        assert ctx.client_builder.client(LABELER).rate_limiter.qps == 20.0
        assert ctx.client_builder.client(LABELER).rate_limiter.burst == 30
        assert ctx.client_builder.client(LABELER) is ctx.client_builder.client(LABELER)

        # it syncs and processes
        await client.create("configmaps", configmap("one"), ns)
        await eventually(lambda: labeled_by(client, ns, "one"), what="the labeler")
        assert await labeled_by(client, ns, "one") == str(os.getpid())
        # the server tracks every write; the manager's cache keeps none of it (memory)
        stored = await client.get("configmaps", "one", ns)
        assert stored["metadata"]["managedFields"]
        cached = ctx.informer_factory.core_v1.configmaps.lister.by_namespace(ns).get("one")
        assert cached is not None and "managedFields" not in cached["metadata"]

        async def labeled_event() -> bool:
            evs = await client.list("events", ns)
            return any(e.get("reason") == "Labeled" and
                       (e.get("source") or {}).get("component") == LABELER
                       for e in evs["items"])
        await eventually(labeled_event, what="the Labeled event")

        async with aiohttp.ClientSession() as http_session:
            async def get(path: str) -> tuple[int, str]:
                async with http_session.get(http + path) as r:
                    return r.status, await r.text()

            # /metrics, parsed
            status, text = await get("/metrics")
            assert status == 200
            samples = metric_samples(text)
            adds = sample(samples, "workqueue_adds_total", name=LABELER)
            assert adds is not None and adds >= 1
            patches = sample(samples, "rest_client_requests_total", code="200",
                             method="PATCH", host=apiserver.url.split("//")[1])
            assert patches is not None and patches >= 1
            assert sample(samples, "rest_client_request_duration_seconds_count",
                          verb="GET") is not None
            assert sample(samples, "leader_election_master_status",
                          name=opts.leader_elect_resource_name) == 1.0
            assert sample(samples, "informer_queued_items", resource="configmaps") is not None

            # /healthz: one check per controller plus leaderElection
            assert await get("/healthz") == (200, "ok")
            status, text = await get("/healthz?verbose")
            assert status == 200
            assert text == ("[+]leaderElection ok\n[+]configmap-labeler-controller ok\n"
                            "[+]doomed-controller ok\nhealthz check passed\n")
            assert await get(f"/healthz/{LABELER}") == (200, "ok")
            assert (await get("/healthz/nosuch"))[0] == 404
            assert (await get("/livez"))[0] == 200 and (await get("/readyz"))[0] == 200

            # /configz
            status, text = await get("/configz")
            conf = orjson.loads(text)["kubecontrollermanager.config.k8s.io"]
            assert conf["Generic"]["Controllers"] == ["*", "doomed-controller",
                                                      "-off-controller"]
            assert conf["Generic"]["LeaderElection"]["LeaseDuration"] == "2s"

            # HTTPS with a self-signed certificate for localhost and 127.0.0.1
            insecure = ssl.create_default_context()
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE
            async with http_session.get(f"https://127.0.0.1:{secure}/healthz",
                                        ssl=insecure) as r:
                assert r.status == 200 and await r.text() == "ok"
            pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", secure))
            sans = x509.load_pem_x509_certificate(pem.encode()).extensions.get_extension_for_class(
                x509.SubjectAlternativeName).value
            assert "localhost" in sans.get_values_for_type(x509.DNSName)
            assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]

            # a controller whose run() dies turns /healthz unhealthy, not restarted
            doomed.die.set()

            async def unhealthy() -> str | None:
                status, text = await get("/healthz")
                return text if status == 500 else None
            text = await eventually(unhealthy, what="/healthz to fail")
            assert text == ("[+]leaderElection ok\n[+]configmap-labeler-controller ok\n"
                            "[-]doomed-controller failed: reason withheld\n"
                            "healthz check failed\n")
            assert await get("/healthz/doomed-controller") == (
                500, "internal server error: controller run failed: RuntimeError('doomed')\n")
            assert await get("/healthz?exclude=doomed-controller") == (200, "ok")

        # the others keep working
        await client.create("configmaps", configmap("two"), ns)
        await eventually(lambda: labeled_by(client, ns, "two"), what="the labeler again")
    finally:
        manager.request_stop()
        code = await asyncio.wait_for(run, 30)
    assert code == 0
    lease = await client.get("leases.coordination.k8s.io", opts.leader_elect_resource_name, ns)
    assert lease["spec"]["holderIdentity"] == ""  # released on a clean stop
    assert manager.controllers == {}


async def test_lost_lease_exits_non_zero(apiserver: Backend, client: Client,
                                         ns: str) -> None:
    registry = ControllerRegistry()
    register_test_controllers(registry)
    opts = options(apiserver, ns)
    manager = ControllerManager(opts, registry)
    run = asyncio.create_task(manager.run())
    try:
        await asyncio.wait_for(manager.leading.wait(), 30)
        # another holder takes the lease over for a long time: renewals fail (a renewal
        # may land between our read and write: read again, as any writer would)
        for _ in range(20):
            lease = await client.get("leases.coordination.k8s.io",
                                     opts.leader_elect_resource_name, ns)
            lease["spec"]["holderIdentity"] = "usurper"
            lease["spec"]["leaseDurationSeconds"] = 3600
            try:
                await client.update("leases.coordination.k8s.io", lease, ns)
                break
            except Conflict:
                continue
        else:
            pytest.fail("the lease could not be taken over in 20 tries")
        code = await asyncio.wait_for(run, 30)
    finally:
        if not run.done():
            manager.request_stop()
            await run
    assert code == 1
    assert manager.controllers == {}


async def test_init_error_exits_non_zero(apiserver: Backend, ns: str) -> None:
    async def broken(ctx: ControllerContext, name: str) -> None:
        raise RuntimeError("cannot build")

    registry = ControllerRegistry()
    registry.register(ControllerDescriptor("broken-controller", broken))
    manager = ControllerManager(options(apiserver, ns, leader_elect=False), registry)
    assert await asyncio.wait_for(manager.run(), 30) == 1
    assert "error starting controller 'broken-controller': cannot build" in str(
        manager.fatal_error)


async def test_unknown_controller_is_rejected_at_start(apiserver: Backend,
                                                       ns: str) -> None:
    manager = ControllerManager(options(apiserver, ns, controllers=["nosuch"]),
                                ControllerRegistry())
    with pytest.raises(ValueError, match='^"nosuch" is not in the list of known controllers$'):
        await manager.run()



class Holder:
    """A controller whose reconcile of "ns/hold" waits for ``release``."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.outcome: str | None = None

    async def reconcile(self, key: str) -> None:
        if not key.endswith("/hold"):
            return
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.outcome = "cancelled"
            raise
        self.outcome = "finished"


async def run_holder(st: Backend, client: Client, ns: str, timeout: float,
                     release: bool) -> tuple[int, Holder]:
    holder = Holder()

    async def init(ctx: ControllerContext, name: str) -> Controller:
        ctl = Controller(name, holder.reconcile)
        ctl.watch(ctx.informer_factory.core_v1.configmaps)
        return ctl

    registry = ControllerRegistry()
    registry.register(ControllerDescriptor("holder-controller", init))
    manager = ControllerManager(options(st, ns, leader_elect=False,
                                        controller_shutdown_timeout=timeout), registry)
    run = asyncio.create_task(manager.run())
    try:
        await asyncio.wait_for(manager.leading.wait(), 30)
        await client.create("configmaps", {"metadata": {"name": "hold"}}, ns)
        await asyncio.wait_for(holder.started.wait(), 30)
        manager.request_stop()  # what SIGTERM does
        if release:
            await asyncio.sleep(0)  # the stop is under way; the item is still held
            assert not run.done()
            holder.release.set()
        code = await asyncio.wait_for(run, 60)
    finally:
        if not run.done():
            run.cancel()
    return code, holder


async def test_stop_lets_workers_finish_what_they_hold(apiserver: Backend,
                                                       client: Client, ns: str) -> None:
    code, holder = await run_holder(apiserver, client, ns, timeout=30.0, release=True)
    assert code == 0 and holder.outcome == "finished"


async def test_stop_cancels_work_left_after_the_shutdown_timeout(
        apiserver: Backend, client: Client, ns: str) -> None:
    code, holder = await run_holder(apiserver, client, ns, timeout=0.2, release=False)
    assert code == 0 and holder.outcome == "cancelled"

# -- as processes --------------------------------------------------------------------------


class Proc:
    """A ``pykcm controller-manager`` subprocess with its plain-HTTP port."""

    def __init__(self, st: Backend, ns: str, lease: str, log: str) -> None:
        self.port = free_port()
        self.log_path = log
        self.log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "pykcm", "controller-manager",
             "--kubeconfig", st.kubeconfig_path,
             "--extra-controllers", "tests.integration.test_manager:register_test_controllers",
             "--controllers=configmap-labeler", "--bind-address=127.0.0.1",
             "--secure-port=0", f"--port={self.port}",
             f"--leader-elect-resource-namespace={ns}", f"--leader-elect-resource-name={lease}",
             "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
             "--leader-elect-retry-period=0.5s", "-v", "2"],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT)

    def master_status(self, lease: str) -> float | None:
        try:
            r = requests.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        except requests.ConnectionError:
            return None
        return sample(metric_samples(r.text), "leader_election_master_status", name=lease)

    def output(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(30)
        self.log.close()


def poll(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def procs(tmp_path: Any) -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.stop()


def test_two_managers_kill_the_leader_the_other_takes_over(
        apiserver: Backend, apiserver_api: Api, procs: list[Proc], tmp_path: Any) -> None:
    ns = apiserver_api.ns()
    lease = "kcm-" + uuid.uuid4().hex[:8]
    a = Proc(apiserver, ns, lease, str(tmp_path / "a.log"))
    procs.append(a)
    poll(lambda: a.master_status(lease) == 1.0, 60, f"a to lead\n{a.output()}")
    b = Proc(apiserver, ns, lease, str(tmp_path / "b.log"))
    procs.append(b)
    poll(lambda: b.master_status(lease) == 0.0, 60, f"b to stand by\n{b.output()}")

    code, _ = apiserver_api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("before"))
    assert code == 201

    def labeled(name: str) -> str | None:
        code, cm = apiserver_api.get(f"/api/v1/namespaces/{ns}/configmaps/{name}")
        assert code == 200
        value: str | None = cm["metadata"].get("labels", {}).get(LABELED_BY)
        return value
    assert poll(lambda: labeled("before"), 30, "the leader to label") == str(a.p.pid)
    assert b.master_status(lease) == 0.0  # the standby does not take over while a renews
    code, held = apiserver_api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lease}")
    a_identity = held["spec"]["holderIdentity"]
    assert a_identity.startswith(socket.gethostname() + "_")

    a.p.send_signal(signal.SIGKILL)
    a.p.wait(30)
    # changed while nobody leads
    code, _ = apiserver_api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("meanwhile"))
    assert code == 201
    assert poll(lambda: labeled("meanwhile"), 60,
                f"b to take over and reconcile\n{b.output()}") == str(b.p.pid)
    assert b.master_status(lease) == 1.0
    code, taken = apiserver_api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lease}")
    assert taken["spec"]["holderIdentity"] not in ("", a_identity)
    assert taken["spec"]["leaseTransitions"] == held["spec"]["leaseTransitions"] + 1

    b.p.send_signal(signal.SIGTERM)
    assert b.p.wait(30) == 0, b.output()
    code, released = apiserver_api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lease}")
    assert released["spec"]["holderIdentity"] == ""
    out = b.output()
    assert f'controller="{LABELER}"' in out  # structured logs name the controller


def test_bad_flags_are_one_line() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pykcm", "controller-manager", *args],
                              capture_output=True, text=True, timeout=60, cwd=REPO, check=False)

    p = run("--leader-elect-lease-duration=soon")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [(
        'pykcm controller-manager: error: argument --leader-elect-lease-duration: invalid '
        'argument "soon" for "--leader-elect-lease-duration" flag: time: invalid duration '
        '"soon"')]
    p = run("--controllers=*,nosuch", "--secure-port=0")
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [
        'pykcm: error: "nosuch" is not in the list of known controllers']
