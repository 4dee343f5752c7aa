"""The simulator's storage on pykcm's API server: the default StorageClass, its provisioner,
and the kubelets' wait for Bound claims, with pykcm's binder and protection controllers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from pykcm.client import Client, NotFound
from pykcm.controller import EventBroadcaster
from pykcm.controllers.persistentvolume import PersistentVolumeController
from pykcm.controllers.pvcprotection import PVCProtectionController
from pykcm.controllers.pvprotection import PVProtectionController
from pykcm.informers import SharedInformerFactory
from pykcm.sim.volumes import PROVISIONER_NAME
from tests.integration.test_sim import Env, eventually, get_pod, phase_is, pod, sim_env

__all__ = ["sim_env"]


@contextlib.asynccontextmanager
async def volume_controllers(client: Client) -> AsyncIterator[None]:
    factory = SharedInformerFactory(client, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctls: list[Any] = [
        PersistentVolumeController(
            claim_informer=factory.core_v1.persistentvolumeclaims,
            volume_informer=factory.core_v1.persistentvolumes,
            class_informer=factory.storage_v1.storageclasses, client=client,
            recorder=broadcaster.new_recorder("persistentvolume-controller")),
        PVCProtectionController(claim_informer=factory.core_v1.persistentvolumeclaims,
                                pod_informer=factory.core_v1.pods, client=client),
        PVProtectionController(volume_informer=factory.core_v1.persistentvolumes,
                               client=client),
    ]
    factory.start()
    tasks = [asyncio.create_task(c.run()) for c in ctls]
    try:
        yield
    finally:
        for c in ctls:
            c.shutdown()
        await asyncio.gather(*tasks)
        await factory.shutdown()
        await broadcaster.shutdown()


def claim(name: str, size: str = "1Gi") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    p = pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return p


def waiting_reason(p: dict[str, Any]) -> str | None:
    statuses = (p.get("status") or {}).get("containerStatuses") or []
    if not statuses:
        return None
    return str(((statuses[0].get("state") or {}).get("waiting") or {}).get("reason"))


async def test_a_pod_waits_for_its_claim_to_be_provisioned_and_bound(sim_env: Env) -> None:
    async with sim_env(nodes=1, node_prefix="vol", ready_after=0) as (client, sim):
        sc = await client.get("storageclasses", "standard")
        assert sc["metadata"]["annotations"] == {
            "storageclass.kubernetes.io/is-default-class": "true"}
        assert (sc["provisioner"], sc["reclaimPolicy"], sc["volumeBindingMode"]) == (
            PROVISIONER_NAME, "Delete", "Immediate")

        # the pod first: its claim does not exist yet. The scheduler's VolumeBinding
        # PreFilter keeps it unscheduled; a pod bound to the node by hand (no scheduler)
        # reaches the kubelet, which waits in ContainerCreating and reports FailedMount.
        await client.create("pods", with_claim("user", "data"), "default")
        pinned = with_claim("pinned", "data")
        pinned["spec"]["nodeName"] = "vol-0"
        await client.create("pods", pinned, "default")

        async def unschedulable(why: str) -> dict[str, Any] | None:
            p = await get_pod(client, "user")
            conds = [c for c in p["status"].get("conditions") or ()
                     if c["type"] == "PodScheduled"]
            return p if conds and conds[0].get("message") == (
                f"0/1 nodes are available: {why}. preemption: 0/1 nodes are available: "
                f"1 Preemption is not helpful for scheduling.") else None
        p = await eventually(lambda: unschedulable('persistentvolumeclaim "data" not found'))
        assert p["status"]["phase"] == "Pending" and "nodeName" not in p["spec"]

        async def creating() -> dict[str, Any] | None:
            p = await get_pod(client, "pinned")
            return p if waiting_reason(p) == "ContainerCreating" else None
        p = await eventually(creating)
        assert p["status"]["phase"] == "Pending"
        assert "podIP" not in p["status"]

        async def failed_mount() -> list[dict[str, Any]]:
            return [e for e in (await client.list("events", "default"))["items"]
                    if e["reason"] == "FailedMount"]
        events = await eventually(failed_mount)
        assert events[0]["type"] == "Warning"
        assert events[0]["involvedObject"]["name"] == "pinned"
        assert 'persistentvolumeclaims "data" not found' in events[0]["message"]

        created = await client.create("persistentvolumeclaims", claim("data"), "default")
        # DefaultStorageClass admission
        assert created["spec"]["storageClassName"] == "standard"
        pv_name = f"pvc-{created['metadata']['uid']}"
        # no binder yet: the claim waits, and so do the pods (an Immediate class: the
        # scheduler leaves binding to the binder)
        await eventually(lambda: unschedulable(
            "pod has unbound immediate PersistentVolumeClaims"))
        assert waiting_reason(await get_pod(client, "pinned")) == "ContainerCreating"

        async with volume_controllers(client):
            await eventually(lambda: phase_is(client, "user", "Running"))
            await eventually(lambda: phase_is(client, "pinned", "Running"))
            c = await client.get("persistentvolumeclaims", "data", "default")
            assert c["status"]["phase"] == "Bound"
            assert c["spec"]["volumeName"] == pv_name
            assert c["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] \
                == PROVISIONER_NAME
            pv = await client.get("persistentvolumes", pv_name)
            assert pv["spec"]["capacity"] == {"storage": "1Gi"}
            assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
            assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] \
                == PROVISIONER_NAME
            assert sim.provisioner is not None and sim.provisioner.provisioned == 1

            # the pods go, then their claim: the provisioner deletes the released volume
            await client.delete("pods", "user", "default")
            await client.delete("pods", "pinned", "default")
            await client.delete("persistentvolumeclaims", "data", "default")

            async def volume_gone() -> bool:
                try:
                    await client.get("persistentvolumes", pv_name)
                except NotFound:
                    return True
                return False
            await eventually(volume_gone)
            assert sim.provisioner.deleted == 1


async def test_wait_for_first_consumer_binds_where_the_pod_is_scheduled(sim_env: Env) -> None:
    """A WaitForFirstConsumer class: the claim waits for a pod; the scheduler picks a node
    and annotates the claim, the volume is provisioned for that node (nodeAffinity), the
    claim is Bound and only then is the pod bound; a local volume (no provisioner) pins
    its pod to the node the volume is on."""
    async with sim_env(nodes=3, node_prefix="wffc", ready_after=0) as (client, _sim):
        await client.create("storageclasses", {
            "metadata": {"name": "wffc"}, "provisioner": PROVISIONER_NAME,
            "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"})
        await client.create("storageclasses", {
            "metadata": {"name": "local-wffc"}, "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer"})
        await client.create("persistentvolumes", {
            "metadata": {"name": "local-on-2"},
            "spec": {"storageClassName": "local-wffc", "capacity": {"storage": "5Gi"},
                     "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/mnt/disk"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In",
                          "values": ["wffc-2"]}]}]}}}})
        dyn = claim("dyn")
        dyn["spec"]["storageClassName"] = "wffc"
        local = claim("local")
        local["spec"]["storageClassName"] = "local-wffc"
        async with volume_controllers(client):
            await client.create("persistentvolumeclaims", dyn, "default")
            await client.create("persistentvolumeclaims", local, "default")

            async def waiting_event() -> list[dict[str, Any]]:
                return [e for e in (await client.list("events", "default"))["items"]
                        if e["reason"] == "WaitForFirstConsumer"
                        and e["involvedObject"]["name"] == "dyn"]
            await eventually(waiting_event)
            c = await client.get("persistentvolumeclaims", "dyn", "default")
            assert c["status"]["phase"] == "Pending"
            assert "volume.kubernetes.io/selected-node" not in (
                c["metadata"].get("annotations") or {})

            await client.create("pods", with_claim("first", "dyn"), "default")
            p = await eventually(lambda: phase_is(client, "first", "Running"))
            node = p["spec"]["nodeName"]
            c = await client.get("persistentvolumeclaims", "dyn", "default")
            assert c["status"]["phase"] == "Bound"
            assert c["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
            pv = await client.get("persistentvolumes", c["spec"]["volumeName"])
            assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
                "matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In",
                                         "values": [node]}]
            # a second consumer of the claim goes where its volume is
            await client.create("pods", with_claim("second", "dyn"), "default")
            p = await eventually(lambda: phase_is(client, "second", "Running"))
            assert p["spec"]["nodeName"] == node

            await client.create("pods", with_claim("on-disk", "local"), "default")
            p = await eventually(lambda: phase_is(client, "on-disk", "Running"))
            assert p["spec"]["nodeName"] == "wffc-2"
            pv = await client.get("persistentvolumes", "local-on-2")
            assert pv["spec"]["claimRef"]["name"] == "local"
            assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] \
                == "yes"
            c = await client.get("persistentvolumeclaims", "local", "default")
            assert (c["status"]["phase"], c["spec"]["volumeName"]) == ("Bound", "local-on-2")
