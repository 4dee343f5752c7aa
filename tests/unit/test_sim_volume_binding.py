"""The simulated scheduler's VolumeBinding plugin on plain caches: PreFilter verdicts,
per-node reasons (volume node affinity, static volumes to bind, provisioning topology)
and the bind plan for the chosen node."""

from __future__ import annotations

from typing import Any

from pykcm.api.pv_helpers import find_matching_volume
from pykcm.sim.scheduler import prefilter_error_message
from pykcm.sim.volume_binding import (
    ERR_BIND_CONFLICT,
    ERR_NODE_CONFLICT,
    ERR_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    VolumeBinder,
)


class Cache:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {_key(o): o for o in objs}

    def get_by_key(self, key: str) -> Any:
        return self.objs.get(key)

    def list(self) -> list[Any]:
        return list(self.objs.values())


def _key(o: dict[str, Any]) -> str:
    m = o["metadata"]
    return f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def claim(name: str, cls: str = "wait", volume: str = "", size: str = "1Gi",
          deleting: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"},
                         "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                                  "resources": {"requests": {"storage": size}}},
                         "status": {"phase": "Pending"}}
    if volume:
        c["spec"]["volumeName"] = volume
        c["status"]["phase"] = "Bound"
    if deleting:
        c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return c


def volume(name: str, cls: str = "wait", size: str = "1Gi", on: str | None = None,
           claim_ref: str | None = None) -> dict[str, Any]:
    v: dict[str, Any] = {"metadata": {"name": name},
                         "spec": {"storageClassName": cls, "capacity": {"storage": size},
                                  "accessModes": ["ReadWriteOnce"]}}
    if on:
        v["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [on]}]}]}}
    if claim_ref:
        v["spec"]["claimRef"] = {"namespace": "ns", "name": claim_ref}
    return v


def klass(name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "p",
          zones: list[str] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner,
                         "volumeBindingMode": mode}
    if zones:
        c["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": zones}]}]
    return c


def pod(*claims: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"volumes": [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]}}


def binder(claims: list[dict[str, Any]], volumes: list[dict[str, Any]] | None = None,
           classes: list[dict[str, Any]] | None = None) -> VolumeBinder:
    return VolumeBinder(Cache(*claims), Cache(*(volumes or [])),
                        Cache(*(classes if classes is not None else [
                            klass("wait"), klass("now", mode="Immediate"),
                            klass("local", provisioner="kubernetes.io/no-provisioner"),
                            klass("zonal", zones=["a"])])))


def test_prefilter_rejects_missing_deleting_and_unbound_immediate_claims() -> None:
    b = binder([claim("gone", deleting=True), claim("imm", cls="now"), claim("w")])
    assert b.pre_filter(pod("nope"))[1] == 'persistentvolumeclaim "nope" not found'
    assert b.pre_filter(pod("gone"))[1] == 'persistentvolumeclaim "gone" is being deleted'
    assert b.pre_filter(pod("w", "imm"))[1] == ERR_UNBOUND_IMMEDIATE
    volumes, why = b.pre_filter(pod("w"))
    assert why == "" and [c["metadata"]["name"] for c in volumes.unbound] == ["w"]
    assert not b.pre_filter(pod())[0]  # no claims: nothing for the plugin to do
    assert prefilter_error_message(3, ERR_UNBOUND_IMMEDIATE) == (
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def test_a_bound_volume_ties_the_pod_to_its_node() -> None:
    b = binder([claim("c", volume="pv1"), claim("lost", volume="nowhere")],
               [volume("pv1", on="n2", claim_ref="c")])
    vols, _ = b.pre_filter(pod("c"))
    assert b.filter(vols, node("n1")) == [ERR_NODE_CONFLICT]
    assert b.filter(vols, node("n2")) == []
    lost, _ = b.pre_filter(pod("lost"))
    assert b.filter(lost, node("n2")) == [ERR_PV_NOT_EXIST]


def test_unbound_claims_bind_a_static_volume_on_its_node_or_provision() -> None:
    b = binder([claim("s", cls="local"), claim("s2", cls="local"), claim("d")],
               [volume("small", cls="local", on="n1", size="1Gi"),
                volume("big", cls="local", on="n1", size="5Gi"),
                volume("other", cls="local", on="n2")])
    vols, _ = b.pre_filter(pod("s", "s2", "d"))
    plan = b.plan(vols, node("n1"))
    assert plan is not None
    # each claim its own volume, the smallest that fits first; the dynamic claim provisioned
    assert [(c["metadata"]["name"], v["metadata"]["name"]) for c, v in plan.static] == [
        ("s", "small"), ("s2", "big")]
    assert [c["metadata"]["name"] for c in plan.provision] == ["d"]
    assert plan.claims == ["ns/s", "ns/s2", "ns/d"]
    # n2 has one local volume for two claims
    assert b.filter(vols, node("n2")) == [ERR_BIND_CONFLICT]
    assert b.plan(vols, node("n2")) is None


def test_provisioning_follows_the_class() -> None:
    b = binder([claim("l", cls="local"), claim("z", cls="zonal")])
    local, _ = b.pre_filter(pod("l"))
    assert b.filter(local, node("n1")) == [ERR_BIND_CONFLICT]  # no provisioner, no volume
    zonal, _ = b.pre_filter(pod("z"))
    assert b.filter(zonal, node("n1", **{"topology.kubernetes.io/zone": "b"})) == [
        ERR_BIND_CONFLICT]
    assert b.filter(zonal, node("n1", **{"topology.kubernetes.io/zone": "a"})) == []


def test_the_binder_leaves_delayed_claims_to_the_scheduler() -> None:
    free, mine = volume("free", cls="wait"), volume("mine", cls="wait", on="n1", claim_ref="c")
    c = claim("c")
    # the PV controller (no node): only a volume pre-bound to the claim
    assert find_matching_volume(c, [free], delay_binding=True) is None
    assert find_matching_volume(c, [free, mine], delay_binding=True) is mine
    assert find_matching_volume(c, [free]) is free  # Immediate: any that fits
    # the scheduler (a node): node affinity counts; a pre-bound volume elsewhere: no match
    assert find_matching_volume(c, [free], delay_binding=True, node=node("n2")) is free
    assert find_matching_volume(c, [mine, free], delay_binding=True, node=node("n2")) is None
