"""pykcm.client against either API server: CRUD, paging, errors, subresources,
patch types and delete options. Each test works in a fresh namespace of its own."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import (
    AlreadyExists,
    BadRequest,
    Client,
    Conflict,
    Invalid,
    NotFound,
    UnsupportedMediaType,
    is_conflict,
    is_not_found,
    load_kube_config,
)
from pykcm.testing.server_thread import ServerThread
from tests.conftest import PYKCM_SERVER_ONLY, Backend, create_namespace, own


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "tc")


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels or {}}, "data": data}


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "web",
                                                           "image": "nginx:1.27"}]}}}}


async def test_crud_roundtrip(client: Client, ns: str) -> None:
    created = await client.create("configmaps", cm("a", x="1"), ns)
    assert created["metadata"]["namespace"] == ns and created["metadata"]["uid"]
    got = await client.get("configmaps", "a", ns)
    assert got == created
    got["data"]["x"] = "2"
    updated = await client.update("configmaps", got)  # namespace from the body
    assert updated["data"] == {"x": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"])
    lst = await client.list("configmaps", ns)
    assert lst["kind"] == "ConfigMapList" and [i["metadata"]["name"] for i in own(lst["items"])
                                               ] == ["a"]
    await client.delete("configmaps", "a", ns)
    with pytest.raises(NotFound):
        await client.get("configmaps", "a", ns)
    # every spelling of a resource works
    d = await client.create("apps/v1/deployments", deployment("d"), ns)
    for name in ("deployments", "deploy", "Deployment", "deployments.apps"):
        assert (await client.get(name, "d", ns))["metadata"]["uid"] == d["metadata"]["uid"]


async def test_paging(client: Client, ns: str) -> None:
    # the cluster's own (NAMESPACE_CONFIGMAPS on the real kube-apiserver) are listed too
    theirs = [i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]]
    for i in range(7):
        await client.create("configmaps", cm(f"cm-{i}"), ns)
    n = 7 + len(theirs)
    first = await client.list("configmaps", ns, limit=3)
    assert len(first["items"]) == 3 and first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == n - 3
    pages = [p async for p in client.list_pages("configmaps", ns, limit=3)]
    assert [len(p["items"]) for p in pages] == [3, 3, n - 6]
    # every page is at the first page's snapshot
    assert len({p["metadata"]["resourceVersion"] for p in pages}) == 1
    whole = await client.list_all("configmaps", ns, limit=2)
    assert [i["metadata"]["name"] for i in whole["items"]] == sorted(
        [f"cm-{i}" for i in range(7)] + theirs)
    assert "continue" not in whole["metadata"] and whole["kind"] == "ConfigMapList"
    # selectors
    await client.create("configmaps", cm("labelled", {"tier": "db"}), ns)
    sel = await client.list("configmaps", ns, label_selector="tier=db")
    assert [i["metadata"]["name"] for i in sel["items"]] == ["labelled"]
    sel = await client.list("configmaps", ns, field_selector="metadata.name=cm-3")
    assert [i["metadata"]["name"] for i in sel["items"]] == ["cm-3"]


@PYKCM_SERVER_ONLY  # compacts the embedded server's history between two pages
async def test_list_all_falls_back_to_a_full_list_when_the_token_expires(
        client: Client, ns: str, pykcm_apiserver: ServerThread) -> None:
    for i in range(5):
        await client.create("serviceaccounts", {"metadata": {"name": f"sa-{i}"}}, ns)
    store = pykcm_apiserver.server.store
    assert store is not None
    calls: list[str | None] = []
    real_list = client.list

    async def list_then_compact(*args: Any, **kw: Any) -> dict[str, Any]:
        calls.append(kw.get("continue_"))
        out = await real_list(*args, **kw)
        if len(calls) == 1:
            # More writes, then history is compacted while the pager is between pages.
            await client.create("serviceaccounts", {"metadata": {"name": "sa-late"}}, ns)

            async def compact() -> None:
                store.resource("core/serviceaccounts").trim(now=1e12, max_events=0, max_age=0)
            pykcm_apiserver.call(compact())
        return out

    client.list = list_then_compact  # type: ignore[method-assign]
    whole = await client.list_all("serviceaccounts", ns, limit=2)
    # the namespace's own `default` account aside
    names = sorted(i["metadata"]["name"] for i in whole["items"]
                   if i["metadata"]["name"] != "default")
    assert names == sorted([f"sa-{i}" for i in range(5)] + ["sa-late"])
    assert calls[0] is None and calls[1] and calls[-1] is None  # the full relist


async def test_errors(client: Client, ns: str) -> None:
    with pytest.raises(NotFound) as nf:
        await client.get("configmaps", "missing", ns)
    assert is_not_found(nf.value) and nf.value.code == 404
    assert nf.value.status["details"]["name"] == "missing"
    a = await client.create("configmaps", cm("a"), ns)
    with pytest.raises(AlreadyExists) as ae:
        await client.create("configmaps", cm("a"), ns)
    assert ae.value.code == 409 and not is_conflict(ae.value)
    await client.patch("configmaps", "a", {"data": {"k": "v"}}, namespace=ns)
    with pytest.raises(Conflict) as cf:
        await client.update("configmaps", a, ns)  # a's resourceVersion is stale now
    assert is_conflict(cf.value)
    with pytest.raises(Invalid) as inv:
        await client.create("configmaps", cm("Not_Valid"), ns)
    assert inv.value.code == 422 and inv.value.causes
    assert inv.value.causes[0]["field"] == "metadata.name"
    with pytest.raises(BadRequest):
        await client.list("configmaps", ns, label_selector="a in in (")


async def test_status_subresource(client: Client, ns: str) -> None:
    d = await client.create("deployments", deployment("web"), ns)
    d["status"] = {"observedGeneration": 1, "replicas": 1, "readyReplicas": 1}
    out = await client.update_status("deployments", d)
    assert out["status"]["readyReplicas"] == 1
    assert (await client.get_status("deployments", "web", ns))["status"]["replicas"] == 1
    # a write of the main resource keeps the stored status
    out["status"] = {}
    out["spec"]["replicas"] = 2
    again = await client.update("deployments", out)
    assert again["status"]["readyReplicas"] == 1 and again["spec"]["replicas"] == 2
    patched = await client.patch("deployments", "web", {"status": {"readyReplicas": 0}},
                                 namespace=ns, subresource="status")
    assert patched["status"].get("readyReplicas", 0) == 0  # omitempty: 0 may be left out


async def test_scale_subresource(client: Client, ns: str) -> None:
    await client.create("deployments", deployment("web", 2), ns)
    scale = await client.get_scale("deployments", "web", ns)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    scale["spec"]["replicas"] = 4
    out = await client.update_scale("deployments", "web", scale, ns)
    assert out["spec"]["replicas"] == 4
    await client.update_scale("deployments", "web", 5, ns)
    assert (await client.get("deployments", "web", ns))["spec"]["replicas"] == 5
    out = await client.patch("deployments", "web", {"spec": {"replicas": 1}}, namespace=ns,
                             subresource="scale")
    assert out["spec"]["replicas"] == 1


async def test_binding_subresource(client: Client, ns: str) -> None:
    p = await client.create("pods", pod("p"), ns)
    status = await client.bind("p", ns, "node-1", uid=p["metadata"]["uid"])
    assert status["status"] == "Success"
    bound = await client.get("pods", "p", ns)
    assert bound["spec"]["nodeName"] == "node-1"
    with pytest.raises(Conflict, match="already assigned"):
        await client.bind("p", ns, "node-2")


async def test_finalize_namespace(client: Client) -> None:
    name = "tc-fin-" + uuid.uuid4().hex[:8]
    await client.create("namespaces", {"metadata": {"name": name}})
    await client.delete("namespaces", name)
    terminating = await client.get("namespaces", name)
    assert terminating["status"]["phase"] == "Terminating"
    assert terminating["spec"]["finalizers"] == ["kubernetes"]
    terminating["spec"]["finalizers"] = []
    await client.finalize_namespace(terminating)
    with pytest.raises(NotFound):
        await client.get("namespaces", name)


async def test_patch_types(client: Client, ns: str) -> None:
    await client.create("deployments", deployment("web"), ns)
    out = await client.patch("deployments", "web", {"metadata": {"labels": {"a": "1"}}},
                             "merge", ns)
    assert out["metadata"]["labels"] == {"a": "1"}
    out = await client.patch("deployments", "web",
                             [{"op": "replace", "path": "/spec/replicas", "value": 3}], "json",
                             ns)
    assert out["spec"]["replicas"] == 3
    # strategic: containers merge by name instead of replacing the list
    out = await client.patch("deployments", "web", {"spec": {"template": {"spec": {
        "containers": [{"name": "sidecar", "image": "busybox"}]}}}}, "strategic", ns)
    names = [c["name"] for c in out["spec"]["template"]["spec"]["containers"]]
    assert sorted(names) == ["sidecar", "web"]
    # merge patch of the same list would replace it
    out = await client.patch("deployments", "web", b'{"metadata":{"annotations":{"x":"y"}}}',
                             "merge", ns)
    assert out["metadata"]["annotations"] == {"x": "y"}
    # server-side apply, with a conflict that force takes over
    apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
             "data": {"k": "v1"}}
    try:
        out = await client.patch("configmaps", "applied", apply, "apply", ns,
                                 field_manager="one")
    except UnsupportedMediaType as exc:
        # The embedded server does not implement apply yet: it must say so by name
        # (the wire format is checked in tests/unit/test_client_rest.py).
        assert "apply" in exc.message
        return
    assert out["data"] == {"k": "v1"}
    apply["data"] = {"k": "v2"}
    with pytest.raises(Conflict):
        await client.patch("configmaps", "applied", apply, "apply", ns, field_manager="two")
    out = await client.patch("configmaps", "applied", apply, "apply", ns, field_manager="two",
                             force=True)
    assert out["data"] == {"k": "v2"}


async def test_delete_options(client: Client, ns: str) -> None:
    a = await client.create("configmaps", cm("a"), ns)
    with pytest.raises(Conflict, match="not-the-uid"):
        await client.delete("configmaps", "a", ns, preconditions={"uid": "not-the-uid"})
    await client.delete("configmaps", "a", ns, dry_run=True)
    await client.get("configmaps", "a", ns)  # still there
    status = await client.delete("configmaps", "a", ns,
                                 preconditions={"uid": a["metadata"]["uid"],
                                                "resourceVersion": a["metadata"][
                                                    "resourceVersion"]})
    assert status["status"] == "Success"
    # Orphan puts the orphan finalizer on (the garbage collector would remove it)
    await client.create("deployments", deployment("web"), ns)
    out = await client.delete("deployments", "web", ns, propagation_policy="Orphan")
    assert "orphan" in out["metadata"]["finalizers"] and out["metadata"]["deletionTimestamp"]
    # graceful deletion of a scheduled pod: it stays for its grace period; 0 deletes
    # at once
    await client.create("pods", pod("slow"), ns)
    await client.bind("slow", ns, "node-1")
    out = await client.delete("pods", "slow", ns)
    assert out["metadata"]["deletionGracePeriodSeconds"] == 30
    await client.create("pods", pod("fast"), ns)
    await client.bind("fast", ns, "node-1")
    await client.delete("pods", "fast", ns, grace_period_seconds=0)
    with pytest.raises(NotFound):
        await client.get("pods", "fast", ns)


async def test_delete_collection(client: Client, ns: str) -> None:
    for i in range(3):
        await client.create("configmaps", cm(f"x-{i}", {"del": "yes"}), ns)
    await client.create("configmaps", cm("keep"), ns)
    out = await client.delete_collection("configmaps", ns, label_selector="del=yes")
    assert sorted(i["metadata"]["name"] for i in out["items"]) == ["x-0", "x-1", "x-2"]
    left = await client.list("configmaps", ns)
    assert [i["metadata"]["name"] for i in own(left["items"])] == ["keep"]
