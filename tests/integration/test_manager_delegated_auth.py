"""The controller manager's HTTPS endpoints behind delegated authentication and
authorization, on both API servers.

A manager runs in process with ``--secure-port``; requests come with no token, a bad
token, the token of a ServiceAccount the API server lets ``get`` the nonResourceURL
``/metrics`` (``scraper``) and of one it does not (``nobody``). On both servers (RBAC)
``scraper`` gets a ClusterRole for /metrics and ``nobody`` is refused. On the
real one the same requests also go to the real kube-controller-manager beside it
(the support manager): pykcm's answers (codes and bodies) must be its.
"""

from __future__ import annotations

import asyncio
import ssl
import uuid
from typing import Any

import aiohttp
import pytest

from pykcm.client import Client, load_kube_config
from pykcm.manager import ControllerManager, ControllerManagerOptions, ControllerRegistry
from tests.conftest import Backend, create_namespace
from tests.integration.test_manager import free_port

METRICS_READER = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def _token(client: Client, ns: str, name: str) -> str:
    await client.create("serviceaccounts", {"metadata": {"name": name}}, ns)
    for _ in range(50):
        try:
            answer = await client.create(
                "serviceaccounts", {"apiVersion": "authentication.k8s.io/v1",
                                    "kind": "TokenRequest", "metadata": {"name": name},
                                    "spec": {"expirationSeconds": 3600}},
                ns, subresource="token")
            return str(answer["status"]["token"])
        except Exception:  # noqa: BLE001 - the account may not be served yet
            await asyncio.sleep(0.1)
    raise AssertionError(f"no token for {name}")


async def _get(session: aiohttp.ClientSession, url: str, token: str | None
               ) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with session.get(url, headers=headers, ssl=_insecure()) as r:
        return r.status, await r.text()


@pytest.fixture
async def client(apiserver: Backend) -> Any:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


async def test_endpoints_delegate_authn_and_authz(apiserver: Backend, client: Client,
                                                  request: pytest.FixtureRequest) -> None:
    ns = await create_namespace(client, apiserver, "authz")
    scraper, nobody = await _token(client, ns, "scraper"), await _token(client, ns, "nobody")
    role = f"pykcm-test-metrics-{uuid.uuid4().hex[:8]}"
    await client.create("clusterroles.rbac.authorization.k8s.io",
                        {"metadata": {"name": role}, "rules": [METRICS_READER]})
    await client.create("clusterrolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}]})
    secure = free_port()
    opts = ControllerManagerOptions(kubeconfig=apiserver.kubeconfig_path,
                                    bind_address="127.0.0.1", secure_port=secure, port=0,
                                    leader_elect=False, controllers=[])
    manager = ControllerManager(opts, ControllerRegistry())
    run = asyncio.create_task(manager.run())
    base = f"https://127.0.0.1:{secure}"
    nobody_user = f"system:serviceaccount:{ns}:nobody"
    try:
        async with aiohttp.ClientSession() as s:
            for _ in range(300):
                try:
                    if (await _get(s, base + "/healthz", None))[0] == 200:
                        break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            cases: list[tuple[str, str | None]] = [
                ("/healthz", None), ("/readyz", None), ("/livez", None),
                ("/metrics", None), ("/configz", None),
                ("/metrics", "not-a-token"), ("/healthz", "not-a-token"),
                ("/metrics", scraper), ("/metrics", nobody), ("/configz", nobody)]
            answers = {(p, t): await _get(s, base + p, t) for p, t in cases}

            def code(path: str, token: str | None) -> int:
                return answers[(path, token)][0]

            assert [code(p, None) for p in ("/healthz", "/readyz", "/livez")] == [200] * 3
            assert answers[("/metrics", None)] == (403, (
                '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                '"message":"forbidden: User \\"system:anonymous\\" cannot get path '
                '\\"/metrics\\"","reason":"Forbidden","details":{},"code":403}\n'))
            assert code("/configz", None) == 403
            unauthorized = (401, ('{"kind":"Status","apiVersion":"v1","metadata":{},'
                                  '"status":"Failure","message":"Unauthorized",'
                                  '"reason":"Unauthorized","code":401}\n'))
            assert answers[("/metrics", "not-a-token")] == unauthorized
            assert answers[("/healthz", "not-a-token")] == unauthorized
            assert code("/metrics", scraper) == 200
            assert "workqueue" in answers[("/metrics", scraper)][1] or \
                "process_" in answers[("/metrics", scraper)][1]
            assert answers[("/metrics", nobody)] == (403, (
                '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                f'"message":"forbidden: User \\"{nobody_user}\\" cannot get path '
                '\\"/metrics\\"","reason":"Forbidden","details":{},"code":403}\n'))
            assert code("/configz", nobody) == 403
            # the admin: system:masters
            assert (await _get(s, base + "/configz", apiserver.token))[0] == 200

            # answers are cached (10 s, upstream's TTLs): asking again sends no review
            auth = manager.server.auth if manager.server is not None else None
            assert auth is not None
            reviews = (auth.token_reviews, auth.access_reviews)
            assert (await _get(s, base + "/metrics", scraper))[0] == 200
            assert (auth.token_reviews, auth.access_reviews) == reviews

            if apiserver.name == "kube":
                # the real kube-controller-manager beside the real API server answers alike
                cp = request.getfixturevalue("kube_control_plane")
                assert cp.support is not None
                for (path, token), (want_code, want_body) in answers.items():
                    if path in ("/readyz", "/livez"):
                        continue  # kube-controller-manager v1.36 serves neither (404)
                    if path == "/configz" or (path, token) == ("/metrics", scraper):
                        # other configuration and metrics, same status
                        got = await _get(s, cp.support.url + path, token)
                        assert got[0] == want_code, (path, token, got)
                        continue
                    got = await _get(s, cp.support.url + path, token)
                    if path == "/healthz" and got[0] == 200:
                        continue  # different checks, both healthy
                    assert got == (want_code, want_body), (path, token)
    finally:
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0
        for kind in ("clusterrolebindings", "clusterroles"):
            await client.delete(f"{kind}.rbac.authorization.k8s.io", role)
