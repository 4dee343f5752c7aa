"""Shared fixtures: a raw HTTP client for the API server started by the pykcm plugin, and
the two API server back ends controller tests run on (pykcm's and the real kube-apiserver),
with :func:`create_namespace`, the one way those tests make a namespace of their own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import uuid
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from pykcm.client import Client, NoResourceMatchError
from pykcm.client.errors import NotFound
from pykcm.testing.server_thread import ServerThread

UPSTREAM = pytest.mark.upstream


@dataclass(frozen=True)
class Backend:
    """An API server controller tests run against: ``pykcm`` (the embedded one, in memory,
    shared by the session) or ``kube`` (the real kube-apiserver + etcd v1.36 of the session,
    with the real kube-controller-manager running only what pykcm lacks: no nodes, none of
    pykcm's controllers but the test's own).

    What a test meets there and not on pykcm's, and handles as a user of a real cluster
    would: ServiceAccount admission and the root CA ConfigMap (:func:`create_namespace`,
    :func:`own`), CRDs served a moment after their creation (:func:`wait_served`),
    admission-defaulted pods, and namespaces that stay Terminating (no namespace
    controller runs but a test's own). ``real`` is for the few documented differences."""

    name: str
    kubeconfig_path: str
    url: str
    token: str
    ca_pem: bytes

    @property
    def real(self) -> bool:
        return self.name == "kube"


@pytest.fixture(scope="session", params=["pykcm", pytest.param("kube", marks=UPSTREAM)])
def apiserver(request: pytest.FixtureRequest) -> Backend:
    """Each test using it runs twice: on pykcm's API server and on the real kube-apiserver."""
    if request.param == "pykcm":
        st: ServerThread = request.getfixturevalue("pykcm_apiserver")
        return Backend("pykcm", st.kubeconfig_path, st.url, st.token, st.ca_pem or b"")
    cp = request.getfixturevalue("kube_control_plane")
    return Backend("kube", cp.kubeconfig_path, cp.url, cp.token, cp.ca_pem)


PYKCM_SERVER_ONLY = pytest.mark.parametrize("apiserver", ["pykcm"], indirect=True)
"""For a test of a module that runs on both back ends but is about pykcm's own server (it
reaches into the embedded server: compacts its history, rotates its tokens): pykcm's only."""


NAMESPACE_CONFIGMAPS = ("kube-root-ca.crt",)
"""ConfigMaps a real cluster puts in every namespace (the root-ca-cert-publisher's): on the
real kube-apiserver they are there before a test's own; tests leave them out with
:func:`own`. (pykcm's publisher runs in ``pykcm controller-manager``, not beside the
session's embedded server.)"""


async def create_namespace(client: Client, backend: Backend, prefix: str = "t",
                           timeout: float = 60.0) -> str:
    """Create a fresh namespace ``<prefix>-<10 hex digits>``, ready for pods; its name.

    Both API servers' ServiceAccount admission refuses pods until the namespace's
    ``default`` ServiceAccount exists. On the real kube-apiserver the serviceaccount
    controller (in the support manager) creates it a moment after the namespace: wait
    for it, as Kubernetes' e2e framework does before a test uses its namespace; and for
    the :data:`NAMESPACE_CONFIGMAPS`, so that they do not turn up in the middle of a
    test's watch. No controller runs beside pykcm's session server: create the account
    there, as that controller would (:func:`ensure_default_service_account`).
    """
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    await client.create("namespaces", {"metadata": {"name": name}})
    if not backend.real:
        await ensure_default_service_account(client, name)
    if backend.real:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for resource, obj in [("serviceaccounts", "default"),
                              *(("configmaps", cm) for cm in NAMESPACE_CONFIGMAPS)]:
            while True:
                try:
                    await client.get(resource, obj, name)
                    break
                except NotFound:
                    if loop.time() > deadline:
                        raise AssertionError(f"no {resource} {name}/{obj} after {timeout} s"
                                             ) from None
                    await asyncio.sleep(0.05)
    return name


async def ensure_default_service_account(client: Client, namespace: str) -> None:
    """The namespace's ``default`` ServiceAccount, which pods need (ServiceAccount admission),
    created as the serviceaccount controller would where none runs."""
    from pykcm.client.errors import AlreadyExists

    try:
        await client.create("serviceaccounts", {"metadata": {"name": "default"}}, namespace)
    except AlreadyExists:
        pass


async def wait_served(client: Client, resource: str, namespace: str | None = None,
                      timeout: float = 30.0) -> None:
    """Until ``resource`` (of a CustomResourceDefinition just created) answers a LIST.

    kube-apiserver serves a CRD's resource a moment after the create (once it is
    Established and in discovery), as users of ``kubectl wait --for condition=established``
    know; pykcm's server at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            await client.list(resource, namespace, limit=1)
            return
        except (NoResourceMatchError, NotFound):
            if loop.time() > deadline:
                raise
            client.invalidate_discovery()
            await asyncio.sleep(0.1)


def own(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` without the cluster's :data:`NAMESPACE_CONFIGMAPS` (a test's own objects)."""
    return [i for i in items if i["metadata"]["name"] not in NAMESPACE_CONFIGMAPS]


def _remove_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class Api:
    """A thin synchronous client: raw requests, parsed JSON answers."""

    def __init__(self, st: ServerThread | Backend) -> None:
        self.st = st
        self.base = st.url
        self.session = requests.Session()
        # REQUESTS_CA_BUNDLE in the environment would override verify=.
        self.session.trust_env = False
        self.session.headers["Authorization"] = f"Bearer {st.token}"
        fd, self.ca_path = tempfile.mkstemp(suffix=".crt")
        with os.fdopen(fd, "wb") as f:
            f.write(st.ca_pem or b"")
        self.session.verify = self.ca_path
        # the CA file goes with the client (tests make their own Api for their own servers)
        self.close = weakref.finalize(self, _remove_file, self.ca_path)

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", params: dict[str, Any] | None = None,
                raw: bytes | None = None, headers: dict[str, str] | None = None
                ) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                             else None)
        h = {"Content-Type": content_type} if data is not None else {}
        h.update(headers or {})
        r = self.session.request(method, self.base + path, data=data, params=params, headers=h,
                                 timeout=60)
        try:
            return r.status_code, r.json()
        except ValueError:
            return r.status_code, r.text

    def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return self.request("PUT", path, body, **kw)

    def patch(self, path: str, body: Any, content_type: str = "application/merge-patch+json",
              **kw: Any) -> tuple[int, Any]:
        return self.request("PATCH", path, body, content_type=content_type, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.request("DELETE", path, body, **kw)

    def watch(self, path: str, params: dict[str, Any], max_events: int = 1000,
              until: Any = None, timeout: float = 20) -> list[dict[str, Any]]:
        """Read watch events until `until(event)` is true, max_events, or the stream ends."""
        p = dict(params)
        p["watch"] = "1"
        out: list[dict[str, Any]] = []
        with self.session.get(self.base + path, params=p, stream=True, timeout=timeout) as r:
            assert r.status_code == 200, r.text
            for line in r.iter_lines():
                if not line:
                    continue
                ev = json.loads(line)
                out.append(ev)
                if len(out) >= max_events or (until is not None and until(ev)):
                    break
        return out

    def ns(self) -> str:
        """A fresh namespace for one test, ready for pods: with its ``default``
        ServiceAccount (no serviceaccount controller runs beside the session server)."""
        name = "t-" + uuid.uuid4().hex[:10]
        code, body = self.post("/api/v1/namespaces", {"metadata": {"name": name}})
        assert code == 201, body
        self.default_service_account(name)
        return name

    def default_service_account(self, namespace: str) -> None:
        """Create ``namespace``'s ``default`` ServiceAccount unless it exists."""
        code, body = self.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                               {"metadata": {"name": "default"}})
        assert code in (201, 409), body


@pytest.fixture(scope="session")
def api(pykcm_apiserver: ServerThread) -> Iterator[Api]:
    a = Api(pykcm_apiserver)
    yield a
    a.close()


@pytest.fixture(scope="session")
def apiserver_api(apiserver: Backend) -> Iterator[Api]:
    """:class:`Api` for the test's back end (``apiserver``)."""
    a = Api(apiserver)
    yield a
    a.close()


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx:1.27"}]}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}}, "spec": s}


def deployment(name: str, replicas: int = 1, image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "web", "image": image}]}},
        },
    }

