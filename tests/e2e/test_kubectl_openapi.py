"""The real kubectl with its default `--validate=strict` against /openapi/v3 and fieldValidation.

kubectl reads `/openapi/v3` and the group-version documents before it writes:
the PATCH operation's `fieldValidation` parameter makes it leave unknown
fields to the server (`?fieldValidation=Strict`), the schemas' patch
extensions drive `kubectl apply`'s strategic merge patch, their descriptions
`kubectl explain`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from pykcm.testing.server_thread import ServerThread
from tests.e2e.conftest import Kubectl, _kubectl_path

pytestmark = pytest.mark.e2e


def deployment_yaml(image: str = "nginx:1.27", env: tuple[str, ...] = ("A", "B"),
                    extra_spec: str = "") -> str:
    env_yaml = "".join(f"        - name: {n}\n          value: \"{n.lower()}\"\n" for n in env)
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
{extra_spec}  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: {image}
        env:
{env_yaml}      - name: sidecar
        image: busybox:1.36
"""


BAD_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  foo: 1
  selector:
    matchLabels:
      app: bad
  template:
    metadata:
      labels:
        app: bad
    spec:
      containers:
      - name: web
        image: nginx
        imagee: typo
"""


@pytest.fixture
def server(pykcm_apiserver_factory: Callable[..., ServerThread]) -> ServerThread:
    return pykcm_apiserver_factory()


@pytest.fixture
def kubectl(server: ServerThread) -> Iterator[Kubectl]:
    # A private discovery/OpenAPI cache: documents of other servers must not be reused.
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    env = {**os.environ, "KUBECONFIG": server.kubeconfig_path, "KUBECACHEDIR": cache}
    yield Kubectl(_kubectl_path(), env)
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def http(server: ServerThread, tmp_path: Path) -> Iterator[requests.Session]:
    s = requests.Session()
    s.trust_env = False
    s.headers["Authorization"] = f"Bearer {server.token}"
    ca = tmp_path / "ca.crt"
    ca.write_bytes(server.ca_pem or b"")
    s.verify = str(ca)
    yield s
    s.close()


def _get(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(kubectl.ok("get", *args, "-o", "json"))
    return out


def _container(d: dict[str, Any], name: str) -> dict[str, Any]:
    for c in d["spec"]["template"]["spec"]["containers"]:
        if c["name"] == name:
            return dict(c)
    raise AssertionError(f"no container {name}")


# -- the documents ------------------------------------------------------------------------------


def test_openapi_v3_index_and_documents(server: ServerThread, http: requests.Session) -> None:
    r = http.get(server.url + "/openapi/v3", timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    paths = r.json()["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1"} <= set(
        paths)
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    digest = url.split("hash=")[1]
    r = http.get(server.url + url, timeout=30)
    assert r.status_code == 200
    assert hashlib.sha512(r.content).hexdigest().upper() == digest
    assert "immutable" in r.headers["Cache-Control"]
    doc = r.json()
    assert doc["openapi"] == "3.0.0"
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps", "kind": "Deployment", "version": "v1"}
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    assert "io.k8s.api.apps.v1.Deployment" in doc["components"]["schemas"]
    # a stale hash redirects to the current document
    r = http.get(server.url + "/openapi/v3/apis/apps/v1?hash=STALE", allow_redirects=False,
                 timeout=30)
    assert r.status_code == 301 and r.headers["Location"] == url
    r = http.get(server.url + "/openapi/v3/apis/nope/v1", timeout=30)
    assert r.status_code == 404


# -- kubectl apply with default validation --------------------------------------------------------


def test_apply_with_default_validation_and_strategic_merge(kubectl: Kubectl) -> None:
    kubectl.ok("create", "namespace", "oa")
    r = kubectl.run("apply", "-f", "-", "-n", "oa", stdin=deployment_yaml())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "deployment.apps/web created"
    assert "error validating" not in r.stderr
    d = _get(kubectl, "deploy", "web", "-n", "oa")
    assert [e["name"] for e in _container(d, "web")["env"]] == ["A", "B"]

    # a changed image: a strategic merge patch computed from the OpenAPI v3 schema
    r = kubectl.run("apply", "-f", "-", "-n", "oa", "-v=9",
                    stdin=deployment_yaml(image="nginx:1.28"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "deployment.apps/web configured"
    assert "fieldValidation=Strict" in r.stderr
    patch_lines = [ln for ln in r.stderr.splitlines()
                   if '"Request Body"' in ln and "setElementOrder" in ln]
    assert patch_lines, "kubectl sent no strategic merge patch with $setElementOrder"
    assert "$setElementOrder/containers" in patch_lines[0]
    assert "warning: error calculating patch from openapi" not in r.stderr
    d = _get(kubectl, "deploy", "web", "-n", "oa")
    assert _container(d, "web")["image"] == "nginx:1.28"
    assert _container(d, "sidecar")["image"] == "busybox:1.36"

    # an env var dropped from the manifest is deleted by the next apply ($patch: delete)
    r = kubectl.run("apply", "-f", "-", "-n", "oa", "-v=9",
                    stdin=deployment_yaml(image="nginx:1.28", env=("A",)))
    assert r.returncode == 0, r.stderr[-3000:]
    assert '\\"$patch\\":\\"delete\\"' in r.stderr or '"$patch":"delete"' in r.stderr
    d = _get(kubectl, "deploy", "web", "-n", "oa")
    assert _container(d, "web")["env"] == [{"name": "A", "value": "a"}]

    # unchanged manifest: nothing to do
    r = kubectl.run("apply", "-f", "-", "-n", "oa",
                    stdin=deployment_yaml(image="nginx:1.28", env=("A",)))
    assert r.returncode == 0 and r.stdout.strip() == "deployment.apps/web unchanged", r.stderr


def test_apply_core_and_other_groups(kubectl: Kubectl) -> None:
    manifest = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data:
  a: "1"
---
apiVersion: v1
kind: Service
metadata:
  name: svc
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: lease
spec:
  holderIdentity: me
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: c
            image: busybox:1.36
"""
    out = kubectl.ok("apply", "-f", "-", stdin=manifest)
    assert out.split("\n")[:4] == ["configmap/cm created", "service/svc created",
                                   "lease.coordination.k8s.io/lease created",
                                   "cronjob.batch/cj created"]
    changed = manifest.replace("port: 80", "port: 81").replace("holderIdentity: me",
                                                               "holderIdentity: you")
    out = kubectl.ok("apply", "-f", "-", stdin=changed)
    assert "service/svc configured" in out and "lease.coordination.k8s.io/lease configured" in out
    assert "configmap/cm unchanged" in out
    svc = _get(kubectl, "svc", "svc")
    assert [p["port"] for p in svc["spec"]["ports"]] == [81]


# -- kubectl explain -------------------------------------------------------------------------------


def test_explain_prints_the_documentation(kubectl: Kubectl) -> None:
    out = kubectl.ok("explain", "deployment.spec.strategy")
    assert "GROUP:      apps" in out and "KIND:       Deployment" in out
    assert "VERSION:    v1" in out
    assert "FIELD: strategy <DeploymentStrategy>" in out
    assert "The deployment strategy to use to replace existing pods with new ones." in out
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out
    assert "type\t<string>" in out
    assert 'Type of deployment. Can be "Recreate" or "RollingUpdate".' in out
    out = kubectl.ok("explain", "pods.spec.containers.env")
    assert "FIELD: env <[]EnvVar>" in out and "name\t<string> -required-" in out
    out = kubectl.ok("explain", "svc.spec.ports.targetPort")
    assert "FIELD: targetPort <IntOrString>" in out
    out = kubectl.ok("explain", "deploy", "--recursive")
    assert "metadata\t<ObjectMeta>" in out
    r = kubectl.run("explain", "deployment.spec.nope")
    assert r.returncode != 0 and 'field "nope" does not exist' in r.stderr


# -- server-side field validation ---------------------------------------------------------------


def test_create_with_unknown_field_fails_strict(kubectl: Kubectl) -> None:
    r = kubectl.run("create", "-f", "-", stdin=BAD_DEPLOYMENT)
    assert r.returncode == 1
    assert 'Error from server (BadRequest): error when creating "STDIN": Deployment in version ' \
           '"v1" cannot be handled as a Deployment: strict decoding error: unknown field ' \
           '"spec.foo", unknown field "spec.template.spec.containers[0].imagee"' in r.stderr
    r = kubectl.run("get", "deploy", "bad")
    assert r.returncode == 1 and "NotFound" in r.stderr


def test_validate_warn_and_ignore(kubectl: Kubectl) -> None:
    r = kubectl.run("create", "-f", "-", "--validate=warn", stdin=BAD_DEPLOYMENT)
    assert r.returncode == 0, r.stderr
    assert 'Warning: unknown field "spec.foo"' in r.stderr
    assert 'Warning: unknown field "spec.template.spec.containers[0].imagee"' in r.stderr
    d = _get(kubectl, "deploy", "bad")
    # unknown fields are dropped, as kube-apiserver's decoder drops them
    assert "foo" not in d["spec"]
    assert "imagee" not in _container(d, "web")
    kubectl.ok("delete", "deploy", "bad")
    r = kubectl.run("create", "-f", "-", "--validate=false", stdin=BAD_DEPLOYMENT)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr


def test_apply_with_unknown_field_on_update_fails_strict(kubectl: Kubectl) -> None:
    kubectl.ok("apply", "-f", "-", stdin=deployment_yaml())
    r = kubectl.run("apply", "-f", "-", stdin=deployment_yaml(extra_spec="  foo: 1\n"))
    assert r.returncode == 1
    assert 'strict decoding error: unknown field "spec.foo"' in r.stderr
    d = _get(kubectl, "deploy", "web")
    assert "foo" not in d["spec"]


def test_field_validation_query_parameter(server: ServerThread, http: requests.Session) -> None:
    base = server.url + "/api/v1/namespaces/default/configmaps"
    cm: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"},
                          "data": {"k": "v"}, "foo": 1, "metadata2": {}}
    r = http.post(base, params={"fieldValidation": "Strict"}, json=cm, timeout=30)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["reason"] == "BadRequest"
    assert body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                               'strict decoding error: unknown field "foo", unknown field '
                               '"metadata2"')
    # Warn (the default without the parameter): created, one Warning header per field
    r = http.post(base, json=cm, timeout=30)
    assert r.status_code == 201, r.text
    warnings = r.raw.headers.getlist("Warning")
    assert warnings == ['299 - "unknown field \\"foo\\""', '299 - "unknown field \\"metadata2\\""']
    assert "foo" not in r.json()
    # Ignore: created silently
    cm["metadata"]["name"] = "cm2"
    r = http.post(base, params={"fieldValidation": "Ignore"}, json=cm, timeout=30)
    assert r.status_code == 201 and "Warning" not in r.headers
    # an unsupported directive
    cm["metadata"]["name"] = "cm3"
    r = http.post(base, params={"fieldValidation": "strict"}, json=cm, timeout=30)
    assert r.status_code == 422
    assert r.json()["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
        'supported values: "", "Ignore", "Strict", "Warn"')
    # update and patch check the object they produce
    current = http.get(base + "/cm1", timeout=30).json()
    current["data"]["k"] = "v2"
    current["bar"] = True
    r = http.put(base + "/cm1", params={"fieldValidation": "Strict"}, json=current, timeout=30)
    assert r.status_code == 400
    assert r.json()["message"].endswith('strict decoding error: unknown field "bar"')
    r = http.patch(base + "/cm1", params={"fieldValidation": "Strict"},
                   data=json.dumps({"data": {"k": "v3"}, "baz": {"x": 1}}),
                   headers={"Content-Type": "application/merge-patch+json"}, timeout=30)
    assert r.status_code == 400
    assert r.json()["message"] == 'strict decoding error: unknown field "baz"'
    r = http.patch(base + "/cm1", params={"fieldValidation": "Strict"},
                   data=json.dumps({"data": {"k": "v3"}}),
                   headers={"Content-Type": "application/merge-patch+json"}, timeout=30)
    assert r.status_code == 200 and r.json()["data"] == {"k": "v3"}
