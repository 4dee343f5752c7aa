"""Differential tests: pykcm's controllers against the real kube-controller-manager v1.36.

Each scenario runs twice on the session's real kube-apiserver with ``pykcm
sim`` nodes: once under the real kube-controller-manager limited to the
controllers pykcm has, once under pykcm's controller manager (the same
controllers), each run in a namespace of its own, the managers swapped
between the runs (never both at once). What a user observes is compared
(tests/e2e/differential.py): object names and annotations, labels,
ownerReferences, status fields and conditions, event reasons and messages,
the ReplicaSet sizes a rollout steps through where the algorithm fixes them.
A difference fails the test with a readable diff unless
differential_allowlist.py lists it with its reason.

Scenarios are short on purpose (small replica counts, pods ready after a
fraction of a second, CronJobs made due at once through their
``status.lastScheduleTime``): every one runs twice in the full suite.
Where the real run's timing varies (when a pod becomes ready, which worker
records an event first), a scenario keeps only what the algorithm fixes:
the first states of a rollout and its end, per-object event order, sets
rather than sequences. Nothing here asserts how long anything takes.

Divergences these scenarios found in pykcm, fixed there (each with a test of
its own): Progressing went through NewReplicaSetCreated after a resume
(deployment-pause-resume: upstream's second status write of the sync is
refused with 409); a Job's Warning event was dropped after 25 Normal ones
(job-event-spam-filter: client-go's spam filter has a bucket per event
type); a 250-character Deployment never rolled out (deployment-long-name:
the ReplicaSet name is cut to fit); a Job deleted by the CronJob history
limit was reported as MissingJob (cronjob-starting-deadline: a sync read
the CronJob before the controller's own status write reached its cache);
ReplicaSet names differed (pykcm hashed the template's JSON; it now uses
upstream's ComputeHash, pykcm.api.deep_hash, and the hashes are compared
unmasked).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.testing.upstream import KubeCluster
from tests.e2e.differential import (
    Differential,
    Recorder,
    Run,
    Scenario,
    check_hash_format,
)
from tests.e2e.differential_allowlist import ALLOWLIST

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]

READY_AFTER = "sim.pykcm.io/ready-after-seconds"
NEVER_READY = "sim.pykcm.io/never-ready"
RUN_SECONDS = "sim.pykcm.io/run-seconds"
EXIT_CODE = "sim.pykcm.io/exit-code"
REVISION = "deployment.kubernetes.io/revision"
HASH = "pod-template-hash"


@pytest.fixture(scope="module")
def differential(kube_cluster: KubeCluster) -> Iterator[Differential]:
    """The session's real API server and sim nodes (conftest's ``kube_cluster``), whose
    manager the scenarios swap; left running pykcm's, as the other tests expect it."""
    d = Differential(kube_cluster)
    yield d
    d.restore()


# -- reading what a user sees -----------------------------------------------------------------

def conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Conditions in their order, without their times."""
    return [{k: c.get(k) for k in ("type", "status", "reason", "message")}
            for c in (obj.get("status") or {}).get("conditions") or []]


def owner_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in obj["metadata"].get("ownerReferences") or []]


def register_uid(run: Run, obj: dict[str, Any]) -> None:
    m = obj["metadata"]
    run.masker.literal(m["uid"], f"{{uid:{obj.get('kind') or '?'}/{m['name']}}}")


def managed_fields(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Who wrote which fields, how (managedFields without times), in a stable order."""
    out = [{"manager": m.get("manager"), "operation": m.get("operation"),
            "subresource": m.get("subresource", ""), "fields": m.get("fieldsV1")}
           for m in obj["metadata"].get("managedFields") or []]
    return sorted(out, key=lambda m: (m["subresource"], m["operation"],
                                      json.dumps(m["fields"], sort_keys=True)))


def deployment_view(d: dict[str, Any]) -> dict[str, Any]:
    st = dict(d.get("status") or {})
    st.pop("conditions", None)
    return {"annotations": d["metadata"].get("annotations") or {},
            "generation": d["metadata"].get("generation"),
            "status": st, "conditions": conditions(d)}


def replica_set_view(rs: dict[str, Any]) -> dict[str, Any]:
    m, spec = rs["metadata"], rs["spec"]
    st = dict(rs.get("status") or {})
    st.pop("conditions", None)
    return {"name": m["name"], "labels": m.get("labels") or {},
            "annotations": m.get("annotations") or {}, "ownerReferences": owner_refs(rs),
            "replicas": spec.get("replicas"), "selector": spec.get("selector"),
            "template_labels": spec["template"]["metadata"].get("labels") or {},
            "template_annotations": spec["template"]["metadata"].get("annotations") or {},
            "template_spec": spec["template"].get("spec"),
            "minReadySeconds": spec.get("minReadySeconds"),
            "status": st, "conditions": conditions(rs)}


def replica_sets_by_creation(run: Run, app: str, rec: Recorder | None = None
                             ) -> list[dict[str, Any]]:
    """The Deployment's ReplicaSets in creation order; registers their hashes (in that order)
    and UIDs for masking. ``rec``: the order its watch saw them ADDED (exact); else by
    creationTimestamp (seconds) and revision."""
    rss = run.list("replicasets", f"app={app}")
    if rec is not None:
        first: dict[str, int] = {}
        for e in rec.ordered("replicasets"):
            first.setdefault(e.name, e.rv)
        rss.sort(key=lambda r: first.get(r["metadata"]["name"], 1 << 62))
    else:
        # hashes registered before keep their order (a rollback moves revisions)
        known = {h: i for i, h in enumerate(run.masker.hashes)}
        rss.sort(key=lambda r: (known.get(r["metadata"]["labels"][HASH], len(known)),
                                r["metadata"]["creationTimestamp"],
                                int(r["metadata"].get("annotations", {}).get(REVISION, "0"))))
    for rs in rss:
        h = rs["metadata"]["labels"][HASH]
        check_hash_format(h)
        run.masker.hash(h)
        register_uid(run, {**rs, "kind": "ReplicaSet"})
    return rss


def pods_view(run: Run, selector: str) -> dict[str, Any]:
    """Pods by owner (masked later): how many, their labels, their owner references."""
    by_owner: dict[str, dict[str, Any]] = {}
    for p in run.list("pods", selector):
        if p["metadata"].get("deletionTimestamp"):
            continue
        refs = owner_refs(p)
        key = refs[0]["name"] if refs else "-"
        v = by_owner.setdefault(key, {"count": 0, "labels": set(), "ownerReferences": refs,
                                      "names": set(), "specs": []})
        v["count"] += 1
        pod_spec = {k: x for k, x in p["spec"].items() if k != "nodeName"}
        if pod_spec not in v["specs"]:
            v["specs"].append(pod_spec)
        v["labels"].add(tuple(sorted((p["metadata"].get("labels") or {}).items())))
        v["names"].add(p["metadata"]["name"])
    out = {}
    for k, v in by_owner.items():
        names = sorted(v["names"])
        out[k] = {"count": v["count"], "labels": [dict(t) for t in sorted(v["labels"])],
                  "ownerReferences": v["ownerReferences"],
                  "name_prefixes": sorted({n.rsplit("-", 1)[0] + "-" for n in names}),
                  "specs_but_node": v["specs"]}
    return out


def events_of(run: Run, *kinds: str, name: str | None = None) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ("object", "type", "reason", "message", "source")}
            for e in run.events(kinds=kinds)
            if name is None or e["object"].split("/", 1)[1] == name]


def deployment_events(run: Run, name: str) -> list[str]:
    """The Deployment's event messages in the order they were recorded."""
    return [f"{e['type']} {e['reason']}: {e['message']}"
            for e in events_of(run, "Deployment", name=name)]


def event_set(run: Run, *kinds: str, name: str | None = None) -> list[str]:
    """Distinct events (kind/name type reason: message) of objects of ``kinds`` (all when
    none), of the one called ``name`` if given, in order of first occurrence. (Events of
    different objects interleave as their controllers' workers run.)"""
    out: list[str] = []
    for e in events_of(run, *kinds, name=name):
        s = f"{e['object']} {e['type']} {e['reason']}: {e['message']} [{e['source']}]"
        if s not in out:
            out.append(s)
    return out


# -- objects ---------------------------------------------------------------------------------

def deployment(name: str, replicas: int, *, image: str = "nginx:1.27", ready_after: float = 0.3,
               strategy: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name},
                                  "annotations": {READY_AFTER: str(ready_after)}},
                     "spec": {"containers": [{"name": "app", "image": image}],
                              "terminationGracePeriodSeconds": 0}},
        **spec,
    }
    if strategy is not None:
        s["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": s}


def rolling(max_surge: int | str, max_unavailable: int | str) -> dict[str, Any]:
    return {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}}


def set_image(run: Run, name: str, image: str) -> None:
    run.patch("deployments", name, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": image}]}}}}, kind="strategic")


def rolled_out(run: Run, name: str, replicas: int) -> Any:
    """The Deployment once its controller observed the last change and every replica is
    updated, available and alone (what ``kubectl rollout status`` waits for)."""
    def check() -> Any:
        d = run.get("deployments", name)
        st = d.get("status") or {}
        done = (st.get("observedGeneration") == d["metadata"]["generation"]
                and st.get("updatedReplicas") == replicas
                and st.get("replicas") == replicas
                and st.get("availableReplicas") == replicas
                and not st.get("terminatingReplicas"))
        return d if done else None
    return run.wait(check, f"Deployment {name} rolled out with {replicas} replicas")


def settled_replica_sets(run: Run, app: str) -> None:
    """Every ReplicaSet of the Deployment has observed its spec and holds its replicas."""
    def check() -> bool:
        rss = run.list("replicasets", f"app={app}")
        return all((rs.get("status") or {}).get("observedGeneration") ==
                   rs["metadata"]["generation"]
                   and (rs.get("status") or {}).get("replicas", 0) == rs["spec"]["replicas"]
                   and not (rs.get("status") or {}).get("terminatingReplicas")
                   for rs in rss)
    run.wait(check, f"the ReplicaSets of {app} settled")


def size_history(rec: Recorder, order: list[str]) -> list[list[int]]:
    """The ReplicaSets' spec.replicas after each of their watch events, in creation order
    (0 before a ReplicaSet exists), consecutive repeats collapsed."""
    sizes: dict[str, int] = {}
    out: list[list[int]] = []
    for e in rec.ordered("replicasets"):
        if e.type == "DELETED":
            sizes.pop(e.name, None)
        else:
            sizes[e.name] = e.obj["spec"]["replicas"]
        row = [sizes.get(n, 0) for n in order]
        if not out or out[-1] != row:
            out.append(row)
    return out


def deployment_snapshot(run: Run, name: str, rec: Recorder | None = None) -> dict[str, Any]:
    d = run.get("deployments", name)
    register_uid(run, {**d, "kind": "Deployment"})
    rss = replica_sets_by_creation(run, name, rec)
    return {"deployment": deployment_view(d),
            "replicasets": [replica_set_view(rs) for rs in rss],
            "pods": pods_view(run, f"app={name}")}


# -- Deployment scenarios ---------------------------------------------------------------------

def rollout_facts(history: list[list[int]], fixed: int) -> dict[str, Any]:
    """What the algorithm fixes about a rollout's size history [old, new]: its first
    ``fixed`` states (reached before any new pod can be ready), the end, the peak of
    the total, and that the new ReplicaSet only grows and the old one only shrinks.
    The states in between depend on when each new pod becomes ready."""
    return {"first_states": history[:fixed], "end_state": history[-1],
            "max_total": max(sum(row) for row in history),
            "new_only_grows": all(b[-1] >= a[-1] for a, b in itertools.pairwise(history)),
            "old_only_shrinks": all(b[0] <= a[0] for a, b in itertools.pairwise(history))}


def rollout_scenario(strategy: dict[str, Any] | None, fixed: int, replicas: int = 4,
                     ready_after: float = 0.5) -> Scenario:
    """Create, roll out, change the image, roll out again."""
    def scenario(run: Run) -> dict[str, Any]:
        run.create("deployments", deployment("web", replicas, ready_after=ready_after,
                                             strategy=strategy))
        rolled_out(run, "web", replicas)
        settled_replica_sets(run, "web")
        created = deployment_snapshot(run, "web")
        rec = run.watch("replicasets", "deployments")
        set_image(run, "web", "nginx:1.28")
        rolled_out(run, "web", replicas)
        settled_replica_sets(run, "web")
        rec.wait_for(lambda r: len(r.store["replicasets"]) == 2, "both ReplicaSets watched")
        final = deployment_snapshot(run, "web", rec)
        rss = replica_sets_by_creation(run, "web", rec)
        pod = run.list("pods", "app=web")[0]
        final["managedFields"] = {"deployment": managed_fields(run.get("deployments", "web")),
                                  "replicasets": [managed_fields(rs) for rs in rss],
                                  # the pod's status is the simulator's
                                  "a_pod": [m for m in managed_fields(pod)
                                            if m["subresource"] == ""]}
        history = size_history(rec, [rs["name"] for rs in final["replicasets"]])
        # the creation's event, then one per state after the first
        events = deployment_events(run, "web")
        return {"created": created, "rollout": rollout_facts(history, fixed), "final": final,
                "progressing": progressing_reasons(rec, "web"),
                "events_first": events[:fixed], "events_last": events[-1:]}
    return scenario


def rollback(run: Run) -> dict[str, Any]:
    """Roll out a second template, then back to the first as ``kubectl rollout undo`` does
    (the first ReplicaSet's template, without its pod-template-hash label, written into
    the Deployment): the old ReplicaSet is the new one again, its revision moved on."""
    run.create("deployments", deployment("web", 3, ready_after=0.3))
    rolled_out(run, "web", 3)
    set_image(run, "web", "nginx:1.28")
    rolled_out(run, "web", 3)
    settled_replica_sets(run, "web")
    rev1 = next(rs for rs in run.list("replicasets", "app=web")
                if rs["metadata"]["annotations"][REVISION] == "1")
    before = deployment_snapshot(run, "web")
    events_before = len(deployment_events(run, "web"))
    template = rev1["spec"]["template"]
    template["metadata"]["labels"].pop(HASH)
    rec = run.watch("replicasets", "deployments")
    run.patch("deployments", "web", [{"op": "replace", "path": "/spec/template",
                                      "value": template}], kind="json")
    rolled_out(run, "web", 3)
    settled_replica_sets(run, "web")
    after = deployment_snapshot(run, "web")
    # [old, new]: the second ReplicaSet is the old one now
    order = [rs["name"] for rs in reversed(after["replicasets"])]
    history = size_history(rec, order)
    # 25%/25% of 3: maxSurge 1, maxUnavailable 0: the first ReplicaSet up to 1, then the
    # second down by one for each of its pods ready
    events = deployment_events(run, "web")[events_before:]
    return {"before": before, "after": after, "rollback": rollout_facts(history, 3),
            "events_first": events[:2], "events_last": events[-1:]}


def progressing_reasons(rec: Recorder, name: str) -> list[str]:
    """The Progressing condition's status/reason after each watch event of the Deployment,
    consecutive repeats collapsed."""
    out: list[str] = []
    for e in rec.ordered("deployments"):
        if e.name != name:
            continue
        c = next((c for c in conditions(e.obj) if c["type"] == "Progressing"), None)
        s = f"{c['status']} {c['reason']}" if c else "-"
        if not out or out[-1] != s:
            out.append(s)
    return out


def pause_resume(run: Run) -> dict[str, Any]:
    """Pause, change the template (nothing rolls out), scale (the old ReplicaSet follows),
    resume (the change rolls out): Progressing's reasons on the way."""
    run.create("deployments", deployment("web", 2, ready_after=0.3))
    rolled_out(run, "web", 2)
    rec = run.watch("deployments", "replicasets")
    run.patch("deployments", "web", {"spec": {"paused": True}})
    set_image(run, "web", "nginx:1.28")

    def observed(replicas: int) -> Any:
        def check() -> Any:
            d = run.get("deployments", "web")
            st = d.get("status") or {}
            return d if (st.get("observedGeneration") == d["metadata"]["generation"]
                         and st.get("replicas") == replicas
                         and st.get("availableReplicas") == replicas) else None
        return check

    run.wait(observed(2), "the paused Deployment's new generation observed")
    settled_replica_sets(run, "web")
    paused = deployment_snapshot(run, "web")
    run.patch("deployments", "web", {"spec": {"replicas": 3}})
    run.wait(observed(3), "the paused Deployment scaled to 3")
    settled_replica_sets(run, "web")
    paused_scaled = deployment_snapshot(run, "web")
    run.patch("deployments", "web", {"spec": {"paused": None}})
    rolled_out(run, "web", 3)
    settled_replica_sets(run, "web")
    resumed = deployment_snapshot(run, "web")
    return {"paused": paused, "paused_scaled": paused_scaled, "resumed": resumed,
            "progressing": progressing_reasons(rec, "web"),
            "events": event_set(run, "Deployment")}


def proportional_scaling(run: Run) -> dict[str, Any]:
    """Scale a Deployment whose rollout is stuck (new pods never ready): the extra replicas
    are shared between the old and the new ReplicaSet in proportion to their sizes."""
    d = deployment("web", 5, ready_after=0.3, strategy=rolling(2, 1))
    run.create("deployments", d)
    rolled_out(run, "web", 5)
    rec = run.watch("replicasets")
    run.patch("deployments", "web", {"spec": {"template": {"metadata": {"annotations": {
        NEVER_READY: "true"}}}}})
    stuck = [4, 3]  # old down by maxUnavailable, new up to replicas + maxSurge in all

    def sizes_are(want: list[int]) -> Any:
        def check() -> Any:
            rss = replica_sets_by_creation(run, "web")
            got = [rs["spec"]["replicas"] for rs in rss]
            return got == want and all((rs.get("status") or {}).get("replicas") ==
                                       rs["spec"]["replicas"] for rs in rss)
        return check

    run.wait(sizes_are(stuck), f"the rollout stuck at {stuck}")

    def stuck_observed() -> bool:
        st = run.get("deployments", "web").get("status") or {}
        return (st.get("observedGeneration"), st.get("replicas"), st.get("updatedReplicas"),
                st.get("availableReplicas")) == (2, 7, 3, 4)

    run.wait(stuck_observed, "the stuck rollout's status")
    stuck_view = deployment_snapshot(run, "web")
    run.patch("deployments", "web", {"spec": {"replicas": 9}})
    # 11 allowed (9 + maxSurge 2), 4 to add: 4 * 11/7 = 6.3 -> 6, 3 * 11/7 = 4.7 -> 5
    run.wait(sizes_are([6, 5]), "proportional scaling to [6, 5]")
    settled_replica_sets(run, "web")
    def observed() -> bool:
        st = run.get("deployments", "web").get("status") or {}
        return (st.get("observedGeneration"), st.get("replicas"), st.get("updatedReplicas"),
                st.get("availableReplicas")) == (3, 11, 5, 6)

    run.wait(observed, "the scaled Deployment observed with its 6 old pods available")
    scaled = deployment_snapshot(run, "web", rec)
    history = size_history(rec, [rs["name"] for rs in scaled["replicasets"]])
    return {"stuck": stuck_view, "scaled": scaled, "sizes": history,
            "events": event_set(run, "Deployment")}


def progress_deadline(run: Run) -> dict[str, Any]:
    """A rollout whose new pods never become ready, with progressDeadlineSeconds 2: the
    Deployment reports Progressing False ProgressDeadlineExceeded and stays put."""
    run.create("deployments", deployment("web", 2, ready_after=0.2, progressDeadlineSeconds=2))
    rolled_out(run, "web", 2)
    rec = run.watch("deployments")
    run.patch("deployments", "web", {"spec": {"template": {"metadata": {"annotations": {
        NEVER_READY: "true"}}}}})

    def timed_out() -> Any:
        d = run.get("deployments", "web")
        return any(c["type"] == "Progressing" and c["status"] == "False"
                   for c in conditions(d))

    run.wait(timed_out, "Progressing False")
    settled_replica_sets(run, "web")
    # whether a sync saw progress (ReplicaSetUpdated) before the 2 s ran out is timing
    seen = [r for r in progressing_reasons(rec, "web") if r != "True ReplicaSetUpdated"]
    return {**deployment_snapshot(run, "web"), "progressing": seen,
            "events": deployment_events(run, "web")[:3]}


def history_limit(run: Run) -> dict[str, Any]:
    """Three templates with revisionHistoryLimit 1: the oldest ReplicaSet is deleted, the
    previous one kept at zero replicas."""
    run.create("deployments", deployment("web", 1, ready_after=0.1, revisionHistoryLimit=1))
    rolled_out(run, "web", 1)
    rec = run.watch("replicasets")
    for image in ("nginx:1.28", "nginx:1.29"):
        set_image(run, "web", image)
        rolled_out(run, "web", 1)
    settled_replica_sets(run, "web")
    run.wait(lambda: len(run.list("replicasets", "app=web")) == 2, "the oldest ReplicaSet gone")
    register_replica_sets_seen(run, rec)
    final = deployment_snapshot(run, "web")
    return {**final, "replicasets_deleted": [
        e.obj["metadata"]["annotations"].get(REVISION) for e in rec.ordered("replicasets")
        if e.type == "DELETED"]}


def quota_exceeded(run: Run) -> dict[str, Any]:
    """A ResourceQuota of two pods and a Deployment of three: the third pod is refused, so
    the ReplicaSet (and the Deployment after it) reports ReplicaFailure FailedCreate and
    the ReplicaSet controller a FailedCreate warning."""
    run.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota",
                                  "metadata": {"name": "two-pods"}, "spec": {"hard": {"pods": "2"}}})
    run.wait(lambda: (run.get("resourcequotas", "two-pods").get("status") or {}).get("hard"),
             "the quota's status")
    run.create("deployments", deployment("web", 3, ready_after=0.2))

    def failing() -> Any:
        d = run.get("deployments", "web")
        rss = run.list("replicasets", "app=web")
        st = d.get("status") or {}
        return (any(c["type"] == "ReplicaFailure" for c in conditions(d))
                and st.get("availableReplicas") == 2 and len(rss) == 1
                and any(c["type"] == "ReplicaFailure" for c in conditions(rss[0])))

    run.wait(failing, "ReplicaFailure on the ReplicaSet and the Deployment")
    snap = deployment_snapshot(run, "web")
    # retries (through the rate limiter) repeat the warning as often as time allows, and
    # from the tenth on the correlator combines them
    return {**snap, "events": sorted({
        run.masker.mask(e.replace("(combined from similar events): ", ""))
        for e in event_set(run, "ReplicaSet") if "FailedCreate" in e})}


def long_name(run: Run) -> dict[str, Any]:
    """A Deployment named with 250 characters: its ReplicaSet's name is the Deployment's cut
    to fit 253 characters with ``-<hash>`` (upstream generateReplicaSetName); the pods'
    names come from the API server's generateName rules."""
    name = "long-" + "x" * 245
    d = deployment(name, 1, ready_after=0.2)
    d["spec"]["selector"] = {"matchLabels": {"app": "long"}}
    d["spec"]["template"]["metadata"]["labels"] = {"app": "long"}
    run.create("deployments", d)
    rolled_out(run, name, 1)
    settled_replica_sets(run, "long")
    [rs] = run.list("replicasets", "app=long")
    h = rs["metadata"]["labels"][HASH]
    check_hash_format(h)
    rs_name = rs["metadata"]["name"]
    pods = run.list("pods", "app=long")
    facts = {"replicaset_name_is_cut_name_dash_hash": rs_name == f"{name[:253 - 1 - len(h)]}-{h}",
             "replicaset_name_length": len(rs_name),
             "pods_generate_name_is_replicaset_name_dash": sorted(
                 {p["metadata"].get("generateName") == f"{rs_name}-" for p in pods}),
             "pod_name_lengths": sorted({len(p["metadata"]["name"]) for p in pods})}
    # the cut depends on the hash's length, which differs (pykcm's hash is its own)
    run.masker.literal(rs_name, "{replicaset}")
    run.masker.literal(name, "{deployment}")
    return {**facts, "deployment": deployment_view(run.get("deployments", name)),
            "events": event_set(run, "Deployment")}


# -- ReplicaSet --------------------------------------------------------------------------------

def bare_pod(name: str, app: str, annotations: dict[str, str] | None = None,
             **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"}],
                         "terminationGracePeriodSeconds": 0, **spec}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app},
                         "annotations": {READY_AFTER: "0.2", **(annotations or {})}},
            "spec": s}


def pod_condition(p: dict[str, Any], ctype: str) -> str | None:
    for c in (p.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return str(c.get("status"))
    return None


def replica_set_scale_down(run: Run) -> dict[str, Any]:
    """A ReplicaSet adopts five pods in distinguishable states, then scales down to one: the
    unscheduled, the not-ready, the cheap (pod-deletion-cost -10) and the newer of two ready
    pods go, in the order of upstream's ranking (ActivePodsWithRanks: unassigned, not ready,
    deletion cost, pods doubled up on a node, then ready for less time, on a log2 scale).
    The pods are placed (``nodeName``) so that the two ready ones are alone on their nodes,
    and the older one is ready several seconds before the newer one exists."""
    app = "rank"
    node = "pykcm-node-{}".format
    pods = {
        "p-unscheduled": bare_pod("p-unscheduled", app,
                                  nodeSelector={"diff.pykcm.io/nowhere": "true"}),
        "p-not-ready": bare_pod("p-not-ready", app, {NEVER_READY: "true"}, nodeName=node(0)),
        "p-cheap": bare_pod("p-cheap", app,
                            {"controller.kubernetes.io/pod-deletion-cost": "-10"},
                            nodeName=node(0)),
        "p-ready-old": bare_pod("p-ready-old", app, nodeName=node(1)),
        "p-ready-new": bare_pod("p-ready-new", app, nodeName=node(2)),
    }
    run.create("pods", pods.pop("p-ready-old"))
    run.wait(lambda: pod_condition(run.get("pods", "p-ready-old"), "Ready") == "True",
             "p-ready-old ready")
    # ready 6 s or more before the newer one: a different log2 bucket of time ready (ns)
    time.sleep(6)
    for p in pods.values():
        run.create("pods", p)

    def states_reached() -> bool:
        got = {p["metadata"]["name"]: p for p in run.list("pods", f"app={app}")}
        return (len(got) == 5
                and pod_condition(got["p-unscheduled"], "PodScheduled") == "False"
                and (got["p-not-ready"].get("status") or {}).get("phase") == "Running"
                and all(pod_condition(got[n], "Ready") == "True"
                        for n in ("p-cheap", "p-ready-old", "p-ready-new")))

    run.wait(states_reached, "the five pods in their states")
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": app},
          "spec": {"replicas": 5, "selector": {"matchLabels": {"app": app}},
                   "template": {"metadata": {"labels": {"app": app},
                                             "annotations": {READY_AFTER: "0.2"}},
                                "spec": bare_pod("x", app)["spec"]}}}
    created = run.create("replicasets", rs)
    register_uid(run, {**created, "kind": "ReplicaSet"})

    def adopted() -> bool:
        ps = run.list("pods", f"app={app}")
        return len(ps) == 5 and all(owner_refs(p) for p in ps)

    run.wait(adopted, "the five pods adopted")
    run.wait(lambda: (run.get("replicasets", app).get("status") or {}).get("replicas") == 5,
             "the ReplicaSet's status counting five pods")
    adoption = {"pods": {p["metadata"]["name"]: owner_refs(p)
                         for p in sorted(run.list("pods", f"app={app}"),
                                         key=lambda p: p["metadata"]["name"])},
                "status": replica_set_view(run.get("replicasets", app))["status"]}
    # one at a time: the order of the deletions is the ranking
    remaining = sorted(pods) + ["p-ready-old"]
    deleted = []
    for n in (4, 3, 2, 1):
        run.patch("replicasets", app, {"spec": {"replicas": n}})

        def scaled(n: int = n) -> Any:
            ps = [p for p in run.list("pods", f"app={app}") if not p["metadata"].get(
                "deletionTimestamp")]
            rs = run.get("replicasets", app)
            st = rs.get("status") or {}
            return sorted(p["metadata"]["name"] for p in ps) if (
                len(ps) == n and st.get("replicas") == n
                and st.get("observedGeneration") == rs["metadata"]["generation"]) else None

        now = run.wait(scaled, f"the ReplicaSet scaled down to {n}")
        deleted.append(sorted(set(remaining) - set(now)))
        remaining = now
    rs_events = sorted(f"{e['type']} {e['reason']}: {e['message']}"
                       for e in events_of(run, "ReplicaSet"))
    return {"adoption": adoption, "deleted_in_order": deleted, "remaining": remaining,
            "replicaset": replica_set_view(run.get("replicasets", app)), "events": rs_events}


# -- Job ---------------------------------------------------------------------------------------

def job(name: str, *, completions: int | None = 1, parallelism: int | None = 1,
        run_seconds: float = 0.5, exit_code: int | None = None, **spec: Any) -> dict[str, Any]:
    ann = {RUN_SECONDS: str(run_seconds), READY_AFTER: "0"}
    if exit_code is not None:
        ann[EXIT_CODE] = str(exit_code)
    s: dict[str, Any] = {"template": {
        "metadata": {"annotations": ann},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": "busybox:1.36"}]}}, **spec}
    if completions is not None:
        s["completions"] = completions
    if parallelism is not None:
        s["parallelism"] = parallelism
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": s}


def job_status(j: dict[str, Any]) -> dict[str, Any]:
    """The status without its times (whether they are set is kept)."""
    st = dict(j.get("status") or {})
    st.pop("conditions", None)
    for k in ("startTime", "completionTime"):
        if k in st:
            st[k] = "<set>"
    return {"status": st, "conditions": conditions(j)}


def job_pods(run: Run, name: str) -> list[dict[str, Any]]:
    """The Job's pods as users see them, sorted by completion index, phase and name."""
    out = []
    for p in run.list("pods", f"batch.kubernetes.io/job-name={name}"):
        m = p["metadata"]
        ann = {k: v for k, v in (m.get("annotations") or {}).items()
               if not k.startswith("sim.pykcm.io/")}
        labels = {k: v for k, v in (m.get("labels") or {}).items()
                  if k not in ("controller-uid", "batch.kubernetes.io/controller-uid")}
        spec = p["spec"]
        out.append({"generateName": m.get("generateName"), "labels": labels,
                    "annotations": ann, "finalizers": m.get("finalizers") or [],
                    "ownerReferences": owner_refs(p),
                    "spec_but_node": {k: v for k, v in spec.items() if k != "nodeName"},
                    "phase": (p.get("status") or {}).get("phase")})
    out.sort(key=lambda v: (v["annotations"].get("batch.kubernetes.io/job-completion-index",
                                                 ""), v["phase"] or ""))
    return out


def job_finished(run: Run, name: str, ctype: str = "Complete") -> dict[str, Any]:
    """The Job once ``ctype`` is True and every pod it counted is off the books."""
    def check() -> Any:
        j = run.get("jobs", name)
        st = j.get("status") or {}
        done = any(c["type"] == ctype and c["status"] == "True" for c in conditions(j))
        uncounted = st.get("uncountedTerminatedPods") or {}
        pods_ok = all(not p["metadata"].get("finalizers")
                      for p in run.list("pods", f"batch.kubernetes.io/job-name={name}"))
        return j if (done and not any(uncounted.values()) and not st.get("active")
                     and not st.get("terminating") and pods_ok) else None
    got: dict[str, Any] = run.wait(check, f"Job {name} {ctype}")
    return got


def job_view(run: Run, name: str) -> dict[str, Any]:
    j = run.get("jobs", name)
    register_uid(run, {**j, "kind": "Job"})
    pods_managed: list[Any] = []
    for p in run.list("pods", f"batch.kubernetes.io/job-name={name}"):
        # the pods' status is the simulator's
        mf = [m for m in managed_fields(p) if m["subresource"] != "status"]
        if mf not in pods_managed:
            pods_managed.append(mf)
    pods_managed.sort(key=lambda mf: json.dumps([m["fields"] for m in mf], sort_keys=True))
    # pods are created and deleted in batches, concurrently: their events in any order
    return {**job_status(j), "pods": job_pods(run, name),
            "events": sorted(event_set(run, "Job", name=name)),
            "managedFields": {"job": managed_fields(j), "pods": pods_managed}}


def job_condition_history(rec: Recorder, name: str) -> list[str]:
    """Each condition type's status/reason as it first appeared or changed, in order."""
    seen: dict[str, str] = {}
    out: list[str] = []
    for e in rec.ordered("jobs"):
        if e.name != name:
            continue
        for c in conditions(e.obj):
            v = f"{c['type']}={c['status']} {c['reason']}"
            if seen.get(c["type"]) != v:
                seen[c["type"]] = v
                out.append(v)
    return out


def job_completions(run: Run) -> dict[str, Any]:
    """4 completions, 2 at a time: never more than 2 active, then Complete."""
    rec = run.watch("jobs")
    run.create("jobs", job("work", completions=4, parallelism=2))
    job_finished(run, "work")
    max_active = max(int((e.obj.get("status") or {}).get("active") or 0)
                     for e in rec.ordered("jobs"))
    return {**job_view(run, "work"), "max_active": max_active,
            "conditions_seen": job_condition_history(rec, "work")}


def job_backoff_limit(run: Run) -> dict[str, Any]:
    """Two pods fail at once with backoffLimit 1: the Job fails (BackoffLimitExceeded)."""
    rec = run.watch("jobs")
    run.create("jobs", job("fails", completions=2, parallelism=2, exit_code=1,
                           run_seconds=0.3, backoffLimit=1))
    job_finished(run, "fails", "Failed")
    return {**job_view(run, "fails"), "conditions_seen": job_condition_history(rec, "fails")}


def event_counts(run: Run, kind: str, name: str) -> dict[str, Any]:
    """The object's events by type and reason: how many Event objects, the sum of their
    counts, and the messages (masked), sorted."""
    out: dict[str, Any] = {}
    for e in run.events(kinds=(kind,)):
        if e["object"] != f"{kind}/{name}":
            continue
        v = out.setdefault(f"{e['type']} {e['reason']}", {"events": 0, "count": 0,
                                                           "messages": []})
        v["events"] += 1
        v["count"] += int(e.get("count") or 1)
        v["messages"].append(e["message"])
    for v in out.values():
        v["messages"].sort()
    return out


def job_event_spam(run: Run) -> dict[str, Any]:
    """30 pods created at once, then the first failure fails the Job (backoffLimit 0) and the
    29 others are deleted: client-go's correlator aggregates the similar SuccessfulCreate
    events (from the 10th on) and its spam filter lets 25 events of the Job through per
    event type, so the Warning BackoffLimitExceeded still gets out after 25 Normal ones."""
    run.create("jobs", job("many", completions=30, parallelism=30, exit_code=1,
                           run_seconds=2, backoffLimit=0))
    job_finished(run, "many", "Failed")
    j = run.get("jobs", "many")
    register_uid(run, {**j, "kind": "Job"})
    return {**job_status(j), "events": event_counts(run, "Job", "many")}


def job_limits(run: Run) -> dict[str, Any]:
    """activeDeadlineSeconds 1 with pods that run for a minute (DeadlineExceeded, the pods
    deleted); backoffLimitPerIndex 0 with pods that fail (both indexes failed,
    FailedIndexes)."""
    run.create("jobs", job("deadline", completions=2, parallelism=2, run_seconds=60,
                           activeDeadlineSeconds=1))
    run.create("jobs", job("perindex", completions=2, parallelism=2, exit_code=1,
                           run_seconds=0.3, completionMode="Indexed", backoffLimitPerIndex=0))
    job_finished(run, "deadline", "Failed")
    job_finished(run, "perindex", "Failed")
    return {"deadline": job_view(run, "deadline"), "perindex": job_view(run, "perindex")}


def job_ttl(run: Run) -> dict[str, Any]:
    """ttlSecondsAfterFinished 0: the finished Job is deleted at once, in the foreground (its
    pods go first)."""
    rec = run.watch("jobs", "pods")
    run.create("jobs", job("brief", ttlSecondsAfterFinished=0))
    rec.wait_for(lambda r: "brief" in r.store["jobs"] or any(
        e.type == "DELETED" for e in r.events if e.resource == "jobs"), "the Job seen")
    rec.wait_for(lambda r: not r.store["jobs"] and not r.store["pods"],
                 "the Job and its pods gone")
    completed_before_deleted = any(
        any(c["type"] == "Complete" and c["status"] == "True" for c in conditions(e.obj))
        for e in rec.ordered("jobs") if e.obj["metadata"].get("deletionTimestamp"))
    return {**deletion_facts(rec), "completed_when_deleted": completed_before_deleted,
            "events": event_set(run, "Job", name="brief")}


def job_indexed(run: Run) -> dict[str, Any]:
    """Indexed completion: index annotations, labels, hostnames, env, completedIndexes."""
    run.create("jobs", job("idx", completions=3, parallelism=3, completionMode="Indexed"))
    job_finished(run, "idx")
    return job_view(run, "idx")


def job_pod_failure_policy(run: Run) -> dict[str, Any]:
    """FailJob on exit code 42 (the Job fails at once, reason PodFailurePolicy); Ignore on
    exit code 7 (the failure is not counted; backoffLimit 0 does not fail the Job)."""
    rules_fail = {"rules": [{"action": "FailJob", "onExitCodes": {
        "containerName": "main", "operator": "In", "values": [42]}}]}
    rules_ignore = {"rules": [{"action": "Ignore", "onExitCodes": {
        "operator": "In", "values": [7]}}]}
    rec = run.watch("jobs")
    run.create("jobs", job("failjob", exit_code=42, run_seconds=0.3, backoffLimit=6,
                           podFailurePolicy=rules_fail))
    run.create("jobs", job("ignore", exit_code=7, run_seconds=0.3, backoffLimit=0,
                           podFailurePolicy=rules_ignore))
    job_finished(run, "failjob", "Failed")

    def ignored() -> Any:
        ps = run.list("pods", "batch.kubernetes.io/job-name=ignore")
        gone = [p for p in ps if (p.get("status") or {}).get("phase") == "Failed"
                and not p["metadata"].get("finalizers")]
        st = run.get("jobs", "ignore").get("status") or {}
        return gone and not any((st.get("uncountedTerminatedPods") or {}).values())

    run.wait(ignored, "the first ignored failure accounted for")
    ignore_status = job_status(run.get("jobs", "ignore"))
    run.patch("jobs", "ignore", {"spec": {"suspend": True}})
    run.wait(lambda: any(c["type"] == "Suspended" and c["status"] == "True"
                         for c in conditions(run.get("jobs", "ignore"))), "ignore suspended")
    suspended = job_status(run.get("jobs", "ignore"))
    return {"failjob": job_view(run, "failjob"),
            "failjob_conditions_seen": job_condition_history(rec, "failjob"),
            "ignore_after_first_failure": {
                "failed": ignore_status["status"].get("failed"),
                "conditions": ignore_status["conditions"]},
            # suspending a started Job clears startTime (v1.36's
            # MutableSchedulingDirectivesForSuspendedJobs): None here
            "ignore_suspended": {"conditions": suspended["conditions"],
                                 "startTime": suspended["status"].get("startTime")},
            "ignore_events": [e for e in event_set(run, "Job", name="ignore")
                              if "SuccessfulCreate" not in e]}


def job_suspend_resume(run: Run) -> dict[str, Any]:
    """Created suspended (no pods, Suspended condition), resumed, complete."""
    rec = run.watch("jobs")
    run.create("jobs", job("later", completions=2, parallelism=2, suspend=True))
    run.wait(lambda: any(c["type"] == "Suspended" and c["status"] == "True"
                         for c in conditions(run.get("jobs", "later"))), "Suspended")
    suspended = job_status(run.get("jobs", "later"))
    pods_while_suspended = len(run.list("pods"))
    run.patch("jobs", "later", {"spec": {"suspend": False}})
    job_finished(run, "later")
    return {"suspended": suspended, "pods_while_suspended": pods_while_suspended,
            "done": job_view(run, "later"),
            "conditions_seen": job_condition_history(rec, "later")}


# -- CronJob -----------------------------------------------------------------------------------

def cronjob(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "timeZone": "Etc/UTC", "suspend": True,
                     "jobTemplate": {"metadata": {"labels": {"cron": name},
                                                  "annotations": {"note": "from-template"}},
                                     "spec": job(name, run_seconds=0.3)["spec"]},
                     **spec}}


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def make_due(run: Run, name: str, last_schedule: float) -> None:
    """Backdate status.lastScheduleTime (the controller counts missed times from it), then
    unsuspend: the CronJob is due at once, whatever the wall clock."""
    run.patch("cronjobs", name, {"status": {"lastScheduleTime": rfc3339(last_schedule)}},
              sub="status")
    run.patch("cronjobs", name, {"spec": {"suspend": False}})


def cronjob_view(run: Run, name: str, scheduled: float) -> dict[str, Any]:
    """The CronJob's status and its Jobs, the scheduled time checked then masked."""
    cj = run.get("cronjobs", name)
    register_uid(run, {**cj, "kind": "CronJob"})
    minute = str(int(scheduled) // 60)
    run.masker.literal(f"{name}-{minute}", f"{name}-{{minute}}")
    run.masker.literal(rfc3339(scheduled), "{scheduled}")
    run.masker.literal(time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(scheduled)),
                       "{scheduled-rfc1123z}")
    st = dict(cj.get("status") or {})
    if "lastSuccessfulTime" in st:
        st["lastSuccessfulTime"] = "<set>"
    jobs = []
    for j in run.list("jobs"):
        register_uid(run, {**j, "kind": "Job"})
        m = j["metadata"]
        labels = {k: v for k, v in (m.get("labels") or {}).items()
                  if k not in ("controller-uid", "batch.kubernetes.io/controller-uid")}
        jobs.append({"name": m["name"], "labels": labels, "annotations": m.get("annotations"),
                     "ownerReferences": owner_refs(j), "spec": j["spec"], **job_status(j)})
    return {"status": st, "jobs": jobs}


def cronjob_missed_many(run: Run) -> dict[str, Any]:
    """``@every 2h``, last run 150 periods and ten minutes ago: over 100 missed times
    (TooManyMissedTimes), one Job for the most recent (ten minutes ago), which completes
    (SawCompletedJob, lastSuccessfulTime). The next time is almost two hours away.
    (A schedule that is not regular, such as ``* 19 * * *``, would start nothing here:
    upstream estimates the missed times from the first two, and so does pykcm.)"""
    period = 7200
    last = int(time.time()) - 150 * period - 600
    scheduled = last + 150 * period
    run.create("cronjobs", cronjob("tick", "@every 2h"))
    rec = run.watch("cronjobs", "jobs")
    make_due(run, "tick", last)

    def done() -> Any:
        cj = run.get("cronjobs", "tick")
        st = cj.get("status") or {}
        return cj if st.get("lastSuccessfulTime") and not st.get("active") else None

    run.wait(done, "the CronJob's Job to complete")
    return {**cronjob_view(run, "tick", scheduled),
            "active_seen": max(len((e.obj.get("status") or {}).get("active") or [])
                               for e in rec.ordered("cronjobs")),
            "events": event_set(run, "CronJob")}


def cronjob_deadline(run: Run) -> dict[str, Any]:
    """A daily schedule a minute ago, last run ten minutes ago: with a starting deadline
    of 300 s the Job starts, and with successfulJobsHistoryLimit 0 it is deleted once it
    succeeded; with a 10 s deadline (the time already past it) nothing starts."""
    now = time.time()
    at = time.gmtime(now - 60)
    scheduled = (int(now - 60) // 60) * 60
    sched = f"{at.tm_min} {at.tm_hour} * * *"
    run.create("cronjobs", cronjob("soon", sched, startingDeadlineSeconds=300,
                                   successfulJobsHistoryLimit=0))
    run.create("cronjobs", cronjob("late", sched, startingDeadlineSeconds=10))
    make_due(run, "late", now - 600)
    make_due(run, "soon", now - 600)

    def done() -> Any:
        st = run.get("cronjobs", "soon").get("status") or {}
        return st.get("lastSuccessfulTime") and not st.get("active") and not run.list("jobs")

    run.wait(done, "the CronJob's Job to complete and be deleted")
    soon = cronjob_view(run, "soon", scheduled)
    late = cronjob_view(run, "late", scheduled)
    late["status"].pop("lastScheduleTime", None)  # our own backdated value
    # MissingJob is left out: kube-controller-manager reports it now and then, when the
    # sync the Job's deletion queued reads the CronJob before its own status write (the
    # one dropping the Job from status.active) reached its cache.
    events = [e for e in event_set(run, "CronJob") if " MissingJob: " not in e]
    return {"soon": soon, "late": late, "events": events}


# -- garbage collector --------------------------------------------------------------------------

def deletion_facts(rec: Recorder) -> dict[str, Any]:
    """Per kind: the finalizers an object had when it was marked for deletion, and the order in
    which kinds disappeared (pods before their ReplicaSet before the Deployment, ...)."""
    finalizers: dict[str, list[list[str]]] = {}
    gone: list[str] = []
    for e in rec.ordered():
        kind = {"deployments": "Deployment", "replicasets": "ReplicaSet", "pods": "Pod",
                "jobs": "Job"}.get(e.resource, e.resource)
        if e.obj["metadata"].get("deletionTimestamp"):
            f = sorted(e.obj["metadata"].get("finalizers") or [])
            lst = finalizers.setdefault(kind, [])
            if f not in lst:
                lst.append(f)
        if e.type == "DELETED" and (not gone or gone[-1] != kind):
            gone.append(kind)
    return {"finalizers_while_deleting": finalizers, "gone_in_order": gone}


def register_replica_sets_seen(run: Run, rec: Recorder) -> None:
    """Register the hashes of the ReplicaSets a watch saw, in the order they were added."""
    for e in rec.ordered("replicasets"):
        if e.type == "ADDED":
            h = e.obj["metadata"]["labels"][HASH]
            check_hash_format(h)
            run.masker.hash(h)


def gc_foreground(run: Run) -> dict[str, Any]:
    """Delete a Deployment with propagationPolicy Foreground: it waits (finalizer
    foregroundDeletion) until its ReplicaSet, itself deleted in the foreground, is gone
    after its pods."""
    run.create("deployments", deployment("web", 2, ready_after=0.2))
    rolled_out(run, "web", 2)
    rec = run.watch("deployments", "replicasets", "pods")
    run.delete("deployments", "web", "Foreground")
    rec.wait_for(lambda r: not any(r.store.values()), "everything gone")
    register_replica_sets_seen(run, rec)
    return {**deletion_facts(rec), "events": sorted(event_set(run))}


def gc_orphan(run: Run) -> dict[str, Any]:
    """Delete a Deployment with propagationPolicy Orphan: finalizer orphan, the ReplicaSet's
    owner reference removed, the ReplicaSet and its pods left running."""
    run.create("deployments", deployment("web", 2, ready_after=0.2))
    rolled_out(run, "web", 2)
    rec = run.watch("deployments", "replicasets", "pods")
    run.delete("deployments", "web", "Orphan")
    rec.wait_for(lambda r: not r.store["deployments"], "the Deployment gone")
    rss = replica_sets_by_creation(run, "web")
    return {**deletion_facts(rec), "replicasets": [replica_set_view(rs) for rs in rss],
            "pods": pods_view(run, "app=web")}


# -- namespace ---------------------------------------------------------------------------------

def namespace_deletion(run: Run) -> dict[str, Any]:
    """Delete a namespace holding a Deployment (scaled to zero: pods being deleted would
    make the namespace controller come back later) and a ConfigMap with a finalizer of ours:
    the namespace stays Terminating with conditions saying what remains and which finalizer
    holds it; once we drop the finalizer the namespace goes."""
    run.create("deployments", deployment("web", 0))
    run.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "held", "finalizers": ["diff.pykcm.io/hold"]}})
    run.wait(lambda: run.list("replicasets", "app=web"), "the Deployment's ReplicaSet")
    run.api.ok("DELETE", f"/api/v1/namespaces/{run.ns}")

    def only_held_left() -> Any:
        """The namespace once nothing but the held ConfigMap is left and its conditions say
        so. (A pass of the namespace controller that still saw the pods going names them
        too; the next one, half its estimate later, does not.)"""
        ns = run.api.ok("GET", f"/api/v1/namespaces/{run.ns}")
        types = {c["type"]: c for c in conditions(ns)}
        left = (not run.list("pods") and not run.list("replicasets")
                and not run.list("deployments"))
        want = types.get("NamespaceContentRemaining", {}).get("status") == "True" and \
            types.get("NamespaceFinalizersRemaining", {}).get("status") == "True"
        stale = any(r in str(c["message"]) for c in types.values()
                    for r in ("pods.", "replicasets.apps", "deployments.apps"))
        return ns if left and want and not stale else None

    terminating = run.wait(only_held_left, "the namespace waiting for the held ConfigMap")
    spec_finalizers = terminating["spec"].get("finalizers")
    run.patch("configmaps", "held", {"metadata": {"finalizers": None}})

    def gone() -> bool:
        return run.api.request("GET", f"/api/v1/namespaces/{run.ns}")[0] == 404

    run.wait(gone, "the namespace gone")
    return {"phase": terminating["status"].get("phase"),
            "conditions": sorted(conditions(terminating), key=lambda c: c["type"]),
            "spec_finalizers": spec_finalizers}


SCENARIOS: dict[str, Scenario] = {
    # 25%/25% of 4: new RS created at 1, old down by 1, new up to 2; then readiness paces it
    "deployment-rolling-default": rollout_scenario(None, fixed=4),
    # maxSurge 0, maxUnavailable 1: old down to 3 first (new created at 0), then new up to 1
    "deployment-max-surge-0": rollout_scenario(rolling(0, 1), fixed=3),
    # Recreate: every step is fixed (old to 0, then new created at full size)
    "deployment-recreate": rollout_scenario({"type": "Recreate"}, fixed=3),
    "deployment-rollback": rollback,
    "deployment-pause-resume": pause_resume,
    "deployment-proportional-scaling": proportional_scaling,
    "deployment-long-name": long_name,
    "deployment-quota-exceeded": quota_exceeded,
    "deployment-progress-deadline": progress_deadline,
    "deployment-history-limit": history_limit,
    "replicaset-scale-down-ranking": replica_set_scale_down,
    "job-completions-parallelism": job_completions,
    "job-backoff-limit-exceeded": job_backoff_limit,
    "job-indexed": job_indexed,
    "job-event-spam-filter": job_event_spam,
    "job-deadline-and-backoff-per-index": job_limits,
    "job-ttl-after-finished": job_ttl,
    "job-pod-failure-policy": job_pod_failure_policy,
    "job-suspend-resume": job_suspend_resume,
    "cronjob-missed-many": cronjob_missed_many,
    "cronjob-starting-deadline": cronjob_deadline,
    "gc-foreground": gc_foreground,
    "gc-orphan": gc_orphan,
    "namespace-deletion": namespace_deletion,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_differential(differential: Differential, name: str) -> None:
    """The scenario under kube-controller-manager and under pykcm: the same observations."""
    kube, pykcm = differential.run(name, SCENARIOS[name], ALLOWLIST)
    assert kube and pykcm, f"{name} observed nothing"
