"""The README's controller snippet runs and does what the README says it does.

The block under "## Writing a controller" is executed as a module (not as
``__main__``); its ``main()`` runs against the session's API server through
``$KUBECONFIG``, as a reader's copy would. A Deployment and a ReplicaSet it controls
(made by hand: this API server runs no controllers) must end with the Deployment
annotated ``example.com/replicasets: "1"``: a ReplicaSet's event reaches the
Deployment's key, the one kind ``reconcile`` looks up.
"""

from __future__ import annotations

import asyncio
import contextlib
import types
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.testing.server_thread import ServerThread
from tests.docs.markdown_blocks import ROOT, python_blocks, section

LABELS = {"app": "counted"}
TEMPLATE = {"metadata": {"labels": LABELS},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _module(code: str, name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    exec(compile(code, f"<{name}>", "exec"), mod.__dict__)  # noqa: S102 - the docs' own code
    return mod


async def _annotation(client: Client, ns: str, name: str) -> str | None:
    d = await client.get("deployments", name, ns)
    notes: dict[str, str] = d["metadata"].get("annotations") or {}
    return notes.get("example.com/replicasets")


async def test_readme_controller_counts_the_replicasets_of_each_deployment(
        pykcm_apiserver: ServerThread, monkeypatch: pytest.MonkeyPatch) -> None:
    (code,) = python_blocks(section((ROOT / "README.md").read_text(), "## Writing a controller"))
    monkeypatch.setenv("KUBECONFIG", pykcm_apiserver.kubeconfig_path)
    readme = _module(code, "readme_controller")
    ns = "readme-controller"
    async with Client(load_kube_config(pykcm_apiserver.kubeconfig_path)) as client:
        await client.create("namespaces", {"metadata": {"name": ns}})
        d: dict[str, Any] = await client.create("deployments", {
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}},
            ns)
        task = asyncio.create_task(readme.main())
        try:
            async with asyncio.timeout(30):
                while await _annotation(client, ns, "web") != "0":
                    await asyncio.sleep(0.05)
                await client.create("replicasets", {
                    "metadata": {"name": "web-1", "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                        "uid": d["metadata"]["uid"], "controller": True}]},
                    "spec": {"replicas": 0, "selector": {"matchLabels": LABELS},
                             "template": TEMPLATE}}, ns)
                while await _annotation(client, ns, "web") != "1":
                    await asyncio.sleep(0.05)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.delete("namespaces", ns)
