"""``--use-service-account-credentials`` on both API servers (TokenRequest tokens): a
controller's client authenticates as ``system:serviceaccount:kube-system:<name>``; on the
real kube-apiserver with the rights RBAC's bootstrap policy gives that controller and no
more (pykcm's server has no RBAC: every authenticated user may do everything)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from pykcm.client import Client, Forbidden, load_kube_config
from pykcm.manager.context import ClientBuilder
from tests.conftest import Backend


@pytest.fixture
async def builder(apiserver: Backend) -> AsyncIterator[ClientBuilder]:
    b = ClientBuilder(load_kube_config(apiserver.kubeconfig_path), qps=50, burst=100,
                      use_service_account_credentials=True)
    yield b
    await b.close()


async def whoami(client: Client) -> str:
    review = await client.create("selfsubjectreviews.authentication.k8s.io", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


async def test_controllers_act_as_their_service_accounts(builder: ClientBuilder,
                                                        apiserver: Backend) -> None:
    rs = builder.client("replicaset-controller")
    assert await whoami(rs) == "system:serviceaccount:kube-system:replicaset-controller"
    await rs.list("pods", "kube-system", limit=1)
    if apiserver.real:
        # RBAC's system:controller:replicaset-controller may list pods, not read secrets
        with pytest.raises(Forbidden):
            await rs.list("secrets", "kube-system", limit=1)
    # the manager's own credentials for what upstream's root client builder does
    assert await whoami(builder.root_client("shared-informers")) == "admin"


async def test_a_missing_account_is_created_before_use(builder: ClientBuilder) -> None:
    name = f"pykcm-test-{uuid.uuid4().hex[:8]}"
    root = builder.root_client("test")
    client = builder.client(name)
    await builder.ensure_service_accounts()
    try:
        assert (await root.get("serviceaccounts", name, "kube-system"))["metadata"]["name"] == name
        assert await whoami(client) == f"system:serviceaccount:kube-system:{name}"
    finally:
        await root.delete("serviceaccounts", name, "kube-system")
