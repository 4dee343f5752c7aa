"""Seeded randomness (issue 21, "Determinism"): the same seed and the same requests give the
same generated names and UIDs; another seed gives others.

- ``APIServer(rng=seeded(seed, "kube-apiserver"))``: a sequence of creates (generateName
  and named) answers with the same names, UIDs and token-volume names in two servers of
  one seed, and with different ones under another seed.
- Each user draws from its own streams: another user's creates, interleaved or not, do not
  change the first user's names and UIDs.
- A seeded API server and a seeded ``ControllerManager`` running the ReplicaSet controller:
  a ReplicaSet of 3 gets pods of the same names in two runs.
- A seeded server resuming a data dir does not draw its first run's UIDs again.

Each server runs in the test's loop, in memory, started afresh per run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pykcm.api.randomness import seeded
from pykcm.apiserver.endpoints.server import APIServer
from pykcm.client import Client, load_kube_config
from pykcm.manager import ControllerManager, ControllerManagerOptions
from tests.conftest import ensure_default_service_account
from tests.polling import eventually


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def _server(seed: int) -> AsyncIterator[tuple[APIServer, Client]]:
    server = APIServer(tls=False, rng=seeded(seed, "kube-apiserver"))
    await server.start()
    try:
        async with Client(load_kube_config(server.kubeconfig_path)) as client:
            # the control plane's own first objects (which draw UIDs too) before ours
            await eventually(lambda: client.get("services", "kubernetes", "default"),
                             what="the kubernetes Service")
            await ensure_default_service_account(client, "default")
            yield server, client
    finally:
        await server.stop()


def _pod(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


async def _requests(seed: int) -> list[tuple[str, str, str]]:
    """(name, uid, token volume) of each object of one fixed request sequence."""
    out: list[tuple[str, str, str]] = []
    async with _server(seed) as (_, client):
        for i in range(4):
            cm = await client.create("configmaps", {
                "metadata": {"generateName": "cm-"}, "data": {"i": str(i)}}, "default")
            out.append((cm["metadata"]["name"], cm["metadata"]["uid"], ""))
            named = await client.create("configmaps", {"metadata": {"name": f"named-{i}"}},
                                        "default")
            out.append((named["metadata"]["name"], named["metadata"]["uid"], ""))
        for _ in range(3):
            pod = await client.create("pods", _pod(generateName="web-"), "default")
            volumes = [v["name"] for v in pod["spec"].get("volumes") or ()]
            out.append((pod["metadata"]["name"], pod["metadata"]["uid"], ",".join(volumes)))
    return out


async def test_one_seed_one_sequence_of_names_and_uids() -> None:
    first = await _requests(1234)
    assert await _requests(1234) == first
    other = await _requests(4321)
    assert [n for n, _, _ in other if n.startswith("named-")] == \
        [n for n, _, _ in first if n.startswith("named-")]
    generated = [(n, u, v) for n, u, v in first if not n.startswith("named-")]
    assert {n for n, _, _ in generated}.isdisjoint({n for n, _, _ in other})
    assert {u for _, u, _ in first}.isdisjoint({u for _, u, _ in other})
    assert all(v.startswith("kube-api-access-") for n, _, v in first if n.startswith("web-"))
    assert [v for _, _, v in first if v] != [v for _, _, v in other if v]


def _options(kubeconfig: str) -> ControllerManagerOptions:
    return ControllerManagerOptions(
        kubeconfig=kubeconfig, bind_address="127.0.0.1", secure_port=0, port=_free_port(),
        leader_elect=False, controllers=["replicaset-controller"],
        controller_shutdown_timeout=5.0)


REPLICA_SET = {
    "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
}


async def _replica_set_pods(seed: int) -> tuple[list[str], str]:
    """The names of a ReplicaSet's 3 pods, and the ReplicaSet's UID, in a fresh cluster."""
    async with _server(seed) as (server, client):
        manager = ControllerManager(_options(server.kubeconfig_path),
                                    rng=seeded(seed, "kube-controller-manager"))
        run = asyncio.create_task(manager.run())
        try:
            await asyncio.wait_for(manager.leading.wait(), 30)
            rs = await client.create("replicasets", REPLICA_SET, "default")

            async def three() -> list[str] | None:
                pods = (await client.list("pods", "default",
                                          label_selector="app=web"))["items"]
                names = sorted(p["metadata"]["name"] for p in pods)
                return names if len(names) == 3 else None

            names: list[str] = await eventually(three, what="3 pods")
            return names, rs["metadata"]["uid"]
        finally:
            manager.request_stop()
            assert await run == 0


async def test_a_seeded_cluster_names_a_replica_sets_pods_alike_in_two_runs() -> None:
    names, uid = await _replica_set_pods(99)
    assert all(n.startswith("web-") and len(n) == len("web-") + 5 for n in names)
    assert await _replica_set_pods(99) == (names, uid)
    other, other_uid = await _replica_set_pods(100)
    assert set(other).isdisjoint(names) and other_uid != uid


async def _resumable_run(data_dir: str, seed: int) -> list[tuple[str, str]]:
    """(name, uid) of every object of a few kinds (the server's own first objects among
    them) after three generateName ConfigMap creates on ``data_dir``."""
    server = APIServer(data_dir, tls=False, rng=seeded(seed, "kube-apiserver"))
    await server.start()
    try:
        async with Client(load_kube_config(server.kubeconfig_path)) as client:
            for _ in range(3):
                await client.create("configmaps", {"metadata": {"generateName": "cm-"}},
                                    "default")
            out: list[tuple[str, str]] = []
            for resource in ("configmaps", "namespaces", "clusterroles", "clusterrolebindings",
                             "roles", "rolebindings", "priorityclasses", "flowschemas"):
                items = (await client.list(resource, ""))["items"]
                out += [(f"{resource}/{c['metadata']['name']}", c["metadata"]["uid"])
                        for c in items]
            return out
    finally:
        await server.stop()


async def test_a_resumed_data_dir_does_not_draw_its_first_run_again(tmp_path: Any) -> None:
    first = await _resumable_run(str(tmp_path / "a"), 77)
    # the same seed on a fresh dir repeats the first run...
    assert sorted(await _resumable_run(str(tmp_path / "b"), 77)) == sorted(first)
    # ...but resuming a dir draws new UIDs and names, none of the stored objects'
    both = await _resumable_run(str(tmp_path / "a"), 77)
    assert len(both) == len(first) + 3
    assert len({u for _, u in both}) == len(both)
    assert set(first) <= set(both)


async def _admin_creates(tmp_path: Any, interleave: bool) -> list[tuple[str, str]]:
    """(name, uid) of the admin's 4 generateName creates; with ``interleave``, another user
    creates 3 objects between them."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('other-token,other,u-other,"system:masters"\n')
    server = APIServer(tls=False, token_file=str(tokens), rng=seeded(5, "kube-apiserver"))
    await server.start()
    try:
        config = load_kube_config(server.kubeconfig_path)
        async with Client(config) as admin, \
                Client(dataclasses.replace(config, token="other-token")) as other:
            await eventually(lambda: admin.get("services", "kubernetes", "default"),
                             what="the kubernetes Service")
            out = []
            for i in range(4):
                if interleave and i:
                    await other.create("configmaps", {"metadata": {"generateName": "cm-"}},
                                       "default")
                cm = await admin.create("configmaps", {"metadata": {"generateName": "cm-"}},
                                        "default")
                out.append((cm["metadata"]["name"], cm["metadata"]["uid"]))
            return out
    finally:
        await server.stop()


async def test_another_users_creates_do_not_shift_a_users_names_and_uids(
        tmp_path: Any) -> None:
    alone = await _admin_creates(tmp_path, interleave=False)
    assert await _admin_creates(tmp_path, interleave=True) == alone
