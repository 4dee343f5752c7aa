"""Issue 12's acceptance with the real kubectl: a new namespace is usable, pods get their
service-account token volume, ``kubectl expose`` gets Endpoints and EndpointSlices that
follow the pods, ``kubectl create token`` gives a token that authenticates.

Runs on each cluster of conftest's ``cluster``: ``pykcm up``; pykcm's controller manager
and ``pykcm sim`` on the real kube-apiserver, with no other manager running these
controllers (the support manager leaves every controller pykcm has to it); the real
kube-controller-manager on pykcm's API server. ``--use-service-account-credentials`` is
checked on the real API server, whose RBAC bootstrap policy gives each controller's
ServiceAccount its role.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

import pytest

from pykcm.testing.cluster import Cluster
from pykcm.testing.upstream import KubeCluster
from tests.e2e.cluster_helpers import NotYet, get_json, items, rollout_status, wait_until
from tests.e2e.conftest import Kubectl, _kubectl_path

pytestmark = pytest.mark.e2e

NS_PREFIX = "svc"


def test_new_namespace_has_default_account_and_root_ca(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", ns).returncode == 0,
               "the default ServiceAccount")
    cm = wait_until(lambda: k.run("get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", "json"
                                  ).stdout, "kube-root-ca.crt")
    cm = json.loads(cm)
    assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith(
        "Contains a CA bundle that can be used to verify the kube-apiserver")


def _pod_ips(k: Kubectl, ns: str) -> tuple[set[str], set[str]]:
    ready, not_ready = set(), set()
    for p in items(k, ns, "pods", "-l", "app=web"):
        ip = (p.get("status") or {}).get("podIP")
        if not ip or p["metadata"].get("deletionTimestamp"):
            continue
        conds = {c["type"]: c["status"] for c in p["status"].get("conditions") or []}
        (ready if conds.get("Ready") == "True" else not_ready).add(ip)
    return ready, not_ready


def _endpoints(k: Kubectl, ns: str) -> tuple[set[str], set[str]] | None:
    r = k.run("get", "endpoints", "web", "-n", ns, "-o", "json")
    if r.returncode:
        return None
    subsets = json.loads(r.stdout).get("subsets") or []
    return ({a["ip"] for s in subsets for a in s.get("addresses") or []},
            {a["ip"] for s in subsets for a in s.get("notReadyAddresses") or []})


def _slices(k: Kubectl, ns: str) -> tuple[set[str], set[str]]:
    ready, not_ready = set(), set()
    for s in items(k, ns, "endpointslices", "-l", "kubernetes.io/service-name=web"):
        for e in s.get("endpoints") or []:
            (ready if e["conditions"].get("ready") else not_ready).update(e["addresses"])
    return ready, not_ready


def _follows_pods(k: Kubectl, ns: str, slices: bool, n_ready: int, n_not_ready: int) -> Any:
    want = _pod_ips(k, ns)
    if (len(want[0]), len(want[1])) != (n_ready, n_not_ready):
        return NotYet(("pods", want))
    got = _endpoints(k, ns)
    if got != want:
        return NotYet(("endpoints", got, want))
    if slices and _slices(k, ns) != want:
        return NotYet(("slices", _slices(k, ns), want))
    return want


def test_expose_gets_endpoints_that_follow_the_pods(kubectl_up: Kubectl,
                                                    cluster: Cluster | KubeCluster,
                                                    ns: str) -> None:
    k = kubectl_up
    slices = True  # both API servers serve discovery.k8s.io/v1 EndpointSlices
    k.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=80",
         "-n", ns)
    assert rollout_status(k, ns, "web").returncode == 0
    # ServiceAccount admission: the default account and its projected token in each pod
    pod = items(k, ns, "pods", "-l", "app=web")[0]
    assert pod["spec"]["serviceAccountName"] == "default"
    [vol] = [v for v in pod["spec"]["volumes"] if v["name"].startswith("kube-api-access-")]
    sources = vol["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert {"name": vol["name"], "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"} in \
        pod["spec"]["containers"][0]["volumeMounts"]
    k.ok("expose", "deployment", "web", "--port=80", "-n", ns)
    wait_until(lambda: _follows_pods(k, ns, slices, 3, 0), "3 ready addresses")
    ep = get_json(k, "endpoints", "web", "-n", ns)
    assert ep["metadata"]["labels"]["endpoints.kubernetes.io/managed-by"] == "endpoint-controller"
    assert ep["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    if slices:
        [s] = items(k, ns, "endpointslices", "-l", "kubernetes.io/service-name=web")
        assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
            "endpointslice-controller.k8s.io"
        assert s["metadata"]["ownerReferences"][0]["kind"] == "Service"
    # a pod that never becomes ready: listed, as not ready
    k.ok("run", "late", "--image=nginx:1.27", "--labels=app=web", "-n", ns,
         "--annotations=sim.pykcm.io/never-ready=true")
    wait_until(lambda: _follows_pods(k, ns, slices, 3, 1), "a not-ready address")
    # pods go
    k.ok("scale", "deployment", "web", "--replicas=1", "-n", ns)
    wait_until(lambda: _follows_pods(k, ns, slices, 1, 1), "one ready address left")
    k.ok("delete", "service", "web", "-n", ns)
    wait_until(lambda: _endpoints(k, ns) is None and not (slices and any(_slices(k, ns))),
               "the Endpoints and slices gone with the Service")


def test_create_token_authenticates(kubectl_up: Kubectl, ns: str) -> None:
    """``kubectl create token default``: a TokenRequest token the API server authenticates as
    the account (``kubectl auth whoami`` is a SelfSubjectReview)."""
    k = kubectl_up
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", ns).returncode == 0,
               "the default ServiceAccount")
    token = k.ok("create", "token", "default", "-n", ns, "--duration=20m").strip()
    assert token.count(".") == 2
    who = json.loads(k.ok("auth", "whoami", "-o", "json", f"--token={token}"))
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:default"
    assert who["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
    r = k.run("auth", "whoami", "--token=" + token[:-4] + "AAAA")
    assert r.returncode != 0 and "Unauthorized" in r.stderr


def test_kubernetes_service_has_the_api_servers_endpoints(
        kubectl_up: Kubectl, cluster: Cluster | KubeCluster) -> None:
    """The API server keeps default/kubernetes' Endpoints and EndpointSlice: its address and
    port (the kit's kube-apiserver advertises 127.0.0.1, which Endpoints refuse: none)."""
    k = kubectl_up
    if getattr(cluster, "apiserver_kind", "pykcm") == "kube":
        assert k.run("get", "endpoints", "kubernetes", "-n", "default").returncode != 0
        return
    port = int(cluster.url.rsplit(":", 1)[1])
    ep = get_json(k, "endpoints", "kubernetes", "-n", "default")
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    [subset] = ep["subsets"]
    assert subset["ports"] == [{"name": "https", "port": port, "protocol": "TCP"}]
    [address] = subset["addresses"]
    eps = get_json(k, "endpointslices", "kubernetes", "-n", "default")
    assert eps["endpoints"] == [{"addresses": [address["ip"]], "conditions": {"ready": True}}]
    assert eps["ports"] == [{"name": "https", "protocol": "TCP", "port": port}]
    svc = get_json(k, "service", "kubernetes", "-n", "default")
    assert svc["spec"]["ports"][0]["targetPort"] == port


@pytest.mark.upstream
def test_controllers_with_their_service_account_credentials(kube_cluster: KubeCluster) -> None:
    """pykcm's manager with --use-service-account-credentials on the real kube-apiserver:
    each controller's ServiceAccount exists in kube-system and its RBAC role suffices."""
    c = kube_cluster
    c.manager_flags = ["--use-service-account-credentials"]
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    k = Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": c.kubeconfig_path,
                                  "KUBECACHEDIR": cache})
    try:
        c.start_manager(manager="pykcm", controllers="*")
        for account in ("replicaset-controller", "deployment-controller",
                        "service-account-controller", "endpoint-controller",
                        "endpointslice-controller", "root-ca-cert-publisher"):
            wait_until(lambda a=account: k.run("get", "serviceaccount", a, "-n", "kube-system"
                                               ).returncode == 0, f"ServiceAccount {account}")
        k.ok("create", "namespace", "sa-creds")
        wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", "sa-creds"
                                 ).returncode == 0, "the default ServiceAccount")
        k.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80",
             "-n", "sa-creds")
        assert rollout_status(k, "sa-creds", "web").returncode == 0
        k.ok("expose", "deployment", "web", "--port=80", "-n", "sa-creds")
        wait_until(lambda: _follows_pods(k, "sa-creds", True, 2, 0), "2 ready addresses")
        # no RBAC refusal of a controller's account
        log = c.log("controller-manager")
        assert 'User "system:serviceaccount:kube-system:' not in log, log[-3000:]
    finally:
        k.run("delete", "namespace", "sa-creds", "--wait=false")
        c.manager_flags = []
        c.start_manager(manager="pykcm", controllers="*")
        shutil.rmtree(cache, ignore_errors=True)
