"""Informers stay consistent through an API server restart (issue 4, integration test (c)).

Timeline, with a persistent data dir:

1. server #1 on port P; a factory's configmaps and pods informers sync;
   writes while they watch (caught up), then more writes right before the
   stop (not waited for);
2. server #1 stops: the watches end, re-watching fails (connection refused),
   the client and the Reflector back off;
3. while the informers cannot reach P, server #2 runs on the same data dir
   on *another* port, and a second client deletes, updates and creates
   there: changes the informers can only learn after they reconnect;
4. server #3 starts on port P with the same data dir (token and CA persist
   there, so the informers' client needs nothing new); the informers
   reconnect by themselves; more writes after the restart.

Run twice: with the client's default retries (connection errors on reads and
watch opens are retried inside the client, and the Reflector just sees its
watch reopen late), and with client retries off, so that the Reflector meets
the refused connections itself (reported to the watch error handler) and its
backoff brings it back.

Then each cache, and each handler's view rebuilt from its notifications,
equal a fresh LIST object by object, deletions included.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from pykcm.cache import DeletedFinalStateUnknown, ListWatch, Reflector, default_watch_error_handler
from pykcm.client import Client, WatchStream, is_connection_error, load_kube_config
from pykcm.informers import GenericInformer, SharedInformerFactory, strip_managed_fields
from pykcm.testing.server_thread import ServerThread
from tests.conftest import ensure_default_service_account


class View:
    """A handler that rebuilds the cache from its notifications: name -> resourceVersion."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}
        self.errors: list[str] = []
        self.deleted: list[str] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        name = obj["metadata"]["name"]
        if name in self.objects:
            self.errors.append(f"add of known {name}")
        self.objects[name] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: Any, new: Any) -> None:
        name = new["metadata"]["name"]
        if self.objects.get(name) != old["metadata"]["resourceVersion"]:
            self.errors.append(f"update of {name} from an unknown state")
        self.objects[name] = new["metadata"]["resourceVersion"]

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        name = obj["metadata"]["name"]
        self.deleted.append(name)
        if self.objects.pop(name, None) is None:
            self.errors.append(f"delete of unknown {name}")


async def eventually(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


def cm(name: str, value: str = "0") -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": value}}


async def assert_consistent(client: Client, gi: GenericInformer, view: View, resource: str,
                            ns: str, timeout: float = 30.0) -> dict[str, Any]:
    """Cache and view equal a fresh LIST object by object; returns the listed objects."""
    fresh = await client.list(resource, ns)
    listed = {o["metadata"]["name"]: o for o in fresh["items"]}
    want = {name: o["metadata"]["resourceVersion"] for name, o in listed.items()}

    def cached() -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in gi.lister.by_namespace(ns).list()}

    await eventually(lambda: cached() == want and view.objects == want, timeout)
    assert view.errors == []
    for name, obj in listed.items():
        got = gi.lister.by_namespace(ns).get(name)
        expected = {**obj, "metadata": {k: v for k, v in obj["metadata"].items()
                                        if k != "managedFields"}}
        # A LIST's items carry no kind/apiVersion (as kube-apiserver's); watch events' do.
        assert {k: v for k, v in got.items() if k not in ("kind", "apiVersion")} == \
            expected, name
    return listed


def count_watches(gi: GenericInformer) -> list[str]:
    """Record the resourceVersion of every WATCH the informer's ListWatch opens."""
    lw = gi.informer.list_watch
    assert isinstance(lw, ListWatch)
    opened: list[str] = []
    watch = lw.watch

    def counting(*, resource_version: str, **kw: Any) -> WatchStream:
        opened.append(resource_version)
        return watch(resource_version=resource_version, **kw)

    setattr(lw, "watch", counting)  # noqa: B010 - an instance attribute over the method
    return opened


@pytest.mark.parametrize("client_retries", ["default", "off"])
async def test_informers_stay_consistent_through_an_api_server_restart(
        pykcm_apiserver_factory: Callable[..., ServerThread], tmp_path: Any,
        client_retries: str) -> None:
    data_dir = str(tmp_path / "state")
    st1 = pykcm_apiserver_factory(data_dir=data_dir)
    port = st1.server.port
    ns = "restart-" + uuid.uuid4().hex[:8]
    errors: list[tuple[str, BaseException]] = []

    def on_watch_error(reflector: Reflector, exc: BaseException) -> None:
        errors.append((reflector.name, exc))
        default_watch_error_handler(reflector, exc)

    config = load_kube_config(st1.kubeconfig_path)
    if client_retries == "off":
        config.max_retries = 0
    async with Client(config) as client:
        await client.create("namespaces", {"metadata": {"name": ns}})
        await ensure_default_service_account(client, ns)  # pods need it; no controller runs
        for i in range(20):
            await client.create("configmaps", cm(f"cm-{i}"), ns)
        for i in range(10):
            await client.create("pods", pod(f"pod-{i}"), ns)

        factory = SharedInformerFactory(client, namespace=ns, transform=strip_managed_fields,
                                        name="restart-test")
        cms, pods = factory.core_v1.configmaps, factory.core_v1.pods
        cm_view, pod_view = View(), View()
        cms.informer.add_event_handler(cm_view)
        pods.informer.add_event_handler(pod_view)
        for gi in (cms, pods):
            gi.informer.set_watch_error_handler(on_watch_error)
        cm_watches, pod_watches = count_watches(cms), count_watches(pods)
        factory.start()
        try:
            assert all((await factory.wait_for_cache_sync(timeout=15)).values())

            # 1. Writes while the informers watch: caught up.
            for i in range(5):
                await client.patch("configmaps", f"cm-{i}", {"data": {"v": "1"}}, namespace=ns)
                await client.delete("configmaps", f"cm-{19 - i}", ns)
                await client.delete("pods", f"pod-{i}", ns)
            await client.create("configmaps", cm("before"), ns)
            await assert_consistent(client, cms, cm_view, "configmaps", ns)
            await assert_consistent(client, pods, pod_view, "pods", ns)
            rv_before = cms.informer.last_sync_resource_version()
            watches_before = (len(cm_watches), len(pod_watches))
            # ... and right before the stop, not waited for.
            await client.patch("configmaps", "cm-5", {"data": {"v": "last"}}, namespace=ns)
            await client.delete("configmaps", "cm-6", ns)
            await client.create("pods", pod("pod-last"), ns)
            assert errors == []

            # 2. Server #1 stops (in a thread: the informers keep running meanwhile).
            await asyncio.to_thread(st1.stop)

            # 3. Changes the informers cannot see: server #2, same data dir, another port.
            st2 = pykcm_apiserver_factory(data_dir=data_dir)
            assert st2.server.port != port
            async with Client(load_kube_config(st2.kubeconfig_path)) as side:
                for i in range(7, 12):
                    await side.delete("configmaps", f"cm-{i}", ns)
                await side.patch("configmaps", "cm-0", {"data": {"v": "while-down"}},
                                 namespace=ns)
                await side.create("configmaps", cm("while-down"), ns)
                for i in range(5, 8):
                    await side.delete("pods", f"pod-{i}", ns)
                await side.create("pods", pod("pod-while-down"), ns)
                deleted_while_down = {f"cm-{i}" for i in range(7, 12)}
                assert not deleted_while_down & {
                    o["metadata"]["name"]
                    for o in (await side.list("configmaps", ns))["items"]}
            await asyncio.to_thread(st2.stop)
            # Down long enough for a few rounds of backoff (0.8 s, then 1.6 s ...).
            await asyncio.sleep(2.0)
            # The informers saw none of it.
            assert set(cm_view.objects) >= deleted_while_down
            assert "while-down" not in cm_view.objects

            # 4. Server #3 on the same port and data dir; the informers reconnect alone.
            st3 = pykcm_apiserver_factory(data_dir=data_dir, port=port)
            assert st3.server.port == port
            async with Client(load_kube_config(st3.kubeconfig_path)) as writer:
                await writer.patch("configmaps", "cm-1", {"data": {"v": "after"}},
                                   namespace=ns)
                await writer.delete("configmaps", "cm-2", ns)
                await writer.create("configmaps", cm("after"), ns)
                await writer.delete("pods", "pod-8", ns)
                await writer.create("pods", pod("pod-after"), ns)

                listed = await assert_consistent(writer, cms, cm_view, "configmaps", ns)
                await assert_consistent(writer, pods, pod_view, "pods", ns)

            # Deletions made while the informers were away reached cache and handlers.
            assert not deleted_while_down & set(listed)
            assert deleted_while_down <= set(cm_view.deleted)
            assert {"pod-5", "pod-6", "pod-7", "pod-8"} <= set(pod_view.deleted)
            assert listed["cm-0"]["data"] == {"v": "while-down"}
            assert listed["cm-1"]["data"] == {"v": "after"}
            assert listed["cm-5"]["data"] == {"v": "last"}
            assert {"before", "while-down", "after"} <= set(listed)
            # They did lose the server and reconnected by themselves: new watches,
            # from where they were (history survives the restart: no relist needed).
            assert len(cm_watches) > watches_before[0] and len(pod_watches) > watches_before[1]
            assert int(cm_watches[-1] or 0) >= int(rv_before)
            assert int(cms.informer.last_sync_resource_version()) > int(rv_before)
            if client_retries == "off":
                # The Reflectors met the refused connections themselves and backed off.
                assert {name for name, _ in errors} == \
                    {"restart-test/configmaps", "restart-test/pods"}
                assert all(is_connection_error(e) for _, e in errors), errors
            assert all(gi.has_synced() and not gi.informer.is_stopped()
                       for gi in (cms, pods))
        finally:
            await factory.shutdown()
