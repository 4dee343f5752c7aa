"""StatefulSets end to end with the real kubectl (issue 13's acceptance).

Runs on ``pykcm up``, on pykcm's manager with ``pykcm sim`` on the real
kube-apiserver, and on the real kube-controller-manager on pykcm's API server (its
StatefulSet controller and binder need the claims and classes pykcm's server serves).

The set has a volumeClaimTemplate: its claims get the default StorageClass
``standard`` (the simulator's), the simulated provisioner makes their volumes, pykcm's
binder binds them, and each pod waits in ContainerCreating until its claim is Bound.
A set of 3 comes up in ordinal order (each pod created once its predecessor is Ready),
``kubectl rollout status`` waits for it, ``kubectl scale`` removes the highest ordinal
first, an image change with a partition replaces pods from the highest ordinal down to
the partition, and ``kubectl rollout undo`` goes back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykcm.testing.cluster import Cluster
from pykcm.testing.upstream import KubeCluster
from tests.e2e.cluster_helpers import READY_AFTER, Watch, get_json, items, wait_until
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

NS_PREFIX = "sts"


@pytest.fixture(scope="session", params=["pykcm", pytest.param("kube-apiserver",
                                                               marks=pytest.mark.upstream),
                                        pytest.param("kube-controller-manager",
                                                     marks=pytest.mark.upstream)])
def cluster(request: pytest.FixtureRequest) -> Cluster | KubeCluster:
    """conftest's clusters (see the module docstring)."""
    name = {"pykcm": "pykcm_cluster", "kube-apiserver": "kube_cluster",
            "kube-controller-manager": "kube_manager_cluster"}[request.param]
    c: Cluster | KubeCluster = request.getfixturevalue(name)
    return c


def stateful_set_json(name: str, *, claims: bool, image: str = "nginx:1.27") -> str:
    spec: dict[str, Any] = {
        "replicas": 3, "serviceName": name, "selector": {"matchLabels": {"app": name}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "template": {"metadata": {"labels": {"app": name}, "annotations": {READY_AFTER: "0.3"}},
                     "spec": {"containers": [{"name": "app", "image": image}],
                              "terminationGracePeriodSeconds": 0}}}
    if claims:
        spec["volumeClaimTemplates"] = [{
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}]
    return json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet",
                       "metadata": {"name": name}, "spec": spec})


def is_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def images(k: Kubectl, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
            for p in items(k, ns, "pods", "-l", "app=web")
            if not p["metadata"].get("deletionTimestamp")}


def rollout_status(k: Kubectl, ns: str) -> None:
    r = k.run("rollout", "status", "statefulset/web", "-n", ns, "--timeout=120s", timeout=150)
    assert r.returncode == 0, r.stderr


def test_ordered_creation_scale_down_partitioned_update_and_undo(
        kubectl_up: Kubectl, ns: str, cluster: Cluster | KubeCluster,
        watches: list[Watch]) -> None:
    k = kubectl_up
    created_after_ready: list[tuple[str, list[str]]] = []

    def on_event(store: dict[str, dict[str, Any]], etype: str, obj: dict[str, Any]) -> None:
        if etype == "ADDED":
            ready = sorted(n for n, p in store.items() if is_ready(p))
            created_after_ready.append((obj["metadata"]["name"], ready))

    w = Watch(k, ns, "pods", on_event=on_event)
    watches.append(w)
    k.ok("apply", "-n", ns, "-f", "-", stdin=stateful_set_json("web", claims=True))
    rollout_status(k, ns)
    w.wait_for(lambda s: len(s) == 3 and all(is_ready(p) for p in s.values()), "3 ready pods")
    # OrderedReady: each pod appears only once every lower ordinal is Ready
    assert created_after_ready == [("web-0", []), ("web-1", ["web-0"]),
                                   ("web-2", ["web-0", "web-1"])]
    pod = get_json(k, "pod", "web-1", "-n", ns)
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-1", "web")
    assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    pvcs = {c["metadata"]["name"]: c for c in items(k, ns, "persistentvolumeclaims")}
    assert sorted(pvcs) == ["data-web-0", "data-web-1", "data-web-2"]
    assert {c["status"]["phase"] for c in pvcs.values()} == {"Bound"}
    assert {c["spec"]["storageClassName"] for c in pvcs.values()} == {"standard"}
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}} in \
        pod["spec"]["volumes"]
    volumes = {v["spec"]["claimRef"]["name"]: v for v in get_json(k, "pv")["items"]
               if (v["spec"].get("claimRef") or {}).get("namespace") == ns}
    assert sorted(volumes) == sorted(pvcs)
    assert {v["status"]["phase"] for v in volumes.values()} == {"Bound"}
    header = k.ok("get", "pvc", "-n", ns).splitlines()[0].split()
    assert header == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES",
                      "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"]

    k.ok("scale", "statefulset/web", "--replicas=2", "-n", ns)
    wait_until(lambda: sorted(images(k, ns)) == ["web-0", "web-1"], "web-2 removed")
    k.ok("scale", "statefulset/web", "--replicas=3", "-n", ns)
    rollout_status(k, ns)

    k.ok("patch", "statefulset/web", "-n", ns, "-p",
         json.dumps({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}}))
    k.ok("set", "image", "statefulset/web", "app=nginx:1.28", "-n", ns)
    rollout_status(k, ns)  # done once every pod at or above the partition is updated
    wait_until(lambda: images(k, ns) == {"web-0": "nginx:1.27", "web-1": "nginx:1.28",
                                         "web-2": "nginx:1.28"}, "web-1 and web-2 updated")
    deleted = [obj["metadata"]["name"] for etype, obj in w.events if etype == "DELETED"]
    assert deleted[-2:] == ["web-2", "web-1"]  # highest ordinal first
    st = get_json(k, "statefulset", "web", "-n", ns)["status"]
    assert st["currentRevision"] != st["updateRevision"] and st["updatedReplicas"] == 2

    k.ok("patch", "statefulset/web", "-n", ns, "-p",
         json.dumps({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}))
    rollout_status(k, ns)
    wait_until(lambda: set(images(k, ns).values()) == {"nginx:1.28"}, "all updated")
    history = k.ok("rollout", "history", "statefulset/web", "-n", ns)
    assert [ln.split()[0] for ln in history.splitlines()[2:] if ln.strip()] == ["1", "2"]
    k.ok("rollout", "undo", "statefulset/web", "-n", ns)
    rollout_status(k, ns)
    wait_until(lambda: set(images(k, ns).values()) == {"nginx:1.27"} and len(images(k, ns)) == 3,
               "back on nginx:1.27")
    revisions = sorted(r["revision"] for r in items(k, ns, "controllerrevisions"))
    assert revisions == [2, 3]
    st = get_json(k, "statefulset", "web", "-n", ns)["status"]
    assert st["currentRevision"] == st["updateRevision"]
