"""Deployments end to end: the real kubectl against ``pykcm up`` (issue 6's acceptance).

One ``pykcm up`` (API server, 3 simulated nodes, every built-in controller at
kube-controller-manager's QPS 20 / burst 30) serves the module; each test
works in a namespace of its own. Pods are scripted through the simulator's
annotations on the pod template (``sim.pykcm.io/ready-after-seconds``,
``sim.pykcm.io/never-ready``) so that rollouts take long enough to be watched.

Nothing here asserts how long anything takes: times are only upper bounds on
waits (``kubectl rollout status --timeout``, :meth:`Watch.wait_for`).
Where a number is asserted (ReplicaSet sizes after proportional scaling, the
surge and availability bounds), it is the one kube-controller-manager v1.36's
pkg/controller/deployment computes for the same inputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from pykcm.testing.cluster import Cluster
from tests.e2e.cluster_helpers import (
    READY_AFTER,
    NotYet,
    Watch,
    condition,
    controller_ref,
    get_json,
    is_active,
    is_ready,
    items,
    rollout_status,
    wait_until,
)
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

NEVER_READY = "sim.pykcm.io/never-ready"
HASH_LABEL = "pod-template-hash"
NS_PREFIX = "deploy"
"""Prefix of the names of the tests' namespaces (conftest's ``ns`` fixture)."""


# -- helpers ---------------------------------------------------------------------------------

def deployment_yaml(name: str, *, replicas: int, image: str = "nginx:1.27",
                    ready_after: float | None = None, never_ready: bool = False,
                    strategy: dict[str, Any] | None = None,
                    progress_deadline: int | None = None) -> str:
    """A Deployment selecting ``app=<name>``, as JSON (which is YAML for kubectl)."""
    ann: dict[str, str] = {}
    if ready_after is not None:
        ann[READY_AFTER] = str(ready_after)
    if never_ready:
        ann[NEVER_READY] = "true"
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}, "annotations": ann},
            "spec": {"containers": [{"name": "app", "image": image}]},
        },
    }
    if strategy is not None:
        spec["strategy"] = strategy
    if progress_deadline is not None:
        spec["progressDeadlineSeconds"] = progress_deadline
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": name}, "spec": spec})


def rolling(max_surge: int | str, max_unavailable: int | str) -> dict[str, Any]:
    return {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}}


def assert_rolled_out(k: Kubectl, ns: str, name: str) -> None:
    r = rollout_status(k, ns, name)
    assert r.returncode == 0, f"rollout status rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    assert f'deployment "{name}" successfully rolled out' in r.stdout


def replica_sets(k: Kubectl, ns: str, app: str) -> list[dict[str, Any]]:
    return items(k, ns, "replicasets", "-l", f"app={app}")


def rs_sizes_by_image(k: Kubectl, ns: str, app: str) -> dict[str, int]:
    return {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
            for rs in replica_sets(k, ns, app)}


def pods(k: Kubectl, ns: str, app: str) -> list[dict[str, Any]]:
    return items(k, ns, "pods", "-l", f"app={app}")


def create_and_roll_out(k: Kubectl, ns: str, manifest: str, name: str) -> dict[str, Any]:
    out = k.ok("apply", "-n", ns, "-f", "-", stdin=manifest)
    assert out.strip() == f"deployment.apps/{name} created"
    assert_rolled_out(k, ns, name)
    return get_json(k, "deployment", name, "-n", ns)


def replay_in_resource_version_order(*ws: Watch) -> list[tuple[str, str, dict[str, Any]]]:
    """The events of several watches as one history: (kind of watch, type, object) by resourceVersion.

    Each watch alone is ordered; together they are ordered by the API
    server's resourceVersions, which this server (as etcd) draws from one
    increasing counter. Replayed after the fact, once every event is in.
    """
    merged = [(int(obj["metadata"]["resourceVersion"]), i, w.resource, etype, obj)
              for i, w in enumerate(ws) for etype, obj in list(w.events)]
    merged.sort(key=lambda e: (e[0], e[1]))
    return [(kind, etype, obj) for _, _, kind, etype, obj in merged]


# -- tests -----------------------------------------------------------------------------------

def test_apply_five_replicas_and_rollout_status(kubectl_up: Kubectl, ns: str) -> None:
    """apply a 5-replica Deployment; `kubectl rollout status` succeeds; status as upstream."""
    k = kubectl_up
    d = create_and_roll_out(k, ns, deployment_yaml("web", replicas=5, ready_after=0.5), "web")
    st = d["status"]
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert st["observedGeneration"] == d["metadata"]["generation"]
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"],
            st["availableReplicas"]) == (5, 5, 5, 5)
    assert not st.get("unavailableReplicas")
    avail, prog = condition(d, "Available"), condition(d, "Progressing")
    assert avail is not None and (avail["status"], avail["reason"]) == (
        "True", "MinimumReplicasAvailable")
    assert prog is not None and (prog["status"], prog["reason"]) == (
        "True", "NewReplicaSetAvailable")
    [rs] = replica_sets(k, ns, "web")
    h = rs["metadata"]["labels"][HASH_LABEL]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert prog["message"] == f'ReplicaSet "web-{h}" has successfully progressed.'
    ref = controller_ref(rs)
    assert ref is not None and (ref["kind"], ref["name"], ref["uid"]) == (
        "Deployment", "web", d["metadata"]["uid"])
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
    # maxSurge 25% of 5 rounds up to 2
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "7"
    ps = pods(k, ns, "web")
    assert len(ps) == 5 and all(is_ready(p) and p["spec"].get("nodeName") for p in ps)
    assert all(p["metadata"]["labels"][HASH_LABEL] == h for p in ps)
    assert all((controller_ref(p) or {}).get("uid") == rs["metadata"]["uid"] for p in ps)


def test_set_image_stays_within_max_surge_and_max_unavailable(
        kubectl_up: Kubectl, cluster: Cluster, ns: str, watches: list[Watch]) -> None:
    """`kubectl set image` rolls out within maxSurge and maxUnavailable, seen by real watches.

    Strategy maxSurge 25% and maxUnavailable 25% of 5 replicas: 2 (rounded up)
    and 1 (rounded down). Watches on the pods, the ReplicaSets and the
    Deployment cover the whole rollout; the pods and ReplicaSets histories
    are then replayed as one, in resourceVersion order. What upstream
    guarantees, and so what is asserted at every step:

    * Surge. rolling.go's reconcileNewReplicaSet (util.NewRSNewReplicas)
      lets the new ReplicaSet grow only up to ``replicas + maxSurge`` minus
      the sum of every ReplicaSet's ``spec.replicas``: the invariant is on
      that sum, and it is what upstream's own e2e check
      (test/utils/deployment.go, "total pods created: %d, more than the max
      allowed") asserts. Pods follow their ReplicaSets through the
      ReplicaSet controller, which creates a pod only while its ReplicaSet
      has fewer active pods than ``spec.replicas`` but deletes the pods of a
      scaled-down ReplicaSet in its own time: so every pod is *created*
      within its ReplicaSet's size (checked at each ADDED), and pods beyond
      ``replicas + maxSurge`` that are not being deleted can only be old
      pods already given up by their ReplicaSet, awaiting deletion (the sum
      of ``min(active pods, spec.replicas)`` over the ReplicaSets stays
      within the bound; pods with a deletionTimestamp, or terminal, are not
      counted, as the ReplicaSet controller does not count them).
    * Availability. reconcileOldReplicaSets scales old ReplicaSets down only
      by what is available beyond ``replicas - maxUnavailable``, and the
      ReplicaSet controller deletes not-ready pods first: the pods Ready and
      not being deleted (minReadySeconds 0: Ready is available) never drop
      below ``replicas - maxUnavailable``, nor does the Deployment's
      ``status.availableReplicas`` (upstream's e2e check).
    * No failed sync: a stale old ReplicaSet status (more available pods
      than its new ``spec.replicas``, until the ReplicaSet controller
      catches up) is not an error upstream (reconcileOldReplicaSets returns
      ``false, nil`` when cleanupUnhealthyReplicas refuses), so the
      controller manager logs no "got invalid request to scale down" for it.
    """
    k = kubectl_up
    replicas, max_surge, max_unavailable = 5, 2, 1
    d = create_and_roll_out(
        k, ns, deployment_yaml("web", replicas=replicas, ready_after=1.0,
                               strategy=rolling("25%", "25%")), "web")
    initial = {p["metadata"]["name"] for p in pods(k, ns, "web")}
    assert len(initial) == replicas
    d_available: list[int] = []

    def on_deployment(store: dict[str, dict[str, Any]], etype: str, obj: dict[str, Any]) -> None:
        d_available.append(int((obj.get("status") or {}).get("availableReplicas") or 0))

    pw = Watch(k, ns, "pods", "-l", "app=web")
    watches.append(pw)
    rw = Watch(k, ns, "replicasets", "-l", "app=web")
    watches.append(rw)
    dw = Watch(k, ns, "deployments", on_event=on_deployment)
    watches.append(dw)
    pw.wait_for(lambda s: initial <= set(s), "the initial pods in the pods watch")
    rw.wait_for(lambda s: len(s) == 1, "the ReplicaSet in the ReplicaSets watch")
    dw.wait_for(lambda s: "web" in s, "the Deployment in the Deployments watch")

    out = k.ok("set", "image", "deployment/web", "app=nginx:1.28", "-n", ns)
    assert out.strip() == "deployment.apps/web image updated"
    assert_rolled_out(k, ns, "web")

    def done(store: dict[str, dict[str, Any]]) -> bool:
        return (len(store) == replicas and not (initial & set(store))
                and all(is_ready(p) and is_active(p) for p in store.values()))

    pw.wait_for(done, "5 new ready pods and no old pod")
    rw.wait_for(lambda s: sorted(rs["spec"]["replicas"] for rs in s.values()) == [0, replicas]
                and all(rs["status"].get("replicas", 0) == rs["spec"]["replicas"]
                        for rs in s.values()), "the old ReplicaSet at 0, the new one at 5")
    for w in (pw, rw, dw):
        w.stop()

    pods_now: dict[str, dict[str, Any]] = {}
    rss_now: dict[str, dict[str, Any]] = {}   # by uid
    baseline = False
    max_rs_sum, max_active, max_wanted, min_available = 0, 0, 0, replicas
    for kind, etype, obj in replay_in_resource_version_order(pw, rw):
        store: dict[str, dict[str, Any]] = pods_now if kind == "pods" else rss_now
        key = obj["metadata"]["name"] if kind == "pods" else obj["metadata"]["uid"]
        if etype == "DELETED":
            store.pop(key, None)
        else:
            store[key] = obj
        step = f"after {etype} {kind} {obj['metadata']['name']} " \
               f"(resourceVersion {obj['metadata']['resourceVersion']})"
        rs_sum = sum(rs["spec"]["replicas"] for rs in rss_now.values())
        max_rs_sum = max(max_rs_sum, rs_sum)
        assert rs_sum <= replicas + max_surge, (
            f"ReplicaSets sized {rs_sum} > {replicas} + {max_surge} {step}: "
            f"{ {rs['metadata']['name']: rs['spec']['replicas'] for rs in rss_now.values()} }")
        active_by_rs: dict[str, int] = {}
        active = [p for p in pods_now.values() if is_active(p)]
        for p in active:
            uid = (controller_ref(p) or {}).get("uid", "")
            active_by_rs[uid] = active_by_rs.get(uid, 0) + 1
        wanted = sum(min(n, rss_now[uid]["spec"]["replicas"]) if uid in rss_now else n
                     for uid, n in active_by_rs.items())
        max_active, max_wanted = max(max_active, len(active)), max(max_wanted, wanted)
        assert wanted <= replicas + max_surge, f"{wanted} pods wanted by their ReplicaSets {step}"
        if kind == "pods" and etype == "ADDED" and baseline:
            owner = (controller_ref(obj) or {}).get("uid", "")
            assert owner in rss_now, f"a pod of an unknown ReplicaSet {step}"
            assert active_by_rs[owner] <= rss_now[owner]["spec"]["replicas"], (
                f"pod created beyond its ReplicaSet's {rss_now[owner]['spec']['replicas']} "
                f"replicas {step}")
        if not baseline:
            # The initial listings come first: bound availability from the full start state.
            baseline = initial <= set(pods_now) and len(rss_now) == 1
            continue
        available = [p for p in active if is_ready(p)]
        min_available = min(min_available, len(available))
        assert len(available) >= replicas - max_unavailable, (
            f"{len(available)} available pods < {replicas} - {max_unavailable} {step}")
    assert baseline
    # the rollout went through the surge: new pods started before old ones went
    assert max_rs_sum == replicas + max_surge
    assert min_available >= replicas - max_unavailable
    assert d_available and min(d_available) >= replicas - max_unavailable, d_available
    images = {p["spec"]["containers"][0]["image"] for p in pods_now.values()}
    assert images == {"nginx:1.28"} and len(pods_now) == replicas
    d2 = get_json(k, "deployment", "web", "-n", ns)
    assert d2["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert d2["metadata"]["uid"] == d["metadata"]["uid"]
    assert rs_sizes_by_image(k, ns, "web") == {"nginx:1.27": 0, "nginx:1.28": 5}
    failed = [ln for ln in cluster.log("controller-manager").splitlines()
              if f"error syncing {ns}/web" in ln and "got invalid request to scale down" in ln]
    assert failed == [], f"{len(failed)} failed syncs of the Deployment, e.g. {failed[0]}"


def test_rollout_undo_restores_previous_template(kubectl_up: Kubectl, ns: str) -> None:
    """`kubectl rollout undo` goes back to the previous template (its ReplicaSet reused)."""
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml("web", replicas=3, ready_after=0.3), "web")
    [rs1] = replica_sets(k, ns, "web")
    k.ok("set", "image", "deployment/web", "app=nginx:1.28", "-n", ns)
    assert_rolled_out(k, ns, "web")
    hist = k.ok("rollout", "history", "deployment/web", "-n", ns)
    assert [ln.split()[0] for ln in hist.splitlines()[2:] if ln.strip()] == ["1", "2"]
    rev1 = k.ok("rollout", "history", "deployment/web", "-n", ns, "--revision=1")
    assert "nginx:1.27" in rev1

    out = k.ok("rollout", "undo", "deployment/web", "-n", ns)
    assert out.strip() == "deployment.apps/web rolled back"
    assert_rolled_out(k, ns, "web")
    d = get_json(k, "deployment", "web", "-n", ns)
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    rss = {rs["metadata"]["name"]: rs for rs in replica_sets(k, ns, "web")}
    assert len(rss) == 2
    # the old ReplicaSet is the new one again, with its revision moved to 3
    back = rss[rs1["metadata"]["name"]]
    assert back["metadata"]["uid"] == rs1["metadata"]["uid"]
    assert back["spec"]["replicas"] == 3
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert back["metadata"]["annotations"].get(
        "deployment.kubernetes.io/revision-history") == "1"
    other = next(rs for n, rs in rss.items() if n != rs1["metadata"]["name"])
    assert other["spec"]["replicas"] == 0
    ps = wait_until(lambda: [p for p in pods(k, ns, "web") if is_active(p)] if all(
        p["spec"]["containers"][0]["image"] == "nginx:1.27" for p in pods(k, ns, "web")
    ) else None, "only pods of the restored template")
    assert len(ps) == 3
    hist = k.ok("rollout", "history", "deployment/web", "-n", ns)
    assert [ln.split()[0] for ln in hist.splitlines()[2:] if ln.strip()] == ["2", "3"]


def test_rollout_pause_and_resume(kubectl_up: Kubectl, ns: str, watches: list[Watch]) -> None:
    """`kubectl rollout pause`: template changes wait (scaling does not); `resume` rolls them out.

    Upstream's checkPausedConditions writes Progressing Unknown
    DeploymentPaused on pause and DeploymentResumed on resume (the latter
    replaced by the rollout's own reasons in the same sync, so it is looked
    for on a watch of the Deployment).
    """
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml("web", replicas=3, ready_after=0.3), "web")
    assert k.ok("rollout", "pause", "deployment/web", "-n", ns).strip() == \
        "deployment.apps/web paused"
    k.ok("set", "image", "deployment/web", "app=nginx:1.28", "-n", ns)

    def paused_observed(replicas: int) -> Callable[[], Any]:
        def check() -> Any:
            d = get_json(k, "deployment", "web", "-n", ns)
            c = condition(d, "Progressing")
            ok = (d["status"].get("observedGeneration") == d["metadata"]["generation"]
                  and d["status"].get("replicas") == replicas and c is not None
                  and (c["status"], c["reason"]) == ("Unknown", "DeploymentPaused"))
            return d if ok else NotYet(d.get("status"))
        return check

    d = wait_until(paused_observed(3), "the paused Deployment's new generation observed")
    assert d["spec"]["paused"] is True
    assert condition(d, "Progressing")["message"] == "Deployment is paused"  # type: ignore[index]
    # observed while paused: no new ReplicaSet, no new pod
    assert rs_sizes_by_image(k, ns, "web") == {"nginx:1.27": 3}
    assert {p["spec"]["containers"][0]["image"] for p in pods(k, ns, "web")} == {"nginx:1.27"}
    r = k.run("rollout", "status", "deployment/web", "-n", ns, "--watch=false")
    assert r.returncode == 0 and "0 out of 3 new replicas have been updated" in r.stdout, r
    # a paused Deployment still scales (upstream's sync: scale only), its template unchanged
    k.ok("scale", "deployment/web", "--replicas=4", "-n", ns)
    wait_until(paused_observed(4), "the paused Deployment scaled to 4")
    assert rs_sizes_by_image(k, ns, "web") == {"nginx:1.27": 4}

    dw = Watch(k, ns, "deployments")
    watches.append(dw)
    dw.wait_for(lambda s: "web" in s, "the Deployment in the watch")
    assert k.ok("rollout", "resume", "deployment/web", "-n", ns).strip() == \
        "deployment.apps/web resumed"
    assert_rolled_out(k, ns, "web")
    d = get_json(k, "deployment", "web", "-n", ns)
    assert not d["spec"].get("paused")
    c = condition(d, "Progressing")
    assert c is not None and (c["status"], c["reason"]) == ("True", "NewReplicaSetAvailable")
    assert rs_sizes_by_image(k, ns, "web") == {"nginx:1.27": 0, "nginx:1.28": 4}
    dw.wait_for(lambda s: s["web"]["metadata"]["resourceVersion"] ==
                d["metadata"]["resourceVersion"], "the watch up to the rolled out Deployment")
    seen = [(c["status"], c["reason"], c["message"]) for _, obj in dw.events
            for c in (obj.get("status") or {}).get("conditions") or []
            if c["type"] == "Progressing"]
    assert ("Unknown", "DeploymentResumed", "Deployment is resumed") in seen, seen


def test_scale_mid_rollout_is_proportional(kubectl_up: Kubectl, ns: str) -> None:
    """`kubectl scale` up and down during a stuck rollout splits replicas proportionally.

    Upstream's e2e "deployment should support proportional scaling": 10
    replicas, maxSurge 3, maxUnavailable 2, a new template whose pods never
    become ready. The rollout stops at old 8 / new 5 (13 = 10 + 3 pods, 8 =
    10 - 2 available). Scaling to 30 (max 33) splits the 20 more replicas by
    the max-replicas annotation (13): old 8*33/13 = 20.3 -> 20, new
    5*33/13 = 12.7 -> 13. Scaling back to 10 (max 13): old 20*13/33 = 7.9 -> 8,
    new 13*13/33 = 5.1 -> 5.
    """
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml(
        "web", replicas=10, strategy=rolling(3, 2)), "web")
    patch = {"spec": {"template": {
        "metadata": {"annotations": {NEVER_READY: "true"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:404"}]}}}}
    k.ok("patch", "deployment", "web", "-n", ns, "-p", json.dumps(patch))

    def sizes(want: dict[str, int], d_replicas: int) -> Callable[[], Any]:
        def check() -> Any:
            got = rs_sizes_by_image(k, ns, "web")
            d = get_json(k, "deployment", "web", "-n", ns)
            observed = d["status"].get("observedGeneration") == d["metadata"]["generation"]
            return got if got == want and observed and d["spec"]["replicas"] == d_replicas \
                else NotYet(got)
        return check

    got = wait_until(sizes({"nginx:1.27": 8, "nginx:404": 5}, 10),
                     "the stuck rollout at old 8 / new 5")
    assert got == {"nginx:1.27": 8, "nginx:404": 5}

    assert k.ok("scale", "deployment/web", "--replicas=30", "-n", ns).strip() == \
        "deployment.apps/web scaled"
    wait_until(sizes({"nginx:1.27": 20, "nginx:404": 13}, 30), "old 20 / new 13 after scale up")
    for rs in replica_sets(k, ns, "web"):
        ann = rs["metadata"]["annotations"]
        assert ann["deployment.kubernetes.io/desired-replicas"] == "30"
        assert ann["deployment.kubernetes.io/max-replicas"] == "33"

    assert k.ok("scale", "deployment/web", "--replicas=10", "-n", ns).strip() == \
        "deployment.apps/web scaled"
    wait_until(sizes({"nginx:1.27": 8, "nginx:404": 5}, 10), "old 8 / new 5 after scale down")
    # the ReplicaSet controller follows: 8 ready old pods, 5 never-ready new ones
    def pods_follow() -> Any:
        ps = [p for p in pods(k, ns, "web") if is_active(p)]
        by_image: dict[str, int] = {}
        for p in ps:
            img = p["spec"]["containers"][0]["image"]
            by_image[img] = by_image.get(img, 0) + 1
        return by_image if by_image == {"nginx:1.27": 8, "nginx:404": 5} else NotYet(by_image)
    wait_until(pods_follow, "pods following the ReplicaSets")


def test_recreate_deployment(kubectl_up: Kubectl, ns: str, watches: list[Watch]) -> None:
    """Recreate: every old pod is gone before the first new pod is created (watched)."""
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml("web", replicas=3, ready_after=0.5,
                                               strategy={"type": "Recreate"}), "web")
    [old_rs] = replica_sets(k, ns, "web")
    old_hash = old_rs["metadata"]["labels"][HASH_LABEL]
    initial = {p["metadata"]["name"] for p in pods(k, ns, "web")}
    mixed: list[str] = []

    def on_pod(store: dict[str, dict[str, Any]], etype: str, obj: dict[str, Any]) -> None:
        # upstream's oldPodsRunning counts every non-terminal old pod, deleting or not
        hashes = {p["metadata"]["labels"].get(HASH_LABEL) for p in store.values()
                  if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")}
        if old_hash in hashes and len(hashes) > 1:
            mixed.append(f"{etype} {obj['metadata']['name']}: {sorted(store)}")

    pw = Watch(k, ns, "pods", "-l", "app=web", on_event=on_pod)
    watches.append(pw)
    pw.wait_for(lambda s: initial <= set(s), "the initial pods in the watch")
    k.ok("set", "image", "deployment/web", "app=nginx:1.28", "-n", ns)
    assert_rolled_out(k, ns, "web")
    pw.wait_for(lambda s: len(s) == 3 and not (initial & set(s))
                and all(is_ready(p) for p in s.values()), "3 new ready pods")
    pw.check()
    assert mixed == [], f"old and new pods at the same time: {mixed}"
    assert rs_sizes_by_image(k, ns, "web") == {"nginx:1.27": 0, "nginx:1.28": 3}
    new_rs = next(rs for rs in replica_sets(k, ns, "web") if rs["spec"]["replicas"] == 3)
    desc = k.ok("describe", "deployment", "web", "-n", ns)
    assert re.search(r"^StrategyType: +Recreate$", desc, re.MULTILINE), desc
    down = f"Scaled down replica set {old_rs['metadata']['name']} from 3 to 0"
    up = f"Scaled up replica set {new_rs['metadata']['name']} from 0 to 3"
    assert down in desc and up in desc
    assert desc.index(down) < desc.index(up)


def test_never_ready_pods_exceed_progress_deadline(kubectl_up: Kubectl, ns: str) -> None:
    """Pods that never become ready: `kubectl rollout status` fails with ProgressDeadlineExceeded."""
    k = kubectl_up
    k.ok("apply", "-n", ns, "-f", "-", stdin=deployment_yaml(
        "stuck", replicas=2, never_ready=True, progress_deadline=3))
    r = rollout_status(k, ns, "stuck")
    assert r.returncode == 1, f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    assert 'error: deployment "stuck" exceeded its progress deadline' in r.stderr
    d = get_json(k, "deployment", "stuck", "-n", ns)
    [rs] = replica_sets(k, ns, "stuck")
    c = condition(d, "Progressing")
    assert c is not None and (c["status"], c["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert c["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
    a = condition(d, "Available")
    assert a is not None and (a["status"], a["reason"]) == ("False", "MinimumReplicasUnavailable")
    assert d["status"]["unavailableReplicas"] == 2
    assert not d["status"].get("availableReplicas")
    desc = k.ok("describe", "deployment", "stuck", "-n", ns)
    assert "ProgressDeadlineExceeded" in desc


def test_orphan_pod_matching_replica_set_is_adopted(
        kubectl_up: Kubectl, ns: str, watches: list[Watch]) -> None:
    """An orphan pod with a ReplicaSet's labels is adopted (controller ownerReference)."""
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml("web", replicas=3, ready_after=0.3), "web")
    [rs] = replica_sets(k, ns, "web")
    labels = dict(rs["spec"]["selector"]["matchLabels"])
    assert labels == {"app": "web", HASH_LABEL: rs["metadata"]["labels"][HASH_LABEL]}
    adopted_by: list[dict[str, Any]] = []

    def on_pod(store: dict[str, dict[str, Any]], etype: str, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "orphan" and controller_ref(obj) is not None:
            adopted_by.append(controller_ref(obj))  # type: ignore[arg-type]

    pw = Watch(k, ns, "pods", "-l", "app=web", on_event=on_pod)
    watches.append(pw)
    pw.wait_for(lambda s: len(s) == 3, "the ReplicaSet's pods in the watch")
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "orphan", "labels": labels},
              "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}
    k.ok("create", "-n", ns, "-f", "-", stdin=json.dumps(orphan))
    pw.wait_for(lambda s: bool(adopted_by), "the orphan adopted")
    ref = adopted_by[0]
    assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"], ref["controller"],
            ref["blockOwnerDeletion"]) == ("apps/v1", "ReplicaSet", rs["metadata"]["name"],
                                           rs["metadata"]["uid"], True, True)
    # Adopted, the ReplicaSet has one pod too many and deletes one: back to 3.
    pw.wait_for(lambda s: len(s) == 3 and all(
        is_active(p) and (controller_ref(p) or {}).get("uid") == rs["metadata"]["uid"]
        for p in s.values()), "3 pods, all controlled by the ReplicaSet")
    pw.check()
    wait_until(lambda: get_json(k, "replicaset", rs["metadata"]["name"], "-n", ns)["status"]
               .get("replicas") == 3, "the ReplicaSet's status back to 3 replicas")
    desc = k.ok("describe", "replicaset", rs["metadata"]["name"], "-n", ns)
    assert "SuccessfulDelete" in desc


def test_deleted_pod_is_replaced(kubectl_up: Kubectl, ns: str) -> None:
    """`kubectl delete pod`: the ReplicaSet creates a replacement; the Deployment stays Available."""
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml("web", replicas=3, ready_after=0.3), "web")
    [rs] = replica_sets(k, ns, "web")
    before = {p["metadata"]["name"] for p in pods(k, ns, "web")}
    victim = min(before)
    out = k.ok("delete", "pod", victim, "-n", ns)
    assert out.strip() == f'pod "{victim}" deleted from {ns} namespace' or \
        out.strip() == f'pod "{victim}" deleted'

    def replaced() -> Any:
        ps = pods(k, ns, "web")
        names = {p["metadata"]["name"] for p in ps}
        ok = (len(ps) == 3 and victim not in names and all(is_ready(p) for p in ps)
              and all((controller_ref(p) or {}).get("uid") == rs["metadata"]["uid"] for p in ps))
        return names if ok else NotYet(names)

    names = wait_until(replaced, "a ready replacement pod")
    assert len(names - before) == 1
    assert_rolled_out(k, ns, "web")
    d = get_json(k, "deployment", "web", "-n", ns)
    assert d["status"]["availableReplicas"] == 3
    desc = k.ok("describe", "replicaset", rs["metadata"]["name"], "-n", ns)
    [new] = names - before
    assert f"Created pod: {new}" in desc


def test_describe_deployment_shows_events(kubectl_up: Kubectl, ns: str) -> None:
    """`kubectl describe deployment` lists the ScalingReplicaSet events of a rollout."""
    k = kubectl_up
    create_and_roll_out(k, ns, deployment_yaml(
        "web", replicas=2, ready_after=0.3,
        strategy=rolling(2, 0)),
        "web")
    [rs1] = replica_sets(k, ns, "web")
    k.ok("set", "image", "deployment/web", "app=nginx:1.28", "-n", ns)
    assert_rolled_out(k, ns, "web")
    rs2 = next(rs for rs in replica_sets(k, ns, "web")
               if rs["metadata"]["uid"] != rs1["metadata"]["uid"])
    n1, n2 = rs1["metadata"]["name"], rs2["metadata"]["name"]
    # maxUnavailable 0: the old ReplicaSet goes down as new pods become available,
    # by one or by two at a time depending on when they become ready.
    wanted = [rf"Scaled up replica set {n1} from 0 to 2$",
              rf"Scaled up replica set {n2} from 0 to 2$",
              rf"Scaled down replica set {n1} from [12] to 0$"]

    def described() -> Any:
        desc = k.ok("describe", "deployment", "web", "-n", ns)
        events = desc[desc.index("Events:"):] if "Events:" in desc else ""
        ok = all(re.search(w, events, re.MULTILINE) for w in wanted)
        return desc if ok else NotYet(desc)

    desc = wait_until(described, "the ScalingReplicaSet events in describe")
    events = desc[desc.index("Events:"):].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    for w in wanted:
        line = next(ln for ln in events if re.search(w, ln))
        assert line.split()[:2] == ["Normal", "ScalingReplicaSet"], line
        assert "deployment-controller" in line.split(), line
    assert f"NewReplicaSet:   {n2} (2/2 replicas created)" in desc
    assert f"OldReplicaSets:  {n1} (0/0 replicas created)" in desc
    assert "Progressing    True    NewReplicaSetAvailable" in desc
    assert "Available      True    MinimumReplicasAvailable" in desc


def test_orphaned_replica_set_is_adopted_by_a_new_deployment(kubectl_up: Kubectl, ns: str) -> None:
    """`kubectl delete deployment --cascade=orphan`, then apply it again: its ReplicaSet is adopted.

    The orphaned ReplicaSet keeps its pods; the new Deployment (another UID,
    the same template) claims it instead of creating one, so the pods stay.
    Objects read back as a cluster serves them: kube-apiserver decodes every
    write into Go structs, so ObjectMeta's ``omitempty`` collections
    (ownerReferences, finalizers, annotations, labels) are never served empty;
    kubectl's ``.metadata.ownerReferences[0].name`` of an orphan is ``<none>``.
    """
    k = kubectl_up
    manifest = deployment_yaml("web", replicas=2, ready_after=0.3)
    d1 = create_and_roll_out(k, ns, manifest, "web")
    [rs] = replica_sets(k, ns, "web")
    before = {p["metadata"]["name"] for p in pods(k, ns, "web")}
    out = k.ok("delete", "deployment", "web", "-n", ns, "--cascade=orphan")
    assert out.strip().startswith('deployment.apps "web" deleted')
    orphan = wait_until(lambda: next((r for r in replica_sets(k, ns, "web")
                                      if controller_ref(r) is None), None),
                        "the ReplicaSet orphaned")
    assert orphan["metadata"]["uid"] == rs["metadata"]["uid"]
    wire_form: list[str] = []
    if "ownerReferences" in orphan["metadata"]:
        wire_form.append(f"orphaned ReplicaSet served with ownerReferences "
                         f"{orphan['metadata']['ownerReferences']!r}")
    r = k.run("get", "replicasets", "-n", ns, "-o",
              "custom-columns=NAME:.metadata.name,OWNER:.metadata.ownerReferences[0].name")
    if r.returncode != 0 or r.stdout.split()[-2:] != [rs["metadata"]["name"], "<none>"]:
        wire_form.append(f"kubectl custom-columns of the orphan: rc={r.returncode} "
                         f"{r.stdout!r} {r.stderr.strip()!r}")
    for p in pods(k, ns, "web"):
        empty = [f for f in ("finalizers", "annotations", "labels", "ownerReferences")
                 if f in p["metadata"] and not p["metadata"][f]]
        if empty:
            wire_form.append(f"pod {p['metadata']['name']} served with empty {empty}")

    k.ok("apply", "-n", ns, "-f", "-", stdin=manifest)
    assert_rolled_out(k, ns, "web")
    d2 = get_json(k, "deployment", "web", "-n", ns)
    assert d2["metadata"]["uid"] != d1["metadata"]["uid"]
    [adopted] = replica_sets(k, ns, "web")
    assert adopted["metadata"]["uid"] == rs["metadata"]["uid"]
    ref = controller_ref(adopted)
    assert ref is not None and (ref["kind"], ref["uid"]) == ("Deployment", d2["metadata"]["uid"])
    assert {p["metadata"]["name"] for p in pods(k, ns, "web")} == before
    assert wire_form == [], wire_form
