"""Server-side apply clients against ``pykcm up`` (issue 16's acceptance): kubectl
``apply --server-side`` (and ``--force-conflicts``) on a Deployment the controller manager
writes the status of, the official Python client's ``server_side_apply``, and kopf.

The objects carry managedFields from their creation on: a server-side apply after
``kubectl create`` conflicts with ``kubectl-create``, and the Deployment's status is owned
by ``kube-controller-manager`` through ``/status``, as on a real cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykcm.testing.cluster import Cluster
from tests.e2e.cluster_helpers import get_json, wait_until
from tests.e2e.conftest import Kubectl, _kubectl_path


@pytest.fixture(scope="module")
def up() -> Iterator[Cluster]:
    with Cluster(nodes=1) as c:
        yield c


@pytest.fixture(scope="module")
def k(up: Cluster) -> Iterator[Kubectl]:
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    yield Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": up.kubeconfig_path,
                                    "KUBECACHEDIR": cache})
    shutil.rmtree(cache, ignore_errors=True)


def _managers(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["manager"], e["operation"], e.get("subresource", ""))
            for e in obj["metadata"].get("managedFields") or []]


def test_kubectl_apply_server_side_after_kubectl_create(k: Kubectl) -> None:
    ns = f"ssa-{uuid.uuid4().hex[:6]}"
    k.ok("create", "namespace", ns)
    k.ok("create", "deployment", "web", "--image=nginx:1.27", "-n", ns)
    # the controller manager writes the status through /status
    wait_until(lambda: ("kube-controller-manager", "Update", "status") in _managers(
        get_json(k, "deployment", "web", "-n", ns, "--show-managed-fields")),
        "the controller manager's status entry")
    manifest = json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                     "containers": [{"name": "nginx", "image": "nginx:1.28"}]}}}})
    r = k.run("apply", "--server-side", "-f", "-", stdin=manifest)
    assert r.returncode != 0
    assert r.stderr.startswith('error: Apply failed with 2 conflicts: conflicts with '
                               '"kubectl-create" using apps/v1:\n- .spec.replicas\n'
                               '- .spec.template.spec.containers[name="nginx"].image\n'), r.stderr
    out = k.ok("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=manifest)
    assert "serverside-applied" in out
    obj = get_json(k, "deployment", "web", "-n", ns, "--show-managed-fields")
    assert obj["spec"]["replicas"] == 2
    assert ("kubectl", "Apply", "") in _managers(obj)
    assert ("kube-controller-manager", "Update", "status") in _managers(obj)
    # kubectl scale writes through /scale: its own entry for the replicas
    k.ok("scale", "deployment", "web", "--replicas=3", "-n", ns)
    obj = get_json(k, "deployment", "web", "-n", ns, "--show-managed-fields")
    assert ("kubectl", "Update", "scale") in _managers(obj)
    k.run("delete", "namespace", ns, "--wait=false")


def test_official_client_server_side_apply(up: Cluster) -> None:
    from kubernetes import config, dynamic
    from kubernetes.dynamic.exceptions import ConflictError

    api = config.new_client_from_config(up.kubeconfig_path)  # type: ignore[no-untyped-call]
    try:
        ns = f"ssa-{uuid.uuid4().hex[:6]}"
        dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
        dyn.resources.get(api_version="v1", kind="Namespace").create(
            body={"metadata": {"name": ns}})
        cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "cfg"}, "data": {"a": "1"}}
        out = cms.server_side_apply(body=body, field_manager="first", namespace=ns)
        assert [(m.manager, m.operation) for m in out.metadata.managedFields] == [
            ("first", "Apply")]
        body["data"]["a"] = "2"
        with pytest.raises(ConflictError):
            cms.server_side_apply(body=body, field_manager="second", namespace=ns)
        out = cms.server_side_apply(body=body, field_manager="second", namespace=ns,
                                    force_conflicts=True)
        assert out.to_dict()["data"] == {"a": "2"}
        # an update by the client's default user agent is tracked under its name
        cms.patch(name="cfg", namespace=ns, body={"data": {"b": "1"}},
                  content_type="application/merge-patch+json")
        got = cms.get(name="cfg", namespace=ns).to_dict()
        assert [m["manager"] for m in got["metadata"]["managedFields"]] == [
            "second", "OpenAPI-Generator"]
    finally:
        api.close()


OPERATOR = '''
import os
import kopf

GROUP = os.environ["KOPF_GROUP"]


@kopf.on.create(GROUP, "v1", "gadgets")
def created(spec, **_):
    return {"size": spec.get("size")}
'''


def test_kopf_operator_on_tracked_objects(up: Cluster, k: Kubectl, tmp_path: Path) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"gadgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": {
                                      "type": "object",
                                      "x-kubernetes-preserve-unknown-fields": True}}}]}}
    k.ok("apply", "--server-side", "-f", "-", stdin=json.dumps(crd))
    wait_until(lambda: k.run("get", f"gadgets.{group}").returncode == 0, "the CRD served")
    ns = f"kopf-{uuid.uuid4().hex[:6]}"
    k.ok("create", "namespace", ns)
    op = tmp_path / "operator.py"
    op.write_text(textwrap.dedent(OPERATOR))
    log_path = tmp_path / "kopf.log"
    env = {**os.environ, "KUBECONFIG": up.kubeconfig_path, "KOPF_GROUP": group}
    with open(log_path, "w") as logf:
        proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone",
                                 "--namespace", ns, str(op)], env=env, stdout=logf,
                                stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        gadget = {"apiVersion": f"{group}/v1", "kind": "Gadget",
                  "metadata": {"name": "g1", "namespace": ns}, "spec": {"size": 3}}
        k.ok("apply", "--server-side", "-f", "-", stdin=json.dumps(gadget))

        def handled() -> dict[str, Any] | None:
            o = get_json(k, f"gadgets.{group}", "g1", "-n", ns, "--show-managed-fields")
            return o if (o.get("status") or {}).get("created") == {"size": 3} else None

        obj = wait_until(handled, "kopf's handler result in the status")
        managers = _managers(obj)
        assert ("kubectl", "Apply", "") in managers
        # kopf's own writes (finalizer, status) are tracked under its user agent's name
        assert any(m == "kopf" for m, _, _ in managers), managers
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    log = log_path.read_text()
    assert "Traceback" not in log, log
