"""pods/log, exec and attach routing: which container (kube-apiserver's defaulting and
messages) and which kubelet address (the Node's addresses and daemonEndpoints)."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.apiserver.endpoints.pod_proxy import _container, _kubelet_base, handles
from pykcm.apiserver.endpoints.request_info import resolve
from pykcm.apiserver.errors import StatusError


def pod(*names: str, inits: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": "web"},
            "spec": {"containers": [{"name": n} for n in names],
                     "initContainers": [{"name": n} for n in inits]}}


def test_the_only_container_is_the_default() -> None:
    assert _container(pod("app"), "") == "app"
    assert _container(pod("app", "side", inits=("init",)), "init") == "init"


def test_several_containers_need_a_name() -> None:
    with pytest.raises(StatusError) as e:
        _container(pod("app", "side", inits=("init",)), "")
    assert e.value.code == 400
    assert e.value.message == ("a container name must be specified for pod web, choose one "
                               "of: [app side] or one of the init containers: [init]")
    with pytest.raises(StatusError) as e:
        _container(pod("app"), "nope")
    assert e.value.message == "container nope is not valid for pod web"


def test_the_kubelet_address() -> None:
    node: dict[str, Any] = {"metadata": {"name": "n0"}, "status": {
        "addresses": [{"type": "InternalIP", "address": "10.0.0.2"},
                      {"type": "InternalDNS", "address": "localhost"},
                      {"type": "Hostname", "address": "n0"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 41234}}}}
    assert _kubelet_base(node) == "http://localhost:41234"
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "fd00::2"}]
    assert _kubelet_base(node) == "http://[fd00::2]:41234"
    with pytest.raises(StatusError):
        _kubelet_base({"metadata": {"name": "n1"}, "status": {}})


def test_which_requests_are_proxied() -> None:
    for sub in ("log", "exec", "attach"):
        assert handles(resolve("GET", f"/api/v1/namespaces/ns/pods/web/{sub}", False))
    assert not handles(resolve("GET", "/api/v1/namespaces/ns/pods/web/status", False))
    assert not handles(resolve("GET", "/api/v1/namespaces/ns/pods/web", False))
