"""The real kubectl against the embedded API server.

OpenAPI is not served yet, so commands that would validate against it run with
`--validate=false`.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Api, pod
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

DEPLOYMENT_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
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
        image: nginx:1.27
      - name: sidecar
        image: busybox:1.36
"""


def _configmap_yaml(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"


def _get_json(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(kubectl.ok("get", *args, "-o", "json"))
    return out


def test_create_from_file_and_get_json(api: Api, kubectl: Kubectl, tmp_path: Path) -> None:
    ns = api.ns()
    f = tmp_path / "deployment.yaml"
    f.write_text(DEPLOYMENT_YAML)
    out = kubectl.ok("create", "-f", str(f), "-n", ns, "--validate=false")
    assert out.strip() == "deployment.apps/web created"
    d = _get_json(kubectl, "deployment", "web", "-n", ns)
    assert d["kind"] == "Deployment" and d["apiVersion"] == "apps/v1"
    assert d["metadata"]["namespace"] == ns and d["metadata"]["generation"] == 1
    assert d["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted
    assert [c["name"] for c in d["spec"]["template"]["spec"]["containers"]] == ["web", "sidecar"]
    # create again: AlreadyExists
    r = kubectl.run("create", "-f", str(f), "-n", ns, "--validate=false")
    assert r.returncode == 1
    assert 'Error from server (AlreadyExists): error when creating' in r.stderr
    assert 'deployments.apps "web" already exists' in r.stderr
    # a list of all deployments in the namespace, by short name
    lst = _get_json(kubectl, "deploy", "-n", ns)
    assert lst["kind"] == "List" and [i["metadata"]["name"] for i in lst["items"]] == ["web"]
    out = kubectl.ok("get", "deploy", "-n", ns)
    assert out.splitlines()[0].split()[0] == "NAME"
    assert out.splitlines()[1].split()[0] == "web"


def test_get_prints_server_side_table_columns(api: Api, kubectl: Kubectl) -> None:
    # kubectl asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...` and prints
    # the columns the server's Table carries (upstream: the printers of each resource)
    ns = api.ns()
    kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=DEPLOYMENT_YAML)
    kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=_configmap_yaml("cm"))
    api.post(f"/api/v1/namespaces/{ns}/pods", pod("p"))
    rows = [ln.split() for ln in kubectl.ok("get", "deploy", "-n", ns).splitlines()]
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1][:4] == ["web", "0/1", "0", "0"]
    rows = [ln.split() for ln in kubectl.ok("get", "cm", "-n", ns).splitlines()]
    assert rows[0] == ["NAME", "DATA", "AGE"] and rows[1][:2] == ["cm", "1"]
    rows = [ln.split() for ln in kubectl.ok("get", "pods", "-n", ns).splitlines()]
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:4] == ["p", "0/1", "Pending", "0"]


def test_scale_label_annotate(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=DEPLOYMENT_YAML)
    out = kubectl.ok("scale", "deployment/web", "--replicas=3", "-n", ns)
    assert out.strip() == "deployment.apps/web scaled"
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["spec"]["replicas"] == 3 and d["metadata"]["generation"] == 2
    # scale with a failing precondition
    r = kubectl.run("scale", "deployment/web", "--replicas=5", "--current-replicas=2", "-n", ns)
    assert r.returncode == 1
    assert "Expected replicas to be 2, was 3" in r.stderr

    assert kubectl.ok("label", "deploy", "web", "tier=fe", "-n", ns).strip() == (
        "deployment.apps/web labeled")
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert d["metadata"]["generation"] == 2  # labels do not bump generation
    # overwriting needs --overwrite
    r = kubectl.run("label", "deploy", "web", "tier=be", "-n", ns)
    assert r.returncode == 1 and "already has a value (fe)" in r.stderr
    kubectl.ok("label", "deploy", "web", "tier=be", "--overwrite", "-n", ns)
    kubectl.ok("label", "deploy", "web", "app-", "-n", ns)
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["metadata"]["labels"] == {"tier": "be"}

    assert kubectl.ok("annotate", "deploy", "web", "note=hello world", "-n", ns).strip() == (
        "deployment.apps/web annotated")
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["metadata"]["annotations"] == {"note": "hello world"}
    # annotations bump a Deployment's generation (they are copied to ReplicaSets)
    assert d["metadata"]["generation"] == 3
    kubectl.ok("annotate", "deploy", "web", "note-", "-n", ns)
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert not d["metadata"].get("annotations")
    # label selection of the result
    out = kubectl.ok("get", "deploy", "-n", ns, "-l", "tier=be", "-o", "name")
    assert out.split() == ["deployment.apps/web"]
    r = kubectl.run("get", "deploy", "-n", ns, "-l", "tier=fe", "-o", "name")
    assert r.returncode == 0 and r.stdout == ""


def test_patch_types(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=DEPLOYMENT_YAML)
    out = kubectl.ok("patch", "deploy", "web", "-n", ns, "--type=strategic", "-p",
                     '{"spec":{"template":{"spec":{"containers":'
                     '[{"name":"sidecar","image":"busybox:1.37"}]}}}}')
    assert out.strip() == "deployment.apps/web patched"
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert [(c["name"], c["image"]) for c in d["spec"]["template"]["spec"]["containers"]] == [
        ("web", "nginx:1.27"), ("sidecar", "busybox:1.37")]

    # merge patch replaces lists wholesale
    kubectl.ok("patch", "deploy", "web", "-n", ns, "--type=merge", "-p",
               '{"metadata":{"labels":{"m":"1"}},"spec":{"template":{"spec":{"containers":'
               '[{"name":"only","image":"alpine:3"}]}}}}')
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["metadata"]["labels"] == {"app": "web", "m": "1"}
    assert [c["name"] for c in d["spec"]["template"]["spec"]["containers"]] == ["only"]

    kubectl.ok("patch", "deploy", "web", "-n", ns, "--type=json", "-p",
               '[{"op":"replace","path":"/spec/replicas","value":4},'
               '{"op":"remove","path":"/metadata/labels/m"}]')
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["spec"]["replicas"] == 4 and d["metadata"]["labels"] == {"app": "web"}

    # a no-op patch says so
    out = kubectl.ok("patch", "deploy", "web", "-n", ns, "--type=merge", "-p",
                     '{"spec":{"replicas":4}}')
    assert out.strip() == "deployment.apps/web patched (no change)"

    # an invalid result is a 422 with the field
    r = kubectl.run("patch", "deploy", "web", "-n", ns, "--type=merge", "-p",
                    '{"spec":{"replicas":-1}}')
    assert r.returncode == 1
    assert "spec.replicas" in r.stderr and "Invalid value: -1" in r.stderr, r.stderr
    # a status subresource patch
    kubectl.ok("patch", "deploy", "web", "-n", ns, "--subresource=status", "--type=merge",
               "-p", '{"status":{"replicas":4,"readyReplicas":2}}')
    d = _get_json(kubectl, "deploy", "web", "-n", ns)
    assert d["status"]["readyReplicas"] == 2 and d["spec"]["replicas"] == 4


def test_delete_returns_once_gone(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods", pod("p"))
    assert code == 201, body
    kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=_configmap_yaml("cm"))
    start = time.monotonic()
    # a pod without a node is deleted at once; kubectl waits until it is gone
    out = kubectl.ok("delete", "pod", "p", "-n", ns)
    assert out.strip() == f'pod "p" deleted from {ns} namespace'
    out = kubectl.ok("delete", "configmap", "cm", "-n", ns)
    assert out.strip() == f'configmap "cm" deleted from {ns} namespace'
    assert time.monotonic() - start < 15
    assert api.get(f"/api/v1/namespaces/{ns}/pods/p")[0] == 404
    assert api.get(f"/api/v1/namespaces/{ns}/configmaps/cm")[0] == 404
    r = kubectl.run("delete", "configmap", "cm", "-n", ns)
    assert r.returncode == 1
    assert 'Error from server (NotFound): configmaps "cm" not found' in r.stderr
    # --ignore-not-found
    r = kubectl.run("delete", "configmap", "cm", "-n", ns, "--ignore-not-found")
    assert r.returncode == 0 and r.stdout == ""
    # delete by label selector
    for n in ("a", "b"):
        kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=_configmap_yaml(n))
    kubectl.ok("label", "cm", "a", "gone=yes", "-n", ns)
    kubectl.ok("delete", "cm", "-l", "gone=yes", "-n", ns)
    assert kubectl.ok("get", "cm", "-n", ns, "-o", "name").split() == ["configmap/b"]


def test_get_watch_prints_events(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=_configmap_yaml("a"))
    proc = kubectl.popen("get", "configmaps", "-n", ns, "--watch", "--output-watch-events")
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()

    def read_until(pred: Callable[[list[str]], bool], seen: list[str]) -> list[str]:
        deadline = time.monotonic() + 20
        while not pred(seen):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; output so far: {seen}"
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                err = proc.stderr.read() if proc.stderr else ""
                raise AssertionError(f"kubectl exited early: {seen}\n{err}")
            seen.append(line)
        return seen

    try:
        seen: list[str] = []
        # the header and the initial state: the list is done, the watch starts from its rv
        read_until(lambda s: len(s) >= 2, seen)
        assert seen[0].split()[:2] == ["EVENT", "NAME"]
        assert seen[1].split()[:2] == ["ADDED", "a"]
        kubectl.ok("create", "-f", "-", "-n", ns, "--validate=false", stdin=_configmap_yaml("b"))
        kubectl.ok("label", "cm", "b", "x=y", "-n", ns)
        kubectl.ok("delete", "cm", "a", "-n", ns)
        read_until(lambda s: len(s) >= 5, seen)
        assert [ln.split()[:2] for ln in seen[2:5]] == [
            ["ADDED", "b"], ["MODIFIED", "b"], ["DELETED", "a"]]
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert proc.stderr is not None
    proc.stderr.close()
    proc.stdout.close()  # type: ignore[union-attr]


def test_create_namespace(api: Api, kubectl: Kubectl) -> None:
    # kubectl sends the Namespace as Kubernetes protobuf
    # (Content-Type: application/vnd.kubernetes.protobuf)
    name = "e2e-" + uuid.uuid4().hex[:10]
    r = kubectl.run("create", "namespace", name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"namespace/{name} created"
    ns = _get_json(kubectl, "namespace", name)
    assert ns["metadata"]["name"] == name
    assert ns["status"]["phase"] == "Active"
    assert ns["spec"]["finalizers"] == ["kubernetes"]


def test_create_configmap_from_literal(api: Api, kubectl: Kubectl) -> None:
    # `kubectl create configmap` builds a typed object and sends it as protobuf too
    ns = api.ns()
    r = kubectl.run("create", "configmap", "lit", "--from-literal=a=1", "--from-literal=b=2",
                    "-n", ns)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "configmap/lit created"
    cm = _get_json(kubectl, "cm", "lit", "-n", ns)
    assert cm["data"] == {"a": "1", "b": "2"}


def test_api_resources(kubectl: Kubectl) -> None:
    out = kubectl.ok("api-resources")
    rows = [ln.split() for ln in out.splitlines()]
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert ["pods", "po", "v1", "true", "Pod"] in rows
    assert ["deployments", "deploy", "apps/v1", "true", "Deployment"] in rows
    assert ["namespaces", "ns", "v1", "false", "Namespace"] in rows
    assert ["configmaps", "cm", "v1", "true", "ConfigMap"] in rows
    assert ["leases", "coordination.k8s.io/v1", "true", "Lease"] in rows
    out = kubectl.ok("api-resources", "--api-group=apps", "-o", "name")
    assert "deployments.apps" in out.split() and "pods" not in out.split()
    out = kubectl.ok("api-versions")
    assert {"v1", "apps/v1", "batch/v1", "coordination.k8s.io/v1"} <= set(out.split())


def test_get_raw(api: Api, kubectl: Kubectl) -> None:
    version = json.loads(kubectl.ok("get", "--raw", "/version"))
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.")
    pods = json.loads(kubectl.ok("get", "--raw", "/api/v1/namespaces/default/pods"))
    assert pods["kind"] == "PodList" and pods["apiVersion"] == "v1"
    assert isinstance(pods["items"], list) and pods["metadata"]["resourceVersion"]
    ns = api.ns()
    api.post(f"/api/v1/namespaces/{ns}/pods", pod("p1"))
    pods = json.loads(kubectl.ok("get", "--raw", f"/api/v1/namespaces/{ns}/pods?limit=1"))
    assert [p["metadata"]["name"] for p in pods["items"]] == ["p1"]
    r = kubectl.run("get", "--raw", "/api/v1/nope")
    assert r.returncode == 1 and "NotFound" in r.stderr


def test_get_in_empty_namespace(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    r = kubectl.run("get", "pods", "-n", ns)
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr.strip() == f"No resources found in {ns} namespace."


def test_get_missing_object_is_not_found(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    r = kubectl.run("get", "pod", "nope", "-n", ns)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    r = kubectl.run("get", "nosuchkind")
    assert r.returncode == 1
    assert 'the server doesn\'t have a resource type "nosuchkind"' in r.stderr


def test_apply_three_way_merge(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()

    def cm(data: dict[str, str]) -> str:
        lines = "".join(f"  {k}: \"{v}\"\n" for k, v in data.items())
        return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n{lines}"

    out = kubectl.ok("apply", "-f", "-", "-n", ns, "--validate=false", stdin=cm({"a": "1",
                                                                                "b": "2"}))
    assert out.strip() == "configmap/ap created"
    # a change made by someone else survives the next apply; a field dropped from the
    # manifest is removed (three-way strategic merge with last-applied-configuration)
    api.patch(f"/api/v1/namespaces/{ns}/configmaps/ap", {"data": {"other": "x"}})
    out = kubectl.ok("apply", "-f", "-", "-n", ns, "--validate=false", stdin=cm({"a": "1",
                                                                                "c": "3"}))
    assert out.strip() == "configmap/ap configured"
    got = _get_json(kubectl, "cm", "ap", "-n", ns)
    assert got["data"] == {"a": "1", "c": "3", "other": "x"}
    last = json.loads(got["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"])
    assert last["data"] == {"a": "1", "c": "3"}
    out = kubectl.ok("apply", "-f", "-", "-n", ns, "--validate=false", stdin=cm({"a": "1",
                                                                                "c": "3"}))
    assert out.strip() == "configmap/ap unchanged"


def test_describe_pod_shows_its_events(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    code, p = api.post(f"/api/v1/namespaces/{ns}/pods", pod("p", {"app": "x"}))
    assert code == 201, p
    ref = {"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": "p",
           "uid": p["metadata"]["uid"]}
    for i, (reason, msg) in enumerate((("Scheduled", "Successfully assigned to n1"),
                                       ("Pulling", 'Pulling image "nginx:1.27"'))):
        code, ev = api.post(f"/api/v1/namespaces/{ns}/events", {
            "metadata": {"name": f"p.{i}"}, "involvedObject": ref, "reason": reason,
            "message": msg, "type": "Normal", "count": 1,
            "source": {"component": "e2e"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"})
        assert code == 201, ev
    # an event about another object is not shown
    code, ev = api.post(f"/api/v1/namespaces/{ns}/events", {
        "metadata": {"name": "q.0"}, "involvedObject": {**ref, "name": "q", "uid": "u"},
        "reason": "Other", "message": "not mine", "type": "Normal"})
    assert code == 201, ev
    out = kubectl.ok("describe", "pod", "p", "-n", ns)
    assert out.splitlines()[0].split() == ["Name:", "p"]
    assert re.search(r"^Status:\s+Pending$", out, re.MULTILINE), out
    events = out[out.index("Events:"):]
    assert "Scheduled" in events and "Successfully assigned to n1" in events
    assert 'Pulling image "nginx:1.27"' in events
    assert "not mine" not in events


def test_get_pages_with_chunk_size(api: Api, kubectl: Kubectl) -> None:
    # --chunk-size=N makes kubectl page with limit=N and follow `continue` tokens
    ns = api.ns()
    for i in range(5):
        code, body = api.post(f"/api/v1/namespaces/{ns}/configmaps",
                              {"metadata": {"name": f"c{i}"}})
        assert code == 201, body
    out = kubectl.ok("get", "cm", "-n", ns, "--chunk-size=2", "-o", "name")
    assert out.split() == [f"configmap/c{i}" for i in range(5)]
    r = kubectl.run("get", "cm", "-n", ns, "--chunk-size=2", "-o", "name", "-v=6")
    assert r.returncode == 0
    pages = [ln for ln in r.stderr.splitlines() if "/configmaps?" in ln and "limit=2" in ln]
    assert len(pages) == 3 and sum("continue=" in ln for ln in pages) == 2, r.stderr
