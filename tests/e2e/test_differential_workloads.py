"""Differential tests of the DaemonSet and StatefulSet controllers: the real
kube-controller-manager v1.36 against pykcm's, on the session's real kube-apiserver with
``pykcm sim`` nodes (tests/e2e/differential.py).

What is compared: the ControllerRevisions (names: the hashes are upstream's, so they are
not masked; revision numbers, labels, data), the owners' status and annotations, the pods
per node or per ordinal (labels, spec, owner), events, and how an update replaces pods:
the sequence of (old, new) pod counts through a rolling update, which the algorithm fixes
for pods that become ready after a fraction of a second.

Where upstream walks a Go map (the nodes of a DaemonSet rolling update), the order in
which nodes are taken is random there: only counts are compared, never which node went
first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.testing.upstream import KubeCluster
from tests.e2e.differential import Differential, Recorder, Run, Scenario
from tests.e2e.differential_allowlist import ALLOWLIST
from tests.e2e.test_differential_controllers import event_set, managed_fields, register_uid

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]

READY_AFTER = "sim.pykcm.io/ready-after-seconds"
DS_HASH = "controller-revision-hash"


@pytest.fixture(scope="module")
def differential(kube_cluster: KubeCluster) -> Iterator[Differential]:
    d = Differential(kube_cluster)
    yield d
    d.restore()


def owner_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in obj["metadata"].get("ownerReferences") or []]


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj.get("status") or {})


def revisions_view(run: Run, owner_kind: str) -> list[dict[str, Any]]:
    """The namespace's ControllerRevisions by revision number."""
    out = []
    for r in sorted(run.list("controllerrevisions"), key=lambda r: r["revision"]):
        m = r["metadata"]
        out.append({"name": m["name"], "revision": r["revision"], "labels": m.get("labels"),
                    "annotations": m.get("annotations") or {},
                    "ownerReferences": owner_refs(r), "data": r.get("data")})
    return out


# -- DaemonSets --------------------------------------------------------------------------------

def daemon_set(name: str, *, image: str = "nginx:1.27", strategy: dict[str, Any] | None = None,
               **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "app", "image": image}],
                                "terminationGracePeriodSeconds": 0, **spec}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "annotations": {"team": "diff"}},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1}},
                     "template": {"metadata": {"labels": {"app": name},
                                               "annotations": {READY_AFTER: "0.3"}},
                                  "spec": pod_spec}}}


def set_ds_image(run: Run, name: str, image: str) -> None:
    run.patch("daemonsets", name, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": image}]}}}}, kind="strategic")


def node_names(run: Run) -> list[str]:
    return sorted(n["metadata"]["name"] for n in run.api.ok("GET", "/api/v1/nodes")["items"])


def ds_settled(run: Run, name: str, nodes: int) -> dict[str, Any]:
    """The DaemonSet once its controller observed the last change and every node it
    should run on has one updated, available pod and nothing else."""
    def check() -> Any:
        ds = run.get("daemonsets", name)
        st = status_of(ds)
        pods = [p for p in run.list("pods", f"app={name}")]
        done = (st.get("observedGeneration") == ds["metadata"]["generation"]
                and st.get("desiredNumberScheduled") == nodes
                and st.get("updatedNumberScheduled") == nodes
                and st.get("numberAvailable") == nodes
                and st.get("currentNumberScheduled") == nodes
                and len(pods) == nodes
                and not any(p["metadata"].get("deletionTimestamp") for p in pods))
        return ds if done else None
    found: dict[str, Any] = run.wait(check, f"DaemonSet {name} settled on {nodes} nodes")
    return found


def ds_pods_view(run: Run, name: str) -> dict[str, Any]:
    """The DaemonSet's pods by the node they are for."""
    out: dict[str, Any] = {}
    for p in run.list("pods", f"app={name}"):
        if p["metadata"].get("deletionTimestamp"):
            continue
        spec = {k: v for k, v in p["spec"].items() if k != "nodeName"}
        node = spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
            "matchFields"][0]["values"][0]
        assert node not in out, f"two pods for {node}"
        out[node] = {"bound_to": p["spec"].get("nodeName"),
                     "labels": p["metadata"].get("labels"),
                     "annotations": p["metadata"].get("annotations"),
                     "generateName": p["metadata"].get("generateName"),
                     "ownerReferences": owner_refs(p), "spec": spec}
    return out


def ds_snapshot(run: Run, name: str) -> dict[str, Any]:
    ds = run.get("daemonsets", name)
    register_uid(run, {**ds, "kind": "DaemonSet"})
    return {"annotations": ds["metadata"].get("annotations"),
            "generation": ds["metadata"]["generation"], "status": status_of(ds),
            "revisions": revisions_view(run, "DaemonSet"), "pods": ds_pods_view(run, name)}


def count_history(rec: Recorder, classify: Any) -> list[tuple[int, ...]]:
    """After each pod event (resourceVersion order), the counts of live pods (not being
    deleted) per class ``classify(pod)`` gives (an index), consecutive repeats collapsed."""
    store: dict[str, dict[str, Any]] = {}
    out: list[tuple[int, ...]] = []
    for e in rec.ordered("pods"):
        if e.type == "DELETED":
            store.pop(e.name, None)
        else:
            store[e.name] = e.obj
        counts = [0, 0]
        for p in store.values():
            if not p["metadata"].get("deletionTimestamp"):
                counts[classify(p)] += 1
        row = tuple(counts)
        if not out or out[-1] != row:
            out.append(row)
    return out


def ds_update_scenario(strategy: dict[str, Any]) -> Scenario:
    """Create on every node, change the image, roll out: the (old, new) pod counts through
    the update, the revisions, the final state, the events."""
    def scenario(run: Run) -> dict[str, Any]:
        nodes = len(node_names(run))
        run.create("daemonsets", daemon_set("agent", strategy=strategy))
        ds_settled(run, "agent", nodes)
        created = ds_snapshot(run, "agent")
        old_hash = created["revisions"][0]["labels"][DS_HASH]
        rec = run.watch("pods")
        set_ds_image(run, "agent", "nginx:1.28")
        ds_settled(run, "agent", nodes)
        rec.wait_for(lambda r: all(p["metadata"]["labels"][DS_HASH] != old_hash
                                   for p in r.store["pods"].values()), "the old pods gone")
        final = ds_snapshot(run, "agent")
        history = count_history(rec, lambda p: int(p["metadata"]["labels"][DS_HASH] !=
                                                    old_hash))
        a_pod = run.list("pods", "app=agent")[0]
        return {"created": created, "final": final, "old_new_counts": history,
                "events": sorted(event_set(run, "DaemonSet")),
                "managedFields": {"daemonset": managed_fields(run.get("daemonsets", "agent")),
                                  "a_pod": [m for m in managed_fields(a_pod)
                                            if m["subresource"] == ""]}}
    return scenario


def ds_rollback(run: Run) -> dict[str, Any]:
    """Roll out a second template, then back as ``kubectl rollout undo`` does (the first
    revision's patch applied to the DaemonSet): the first revision becomes number 3."""
    nodes = len(node_names(run))
    run.create("daemonsets", daemon_set("agent"))
    ds_settled(run, "agent", nodes)
    set_ds_image(run, "agent", "nginx:1.28")
    ds_settled(run, "agent", nodes)
    first = next(r for r in run.list("controllerrevisions") if r["revision"] == 1)
    run.patch("daemonsets", "agent", first["data"], kind="strategic")
    ds_settled(run, "agent", nodes)

    def renumbered() -> bool:
        return sorted(r["revision"] for r in run.list("controllerrevisions")) == [2, 3]
    run.wait(renumbered, "the revisions renumbered")
    return {"final": ds_snapshot(run, "agent"), "events": sorted(event_set(run, "DaemonSet"))}


def ds_on_delete(run: Run) -> dict[str, Any]:
    """OnDelete: a new template replaces nothing until a pod is deleted by hand."""
    nodes = node_names(run)
    run.create("daemonsets", daemon_set("agent", strategy={"type": "OnDelete"}))
    ds_settled(run, "agent", len(nodes))
    set_ds_image(run, "agent", "nginx:1.28")

    def observed() -> Any:
        ds = run.get("daemonsets", "agent")
        st = status_of(ds)
        return ds if st.get("observedGeneration") == 2 and len(
            run.list("controllerrevisions")) == 2 else None
    run.wait(observed, "the new template observed")
    before = ds_snapshot(run, "agent")
    victim = next(p for p in run.list("pods", "app=agent")
                  if p["spec"].get("nodeName") == nodes[0])
    run.delete("pods", victim["metadata"]["name"])

    def replaced() -> Any:
        st = status_of(run.get("daemonsets", "agent"))
        pods = run.list("pods", "app=agent")
        return (st.get("updatedNumberScheduled") == 1 and st.get("numberAvailable") ==
                len(nodes) and len(pods) == len(nodes))
    run.wait(replaced, "the deleted pod replaced from the new template")
    return {"before": before, "after": ds_snapshot(run, "agent"),
            "events": sorted(event_set(run, "DaemonSet"))}


def ds_node_selector(run: Run) -> dict[str, Any]:
    """A DaemonSet for one node, moved to another by its nodeSelector: the new node's pod
    is created, the old one's deleted, in one sync."""
    nodes = node_names(run)
    ds = daemon_set("agent", nodeSelector={"kubernetes.io/hostname": nodes[0]})
    run.create("daemonsets", ds)
    ds_settled(run, "agent", 1)
    created = ds_snapshot(run, "agent")
    run.patch("daemonsets", "agent", {"spec": {"template": {"spec": {"nodeSelector": {
        "kubernetes.io/hostname": nodes[1]}}}}}, kind="strategic")
    ds_settled(run, "agent", 1)

    def only_second() -> bool:
        return list(ds_pods_view(run, "agent")) == [nodes[1]]
    run.wait(only_second, "the pod moved")
    events = [f"{e['reason']}: {e['message']}" for e in
              (dict(x) for x in run.events(kinds=("DaemonSet",)))]
    return {"created": created, "moved": ds_snapshot(run, "agent"), "events": events}


# -- StatefulSets ------------------------------------------------------------------------------

def stateful_set(name: str, replicas: int, *, image: str = "nginx:1.27", claims: bool = False,
                 **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name},
                                  "annotations": {READY_AFTER: "0.3"}},
                     "spec": {"containers": [{"name": "app", "image": image}],
                              "terminationGracePeriodSeconds": 0}}, **spec}
    if claims:
        s["volumeClaimTemplates"] = [{"metadata": {"name": "data", "labels": {"tier": "db"}},
                                      "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "annotations": {"team": "diff"}}, "spec": s}


def set_sts_image(run: Run, name: str, image: str) -> None:
    run.patch("statefulsets", name, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": image}]}}}}, kind="strategic")


def sts_settled(run: Run, name: str, replicas: int, *, updated: int | None = None
                ) -> dict[str, Any]:
    """The set once it observed its last change, every replica is ready and available,
    ``updated`` of them (all by default) at the update revision, and nothing else runs."""
    want_updated = replicas if updated is None else updated

    def check() -> Any:
        s = run.get("statefulsets", name)
        st = status_of(s)
        pods = run.list("pods", f"app={name}")
        done = (st.get("observedGeneration") == s["metadata"]["generation"]
                and st.get("replicas") == replicas and st.get("readyReplicas") == replicas
                and st.get("availableReplicas") == replicas
                and st.get("updatedReplicas", 0) == want_updated and len(pods) == replicas
                and not any(p["metadata"].get("deletionTimestamp") for p in pods))
        return s if done else None
    found: dict[str, Any] = run.wait(check, f"StatefulSet {name} settled at {replicas}")
    return found


def sts_pods_view(run: Run, name: str) -> dict[str, Any]:
    out = {}
    for p in run.list("pods", f"app={name}"):
        if p["metadata"].get("deletionTimestamp"):
            continue
        out[p["metadata"]["name"]] = {
            "labels": p["metadata"].get("labels"), "annotations": p["metadata"].get("annotations"),
            "generateName": p["metadata"].get("generateName"), "ownerReferences": owner_refs(p),
            "spec": {k: v for k, v in p["spec"].items() if k != "nodeName"}}
    return out


def claims_view(run: Run) -> dict[str, Any]:
    out = {}
    for c in run.list("persistentvolumeclaims"):
        spec = {k: v for k, v in c["spec"].items() if k != "volumeName"}
        out[c["metadata"]["name"]] = {"labels": c["metadata"].get("labels"),
                                      "ownerReferences": owner_refs(c), "spec": spec,
                                      "deleting": bool(c["metadata"].get("deletionTimestamp"))}
    return out


def sts_snapshot(run: Run, name: str) -> dict[str, Any]:
    s = run.get("statefulsets", name)
    register_uid(run, {**s, "kind": "StatefulSet"})
    for p in run.list("pods", f"app={name}"):
        register_uid(run, {**p, "kind": "Pod"})
    return {"annotations": s["metadata"].get("annotations"),
            "generation": s["metadata"]["generation"], "status": status_of(s),
            "revisions": revisions_view(run, "StatefulSet"), "pods": sts_pods_view(run, name)}


CONFLICT = "the object has been modified; please apply your changes to the latest version"
_FAILED_POD = re.compile(r"^\w+ Pod (\S+) in StatefulSet \S+ failed")
_UPDATED_POD = re.compile(r"^Update Pod (\S+) in StatefulSet \S+ successful")


def event_counts(run: Run, kind: str) -> list[str]:
    """The events of objects of ``kind`` with their counts, sorted: which were recorded and
    how often. Timing decides three things left out: the order of identical events, whether
    the correlator counts a repeat on one Event object or starts another (the counts are
    summed over identical events), and the writes that lost an optimistic-concurrency race
    with another writer of the same object (the volume binder and protection controllers
    next to the StatefulSet controller on a claim) and were retried: their FailedUpdate
    events, and the SuccessfulUpdate of the pod whose claim write lost that race (the next
    sync finds the claim's owner references out of date and updates claim and pod: the
    "Update Pod" event follows the conflict in both managers, once in a few runs). The order
    of the writes is compared through the pods' watch instead."""
    counts: dict[str, int] = {}
    events = run.events(kinds=(kind,))
    raced = {m.group(1) for e in events if CONFLICT in e["message"]
             for m in [_FAILED_POD.search(e["message"])] if m}
    for e in events:
        if CONFLICT in e["message"]:
            continue
        m = _UPDATED_POD.search(e["message"])
        if e["reason"] == "SuccessfulUpdate" and m and m.group(1) in raced:
            continue
        line = f"{e['object']} {e['type']} {e['reason']}: {e['message']} [{e['source']}]"
        counts[line] = counts.get(line, 0) + int(e.get("count") or 1)
    return sorted(f"{line} x{n}" for line, n in counts.items())


def pod_event_order(rec: Recorder, initial: int = 0) -> list[str]:
    """ADDED and DELETED pod events in resourceVersion order (creations and removals); the
    first ``initial`` (the pods listed when the watch started, or created at once in
    Parallel mode) sorted by name."""
    evs = [f"{e.type} {e.name}" for e in rec.ordered("pods") if e.type in ("ADDED", "DELETED")]
    return sorted(evs[:initial]) + evs[initial:]


def sts_ordered(run: Run) -> dict[str, Any]:
    """OrderedReady with a claim template: pods and claims 0, 1, 2 in order, each pod after
    its predecessor is ready; scale to 1 removes 2 then 1 (claims retained)."""
    rec = run.watch("pods")
    run.create("statefulsets", stateful_set("web", 3, claims=True))
    sts_settled(run, "web", 3)
    created = {**sts_snapshot(run, "web"), "claims": claims_view(run)}
    run.patch("statefulsets", "web", {"spec": {"replicas": 1}})
    sts_settled(run, "web", 1)
    return {"created": created, "scaled": sts_snapshot(run, "web"),
            "claims_after": claims_view(run), "pod_events": pod_event_order(rec),
            "events": event_counts(run, "StatefulSet"),
            "managedFields": managed_fields(run.get("statefulsets", "web"))}


def sts_partitioned_update(run: Run) -> dict[str, Any]:
    """Partition 1 on 3: web-2 then web-1 replaced, web-0 kept; partition 0: web-0 too."""
    run.create("statefulsets", stateful_set("web", 3, updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"partition": 1}}))
    sts_settled(run, "web", 3)
    rec = run.watch("pods")
    set_sts_image(run, "web", "nginx:1.28")
    sts_settled(run, "web", 3, updated=2)
    partial = sts_snapshot(run, "web")
    run.patch("statefulsets", "web", {"spec": {"updateStrategy": {"rollingUpdate": {
        "partition": 0}}}}, kind="strategic")

    def complete() -> bool:
        st = status_of(run.get("statefulsets", "web"))
        return bool(st.get("currentRevision") == st.get("updateRevision")
                    and st.get("currentReplicas") == 3)
    run.wait(complete, "the update complete")
    sts_settled(run, "web", 3)
    return {"partial": partial, "final": sts_snapshot(run, "web"),
            "pod_events": pod_event_order(rec, initial=3),
            "events": event_counts(run, "StatefulSet")}


def sts_parallel(run: Run) -> dict[str, Any]:
    """Parallel: all pods at once, then an update one pod at a time from the top."""
    run.create("statefulsets", stateful_set("web", 3, podManagementPolicy="Parallel"))
    sts_settled(run, "web", 3)
    created = sts_snapshot(run, "web")
    rec = run.watch("pods")
    set_sts_image(run, "web", "nginx:1.28")
    sts_settled(run, "web", 3)

    def complete() -> bool:
        st = status_of(run.get("statefulsets", "web"))
        return bool(st.get("currentRevision") == st.get("updateRevision"))
    run.wait(complete, "the update complete")
    return {"created": created, "final": sts_snapshot(run, "web"),
            "pod_events": pod_event_order(rec, initial=3),
            "events": event_counts(run, "StatefulSet")}


def sts_rollback(run: Run) -> dict[str, Any]:
    """A second template, then back as ``kubectl rollout undo`` does: revision 1 is
    renumbered 3 and becomes current again."""
    run.create("statefulsets", stateful_set("web", 2))
    sts_settled(run, "web", 2)
    set_sts_image(run, "web", "nginx:1.28")
    sts_settled(run, "web", 2)
    first = next(r for r in run.list("controllerrevisions") if r["revision"] == 1)
    run.patch("statefulsets", "web", first["data"], kind="strategic")
    sts_settled(run, "web", 2)

    def renumbered() -> bool:
        st = status_of(run.get("statefulsets", "web"))
        return (sorted(r["revision"] for r in run.list("controllerrevisions")) == [2, 3]
                and st.get("currentRevision") == st.get("updateRevision"))
    run.wait(renumbered, "revision 1 renumbered 3 and current")
    return {"final": sts_snapshot(run, "web"), "events": event_counts(run, "StatefulSet")}


_CREATED = re.compile(r"create Pod (\S+) in StatefulSet \S+ successful", re.IGNORECASE)
_CLAIM_OWNERS_FAILED = re.compile(
    r"update Pod (\S+) in StatefulSet \S+ failed error: could not update claim ", re.IGNORECASE)


def pod_creations_recorded(run: Run, rec: Recorder) -> dict[str, str]:
    """Per pod: whether its creations (ADDED on the pods' watch) are each told by a
    SuccessfulCreate event, or by the FailedUpdate that replaces it.

    The StatefulSet controller (upstream's CreateStatefulPod, and pykcm's the same)
    creates the pod, then sets its claims' owner references from the claim cache, and
    records "create Pod ... successful" only after that: when the claim update loses an
    optimistic-concurrency race with the volume binder or protection controller (both
    write the new claim at that moment), it records "update Pod ... failed error: could
    not update claim ..." instead and returns; the next sync finds the pod and records no
    create. Whether the race is lost is timing, under either manager (seen: kube-
    controller-manager's web-0 creations recorded once of twice, pykcm's web-1 not at
    all). What is not timing: no creation goes untold, and none is told twice."""
    added: dict[str, int] = {}
    for e in rec.ordered("pods"):
        if e.type == "ADDED":
            added[e.name] = added.get(e.name, 0) + 1
    told: dict[str, int] = {}
    failed: dict[str, int] = {}
    for e in run.events(kinds=("StatefulSet",)):
        n = int(e.get("count") or 1)
        if e["reason"] == "SuccessfulCreate" and (m := _CREATED.match(e["message"])):
            told[m[1]] = told.get(m[1], 0) + n
        elif e["reason"] == "FailedUpdate" and (m := _CLAIM_OWNERS_FAILED.match(e["message"])):
            failed[m[1]] = failed.get(m[1], 0) + n
    out = {}
    for pod, n in sorted(added.items()):
        ok = told.get(pod, 0) <= n <= told.get(pod, 0) + failed.get(pod, 0)
        out[pod] = "every creation told once" if ok else \
            f"{n} created, {told.get(pod, 0)} SuccessfulCreate, {failed.get(pod, 0)} FailedUpdate"
    return out


def sts_on_delete_retention(run: Run) -> dict[str, Any]:
    """OnDelete with claims deleted on scale-down: the new template waits for a manual
    delete; scaling down gives the condemned pod's claim to the pod (then the garbage
    collector removes both).

    Open (issue 13): once in six runs, on a loaded machine, pykcm deleted the web-0 it
    had just recreated after the manual delete ("Delete Pod web-0" event, web-0 created
    a third time); kube-controller-manager did not in that run. With OnDelete the
    controller deletes a pod in range only when it is Failed or Succeeded, so the
    simulated kubelet reported the new web-0 finished; why (its teardown of the old
    web-0 of the same name, or pykcm recreating sooner) is not established."""
    rec = run.watch("pods")
    run.create("statefulsets", stateful_set(
        "web", 2, claims=True, updateStrategy={"type": "OnDelete"},
        persistentVolumeClaimRetentionPolicy={"whenScaled": "Delete",
                                              "whenDeleted": "Delete"}))
    sts_settled(run, "web", 2)
    created_claims = claims_view(run)
    set_sts_image(run, "web", "nginx:1.28")

    def observed() -> bool:
        return status_of(run.get("statefulsets", "web")).get("observedGeneration") == 2
    run.wait(observed, "generation 2 observed")
    before = sts_snapshot(run, "web")
    run.delete("pods", "web-0")
    sts_settled(run, "web", 2, updated=1)
    run.patch("statefulsets", "web", {"spec": {"replicas": 1}})
    sts_settled(run, "web", 1, updated=1)

    def claim_gone() -> bool:
        return sorted(claims_view(run)) == ["data-web-0"]
    run.wait(claim_gone, "data-web-1 deleted with its pod")

    return {"created_claims": created_claims, "before_delete": before,
            "final": sts_snapshot(run, "web"), "claims": claims_view(run),
            "pod_events": pod_event_order(rec, initial=2),
            # the pod creations' events are timing (pod_creations_recorded): compared
            # through the invariant they keep; every other event with its count
            "pod_creations": pod_creations_recorded(run, rec),
            "events": [line for line in event_counts(run, "StatefulSet")
                       if not _CREATED.search(line)]}


SCENARIOS: dict[str, Scenario] = {
    # maxUnavailable 1: one old pod deleted at a time, its node then gets the new one
    "daemonset-rolling-update": ds_update_scenario(
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    # maxSurge 1: a new pod next to an old one, the old one goes once the new is ready
    "daemonset-surge": ds_update_scenario(
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}),
    "daemonset-rollback": ds_rollback,
    "daemonset-on-delete": ds_on_delete,
    "daemonset-node-selector": ds_node_selector,
    "statefulset-ordered-claims-scale-down": sts_ordered,
    "statefulset-partitioned-update": sts_partitioned_update,
    "statefulset-parallel": sts_parallel,
    "statefulset-rollback": sts_rollback,
    "statefulset-on-delete-retention": sts_on_delete_retention,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_differential(differential: Differential, name: str) -> None:
    differential.run(name, SCENARIOS[name], ALLOWLIST, prefix="wl")
