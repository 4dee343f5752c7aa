"""The PersistentVolume binder and the two protection controllers against an API server
(both pykcm's and the real kube-apiserver), each test in a namespace of its own.

PersistentVolumes and StorageClasses are cluster-wide: each test names its own with the
namespace's suffix and deletes them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.client.errors import is_not_found
from pykcm.controller import EventBroadcaster
from pykcm.controllers.persistentvolume import PersistentVolumeController
from pykcm.controllers.pvcprotection import PVCProtectionController
from pykcm.controllers.pvprotection import PVProtectionController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "vol")


@contextlib.asynccontextmanager
async def controllers(client: Client, ns: str) -> AsyncIterator[EventBroadcaster]:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctls: list[Any] = [
        PersistentVolumeController(
            claim_informer=factory.core_v1.persistentvolumeclaims,
            volume_informer=factory.core_v1.persistentvolumes,
            class_informer=factory.storage_v1.storageclasses, client=client,
            recorder=broadcaster.new_recorder("persistentvolume-controller"), sync_period=1.0),
        PVCProtectionController(claim_informer=factory.core_v1.persistentvolumeclaims,
                                pod_informer=factory.core_v1.pods, client=client),
        PVProtectionController(volume_informer=factory.core_v1.persistentvolumes,
                               client=client),
    ]
    factory.start()
    tasks = [asyncio.create_task(c.run()) for c in ctls]
    try:
        yield broadcaster
    finally:
        for c in ctls:
            c.shutdown()
        await asyncio.gather(*tasks)
        await factory.shutdown()
        for c in ctls:
            assert c.health_check() is None
        await broadcaster.shutdown()


def volume(name: str, size: str, cls: str = "", **spec: Any) -> dict[str, Any]:
    # Volumes are cluster-scoped and the session's servers are shared: a test binds through
    # a class of its own (its namespace's name), so another test's volume never matches.
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/tmp/{name}"}, "storageClassName": cls, **spec}}


def claim(name: str, size: str, cls: str | None = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": spec}


async def force_delete_volume(client: Client, name: str) -> None:
    """Test cleanup: a volume the test made, whatever state it is in."""
    with contextlib.suppress(Exception):
        await client.patch("persistentvolumes", name, {"metadata": {"finalizers": None}},
                           "merge")
    with contextlib.suppress(Exception):
        await client.delete("persistentvolumes", name)


async def gone(client: Client, resource: str, name: str, ns: str | None = None) -> bool:
    try:
        await client.get(resource, name, ns)
    except Exception as exc:
        if is_not_found(exc):
            return True
        raise
    return False


async def phase(client: Client, resource: str, name: str, want: str,
                ns: str | None = None) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        obj: dict[str, Any] = await client.get(resource, name, ns)
        return obj if (obj.get("status") or {}).get("phase") == want else None
    result: dict[str, Any] = await eventually(check, what=f"{resource}/{name} {want}")
    return result


async def test_a_claim_binds_the_smallest_matching_volume_and_releases_it(
        client: Client, ns: str) -> None:
    small, big = f"{ns}-small", f"{ns}-big"
    try:
        async with controllers(client, ns):
            await client.create("persistentvolumes", volume(big, "5Gi", ns))
            await client.create("persistentvolumes", volume(small, "1Gi", ns))
            await phase(client, "persistentvolumes", small, "Available")
            created = await client.create("persistentvolumeclaims", claim("data", "500Mi", ns), ns)
            bound = await phase(client, "persistentvolumeclaims", "data", "Bound", ns)
            assert bound["spec"]["volumeName"] == small
            assert bound["status"]["capacity"] == {"storage": "1Gi"}
            assert bound["status"]["accessModes"] == ["ReadWriteOnce"]
            ann = bound["metadata"]["annotations"]
            assert ann["pv.kubernetes.io/bind-completed"] == "yes"
            assert ann["pv.kubernetes.io/bound-by-controller"] == "yes"
            assert bound["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
            pv = await phase(client, "persistentvolumes", small, "Bound")
            ref = pv["spec"]["claimRef"]
            assert (ref["namespace"], ref["name"], ref["uid"]) == (
                ns, "data", created["metadata"]["uid"])
            assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
            assert (await client.get("persistentvolumes", big))["status"]["phase"] == "Available"

            # a bound volume is protected: deleting it leaves it in place, Bound
            await client.delete("persistentvolumes", small)
            pv = await client.get("persistentvolumes", small)
            assert pv["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
            assert pv["metadata"].get("deletionTimestamp")

            # no pod uses the claim: it goes; its volume is Released, then goes too
            await client.delete("persistentvolumeclaims", "data", ns)

            async def claim_gone() -> bool:
                return await gone(client, "persistentvolumeclaims", "data", ns)
            await eventually(claim_gone, what="the claim deleted")

            async def volume_gone() -> bool:
                return await gone(client, "persistentvolumes", small)
            await eventually(volume_gone, what="the released volume deleted")
    finally:
        await force_delete_volume(client, small)
        await force_delete_volume(client, big)


async def test_a_claim_of_a_class_waits_for_its_external_provisioner(
        client: Client, ns: str) -> None:
    cls, pv_name = f"{ns}-class", f"pvc-{ns}"
    provisioner = "example.com/test-provisioner"
    await client.create("storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": cls},
        "provisioner": provisioner})
    try:
        async with controllers(client, ns):
            created = await client.create("persistentvolumeclaims",
                                          claim("data", "1Gi", cls), ns)

            async def handed_over() -> dict[str, Any] | None:
                c: dict[str, Any] = await client.get("persistentvolumeclaims", "data", ns)
                ann = c["metadata"].get("annotations") or {}
                return c if ann.get("volume.kubernetes.io/storage-provisioner") else None
            c = await eventually(handed_over, what="the claim handed to its provisioner")
            ann = c["metadata"]["annotations"]
            assert ann["volume.kubernetes.io/storage-provisioner"] == provisioner
            assert ann["volume.beta.kubernetes.io/storage-provisioner"] == provisioner
            assert c["status"]["phase"] == "Pending"

            # the provisioner's part: a volume pre-bound to the claim
            await client.create("persistentvolumes", volume(
                pv_name, "1Gi", cls, persistentVolumeReclaimPolicy="Delete",
                claimRef={"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                          "namespace": ns, "name": "data", "uid": created["metadata"]["uid"]})
                | {"metadata": {"name": pv_name, "annotations": {
                    "pv.kubernetes.io/provisioned-by": provisioner}}})
            bound = await phase(client, "persistentvolumeclaims", "data", "Bound", ns)
            assert bound["spec"]["volumeName"] == pv_name
            pv = await phase(client, "persistentvolumes", pv_name, "Bound")
            # pre-bound by the provisioner: not "bound by controller"
            assert "pv.kubernetes.io/bound-by-controller" not in (
                pv["metadata"].get("annotations") or {})

            await client.delete("persistentvolumeclaims", "data", ns)
            # Delete policy of an external provisioner's volume: left to it, Released
            pv = await phase(client, "persistentvolumes", pv_name, "Released")
            assert not pv["metadata"].get("deletionTimestamp")
        events = {e["reason"] for e in (await client.list("events", ns))["items"]
                  if e["involvedObject"]["kind"] == "PersistentVolumeClaim"}
        assert "ExternalProvisioning" in events
    finally:
        await force_delete_volume(client, pv_name)
        with contextlib.suppress(Exception):
            await client.delete("storageclasses", cls)


async def test_a_claim_in_use_by_a_pod_is_kept_until_the_pod_goes(
        client: Client, ns: str) -> None:
    pv_name = f"{ns}-pv"
    try:
        async with controllers(client, ns):
            await client.create("persistentvolumes", volume(pv_name, "1Gi", ns))
            await client.create("persistentvolumeclaims", claim("data", "1Gi", ns), ns)
            await phase(client, "persistentvolumeclaims", "data", "Bound", ns)
            await client.create("pods", {"metadata": {"name": "user"}, "spec": {
                "nodeName": "somewhere", "containers": [{"name": "c", "image": "x"}],
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}},
                ns)
            await client.delete("persistentvolumeclaims", "data", ns)
            # the deletion is seen (and the finalizer kept) while the pod runs
            c = await client.get("persistentvolumeclaims", "data", ns)
            assert c["metadata"].get("deletionTimestamp")
            await asyncio.sleep(1.0)  # the controller's turn: nothing may change
            c = await client.get("persistentvolumeclaims", "data", ns)
            assert c["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
            await client.delete("pods", "user", ns, grace_period_seconds=0)

            async def claim_gone() -> bool:
                return await gone(client, "persistentvolumeclaims", "data", ns)
            await eventually(claim_gone, what="the claim deleted once its pod went")
            await phase(client, "persistentvolumes", pv_name, "Released")
    finally:
        await force_delete_volume(client, pv_name)


async def test_a_claim_without_class_and_volume_stays_pending(client: Client, ns: str) -> None:
    async with controllers(client, ns):
        await client.create("persistentvolumeclaims", claim("lonely", "1Pi"), ns)

        async def event() -> list[dict[str, Any]]:
            return [e for e in (await client.list("events", ns))["items"]
                    if e["reason"] == "FailedBinding"]
        events = await eventually(event, what="a FailedBinding event")
        assert events[0]["message"] == ("no persistent volumes available for this claim and no "
                                        "storage class is set")
        assert events[0]["source"]["component"] == "persistentvolume-controller"
    c = await client.get("persistentvolumeclaims", "lonely", ns)
    assert c["status"]["phase"] == "Pending"
    assert "volumeName" not in c["spec"]
