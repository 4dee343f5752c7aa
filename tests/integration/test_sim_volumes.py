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

        # the pod first: its claim does not exist yet
        await client.create("pods", with_claim("user", "data"), "default")

        async def creating() -> dict[str, Any] | None:
            p = await get_pod(client, "user")
            return p if waiting_reason(p) == "ContainerCreating" else None
        p = await eventually(creating)
        assert p["status"]["phase"] == "Pending"
        assert "podIP" not in p["status"]

        async def failed_mount() -> list[dict[str, Any]]:
            return [e for e in (await client.list("events", "default"))["items"]
                    if e["reason"] == "FailedMount"]
        events = await eventually(failed_mount)
        assert events[0]["type"] == "Warning"
        assert events[0]["involvedObject"]["name"] == "user"
        assert 'persistentvolumeclaims "data" not found' in events[0]["message"]

        created = await client.create("persistentvolumeclaims", claim("data"), "default")
        # DefaultStorageClass admission
        assert created["spec"]["storageClassName"] == "standard"
        pv_name = f"pvc-{created['metadata']['uid']}"
        # no binder yet: the claim waits, and so does the pod
        await asyncio.sleep(0.5)
        assert waiting_reason(await get_pod(client, "user")) == "ContainerCreating"

        async with volume_controllers(client):
            await eventually(lambda: phase_is(client, "user", "Running"))
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

            # the pod goes, then its claim: the provisioner deletes the released volume
            await client.delete("pods", "user", "default")
            await client.delete("persistentvolumeclaims", "data", "default")

            async def volume_gone() -> bool:
                try:
                    await client.get("persistentvolumes", pv_name)
                except NotFound:
                    return True
                return False
            await eventually(volume_gone)
            assert sim.provisioner.deleted == 1
