"""kubectl with default flags: CRDs and custom resources, server-side apply, edit."""

from __future__ import annotations

import json
import sys
import textwrap
import time
import uuid
from pathlib import Path

from tests.conftest import Api
from tests.e2e.conftest import Kubectl


def _crd_yaml(group: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata:
          name: gizmos.{group}
        spec:
          group: {group}
          scope: Namespaced
          names: {{plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz{group[:4]}]}}
          versions:
          - name: v1
            served: true
            storage: true
            additionalPrinterColumns:
            - {{name: Size, type: integer, jsonPath: .spec.size}}
            - {{name: Age, type: date, jsonPath: .metadata.creationTimestamp}}
            schema:
              openAPIV3Schema:
                type: object
                properties:
                  spec:
                    type: object
                    properties:
                      size: {{type: integer, minimum: 1}}
        """)


def test_apply_crd_then_custom_resource_and_get(api: Api, kubectl: Kubectl) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    out = kubectl.ok("apply", "-f", "-", stdin=_crd_yaml(group))
    assert f"customresourcedefinition.apiextensions.k8s.io/gizmos.{group} created" in out
    ns = api.ns()
    cr = f"apiVersion: {group}/v1\nkind: Gizmo\nmetadata: {{name: g1}}\nspec: {{size: 3}}\n"
    # discovery may lag one request behind in kubectl's cache: retry briefly
    for _ in range(20):
        r = kubectl.run("apply", "-n", ns, "-f", "-", stdin=cr)
        if r.returncode == 0:
            break
        time.sleep(0.2)
    assert r.returncode == 0, r.stderr
    assert f"gizmo.{group}/g1 created" in r.stdout
    rows = [ln.split() for ln in kubectl.ok("get", "gizmos", "-n", ns).splitlines()]
    assert rows[0] == ["NAME", "SIZE", "AGE"] and rows[1][:2] == ["g1", "3"]
    # schema validation through kubectl
    # only the name changes: the group itself may contain "g1" (a uuid's hex digits)
    bad = cr.replace("size: 3", "size: 0").replace("name: g1}", "name: g2}")
    r = kubectl.run("apply", "-n", ns, "-f", "-", stdin=bad)
    assert "spec.size" in r.stderr, r.stderr
    assert r.returncode == 1
    # re-apply with a change: a merge patch for custom resources
    out = kubectl.ok("apply", "-n", ns, "-f", "-", stdin=cr.replace("size: 3", "size: 5"))
    assert "configured" in out
    got = json.loads(kubectl.ok("get", f"gizmos.{group}", "g1", "-n", ns, "-o", "json"))
    assert got["spec"]["size"] == 5
    kubectl.ok("delete", "-f", "-", stdin=_crd_yaml(group))
    r = kubectl.run("get", f"gizmos.{group}", "-n", ns)
    assert r.returncode != 0


def test_server_side_apply_conflicts_and_force(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: b, c: d}\n"
    out = kubectl.ok("apply", "--server-side", "-n", ns, "-f", "-", stdin=cm)
    assert "serverside-applied" in out
    got = json.loads(kubectl.ok("get", "configmap", "ssa", "-n", ns, "-o", "json",
                                "--show-managed-fields"))
    assert [(e["manager"], e["operation"], e["fieldsV1"])
            for e in got["metadata"]["managedFields"]] == [
        ("kubectl", "Apply", {"f:data": {"f:a": {}, "f:c": {}}})]
    other = cm.replace("a: b", "a: other")
    r = kubectl.run("apply", "--server-side", "--field-manager=tool", "-n", ns, "-f", "-",
                    stdin=other)
    assert r.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.a' in r.stderr
    kubectl.ok("apply", "--server-side", "--field-manager=tool", "--force-conflicts", "-n", ns,
               "-f", "-", stdin=other)
    # kubectl stops applying a and c: both stay, tool (forced) applied them too
    kubectl.ok("apply", "--server-side", "-n", ns, "-f", "-",
               stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {}\n")
    got = json.loads(kubectl.ok("get", "configmap", "ssa", "-n", ns, "-o", "json"))
    assert got["data"] == {"a": "other", "c": "d"}
    # a custom resource through the same path
    group = f"ssa{uuid.uuid4().hex[:6]}.example.com"
    kubectl.ok("apply", "-f", "-", stdin=_crd_yaml(group))
    cr = f"apiVersion: {group}/v1\nkind: Gizmo\nmetadata: {{name: g}}\nspec: {{size: 3}}\n"
    deadline = time.monotonic() + 30
    while kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", stdin=cr).returncode:
        assert time.monotonic() < deadline, "the CRD was never served"
        time.sleep(0.3)
    got = json.loads(kubectl.ok("get", f"gizmos.{group}", "g", "-n", ns, "-o", "json",
                                "--show-managed-fields"))
    assert got["spec"]["size"] == 3
    assert got["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"f:size": {}}}


def test_edit_with_an_editor_script(api: Api, kubectl: Kubectl, tmp_path: Path) -> None:
    ns = api.ns()
    kubectl.ok("create", "configmap", "ed", "--from-literal=color=red", "-n", ns)
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[-1]\ns = open(p).read()\n"
                      "open(p, 'w').write(s.replace('color: red', 'color: green'))\n")
    env = dict(kubectl.env)
    env["KUBE_EDITOR"] = f"{sys.executable} {editor}"
    env.pop("EDITOR", None)
    import subprocess

    r = subprocess.run([kubectl.binary, "edit", "configmap", "ed", "-n", ns,
                        "--request-timeout=20s"], env=env, capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert "configmap/ed edited" in r.stdout
    got = json.loads(kubectl.ok("get", "cm", "ed", "-n", ns, "-o", "json"))
    assert got["data"] == {"color": "green"}


def test_get_wide_columns(api: Api, kubectl: Kubectl) -> None:
    ns = api.ns()
    kubectl.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "-n", ns)
    kubectl.ok("run", "p", "--image=busybox", "-n", ns)
    rows = [ln.split() for ln in kubectl.ok("get", "deploy", "-o", "wide", "-n", ns)
            .splitlines()]
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS",
                       "IMAGES", "SELECTOR"]
    assert rows[1][0] == "web" and rows[1][5:] == ["nginx", "nginx:1.27", "app=web"]
    header = kubectl.ok("get", "pods", "-o", "wide", "-n", ns).splitlines()[0].split()
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                      "NOMINATED", "NODE", "READINESS", "GATES"]
