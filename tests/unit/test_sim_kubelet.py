"""pykcm.sim pure kubelet and node logic: scripts, images, IPs, status builders, Node objects."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.timestamps import format_time
from pykcm.sim.kubelet import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_NEVER_READY,
    ANNOTATION_READY_AFTER,
    ANNOTATION_RUN_SECONDS,
    PodIPAllocator,
    PodRecord,
    PodScript,
    advance,
    build_pod_status,
    image_id,
    normalize_image,
    parse_script,
)
from pykcm.sim.nodes import (
    KUBELET_VERSION,
    NodeConfig,
    build_lease,
    build_node,
    node_internal_ip,
    node_names,
    pod_cidr,
)

T0 = 1_800_000_000.0


def pod(restart_policy: str | None = None, annotations: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"},
                                        {"name": "side", "image": "busybox"}],
                         "nodeName": "n0", **spec}
    if restart_policy:
        s["restartPolicy"] = restart_policy
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1",
                         "annotations": annotations or {}},
            "spec": s,
            "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": format_time(T0)}]}}


def record() -> PodRecord:
    return PodRecord(uid="u1", node="n0", ip="10.244.0.2", start_time=T0, cycle_start=T0)


def script(p: dict[str, Any], ready_after: float = 0.5, run: float = 3.0) -> PodScript:
    return parse_script(p, default_ready_after=ready_after, default_run_seconds=run)


def conds(status: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["type"]: (c["status"], c.get("reason")) for c in status["conditions"]}


# -- scripts --------------------------------------------------------------------------------

def test_scripts_default_by_restart_policy() -> None:
    assert script(pod()).run_seconds is None
    assert script(pod("Always")).run_seconds is None
    assert script(pod("Never")).run_seconds == 3.0
    assert script(pod("OnFailure")).run_seconds == 3.0
    s = script(pod("Never"))
    assert (s.exit_code, s.ready_after, s.never_ready) == (0, 0.5, False)


def test_scripts_read_annotations_and_ignore_garbage() -> None:
    s = script(pod("Always", {ANNOTATION_RUN_SECONDS: "7.5", ANNOTATION_EXIT_CODE: "3",
                              ANNOTATION_READY_AFTER: "2", ANNOTATION_NEVER_READY: "true"}))
    assert (s.run_seconds, s.exit_code, s.ready_after, s.never_ready) == (7.5, 3, 2.0, True)
    s = script(pod("Never", {ANNOTATION_RUN_SECONDS: "soon", ANNOTATION_EXIT_CODE: "x",
                             ANNOTATION_READY_AFTER: "-1", ANNOTATION_NEVER_READY: "no"}))
    assert (s.run_seconds, s.exit_code, s.ready_after, s.never_ready) == (3.0, 0, 0.5, False)


@pytest.mark.parametrize(("image", "want"), [
    ("nginx", "docker.io/library/nginx:latest"),
    ("nginx:1.27", "docker.io/library/nginx:1.27"),
    ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
    ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
])
def test_normalize_image(image: str, want: str) -> None:
    assert normalize_image(image) == want


def test_image_id_is_stable_and_keeps_a_pinned_digest() -> None:
    assert image_id("nginx:1.27") == image_id("docker.io/library/nginx:1.27")
    assert image_id("nginx:1.27").startswith("docker.io/library/nginx@sha256:")
    pinned = "quay.io/x/y@sha256:" + "a" * 64
    assert image_id(pinned) == pinned


def test_ip_allocator_round_robin_reuse_and_exhaustion() -> None:
    ipam = PodIPAllocator("10.244.3.0/29")  # .2 .. .6
    got = [ipam.allocate() for _ in range(5)]
    assert got == [f"10.244.3.{i}" for i in range(2, 7)]
    with pytest.raises(RuntimeError):
        ipam.allocate()
    ipam.release("10.244.3.4")
    assert ipam.allocate() == "10.244.3.4"
    assert len(ipam) == 5


# -- status -----------------------------------------------------------------------------------

def test_running_then_ready() -> None:
    p, rec = pod(), record()
    s = script(p)
    status, fp, wake = build_pod_status(p, rec, s, "10.0.0.2", T0)
    assert status["phase"] == "Running"
    assert (status["hostIP"], status["hostIPs"]) == ("10.0.0.2", [{"ip": "10.0.0.2"}])
    assert (status["podIP"], status["podIPs"]) == ("10.244.0.2", [{"ip": "10.244.0.2"}])
    assert status["startTime"] == format_time(T0)
    c = conds(status)
    assert c["Ready"] == ("False", "ContainersNotReady")
    assert c["ContainersReady"] == ("False", "ContainersNotReady")
    assert c["PodReadyToStartContainers"] == ("True", None)
    assert c["Initialized"] == ("True", None)
    assert c["PodScheduled"] == ("True", None)
    assert [x["type"] for x in status["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    ready = next(x for x in status["conditions"] if x["type"] == "Ready")
    assert ready["message"] == "containers with unready status: [app side]"
    cs = status["containerStatuses"]
    assert [x["name"] for x in cs] == ["app", "side"]
    assert cs[0]["image"] == "docker.io/library/nginx:1.27"
    assert cs[0]["containerID"].startswith("containerd://") and len(cs[0]["containerID"]) == 77
    assert cs[0]["state"] == {"running": {"startedAt": format_time(T0)}}
    assert (cs[0]["ready"], cs[0]["started"], cs[0]["restartCount"]) == (False, True, 0)
    assert wake == T0 + 0.5

    # The same pod half a second later (the server now has our first write).
    p["status"] = status
    status2, fp2, wake2 = build_pod_status(p, rec, s, "10.0.0.2", T0 + 0.6)
    assert fp2 != fp and wake2 is None
    assert conds(status2)["Ready"] == ("True", None)
    assert status2["containerStatuses"][0]["ready"] is True
    assert status2["containerStatuses"][0]["containerID"] == cs[0]["containerID"]
    # Transition times of unchanged conditions are kept.
    sched = [x for x in status2["conditions"] if x["type"] == "PodScheduled"]
    assert sched[0]["lastTransitionTime"] == format_time(T0)
    # Nothing more happens: equal fingerprints.
    p["status"] = status2
    assert build_pod_status(p, rec, s, "10.0.0.2", T0 + 100)[1] == fp2


def test_ready_after_zero_is_ready_at_once_and_never_ready_never() -> None:
    p = pod()
    status, _, wake = build_pod_status(p, record(), script(p, ready_after=0), "h", T0)
    assert conds(status)["Ready"] == ("True", None) and wake is None
    p = pod(annotations={ANNOTATION_NEVER_READY: "true"})
    status, _, wake = build_pod_status(p, record(), script(p), "h", T0 + 1000)
    assert conds(status)["Ready"] == ("False", "ContainersNotReady") and wake is None
    assert status["containerStatuses"][0]["started"] is True


def test_a_never_pod_succeeds_after_its_run_time() -> None:
    p, rec = pod("Never", {ANNOTATION_RUN_SECONDS: "2"}), record()
    s = script(p)
    advance(rec, s, T0 + 1)
    assert rec.finished is None
    assert build_pod_status(p, rec, s, "h", T0 + 1)[2] == T0 + 2
    advance(rec, s, T0 + 2.5)
    status, _, wake = build_pod_status(p, rec, s, "h", T0 + 2.5)
    assert status["phase"] == "Succeeded" and wake is None
    term = status["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert term["finishedAt"] == format_time(T0 + 2)
    c = conds(status)
    assert c["Ready"] == ("False", "PodCompleted")
    assert c["ContainersReady"] == ("False", "PodCompleted")
    assert c["PodReadyToStartContainers"] == ("False", None)
    assert status["containerStatuses"][0]["started"] is False


def test_a_non_zero_exit_fails_a_never_pod() -> None:
    p, rec = pod("Never", {ANNOTATION_EXIT_CODE: "1"}), record()
    s = script(p)
    advance(rec, s, T0 + 10)
    status, _, _ = build_pod_status(p, rec, s, "h", T0 + 10)
    assert status["phase"] == "Failed"
    term = status["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (1, "Error")
    assert conds(status)["Ready"] == ("False", "ContainersNotReady")


def test_on_failure_restarts_in_place() -> None:
    p, rec = pod("OnFailure", {ANNOTATION_EXIT_CODE: "2", ANNOTATION_RUN_SECONDS: "1"}), record()
    s = script(p)
    first = build_pod_status(p, rec, s, "h", T0)[0]["containerStatuses"][0]["containerID"]
    advance(rec, s, T0 + 1.2)
    assert rec.finished is None and rec.restarts == 1
    status, _, wake = build_pod_status(p, rec, s, "h", T0 + 1.2)
    assert status["phase"] == "Running"
    cs = status["containerStatuses"][0]
    assert cs["restartCount"] == 1 and cs["containerID"] != first
    assert cs["lastState"]["terminated"]["exitCode"] == 2
    assert cs["lastState"]["terminated"]["containerID"] == first
    # restarted when it exited (the first restart has no back-off), ready after ready-after
    assert cs["ready"] is False and wake == T0 + 1.5
    # An OnFailure pod that exits 0 completes.
    p = pod("OnFailure", {ANNOTATION_RUN_SECONDS: "1"})
    rec = record()
    advance(rec, script(p), T0 + 1)
    assert rec.finished == (0, T0 + 1)


def test_init_containers_completed_and_sidecars_running() -> None:
    side = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    p = pod(initContainers=[{"name": "init", "image": "busybox"}, side])
    status, _, _ = build_pod_status(p, record(), script(p, ready_after=0), "h", T0)
    init = {c["name"]: c for c in status["initContainerStatuses"]}
    assert init["init"]["state"]["terminated"]["reason"] == "Completed"
    assert (init["init"]["ready"], init["init"]["started"]) == (True, False)
    assert "running" in init["proxy"]["state"] and init["proxy"]["started"] is True


def test_readiness_gates_hold_ready() -> None:
    p = pod(readinessGates=[{"conditionType": "example.com/lb"}])
    status, fp, _ = build_pod_status(p, record(), script(p, ready_after=0), "h", T0)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ReadinessGatesNotReady")
    assert conds(status)["ContainersReady"] == ("True", None)
    p["status"]["conditions"].append({"type": "example.com/lb", "status": "True"})
    status2, fp2, _ = build_pod_status(p, record(), script(p, ready_after=0), "h", T0)
    assert conds(status2)["Ready"] == ("True", None) and fp2 != fp
    assert conds(status2)["example.com/lb"] == ("True", None)


def test_a_pod_created_with_a_node_name_gets_pod_scheduled() -> None:
    p = pod()
    p["status"] = {"phase": "Pending"}
    status, _, _ = build_pod_status(p, record(), script(p), "h", T0)
    assert conds(status)["PodScheduled"] == ("True", None)


# -- nodes ------------------------------------------------------------------------------------

def test_nodes_and_leases() -> None:
    assert node_names("w", 3) == ["w-0", "w-1", "w-2"]
    cfg = NodeConfig(labels={"tier": "x"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    n = build_node("w-1", 1, cfg, T0)
    labels = n["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "w-1"
    assert labels["kubernetes.io/os"] == "linux" and labels["kubernetes.io/arch"] == "amd64"
    assert labels["type"] == "pykcm-sim" and labels["tier"] == "x"
    assert n["spec"]["podCIDR"] == "10.244.1.0/24" and n["spec"]["taints"][0]["key"] == "k"
    st = n["status"]
    assert st["capacity"] == st["allocatable"]
    assert st["capacity"]["cpu"] == "32" and st["capacity"]["pods"] == "110"
    ready = {c["type"]: c for c in st["conditions"]}
    assert (ready["Ready"]["status"], ready["Ready"]["reason"]) == ("True", "KubeletReady")
    assert ready["Ready"]["message"] == "kubelet is posting ready status"
    for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert ready[t]["status"] == "False"
    assert st["addresses"][0] == {"type": "InternalIP", "address": node_internal_ip(1)}
    assert st["nodeInfo"]["kubeletVersion"] == KUBELET_VERSION
    assert st["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    # Stable identity across restarts.
    assert build_node("w-1", 1, cfg, T0 + 5)["status"]["nodeInfo"]["machineID"] == \
        st["nodeInfo"]["machineID"]
    lease = build_lease("w-1", "uid-1", T0)
    assert lease["metadata"]["namespace"] == "kube-node-lease"
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["spec"]["holderIdentity"] == "w-1"
    assert lease["metadata"]["ownerReferences"][0]["uid"] == "uid-1"


def test_pod_cidrs_grow_with_max_pods() -> None:
    assert pod_cidr(0, NodeConfig()) == "10.244.0.0/24"
    assert pod_cidr(2, NodeConfig(pods=1000)) == "10.244.8.0/22"
