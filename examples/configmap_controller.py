#!/usr/bin/env python3
"""A custom controller on pykcm's runtime: each Greeting gets a ConfigMap holding its message.

    python examples/configmap_controller.py --kubeconfig PATH [--context NAME]
                                            [--namespace NS] [--workers N]

The custom resource (created by this program if absent)::

    apiVersion: example.pykcm.io/v1
    kind: Greeting
    metadata: {name: hello, namespace: default}
    spec: {message: "Hello, world"}

is reconciled into::

    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: hello-greeting
      ownerReferences: [{apiVersion: example.pykcm.io/v1, kind: Greeting, name: hello,
                         uid: ..., controller: true, blockOwnerDeletion: true}]
    data: {message: "Hello, world"}

Data flow (the same loop as kube-controller-manager's controllers)::

    Greeting informer ──watch──────────────► Controller queue (keys "ns/name")
    ConfigMap informer ──watch_owned──────►     │  (a ConfigMap event enqueues its Greeting)
                                                ▼
                                reconcile(key): read both listers (the cache),
                                create the ConfigMap if missing, patch it if its
                                message differs, leave it alone otherwise

Deleting a Greeting deletes its ConfigMap through the garbage collector
(the ownerReference); deleting or editing the ConfigMap by hand is undone
at once, since its event enqueues the Greeting. A failed write is retried
by the runtime with the rate limiter's backoff.

It prints one line per write (``CREATED ns/name``, ``UPDATED ns/name``),
``SYNCED`` once the caches are filled, and ``STOPPED`` on exit (Ctrl-C or
SIGTERM: the workers finish the key they hold).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

from pykcm.api.owner_refs import is_controlled_by, new_controller_ref
from pykcm.client import (
    AlreadyExists,
    Client,
    ConfigError,
    NoResourceMatchError,
    NotFound,
    load_kube_config,
)
from pykcm.controller import Controller
from pykcm.informers import GenericInformer, SharedInformerFactory, strip_managed_fields

GROUP = "example.pykcm.io"
VERSION = "v1"
PLURAL = "greetings"
KIND = "Greeting"
API_VERSION = f"{GROUP}/{VERSION}"

GREETING_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "greeting", "kind": KIND,
                  "listKind": "GreetingList"},
        "versions": [{
            "name": VERSION, "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "properties": {"message": {"type": "string"}},
                }},
            }},
        }],
    },
}


def configmap_name(greeting_name: str) -> str:
    return f"{greeting_name}-greeting"


async def ensure_crd(client: Client, timeout: float) -> None:
    """Create the Greeting CRD unless it exists, then wait until the server serves it."""
    try:
        await client.create("customresourcedefinitions", GREETING_CRD)
        print(f"CRD     {PLURAL}.{GROUP} created", flush=True)
    except AlreadyExists:
        pass
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        crd = await client.get("customresourcedefinitions", f"{PLURAL}.{GROUP}")
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in (crd.get("status") or {}).get("conditions") or ())
        if established:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"CRD {PLURAL}.{GROUP} not established within {timeout:g}s")
        await asyncio.sleep(0.1)


class GreetingReconciler:
    """reconcile(key): make the ConfigMap of the Greeting ``key`` hold its message."""

    def __init__(self, client: Client, greetings: GenericInformer,
                 configmaps: GenericInformer) -> None:
        self.client = client
        self.greetings = greetings
        self.configmaps = configmaps

    async def reconcile(self, key: str) -> None:
        namespace, _, name = key.rpartition("/")
        try:
            greeting = self.greetings.lister.by_namespace(namespace).get(name)
        except NotFound:
            return  # deleted: the garbage collector removes its ConfigMap
        if (greeting.get("metadata") or {}).get("deletionTimestamp"):
            return
        message = str((greeting.get("spec") or {}).get("message") or "")
        cm_name = configmap_name(name)
        try:
            cm = self.configmaps.lister.by_namespace(namespace).get(cm_name)
        except NotFound:
            await self._create(greeting, namespace, cm_name, message)
            return
        if not is_controlled_by(cm, greeting):
            # Someone else's ConfigMap: never take over what we did not create.
            print(f"SKIPPED {namespace}/{cm_name}: exists and is not controlled by "
                  f"Greeting {key}", flush=True)
            return
        if (cm.get("data") or {}).get("message") == message:
            return
        # A merge patch of data only: labels or annotations others set stay.
        await self.client.patch("configmaps", cm_name, {"data": {"message": message}},
                                "merge", namespace)
        print(f"UPDATED {namespace}/{cm_name}", flush=True)

    async def _create(self, greeting: dict[str, Any], namespace: str, cm_name: str,
                      message: str) -> None:
        body = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": cm_name, "namespace": namespace,
                         "ownerReferences": [new_controller_ref(greeting, API_VERSION, KIND)]},
            "data": {"message": message},
        }
        try:
            await self.client.create("configmaps", body, namespace)
        except AlreadyExists:
            # Created meanwhile and not in the cache yet: its informer event
            # enqueues the Greeting again, and that sync compares contents.
            return
        print(f"CREATED {namespace}/{cm_name}", flush=True)


async def greeting_informer(factory: SharedInformerFactory, timeout: float) -> GenericInformer:
    # Discovery may lag the CRD's establishment by a moment: ask again.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            return await factory.for_resource_async(GROUP, VERSION, PLURAL)
        except NoResourceMatchError:
            if loop.time() > deadline:
                raise
            factory.client.invalidate_discovery()
            await asyncio.sleep(0.1)


async def run(args: argparse.Namespace) -> int:
    config = load_kube_config(args.kubeconfig, context=args.context)
    async with Client(config) as client:
        await ensure_crd(client, args.sync_timeout)
        factory = SharedInformerFactory(client, namespace=args.namespace,
                                        transform=strip_managed_fields,
                                        name="greeting-controller")
        try:
            greetings = await greeting_informer(factory, args.sync_timeout)
            configmaps = factory.core_v1.configmaps
            reconciler = GreetingReconciler(client, greetings, configmaps)
            controller = Controller("greeting", reconciler.reconcile)
            controller.watch(greetings)
            controller.watch_owned(configmaps, API_VERSION, KIND)
            factory.start()
            synced = await factory.wait_for_cache_sync(timeout=args.sync_timeout)
            if not all(synced.values()):
                print(f"configmap_controller: error: caches did not sync within "
                      f"{args.sync_timeout:g}s", file=sys.stderr)
                return 1
            print("SYNCED", flush=True)
            worker_task = asyncio.create_task(controller.run(args.workers))
            stop_task = asyncio.create_task(_stop_signal())
            await asyncio.wait({worker_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
            controller.shutdown()
            stop_task.cancel()
            await worker_task  # raises if a worker died
        finally:
            await factory.shutdown()
    print("STOPPED", flush=True)
    return 0


async def _stop_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # not on Windows
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Reconcile each Greeting into a ConfigMap.")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, else "
                   "~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.add_argument("--namespace", "-n", help="reconcile one namespace (default: all)")
    p.add_argument("--workers", type=int, default=2, help="concurrent reconciles (default 2)")
    p.add_argument("--sync-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up if the CRD or the caches are not ready by then (default 60)")
    args = p.parse_args(argv)
    try:
        return asyncio.run(run(args))
    except (ConfigError, TimeoutError, NoResourceMatchError) as exc:
        print(f"configmap_controller: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
