"""pykcm.client against either API server: credentials and TLS, in-cluster config,
client-side rate limiting, and resources found through discovery."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from pykcm.api.resources import ResourceRegistry
from pykcm.apiserver.auth.authentication import User
from pykcm.client import (
    ApiError,
    Client,
    Config,
    NoResourceMatchError,
    Unauthorized,
    load_incluster_config,
    load_kube_config,
)
from pykcm.testing.server_thread import ServerThread
from tests.conftest import PYKCM_SERVER_ONLY, Backend, create_namespace
from tests.unit.test_client_config import self_signed


@pytest.fixture
def config(apiserver: Backend) -> Config:
    return load_kube_config(apiserver.kubeconfig_path)


@pytest.fixture
async def client(config: Config) -> AsyncIterator[Client]:
    async with Client(config) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "ts")


async def test_kubeconfig_of_the_server(config: Config, apiserver: Backend) -> None:
    assert config.host == apiserver.url and config.token == apiserver.token
    assert config.ca_data == apiserver.ca_pem and config.namespace == "default"
    async with Client(config) as c:
        assert (await c.server_version())["major"] == "1"
        assert (await c.request("GET", "/api"))["kind"] == "APIVersions"
        assert await c.request("GET", "/healthz") == "ok"


async def test_wrong_token_is_unauthorized(config: Config) -> None:
    async with Client(dataclasses.replace(config, token="wrong")) as c:
        with pytest.raises(Unauthorized) as info:
            await c.list("configmaps", "default")
    assert info.value.code == 401


@PYKCM_SERVER_ONLY  # adds and revokes tokens of the embedded server's authenticator
async def test_rotated_token_file_is_picked_up_on_401(config: Config,
                                                      pykcm_apiserver: ServerThread,
                                                      tmp_path: Path, ns: str) -> None:
    auth = pykcm_apiserver.server.auth
    first, second = "rot-" + uuid.uuid4().hex, "rot-" + uuid.uuid4().hex
    # a privileged user: the test is about authentication, not about RBAC
    auth.add(first, User("rotating", groups=("system:masters",)))
    tok = tmp_path / "token"
    tok.write_text(first + "\n")
    async with Client(dataclasses.replace(config, token=None, token_file=str(tok))) as c:
        await c.list("configmaps", ns)

        async def rotate() -> None:
            auth.add(second, User("rotating", groups=("system:masters",)))
            del auth._tokens[first]
        pykcm_apiserver.call(rotate())
        tok.write_text(second + "\n")
        # The first token is cached (< 1 minute): 401, re-read, retried with the second.
        await c.create("configmaps", {"metadata": {"name": "after-rotation"}}, ns)
        assert c._auth.token_source is not None and c._auth.token_source.read_count == 2


async def test_in_cluster_config(apiserver: Backend, tmp_path: Path) -> None:
    (tmp_path / "token").write_text(apiserver.token)
    (tmp_path / "ca.crt").write_bytes(apiserver.ca_pem)
    (tmp_path / "namespace").write_text("kube-system")
    url = urlsplit(apiserver.url)
    env = {"KUBERNETES_SERVICE_HOST": str(url.hostname),
           "KUBERNETES_SERVICE_PORT": str(url.port)}
    cfg = load_incluster_config(service_account_dir=str(tmp_path), environ=env)
    assert cfg.namespace == "kube-system"
    async with Client(cfg) as c:
        assert (await c.get("namespaces", "kube-system"))["metadata"]["name"] == "kube-system"


async def test_tls_server_name_client_certificate_and_insecure(config: Config) -> None:
    # the serving certificate is for 127.0.0.1, ::1 and localhost
    cert, key = self_signed("client")
    good = dataclasses.replace(config, tls_server_name="localhost", client_cert_data=cert,
                               client_key_data=key)
    async with Client(good) as c:
        await c.list("namespaces", limit=1)
    bad = dataclasses.replace(config, tls_server_name="not-the-server.example")
    async with Client(bad) as c:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await c.list("namespaces", limit=1)
    wrong_ca, _ = self_signed("other-ca")
    async with Client(dataclasses.replace(config, ca_data=wrong_ca)) as c:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await c.list("namespaces", limit=1)
    async with Client(dataclasses.replace(config, ca_data=None, insecure=True)) as c:
        await c.list("namespaces", limit=1)


async def test_rate_limit_qps(config: Config, ns: str) -> None:
    async with Client(dataclasses.replace(config, qps=5, burst=1)) as c:
        t0 = time.monotonic()
        for _ in range(10):
            await c.get("namespaces", ns)
        elapsed = time.monotonic() - t0
    # the first request is free, the nine others come 0.2 s apart
    assert elapsed >= 1.75


async def test_concurrent_requests_share_the_limiter(config: Config, ns: str) -> None:
    async with Client(dataclasses.replace(config, qps=20, burst=5)) as c:
        t0 = time.monotonic()
        await asyncio.gather(*(c.get("namespaces", ns) for _ in range(15)))
        assert time.monotonic() - t0 >= 0.45  # 5 at once, then 10 at 20/s


def widget_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object", "properties": {"spec": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}}}]},
    }


async def _custom_resource_served(client: Client, group: str) -> bool:
    """Create a CRD and wait until discovery serves it; False when CRDs are not served."""
    try:
        await client.create("customresourcedefinitions.apiextensions.k8s.io",
                            widget_crd(group))
    except (ApiError, NoResourceMatchError):
        return False
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            await client.resolve(f"widgets.{group}")  # a miss refreshes discovery
            return True
        except NoResourceMatchError:
            await asyncio.sleep(0.1)
    return False


async def test_custom_resource_through_discovery(client: Client, ns: str) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    if await _custom_resource_served(client, group):
        try:
            info = await client.resolve(f"widgets.{group}")
            assert (info.group, info.version, info.kind, info.namespaced) == (
                group, "v1", "Widget", True)
            w = await client.create(info, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                           "metadata": {"name": "w1"}, "spec": {"size": 3}}, ns)
            assert (await client.get(f"widgets.v1.{group}", "w1", ns))["metadata"]["uid"] == \
                w["metadata"]["uid"]
            lst = await client.list(f"{group}/v1/widgets", ns)
            assert [i["metadata"]["name"] for i in lst["items"]] == ["w1"]
        finally:
            await client.delete("customresourcedefinitions.apiextensions.k8s.io",
                                f"widgets.{group}")
    # Without the registry, a built-in is found through discovery too (both formats).
    for aggregated in (True, False):
        async with Client(client.config, registry=ResourceRegistry([])) as bare:
            bare.discovery.aggregated = aggregated
            info = await bare.resolve("leases.coordination.k8s.io")
            assert (info.group, info.version, info.kind, info.namespaced) == (
                "coordination.k8s.io", "v1", "Lease", True)
            assert set((await bare.resolve("deploy")).subresources) == {"scale", "status"}
            lease = await bare.create("leases.coordination.k8s.io", {
                "metadata": {"name": f"l-{str(aggregated).lower()}"},
                "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}, ns)
            assert lease["kind"] == "Lease"
            assert bare.discovery.fetch_count == 1
            with pytest.raises(NoResourceMatchError):
                await bare.resolve("nosuchthings")
