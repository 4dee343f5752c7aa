"""examples/configmap_controller.py run as a subprocess against the embedded API server:
a Greeting gets its ConfigMap with a controller reference, a changed message reaches the
ConfigMap, a deleted ConfigMap comes back, and SIGTERM stops the program cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from pykcm.client import Client, NotFound, load_kube_config
from pykcm.testing.server_thread import ServerThread

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "configmap_controller.py")

pytestmark = pytest.mark.e2e


@pytest.fixture
async def client(pykcm_apiserver: ServerThread) -> AsyncIterator[Client]:
    async with Client(load_kube_config(pykcm_apiserver.kubeconfig_path)) as c:
        yield c


async def eventually(probe: Callable[[], Awaitable[Any]], proc: asyncio.subprocess.Process,
                     timeout: float = 30.0) -> Any:
    """Await ``probe()`` until it returns something truthy; fail early if the program died."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await probe()
        if got:
            return got
        if proc.returncode is not None:
            out, err = await proc.communicate()
            raise AssertionError(f"the example exited with {proc.returncode}:\n"
                                 f"{out.decode()}\n{err.decode()}")
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)


async def test_configmap_controller_example(pykcm_apiserver: ServerThread,
                                            client: Client) -> None:
    ns = "ex-" + uuid.uuid4().hex[:10]
    await client.create("namespaces", {"metadata": {"name": ns}})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, EXAMPLE, "--kubeconfig", pykcm_apiserver.kubeconfig_path,
        "--namespace", ns, "--sync-timeout", "30",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        async def crd_served() -> bool:
            try:
                await client.list("greetings.example.pykcm.io", ns)
            except Exception:  # noqa: BLE001 - not served yet (CRD or discovery)
                client.invalidate_discovery()
                return False
            return True

        await eventually(crd_served, proc)
        greeting = await client.create("greetings.example.pykcm.io", {
            "apiVersion": "example.pykcm.io/v1", "kind": "Greeting",
            "metadata": {"name": "hello"}, "spec": {"message": "Hello, world"}}, ns)

        async def configmap(message: str) -> dict[str, Any] | None:
            try:
                cm = await client.get("configmaps", "hello-greeting", ns)
            except NotFound:
                return None
            return cm if (cm.get("data") or {}).get("message") == message else None

        cm = await eventually(lambda: configmap("Hello, world"), proc)
        assert cm["metadata"]["ownerReferences"] == [{
            "apiVersion": "example.pykcm.io/v1", "kind": "Greeting", "name": "hello",
            "uid": greeting["metadata"]["uid"], "controller": True,
            "blockOwnerDeletion": True}]

        await client.patch("greetings.example.pykcm.io", "hello",
                           {"spec": {"message": "Bonjour"}}, "merge", ns)
        await eventually(lambda: configmap("Bonjour"), proc)

        # The ConfigMap's deletion enqueues its Greeting (watch_owned): it comes back.
        await client.delete("configmaps", "hello-greeting", ns)
        recreated = await eventually(lambda: configmap("Bonjour"), proc)
        assert recreated["metadata"]["uid"] != cm["metadata"]["uid"]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert "SYNCED" in lines
    assert f"CREATED {ns}/hello-greeting" in lines
    assert f"UPDATED {ns}/hello-greeting" in lines
    assert lines[-1] == "STOPPED"
