"""Admission plugin DefaultIngressClass on both API servers: an Ingress created without a
class gets the IngressClass annotated as the default (the newest of several); one naming a
class, or carrying the deprecated class annotation, keeps what it says; updates are not
defaulted. (Kept out of the differential corpus, whose cases run in parallel: a default
class would reach the Ingresses of every other case meanwhile.)
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.conftest import Api

CLASSES = "/apis/networking.k8s.io/v1/ingressclasses"
DEFAULT = {"ingressclass.kubernetes.io/is-default-class": "true"}


def _ingress(api: Api, ns: str, name: str, **meta: Any) -> dict[str, Any]:
    code, body = api.post(f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses", {
        "metadata": {"name": name, **meta},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}})
    assert code == 201, body
    out: dict[str, Any] = body
    return out


def test_ingress_without_class_gets_the_newest_default(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    sfx = uuid.uuid4().hex[:8]
    names = [f"old-{sfx}", f"new-{sfx}"]
    try:
        for name in names:
            code, body = api.post(CLASSES, {"metadata": {"name": name, "annotations": DEFAULT},
                                            "spec": {"controller": "example.com/ingress"}})
            assert code == 201, body
            time.sleep(1.1)  # creationTimestamps a second apart: the newest is unambiguous
        # kube-apiserver's plugin sees the classes through its informer, a moment later
        deadline = time.monotonic() + 10
        for i in range(1000):
            ing = _ingress(api, ns, f"i{i}")
            if ing["spec"].get("ingressClassName") == names[1] or time.monotonic() > deadline:
                break
        assert ing["spec"]["ingressClassName"] == names[1]
        named = _ingress(api, ns, "named", annotations={"kubernetes.io/ingress.class": "x"})
        assert "ingressClassName" not in named["spec"]
        code, body = api.patch(f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses/named",
                               {"metadata": {"annotations": None}})
        assert code == 200 and "ingressClassName" not in body["spec"], body
    finally:
        for name in names:
            api.delete(f"{CLASSES}/{name}")
