"""The service account, root CA publisher, token and legacy token cleaner controllers,
in process, against either API server.

On the real kube-apiserver the session's support manager runs the real
serviceaccount and root-CA controllers (tests need ``default`` accounts), and
the real token controller: these tests give pykcm's controllers objects of
their own there (an extra ``builder`` account, a ``pykcm-root-ca.crt``
ConfigMap), so what they observe is pykcm's work. The token controller is
tested on pykcm's server (on the real one the end-to-end and differential
tests run it, tests/e2e/test_differential_serviceaccounts.py).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from pykcm.api.serviceaccount import LEGACY_ISSUER, JWTTokenGenerator
from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controllers.rootcacertpublisher import DESCRIPTION, Publisher
from pykcm.controllers.serviceaccount import (
    LegacySATokenCleaner,
    ServiceAccountsController,
    TokensController,
)
from pykcm.informers import SharedInformerFactory
from tests.conftest import PYKCM_SERVER_ONLY, Backend, create_namespace
from tests.polling import eventually

TEST_CM = "pykcm-root-ca.crt"




async def get_or_none(client: Client, resource: str, name: str, ns: str) -> Any:
    try:
        return await client.get(resource, name, ns)
    except NotFound:
        return None


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def running(client: Client, apiserver: Backend) -> AsyncIterator[SharedInformerFactory]:
    """The account and root CA controllers on one cluster-wide factory."""
    factory = SharedInformerFactory(client, name="")
    f = factory.core_v1
    sa = ServiceAccountsController(client=client, sa_informer=f.serviceaccounts,
                                   ns_informer=f.namespaces,
                                   service_accounts=("default", "builder"))
    pub = Publisher(client=client, cm_informer=f.configmaps, ns_informer=f.namespaces,
                    root_ca=apiserver.ca_pem, configmap_name=TEST_CM)
    factory.start()
    tasks = [asyncio.create_task(c.run()) for c in (sa, pub)]
    yield factory
    for c in (sa, pub):
        c.shutdown()
    await asyncio.gather(*tasks)
    await factory.shutdown()
    assert sa.health_check() is None and pub.health_check() is None


async def test_accounts_in_every_namespace_recreated_when_deleted(
        client: Client, apiserver: Backend, running: SharedInformerFactory) -> None:
    ns = await create_namespace(client, apiserver, "sa")
    builder = await eventually(lambda: get_or_none(client, "serviceaccounts", "builder", ns),
                               what="the builder account")
    assert await get_or_none(client, "serviceaccounts", "default", ns) is not None
    assert builder["metadata"].get("labels") is None and "secrets" not in builder
    await client.delete("serviceaccounts", "builder", ns)

    async def recreated() -> Any:
        sa = await get_or_none(client, "serviceaccounts", "builder", ns)
        return sa if sa and sa["metadata"]["uid"] != builder["metadata"]["uid"] else None
    await eventually(recreated, what="builder re-created")


async def test_root_ca_configmap_published_and_restored(
        client: Client, apiserver: Backend, running: SharedInformerFactory) -> None:
    ns = await create_namespace(client, apiserver, "rootca")
    ca = apiserver.ca_pem.decode()
    cm = await eventually(lambda: get_or_none(client, "configmaps", TEST_CM, ns),
                          what="the root CA ConfigMap")
    assert cm["data"] == {"ca.crt": ca}
    assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    await client.patch("configmaps", TEST_CM, {
        "data": {"ca.crt": "x", "extra": "y"},
        "metadata": {"annotations": {"kubernetes.io/description": None, "mine": "z"}}},
        "merge", ns)

    async def restored() -> Any:
        c = await client.get("configmaps", TEST_CM, ns)
        return c if c["data"] == {"ca.crt": ca} and "kubernetes.io/description" in \
            c["metadata"]["annotations"] else None
    fixed = await eventually(restored, what="restored")
    assert fixed["metadata"]["annotations"]["mine"] == "z"  # other annotations are kept
    await client.delete("configmaps", TEST_CM, ns)

    async def recreated() -> Any:
        c = await get_or_none(client, "configmaps", TEST_CM, ns)
        return c if c and c["metadata"]["uid"] != cm["metadata"]["uid"] else None
    await eventually(recreated, what="re-created")


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def token_secret(name: str, account: str) -> dict[str, Any]:
    return {"metadata": {"name": name,
                         "annotations": {"kubernetes.io/service-account.name": account}},
            "type": "kubernetes.io/service-account-token"}


@PYKCM_SERVER_ONLY  # the real server's own token controller runs beside it
async def test_token_secrets_filled_in_and_cleaned_up(client: Client, apiserver: Backend) -> None:
    ns = await create_namespace(client, apiserver, "tok")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    factory = SharedInformerFactory(client, namespace=ns, name="")
    ctl = TokensController(client=client, sa_informer=factory.core_v1.serviceaccounts,
                           secret_informer=factory.core_v1.secrets,
                           token_generator=JWTTokenGenerator(LEGACY_ISSUER, key),
                           root_ca=b"ROOT CA\n")
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        sa = await client.create("serviceaccounts", {"metadata": {"name": "robot"}}, ns)
        await client.create("secrets", token_secret("robot-token", "robot"), ns)
        await client.create("secrets", token_secret("spare-token", "robot"), ns)
        await client.create("secrets", token_secret("ghost-token", "ghost"), ns)

        async def filled() -> Any:
            s = await client.get("secrets", "robot-token", ns)
            return s if "token" in (s.get("data") or {}) else None
        secret = await eventually(filled, what="the token filled in")
        data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
        assert data["ca.crt"] == b"ROOT CA\n" and data["namespace"] == ns.encode()
        assert secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == \
            sa["metadata"]["uid"]
        header, payload, sig = data["token"].decode().split(".")
        key.public_key().verify(_unb64(sig), f"{header}.{payload}".encode(),
                                padding.PKCS1v15(), hashes.SHA256())
        assert b'"sub":"system:serviceaccount:' + ns.encode() + b':robot"' in _unb64(payload)
        # a token of an account that does not exist goes
        await eventually(lambda: _gone(client, "secrets", "ghost-token", ns), what="ghost")
        # a deleted token Secret leaves the account's list of secrets
        await client.patch("serviceaccounts", "robot", {"secrets": [
            {"name": "robot-token"}, {"name": "spare-token"}]}, "merge", ns)
        await client.delete("secrets", "spare-token", ns)

        async def unreferenced() -> bool:
            acct = await client.get("serviceaccounts", "robot", ns)
            return [s["name"] for s in acct.get("secrets") or []] == ["robot-token"]
        await eventually(unreferenced, what="the reference removed")
        # the account goes: its tokens too
        await client.delete("serviceaccounts", "robot", ns)
        await eventually(lambda: _gone(client, "secrets", "robot-token", ns), what="deleted")
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
    assert ctl.health_check() is None


async def _gone(client: Client, resource: str, name: str, ns: str) -> bool:
    return await get_or_none(client, resource, name, ns) is None


async def test_legacy_cleaner_labels_then_deletes_unused_auto_generated_tokens(
        client: Client, apiserver: Backend) -> None:
    """With the clock years ahead of the API server's tracking start."""
    if await get_or_none(client, "configmaps",
                         "kube-apiserver-legacy-service-account-token-tracking",
                         "kube-system") is None:  # pykcm's server does not track (yet)
        await client.create("configmaps", {
            "metadata": {"name": "kube-apiserver-legacy-service-account-token-tracking"},
            "data": {"since": datetime.now(UTC).strftime("%Y-%m-%d")}}, "kube-system")
    ns = await create_namespace(client, apiserver, "legacy")
    await client.create("serviceaccounts", {"metadata": {"name": "old"}}, ns)
    for name in ("unused", "mounted", "not-listed"):
        await client.create("secrets", token_secret(name, "old"), ns)
    await client.patch("serviceaccounts", "old", {"secrets": [{"name": "unused"},
                                                              {"name": "mounted"}]}, "merge", ns)
    await client.create("pods", {"metadata": {"name": "user"}, "spec": {
        "containers": [{"name": "c", "image": "x"}],
        "volumes": [{"name": "t", "secret": {"secretName": "mounted"}}]}}, ns)
    factory = SharedInformerFactory(client, namespace=ns, name="")
    now = datetime.now(UTC) + timedelta(days=2 * 365)
    cleaner = LegacySATokenCleaner(
        client=client, sa_informer=factory.core_v1.serviceaccounts,
        secret_informer=factory.core_v1.secrets, pod_informer=factory.core_v1.pods,
        clock=lambda: now)
    factory.start()
    try:
        await eventually(lambda: _synced(factory), what="caches")
        await cleaner.evaluate_sa_tokens()
        labels = {s["metadata"]["name"]: s["metadata"].get("labels") or {}
                  for s in (await client.list("secrets", ns))["items"]}
        assert labels["unused"] == {"kubernetes.io/legacy-token-invalid-since":
                                    now.strftime("%Y-%m-%d")}
        assert labels["mounted"] == {} and labels["not-listed"] == {}
        now += timedelta(days=366)  # invalid for longer than the clean-up period
        await eventually(lambda: _labelled_in_cache(factory, ns), what="label in cache")
        await cleaner.evaluate_sa_tokens()
        names = {s["metadata"]["name"] for s in (await client.list("secrets", ns))["items"]}
        assert "unused" not in names and {"mounted", "not-listed"} <= names
    finally:
        await factory.shutdown()


async def _synced(factory: SharedInformerFactory) -> bool:
    f = factory.core_v1
    return all(i.informer.has_synced() for i in (f.serviceaccounts, f.secrets, f.pods))


async def _labelled_in_cache(factory: SharedInformerFactory, ns: str) -> bool:
    s = factory.core_v1.secrets.lister.by_namespace(ns).get("unused")
    return "kubernetes.io/legacy-token-invalid-since" in (s["metadata"].get("labels") or {})

