"""Path and method → RequestInfo, as kube-apiserver's RequestInfoFactory resolves them."""

from __future__ import annotations

import pytest

from pykcm.apiserver.endpoints.request_info import resolve


@pytest.mark.parametrize(
    ("method", "path", "watch", "expect"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", False, ("list", "", "v1", "ns", "pods", "", "")),
        ("GET", "/api/v1/pods", False, ("list", "", "v1", "", "pods", "", "")),
        ("GET", "/api/v1/pods", True, ("watch", "", "v1", "", "pods", "", "")),
        ("GET", "/api/v1/namespaces/ns/pods/p", False, ("get", "", "v1", "ns", "pods", "p", "")),
        # ?watch=1 on a named object is a plain GET, as in kube-apiserver
        ("GET", "/api/v1/namespaces/ns/pods/p", True, ("get", "", "v1", "ns", "pods", "p", "")),
        ("PUT", "/api/v1/namespaces/ns/pods/p/status", False,
         ("update", "", "v1", "ns", "pods", "p", "status")),
        ("POST", "/api/v1/namespaces/ns/pods/p/binding", False,
         ("create", "", "v1", "ns", "pods", "p", "binding")),
        ("GET", "/api/v1/watch/namespaces/ns/pods", False, ("watch", "", "v1", "ns", "pods", "",
                                                            "")),
        ("GET", "/api/v1/watch/namespaces/ns/pods/p", False,
         ("watch", "", "v1", "ns", "pods", "p", "")),
        ("GET", "/api/v1/namespaces", False, ("list", "", "v1", "", "namespaces", "", "")),
        ("GET", "/api/v1/namespaces/ns", False, ("get", "", "v1", "", "namespaces", "ns", "")),
        ("PUT", "/api/v1/namespaces/ns/finalize", False,
         ("update", "", "v1", "", "namespaces", "ns", "finalize")),
        ("PUT", "/api/v1/namespaces/ns/status", False,
         ("update", "", "v1", "", "namespaces", "ns", "status")),
        ("DELETE", "/apis/apps/v1/namespaces/ns/deployments", False,
         ("deletecollection", "apps", "v1", "ns", "deployments", "", "")),
        ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", False,
         ("patch", "apps", "v1", "ns", "deployments", "d", "scale")),
        ("GET", "/apis/coordination.k8s.io/v1/leases", False,
         ("list", "coordination.k8s.io", "v1", "", "leases", "", "")),
        ("GET", "/api/v1/nodes/n1", False, ("get", "", "v1", "", "nodes", "n1", "")),
    ],
)
def test_resource_requests(method: str, path: str, watch: bool,
                           expect: tuple[str, ...]) -> None:
    info = resolve(method, path, watch)
    assert info.is_resource_request
    got = (info.verb, info.group, info.version, info.namespace, info.resource, info.name,
           info.subresource)
    assert got == expect


@pytest.mark.parametrize("path", ["/", "/api", "/apis", "/apis/apps", "/apis/apps/v1",
                                  "/api/v1", "/version", "/healthz", "/openapi/v3"])
def test_non_resource_requests(path: str) -> None:
    assert not resolve("GET", path, False).is_resource_request
