"""pykcm.sim against the embedded API server: nodes, leases, binding, pod lifecycles.

Each test gets a private API server (the simulator's scheduler binds every
pending pod of a server, and its nodes are cluster-scoped: sharing the
session server would disturb other tests).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from pykcm.api.pod_util import get_pod_condition, is_pod_ready
from pykcm.client import Client, NotFound, ServiceUnavailable, load_kube_config
from pykcm.sim import NodeConfig, Simulator
from pykcm.testing.server_thread import ServerThread
from tests.conftest import ensure_default_service_account

Env = Callable[..., Any]


@pytest.fixture
def sim_env(pykcm_apiserver_factory: Callable[..., ServerThread]) -> Env:
    """``async with sim_env(**simulator_kwargs) as (client, sim)`` on a fresh server."""

    @asynccontextmanager
    async def make(**kwargs: Any) -> AsyncIterator[tuple[Client, Simulator]]:
        st = pykcm_apiserver_factory()
        async with Client(load_kube_config(st.kubeconfig_path)) as client:
            # the pods go to `default`, whose account no controller creates here
            await ensure_default_service_account(client, "default")
            kwargs.setdefault("nodes", 2)
            # deleted pods are killed at once unless a test asks for its grace period
            kwargs.setdefault("max_grace_period", 0)
            sim = Simulator(client, **kwargs)
            await sim.start()
            try:
                yield client, sim
            finally:
                await sim.stop()

    return make


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any:
    """Poll ``check`` until it returns something truthy; that value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await check()
        if got:
            return got
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s (last: {got!r})")
        await asyncio.sleep(0.05)


def pod(name: str, restart_policy: str = "Always", annotations: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"restartPolicy": restart_policy,
                     "containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}


async def get_pod(client: Client, name: str) -> dict[str, Any]:
    return await client.get("pods", name, "default")


async def phase_is(client: Client, name: str, phase: str) -> dict[str, Any] | None:
    p = await get_pod(client, name)
    return p if (p.get("status") or {}).get("phase") == phase else None


async def test_nodes_register_ready_with_leases_renewed(sim_env: Env) -> None:
    async with sim_env(nodes=3, node_prefix="reg", lease_renew_interval=0.2) as (client, sim):
        nodes = (await client.list("nodes"))["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["reg-0", "reg-1", "reg-2"]
        for n in nodes:
            ready = {c["type"]: c for c in n["status"]["conditions"]}["Ready"]
            assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
            assert n["status"]["allocatable"]["pods"] == "110"
            assert n["metadata"]["labels"]["kubernetes.io/hostname"] == n["metadata"]["name"]
        lease = await client.get("leases", "reg-0", "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == "reg-0"
        assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
        first = lease["spec"]["renewTime"]

        async def renewed() -> bool:
            now = await client.get("leases", "reg-0", "kube-node-lease")
            return bool(now["spec"]["renewTime"] != first)

        await eventually(renewed)
        uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes}
        await sim.stop()
        # A restart reuses the registered nodes.
        again = Simulator(client, nodes=3, node_prefix="reg")
        await again.start()
        try:
            after = (await client.list("nodes"))["items"]
            assert {n["metadata"]["name"]: n["metadata"]["uid"] for n in after} == uids
        finally:
            await again.stop()


async def test_a_pod_is_bound_runs_and_becomes_ready(sim_env: Env) -> None:
    async with sim_env(nodes=2, node_prefix="run") as (client, _):
        await client.create("pods", pod("web"), "default")
        p = await eventually(lambda: phase_is(client, "web", "Running"))
        assert p["spec"]["nodeName"] in ("run-0", "run-1")
        st = p["status"]
        assert st["podIP"].startswith("10.244.") and st["podIPs"] == [{"ip": st["podIP"]}]
        assert st["hostIP"].startswith("10.0.0.") and st["hostIPs"] == [{"ip": st["hostIP"]}]
        assert st["startTime"]
        assert get_pod_condition(p, "PodScheduled")["status"] == "True"  # type: ignore[index]
        cs = st["containerStatuses"][0]
        assert cs["containerID"].startswith("containerd://")
        assert cs["state"]["running"]["startedAt"]

        async def ready() -> dict[str, Any] | None:
            q = await get_pod(client, "web")
            return q if is_pod_ready(q) else None

        q = await eventually(ready)
        for t in ("Initialized", "ContainersReady", "PodReadyToStartContainers"):
            assert get_pod_condition(q, t)["status"] == "True"  # type: ignore[index]
        assert q["status"]["containerStatuses"][0]["ready"] is True

        async def scheduled_event() -> bool:
            events = (await client.list("events", "default"))["items"]
            return any(e["reason"] == "Scheduled" and e["involvedObject"]["name"] == "web"
                       for e in events)

        await eventually(scheduled_event)


async def test_pod_ips_are_unique_and_pods_spread(sim_env: Env) -> None:
    async with sim_env(nodes=3, node_prefix="ip", ready_after=0) as (client, _):
        for i in range(12):
            await client.create("pods", pod(f"p{i}"), "default")

        async def all_running() -> list[dict[str, Any]] | None:
            items = (await client.list("pods", "default"))["items"]
            ok = [p for p in items if (p.get("status") or {}).get("phase") == "Running"]
            return items if len(ok) == 12 else None

        items = await all_running() or await eventually(all_running)
        ips = [p["status"]["podIP"] for p in items]
        assert len(set(ips)) == 12
        per_node: dict[str, int] = {}
        for p in items:
            per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
        assert sorted(per_node.values()) == [4, 4, 4]


async def test_never_pod_succeeds_and_exit_code_fails(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="job", run_seconds=0.3) as (client, _):
        await client.create("pods", pod("ok", "Never"), "default")
        await client.create("pods", pod("bad", "Never", {"sim.pykcm.io/exit-code": "1"}),
                            "default")
        ok = await eventually(lambda: phase_is(client, "ok", "Succeeded"))
        term = ok["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (term["exitCode"], term["reason"]) == (0, "Completed")
        assert get_pod_condition(ok, "Ready")["reason"] == "PodCompleted"  # type: ignore[index]
        bad = await eventually(lambda: phase_is(client, "bad", "Failed"))
        term = bad["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (term["exitCode"], term["reason"]) == (1, "Error")


async def test_on_failure_pod_restarts(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="rs") as (client, _):
        await client.create("pods", pod("crash", "OnFailure", {
            "sim.pykcm.io/exit-code": "3", "sim.pykcm.io/run-seconds": "0.3"}), "default")

        async def restarted() -> dict[str, Any] | None:
            p = await get_pod(client, "crash")
            cs = (p.get("status") or {}).get("containerStatuses") or [{}]
            return p if cs[0].get("restartCount", 0) >= 2 else None

        p = await eventually(restarted)
        assert p["status"]["phase"] == "Running"
        last = p["status"]["containerStatuses"][0]["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (3, "Error")


async def test_never_ready_and_ready_after(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="rd", ready_after=0) as (client, _):
        await client.create("pods", pod("never", annotations={
            "sim.pykcm.io/never-ready": "true"}), "default")
        await client.create("pods", pod("late", annotations={
            "sim.pykcm.io/ready-after-seconds": "1.5"}), "default")
        await client.create("pods", pod("now"), "default")

        async def now_ready() -> bool:
            return is_pod_ready(await get_pod(client, "now"))

        await eventually(now_ready)
        # "late" and "never" are Running but not ready yet (late: for 1.5 s).
        late = await eventually(lambda: phase_is(client, "late", "Running"))
        assert get_pod_condition(late, "Ready")["status"] == "False"  # type: ignore[index]

        async def late_ready() -> dict[str, Any] | None:
            p = await get_pod(client, "late")
            return p if is_pod_ready(p) else None

        late = await eventually(late_ready)
        started = late["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        became = get_pod_condition(late, "Ready")["lastTransitionTime"]  # type: ignore[index]
        assert became > started  # ready after its delay, not at start
        never = await get_pod(client, "never")
        assert never["status"]["phase"] == "Running"
        cond = get_pod_condition(never, "Ready")
        assert cond is not None and (cond["status"], cond["reason"]) == \
            ("False", "ContainersNotReady")
        assert never["status"]["containerStatuses"][0]["started"] is True


async def test_a_failed_status_write_is_retried_not_lost(sim_env: Env) -> None:
    """The write that makes a pod Ready fails once (a restarting API server): the
    kubelet's retry writes it (the cached pod still at the last write's
    resourceVersion is not the echo of the failed one)."""
    async with sim_env(nodes=1, node_prefix="rt", ready_after=0.5) as (client, _):
        real_patch = client.patch
        failed: list[str] = []

        async def patch(resource: str, name: str, body: Any, *args: Any, **kw: Any) -> Any:
            conds = (body.get("status") or {}).get("conditions") or ()
            if (kw.get("subresource") == "status" and not failed and any(
                    c.get("type") == "Ready" and c.get("status") == "True" for c in conds)):
                failed.append(name)
                raise ServiceUnavailable("the API server is restarting")
            return await real_patch(resource, name, body, *args, **kw)

        client.patch = patch  # type: ignore[method-assign]
        await client.create("pods", pod("flaky"), "default")

        async def ready() -> dict[str, Any] | None:
            p = await get_pod(client, "flaky")
            return p if is_pod_ready(p) else None

        await eventually(ready)
        assert failed == ["flaky"]


async def events_of(client: Client, name: str) -> list[tuple[str, str, str, str]]:
    return [(e["type"], e["reason"], e["message"], e["involvedObject"].get("fieldPath", ""))
            for e in (await client.list("events", "default"))["items"]
            if e["involvedObject"]["name"] == name]


async def test_a_deleted_pod_terminates_for_its_grace_period(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="term", ready_after=0,
                       max_grace_period=None) as (client, sim):
        # exits 1.5 s after SIGTERM; a finalizer keeps it visible once the kubelet is done
        slow = pod("slow", annotations={"sim.pykcm.io/termination-seconds": "1.5",
                                        "sim.pykcm.io/termination-exit-code": "143"},
                   terminationGracePeriodSeconds=20)
        slow["metadata"]["finalizers"] = ["example.com/hold"]
        await client.create("pods", slow, "default")
        await eventually(lambda: phase_is(client, "slow", "Running"))
        out = await client.delete("pods", "slow", "default")
        assert out["metadata"]["deletionGracePeriodSeconds"] == 20
        # Terminating: still Running (and ready) while its containers stop
        terminating = await get_pod(client, "slow")
        assert terminating["status"]["phase"] == "Running"
        assert terminating["metadata"]["deletionTimestamp"]
        failed = await eventually(lambda: phase_is(client, "slow", "Failed"))
        term = failed["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (term["exitCode"], term["reason"]) == (143, "Error")
        assert get_pod_condition(failed, "Ready")["status"] == "False"  # type: ignore[index]

        async def deleted_by_kubelet() -> bool:
            p = await get_pod(client, "slow")
            return bool(p["metadata"].get("deletionGracePeriodSeconds") == 0)

        await eventually(deleted_by_kubelet)  # the kubelet's DELETE, grace 0; finalizer holds

        async def killing() -> list[Any]:
            return [e for e in await events_of(client, "slow") if e[1] == "Killing"]

        assert await eventually(killing) == [
            ("Normal", "Killing", "Stopping container app", "spec.containers{app}")]
        await client.patch("pods", "slow", {"metadata": {"finalizers": None}}, "merge",
                           "default")

        async def gone() -> bool:
            try:
                await get_pod(client, "slow")
            except NotFound:
                return True
            return False

        await eventually(gone)
        assert sim.kubelet is not None and sim.kubelet.pods_on("term-0") == 0


async def test_a_crashing_container_backs_off(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="crash", ready_after=0) as (client, _):
        await client.create("pods", pod("loop", annotations={
            "sim.pykcm.io/run-seconds": "0.2", "sim.pykcm.io/exit-code": "1"}), "default")

        async def backing_off() -> dict[str, Any] | None:
            p = await get_pod(client, "loop")
            cs = ((p.get("status") or {}).get("containerStatuses") or [{}])[0]
            return cs if "waiting" in (cs.get("state") or {}) else None

        cs = await eventually(backing_off)
        uid = (await get_pod(client, "loop"))["metadata"]["uid"]
        # first exit: restarted at once; second: 10 s in CrashLoopBackOff
        assert cs["restartCount"] == 1 and cs["ready"] is False and cs["started"] is False
        assert cs["state"]["waiting"] == {
            "reason": "CrashLoopBackOff",
            "message": f"back-off 10s restarting failed container=app pod=loop_default({uid})"}
        assert cs["lastState"]["terminated"]["exitCode"] == 1

        async def backoff_event() -> list[Any]:
            return [e for e in await events_of(client, "loop") if e[1] == "BackOff"]

        assert await eventually(backoff_event) == [
            ("Warning", "BackOff",
             f"Back-off restarting failed container app in pod loop_default({uid})",
             "spec.containers{app}")]


async def test_deleting_a_pod_makes_it_disappear(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="del", ready_after=0) as (client, sim):
        await client.create("pods", pod("doomed"), "default")
        await eventually(lambda: phase_is(client, "doomed", "Running"))
        out = await client.delete("pods", "doomed", "default")
        # A bound pod is deleted gracefully: the server keeps it, marked, for the kubelet.
        assert out["metadata"].get("deletionTimestamp")

        async def gone() -> bool:
            try:
                await get_pod(client, "doomed")
            except NotFound:
                return True
            return False

        await eventually(gone)
        kubelet = sim.kubelet
        assert kubelet is not None

        async def counted() -> bool:
            # the server answers our GET's NotFound before the kubelet has read the answer
            # to its own DELETE
            return bool(kubelet.deletes == 1)

        await eventually(counted)
        assert sim.kubelet.pods_on("del-0") == 0


async def test_a_failed_final_delete_is_retried(sim_env: Env) -> None:
    """The kubelet's DELETE (grace 0) of a stopped pod fails once (a restarting API
    server): its retry deletes the pod rather than leaving it Terminating."""
    async with sim_env(nodes=1, node_prefix="rd", ready_after=0) as (client, _):
        real_delete = client.delete
        failed: list[str] = []

        async def delete(resource: str, name: str, *args: Any, **kw: Any) -> Any:
            if kw.get("grace_period_seconds") == 0 and not failed:
                failed.append(name)
                raise ServiceUnavailable("the API server is restarting")
            return await real_delete(resource, name, *args, **kw)

        await client.create("pods", pod("stuck"), "default")
        await eventually(lambda: phase_is(client, "stuck", "Running"))
        client.delete = delete  # type: ignore[method-assign]
        await client.delete("pods", "stuck", "default")

        async def gone() -> bool:
            try:
                await get_pod(client, "stuck")
            except NotFound:
                return True
            return False

        await eventually(gone)
        assert failed == ["stuck"]


async def test_no_room_is_unschedulable_until_room_frees(sim_env: Env) -> None:
    cfg = NodeConfig(pods=1)
    async with sim_env(nodes=2, node_prefix="full", node_config=cfg, ready_after=0) \
            as (client, _):
        await client.create("pods", pod("a"), "default")
        await client.create("pods", pod("b"), "default")
        await eventually(lambda: phase_is(client, "a", "Running"))
        await eventually(lambda: phase_is(client, "b", "Running"))
        await client.create("pods", pod("c"), "default")

        async def unschedulable() -> dict[str, Any] | None:
            p = await get_pod(client, "c")
            cond = get_pod_condition(p, "PodScheduled")
            return dict(cond) if cond and cond.get("reason") == "Unschedulable" else None

        cond = await eventually(unschedulable)
        assert cond["status"] == "False"
        assert cond["message"] == (
            "0/2 nodes are available: 2 Too many pods. preemption: 0/2 nodes are available: "
            "2 No preemption victims found for incoming pod.")

        async def failed_event() -> bool:
            events = (await client.list("events", "default"))["items"]
            return any(e["reason"] == "FailedScheduling" and e["type"] == "Warning"
                       and e["involvedObject"]["name"] == "c" for e in events)

        await eventually(failed_event)
        await client.delete("pods", "a", "default")
        c = await eventually(lambda: phase_is(client, "c", "Running"))
        assert get_pod_condition(c, "PodScheduled")["status"] == "True"  # type: ignore[index]


async def test_node_selector_and_taints(sim_env: Env) -> None:
    cfg = NodeConfig(taints=[{"key": "dedicated", "value": "sim", "effect": "NoSchedule"}])
    async with sim_env(nodes=1, node_prefix="taint", node_config=cfg, ready_after=0) \
            as (client, _):
        await client.create("pods", pod("plain"), "default")
        await client.create("pods", pod("tolerant", tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "sim",
             "effect": "NoSchedule"}], nodeSelector={"kubernetes.io/hostname": "taint-0"}),
            "default")
        await client.create("pods", pod("elsewhere", tolerations=[
            {"operator": "Exists"}], nodeSelector={"kubernetes.io/hostname": "nope"}),
            "default")
        await eventually(lambda: phase_is(client, "tolerant", "Running"))

        async def reason(name: str, want: str) -> bool:
            cond = get_pod_condition(await get_pod(client, name), "PodScheduled")
            return bool(cond and want in str(cond.get("message")))

        await eventually(lambda: reason("plain", "untolerated taint {dedicated: sim}"))
        await eventually(lambda: reason("elsewhere", "didn't match Pod's node affinity"))


async def test_pods_bound_elsewhere_or_for_other_schedulers_are_left_alone(
        sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="own", ready_after=0) as (client, _):
        await client.create("pods", pod("other", schedulerName="my-scheduler"), "default")
        await client.create("pods", pod("direct", nodeName="own-0"), "default")
        await client.create("pods", pod("foreign", nodeName="real-node"), "default")
        direct = await eventually(lambda: phase_is(client, "direct", "Running"))
        # Created with a nodeName: the kubelet adds PodScheduled itself.
        assert get_pod_condition(direct, "PodScheduled")["status"] == "True"  # type: ignore[index]
        await asyncio.sleep(0.5)
        other = await get_pod(client, "other")
        assert not other["spec"].get("nodeName") and other["status"]["phase"] == "Pending"
        foreign = await get_pod(client, "foreign")
        assert foreign["status"]["phase"] == "Pending"


async def test_a_restarted_simulator_resumes_without_rewriting(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="again", ready_after=0) as (client, sim):
        await client.create("pods", pod("steady"), "default")
        await client.create("pods", pod("job", "Never", {"sim.pykcm.io/run-seconds": "2"}),
                            "default")
        steady = await eventually(lambda: phase_is(client, "steady", "Running"))
        await eventually(lambda: phase_is(client, "job", "Running"))
        await sim.stop()
        again = Simulator(client, nodes=1, node_prefix="again", ready_after=0)
        await again.start()
        try:
            # The job finishes on time under the new kubelet; the steady pod is left as is.
            job = await eventually(lambda: phase_is(client, "job", "Succeeded"))
            assert job["status"]["containerStatuses"][0]["restartCount"] == 0
            await client.create("pods", pod("new"), "default")
            new = await eventually(lambda: phase_is(client, "new", "Running"))
            assert new["status"]["podIP"] != steady["status"]["podIP"]
            now = await get_pod(client, "steady")
            assert now["metadata"]["resourceVersion"] == steady["metadata"]["resourceVersion"]
            assert again.kubelet is not None and again.kubelet.status_writes == 2  # job, new
        finally:
            await again.stop()


async def test_start_events_a_liveness_kill_and_a_failing_readiness_probe(
        sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="probe", ready_after=0) as (client, _):
        live = pod("live", annotations={"sim.pykcm.io/liveness-fails-after-seconds": "0.3"})
        live["spec"]["containers"][0]["livenessProbe"] = {
            "httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1,
            "failureThreshold": 1}
        await client.create("pods", live, "default")
        unready = pod("unready", annotations={"sim.pykcm.io/readiness-fails": "true"})
        unready["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 80}}
        await client.create("pods", unready, "default")

        async def killed() -> dict[str, Any] | None:
            cs = ((await get_pod(client, "live")).get("status") or {}).get(
                "containerStatuses") or [{}]
            return cs[0] if cs[0].get("restartCount", 0) >= 1 else None

        cs = await eventually(killed)
        last = cs["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (137, "Error")

        async def live_events() -> list[Any] | None:
            evs = await events_of(client, "live")
            return evs if {"Unhealthy", "Killing", "Started"} <= {e[1] for e in evs} else None

        evs = await eventually(live_events)
        assert ("Warning", "Unhealthy", ("Liveness probe failed: HTTP probe failed with "
                "statuscode: 500"), "spec.containers{app}") in evs
        assert ("Normal", "Killing", "Container app failed liveness probe, will be restarted",
                "spec.containers{app}") in evs
        assert ("Normal", "Pulled", 'Container image "nginx:1.27" already present on machine',
                "spec.containers{app}") in evs
        assert ("Normal", "Created", "Created container: app", "spec.containers{app}") in evs

        async def unready_event() -> list[Any] | None:
            evs = [e for e in await events_of(client, "unready") if e[1] == "Unhealthy"]
            return evs or None

        assert (await eventually(unready_event))[0][:3] == (
            "Warning", "Unhealthy", ("Readiness probe failed: dial tcp "
            f"{(await get_pod(client, 'unready'))['status']['podIP']}:80: connect: "
            "connection refused"))
        p = await get_pod(client, "unready")
        assert p["status"]["phase"] == "Running" and not is_pod_ready(p)


async def test_a_failing_image_pull_backs_off_until_the_annotation_goes(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="pull", ready_after=0) as (client, _):
        await client.create("pods", pod("nosuch", annotations={
            "sim.pykcm.io/image-pull-error": "not-found"}), "default")

        async def waiting(reason: str) -> dict[str, Any] | None:
            p = await get_pod(client, "nosuch")
            cs = ((p.get("status") or {}).get("containerStatuses") or [{}])[0]
            w = (cs.get("state") or {}).get("waiting") or {}
            return p if w.get("reason") == reason else None

        p = await eventually(lambda: waiting("ImagePullBackOff"))
        assert p["status"]["phase"] == "Pending" and p["status"]["podIP"]
        msg = p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        assert msg == ('Back-off pulling image "nginx:1.27": ErrImagePull: rpc error: code = '
                       'NotFound desc = failed to pull and unpack image '
                       '"docker.io/library/nginx:1.27": failed to resolve reference '
                       '"docker.io/library/nginx:1.27": docker.io/library/nginx:1.27: not found')
        want = [("Warning", "Failed", "Error: ErrImagePull", "spec.containers{app}"),
                ("Normal", "BackOff", 'Back-off pulling image "nginx:1.27"',
                 "spec.containers{app}"),
                ("Warning", "Failed", "Error: ImagePullBackOff", "spec.containers{app}")]

        async def pull_events() -> bool:
            evs = await events_of(client, "nosuch")
            return all(w in evs for w in want)

        await eventually(pull_events)
        await client.patch("pods", "nosuch", {"metadata": {"annotations": {
            "sim.pykcm.io/image-pull-error": None}}}, "merge", "default")
        # the next attempt (after the 10 s image back-off) succeeds
        await eventually(lambda: phase_is(client, "nosuch", "Running"), timeout=30)


async def test_init_containers_run_for_init_seconds(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="init", ready_after=0) as (client, _):
        await client.create("pods", pod("boot", annotations={"sim.pykcm.io/init-seconds": "1"},
                                        initContainers=[{"name": "migrate",
                                                         "image": "busybox"}]), "default")

        async def initializing() -> dict[str, Any] | None:
            p = await get_pod(client, "boot")
            inits = (p.get("status") or {}).get("initContainerStatuses") or [{}]
            return p if "running" in (inits[0].get("state") or {}) else None

        p = await eventually(initializing)
        assert p["status"]["phase"] == "Pending"
        assert get_pod_condition(p, "Initialized")["reason"] == (  # type: ignore[index]
            "ContainersNotInitialized")
        running = await eventually(lambda: phase_is(client, "boot", "Running"))
        assert get_pod_condition(running, "Initialized")["status"] == "True"  # type: ignore[index]
        term = running["status"]["initContainerStatuses"][0]["state"]["terminated"]
        assert term["reason"] == "Completed"
