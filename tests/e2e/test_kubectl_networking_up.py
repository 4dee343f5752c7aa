"""Issue 15 part A's acceptance on ``pykcm up``: ``kubectl apply`` of one object of each
networking, node and scheduling kind succeeds, ``kubectl get`` lists them, and a Deployment
whose pods name a PriorityClass rolls out with the class's priority on every pod
(the Priority admission of the server the simulated scheduler and kubelets then run).
The columns are compared with the real kube-apiserver's in test_kubectl_networking.py.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid

import pytest

from pykcm.testing.cluster import Cluster
from tests.e2e.cluster_helpers import rollout_status, wait_until
from tests.e2e.conftest import Kubectl, _kubectl_path
from tests.e2e.test_kubectl_networking import CLUSTER_SCOPED, KINDS, MANIFEST

pytestmark = pytest.mark.e2e

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      priorityClassName: {sfx}
      containers: [{{name: web, image: nginx}}]
"""


def test_apply_every_kind_and_a_prioritized_deployment(pykcm_cluster: Cluster) -> None:
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    k = Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": pykcm_cluster.kubeconfig_path,
                                  "KUBECACHEDIR": cache})
    sfx = f"up-{uuid.uuid4().hex[:8]}"
    try:
        out = k.ok("apply", "-f", "-", stdin=MANIFEST.format(
            sfx=sfx, ns=sfx, cidr="fd00:249::/112", ip="10.249.0.10"))
        assert out.count(" created") == 8, out
        for kind in KINDS:
            scope = ["-l", f"e2e={sfx}"] if kind in CLUSTER_SCOPED else ["-n", sfx]
            assert len(k.ok("get", kind, *scope, "--no-headers").splitlines()) == 1, kind
        wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", sfx).returncode == 0,
                   "the namespace's default ServiceAccount")
        k.ok("apply", "-f", "-", stdin=DEPLOYMENT.format(sfx=sfx, ns=sfx))
        r = rollout_status(k, sfx, "web")
        assert r.returncode == 0, r.stderr
        pods = json.loads(k.ok("get", "pods", "-n", sfx, "-o", "json"))["items"]
        assert len(pods) == 2
        assert {(p["spec"]["priorityClassName"], p["spec"]["priority"],
                 p["spec"]["preemptionPolicy"]) for p in pods} == {
            (sfx, 1000, "PreemptLowerPriority")}
    finally:
        for kind in CLUSTER_SCOPED:
            k.run("delete", kind, "-l", f"e2e={sfx}", "--wait=false")
        k.run("delete", "namespace", sfx, "--wait=false")
        shutil.rmtree(cache, ignore_errors=True)
