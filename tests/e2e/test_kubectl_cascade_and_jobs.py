"""Deletion, Jobs and CronJobs end to end: the real kubectl against ``pykcm up`` (issue 7's acceptance).

One ``pykcm up`` (API server, 3 simulated nodes, every built-in controller:
garbage collector, namespace, ReplicaSet, Deployment, Job, TTL-after-finished,
CronJob) serves the session; each test works in a namespace of its own.
Pods are scripted through the simulator's annotations on the pod template:
``sim.pykcm.io/run-seconds`` (a restartPolicy Never pod finishes after it),
``sim.pykcm.io/exit-code`` (0: Succeeded, otherwise Failed).

Nothing here asserts how long anything takes: times are upper bounds on
waits, with one exception that is a behaviour check: the Job pod-failure
backoff (kube-controller-manager v1.36: 10 s after the first failure, 20 s
after the second) is checked as a lower bound on the spacing of the pods.

The CronJob test runs on the controller manager's real clock (``*/1 * * * *``):
it observes two schedule ticks, about 1 to 2 minutes; the Job backoff test
about 35 s; the rest a few seconds each.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.e2e.cluster_helpers import (
    READY_AFTER,
    WAIT,
    NotYet,
    Watch,
    condition,
    controller_ref,
    get_json,
    is_active,
    is_ready,
    items,
    phase,
    rollout_status,
    wait_until,
)
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

RUN_SECONDS = "sim.pykcm.io/run-seconds"
EXIT_CODE = "sim.pykcm.io/exit-code"
HOLD = "e2e.pykcm.io/hold"
"""A finalizer of the tests' own: an object carrying it stays until the test removes it."""
NS_PREFIX = "gcjob"
"""Prefix of the names of the tests' namespaces (conftest's ``ns`` fixture)."""


# -- helpers ---------------------------------------------------------------------------------

def names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def exists(k: Kubectl, *args: str) -> bool:
    r = k.run("get", *args, "-o", "name")
    if r.returncode == 0:
        return True
    assert "NotFound" in r.stderr or "not found" in r.stderr, r.stderr
    return False


def ts(value: str) -> float:
    """An RFC 3339 time of the API (second precision) as epoch seconds."""
    t = datetime.fromisoformat(value)
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def apply(k: Kubectl, ns: str, obj: dict[str, Any]) -> str:
    return k.ok("apply", "-n", ns, "-f", "-", stdin=json.dumps(obj))


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name},
                                               "annotations": {READY_AFTER: "0.2"}},
                                  "spec": {"containers": [{"name": "app",
                                                           "image": "nginx:1.27"}]}}}}


def job(name: str, *, run_seconds: float | None = 0.5, exit_code: int = 0,
        pod_finalizers: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    """A Job whose pods (restartPolicy Never) run ``run_seconds`` (None: a day) then exit."""
    ann = {EXIT_CODE: str(exit_code),
           RUN_SECONDS: str(86400 if run_seconds is None else run_seconds)}
    meta: dict[str, Any] = {"labels": {"app": name}, "annotations": ann}
    if pod_finalizers:
        meta["finalizers"] = pod_finalizers
    template = {"metadata": meta,
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": template, **spec}}


def job_pods(k: Kubectl, ns: str, name: str) -> list[dict[str, Any]]:
    return items(k, ns, "pods", "-l", f"batch.kubernetes.io/job-name={name}")


def events_of(k: Kubectl, ns: str, name: str) -> list[dict[str, Any]]:
    return items(k, ns, "events", "--field-selector", f"involvedObject.name={name}")


def kubectl_wait(k: Kubectl, ns: str, what: str, cond: str, timeout: float = WAIT) -> str:
    r = k.run("wait", "-n", ns, f"--for={cond}", what, f"--timeout={int(timeout)}s",
              timeout=timeout + 30)
    assert r.returncode == 0, f"kubectl wait {what} {cond}: rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def rolled_out_deployment(k: Kubectl, ns: str, name: str, replicas: int
                          ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Create a Deployment, wait for its rollout: (deployment, its ReplicaSet, its pods)."""
    assert apply(k, ns, deployment(name, replicas)).strip() == f"deployment.apps/{name} created"
    r = rollout_status(k, ns, name)
    assert r.returncode == 0, f"rollout status: {r.stdout}\n{r.stderr}"
    d = get_json(k, "deployment", name, "-n", ns)
    [rs] = items(k, ns, "replicasets", "-l", f"app={name}")
    ps = items(k, ns, "pods", "-l", f"app={name}")
    assert len(ps) == replicas
    return d, rs, ps


# -- garbage collection of Deployments --------------------------------------------------------

def test_delete_deployment_removes_replicasets_and_pods(kubectl_up: Kubectl, ns: str) -> None:
    """`kubectl delete deployment` (background cascade): its ReplicaSet and pods go too."""
    k = kubectl_up
    d, rs, _ = rolled_out_deployment(k, ns, "web", 3)
    assert (controller_ref(rs) or {}).get("uid") == d["metadata"]["uid"]
    out = k.ok("delete", "deployment", "web", "-n", ns)
    assert out.startswith('deployment.apps "web" deleted')
    assert not exists(k, "deployment", "web", "-n", ns)
    wait_until(lambda: not (left := items(k, ns, "replicasets")) or NotYet(names(left)),
               "the ReplicaSet to be garbage collected")
    wait_until(lambda: not (left := items(k, ns, "pods")) or NotYet(names(left)),
               "the pods to be garbage collected")


def test_delete_deployment_foreground_waits_for_dependents(kubectl_up: Kubectl,
                                                            ns: str) -> None:
    """`--cascade=foreground`: the Deployment stays (foregroundDeletion) until its dependents are gone.

    One pod carries a finalizer of the test's own, so it cannot go: while it
    is held, the Deployment and its ReplicaSet (deleted in the foreground
    too, since the pods block their owner's deletion) must still exist,
    marked for deletion; once it is released, everything goes.
    """
    k = kubectl_up
    d, rs, ps = rolled_out_deployment(k, ns, "web", 3)
    held = ps[0]["metadata"]["name"]
    k.ok("patch", "pod", held, "-n", ns, "--type=merge",
         "-p", json.dumps({"metadata": {"finalizers": [HOLD]}}))
    # the Deployment's ReplicaSet and the ReplicaSet's pods block their owner's deletion
    assert (controller_ref(rs) or {}).get("blockOwnerDeletion") is True
    assert all((controller_ref(p) or {}).get("blockOwnerDeletion") is True for p in ps)

    out = k.ok("delete", "deployment", "web", "-n", ns, "--cascade=foreground", "--wait=false")
    assert out.startswith('deployment.apps "web" deleted')

    def others_gone() -> Any:
        left = [p["metadata"]["name"] for p in items(k, ns, "pods")]
        return left == [held] or NotYet(left)

    wait_until(others_gone, "every pod but the held one to be deleted")
    pod = get_json(k, "pod", held, "-n", ns)
    assert pod["metadata"].get("deletionTimestamp"), "the held pod was not deleted"
    d_now = get_json(k, "deployment", "web", "-n", ns)
    assert d_now["metadata"]["uid"] == d["metadata"]["uid"]
    assert d_now["metadata"].get("deletionTimestamp")
    assert "foregroundDeletion" in (d_now["metadata"].get("finalizers") or [])
    rs_now = get_json(k, "replicaset", rs["metadata"]["name"], "-n", ns)
    assert rs_now["metadata"].get("deletionTimestamp")
    assert "foregroundDeletion" in (rs_now["metadata"].get("finalizers") or [])

    k.ok("patch", "pod", held, "-n", ns, "--type=merge",
         "-p", json.dumps({"metadata": {"finalizers": None}}))
    r = k.run("wait", "-n", ns, "--for=delete", "deployment/web", f"--timeout={int(WAIT)}s",
              timeout=WAIT + 30)
    assert r.returncode == 0, r.stderr
    assert not items(k, ns, "replicasets")
    assert not items(k, ns, "pods")


def test_delete_deployment_orphan_leaves_replicasets(kubectl_up: Kubectl, ns: str) -> None:
    """`--cascade=orphan`: the Deployment goes, its ReplicaSet keeps running without an owner."""
    k = kubectl_up
    d, rs, ps = rolled_out_deployment(k, ns, "web", 3)
    assert (controller_ref(rs) or {}).get("uid") == d["metadata"]["uid"]
    out = k.ok("delete", "deployment", "web", "-n", ns, "--cascade=orphan")
    assert out.startswith('deployment.apps "web" deleted')
    assert not exists(k, "deployment", "web", "-n", ns)

    def orphaned() -> Any:
        got = items(k, ns, "replicasets")
        refs = [o["metadata"].get("ownerReferences") for o in got]
        return (got if len(got) == 1 and not refs[0] else None) or NotYet(refs)

    [rs_now] = wait_until(orphaned, "the ReplicaSet to lose its owner reference")
    assert rs_now["metadata"]["uid"] == rs["metadata"]["uid"]
    assert not rs_now["metadata"].get("deletionTimestamp")
    assert rs_now["spec"]["replicas"] == 3
    # The ReplicaSet still runs its pods: the same ones, still owned by it, ready.
    ps_now = items(k, ns, "pods", "-l", "app=web")
    assert names(ps_now) == names(ps)
    assert all((controller_ref(p) or {}).get("uid") == rs["metadata"]["uid"] for p in ps_now)
    assert all(is_ready(p) and not p["metadata"].get("deletionTimestamp") for p in ps_now)
    # and it is alive: scaling it still works
    k.ok("scale", "replicaset", rs["metadata"]["name"], "-n", ns, "--replicas=4")
    wait_until(lambda: len(items(k, ns, "pods", "-l", "app=web")) == 4,
               "the orphaned ReplicaSet to scale to 4 pods")
    rs_final = get_json(k, "replicaset", rs["metadata"]["name"], "-n", ns)
    assert not rs_final["metadata"].get("ownerReferences")


# -- namespace deletion -----------------------------------------------------------------------

def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_delete_namespace_empties_and_removes_it(kubectl_up: Kubectl) -> None:
    """Deleting a namespace with Deployments, Jobs and a custom resource empties it, then removes it.

    The custom resource carries a finalizer of the test's own: the namespace
    waits for it (conditions NamespaceContentRemaining and
    NamespaceFinalizersRemaining, as upstream) with everything else gone,
    and is removed once it is released.
    """
    k = kubectl_up
    group = f"g{uuid.uuid4().hex[:8]}.e2e.pykcm.io"
    k.ok("apply", "-f", "-", stdin=json.dumps(_crd(group)))
    ns = f"gcjob-ns-{uuid.uuid4().hex[:8]}"
    k.ok("create", "namespace", ns)
    try:
        rolled_out_deployment(k, ns, "web", 2)
        rolled_out_deployment(k, ns, "api", 1)
        apply(k, ns, job("forever", run_seconds=None, parallelism=2, completions=2))
        apply(k, ns, job("quick", run_seconds=0.2))
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget",
                  "metadata": {"name": "w1", "finalizers": [HOLD]}, "spec": {"size": 1}}
        # discovery may lag one request behind in kubectl's cache: retry briefly
        wait_until(lambda: k.run("apply", "-n", ns, "-f", "-",
                                 stdin=json.dumps(widget)).returncode == 0,
                   "the custom resource to be created", timeout=30)
        wait_until(lambda: len([p for p in items(k, ns, "pods") if is_active(p)]) == 5
                   or NotYet(names(items(k, ns, "pods"))),
                   "the Deployments' and the forever Job's pods to run")
        kubectl_wait(k, ns, "job/quick", "condition=complete")

        out = k.ok("delete", "namespace", ns, "--wait=false")
        assert out.startswith(f'namespace "{ns}" deleted')

        def content_gone() -> Any:
            # Everything is gone but the custom resource, which its finalizer holds.
            left = {r: names(items(k, ns, r))
                    for r in ("deployments", "replicasets", "jobs", "pods")}
            w = get_json(k, f"widgets.{group}", "w1", "-n", ns)
            return (not any(left.values()) and w["metadata"].get("deletionTimestamp")) or (
                NotYet((left, w["metadata"].get("deletionTimestamp"))))

        wait_until(content_gone, "the namespace's content to be deleted")

        def waiting_for_finalizer() -> Any:
            # The conditions are those of the namespace controller's latest pass: wait for
            # one that ran once only the held custom resource was left (the Jobs' pods hold
            # their job-tracking finalizer for a moment, and show in earlier passes).
            n = get_json(k, "namespace", ns)
            conds = {c["type"]: c for c in n["status"].get("conditions") or []}
            rem = conds.get("NamespaceFinalizersRemaining", {})
            msg = str(rem.get("message") or "")
            return (n["status"].get("phase") == "Terminating" and rem.get("status") == "True"
                    and HOLD in msg and "job-tracking" not in msg
                    and conds.get("NamespaceContentRemaining", {}).get("status") == "True"
                    and n) or NotYet(n["status"])

        n = wait_until(waiting_for_finalizer, "the namespace to report the remaining finalizer")
        conds = {c["type"]: c for c in n["status"]["conditions"]}
        assert conds["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
        assert conds["NamespaceFinalizersRemaining"]["message"] == (
            f"Some content in the namespace has finalizers remaining: {HOLD} in 1 resource "
            "instances")
        assert conds["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
        assert conds["NamespaceContentRemaining"]["message"] == (
            f"Some resources are remaining: widgets.{group} has 1 resource instances")
        assert conds["NamespaceDeletionDiscoveryFailure"]["status"] == "False"
        assert conds["NamespaceDeletionContentFailure"]["status"] == "False"

        k.ok("patch", f"widgets.{group}", "w1", "-n", ns, "--type=merge",
             "-p", json.dumps({"metadata": {"finalizers": None}}))
        r = k.run("wait", "--for=delete", f"namespace/{ns}", f"--timeout={int(WAIT)}s",
                  timeout=WAIT + 30)
        assert r.returncode == 0, r.stderr
        assert not exists(k, "namespace", ns)
    finally:
        k.run("delete", "namespace", ns, "--wait=false")
        k.run("delete", "crd", f"widgets.{group}", "--wait=false")


# -- Jobs -------------------------------------------------------------------------------------

def test_job_completions_5_parallelism_2_completes(kubectl_up: Kubectl, ns: str,
                                                   watches: list[Watch]) -> None:
    """completions 5, parallelism 2: `kubectl wait --for=condition=complete`; never more than 2 active."""
    k = kubectl_up
    peak = {"active": 0}

    def on_pod(store: dict[str, dict[str, Any]], etype: str, obj: dict[str, Any]) -> None:
        active = [p for p in store.values() if is_active(p)]
        peak["active"] = max(peak["active"], len(active))
        assert len(active) <= 2, f"{len(active)} active pods > parallelism 2: {sorted(store)}"

    pw = Watch(k, ns, "pods", "-l", "batch.kubernetes.io/job-name=five", on_event=on_pod)
    watches.append(pw)
    out = apply(k, ns, job("five", run_seconds=0.5, completions=5, parallelism=2))
    assert out.strip() == "job.batch/five created"
    assert kubectl_wait(k, ns, "job/five", "condition=complete").strip() == (
        "job.batch/five condition met")
    j = get_json(k, "job", "five", "-n", ns)
    st = j["status"]
    assert st["succeeded"] == 5 and not st.get("failed") and not st.get("active")
    assert st.get("completionTime") and st.get("startTime")
    # v1.36: SuccessCriteriaMet first, then Complete, both with upstream's reason and message
    for ctype in ("SuccessCriteriaMet", "Complete"):
        c = condition(j, ctype)
        assert c is not None, ctype
        assert (c["status"], c.get("reason"), c.get("message")) == (
            "True", "CompletionsReached", "Reached expected number of succeeded pods"), c
    ps = job_pods(k, ns, "five")
    assert len(ps) == 5 and all(phase(p) == "Succeeded" for p in ps)
    assert all((controller_ref(p) or {}).get("uid") == j["metadata"]["uid"] for p in ps)
    # the tracking finalizer is removed from every finished pod once it is counted
    wait_until(lambda: not any("batch.kubernetes.io/job-tracking" in
                               (p["metadata"].get("finalizers") or [])
                               for p in job_pods(k, ns, "five")),
               "the job-tracking finalizers to be removed")
    pw.wait_for(lambda s: len(s) == 5 and all(phase(p) == "Succeeded" for p in s.values()),
                "the 5 succeeded pods in the watch")
    pw.check()
    assert peak["active"] == 2
    assert len(pw.seen) == 5


# pykcm's Job/CronJob controllers on the real kube-apiserver: the differential tests
# (job-backoff-limit-exceeded, cronjob-*) check them; this clock-bound test runs on the
# whole pykcm cluster and proves itself on the real kube-controller-manager
@pytest.mark.clusters("pykcm", "kube-controller-manager")
def test_job_backoff_limit_exceeded(kubectl_up: Kubectl, ns: str) -> None:
    """Pods exiting 1, backoffLimit 2: 3 pods, spaced by the 10 s and 20 s backoff, then BackoffLimitExceeded.

    Upstream (pkg/controller/job, backoff_utils.go) waits
    ``10 s * 2^(failures-1)`` after the last failure before it creates the
    next pod: 10 s after the first failure, 20 s after the second. The
    check is a lower bound with a 1 s tolerance (the API's times have
    second precision). About 35 s.
    """
    k = kubectl_up
    apply(k, ns, job("crash", run_seconds=0.3, exit_code=1, backoffLimit=2))
    assert kubectl_wait(k, ns, "job/crash", "condition=failed", timeout=120).strip() == (
        "job.batch/crash condition met")
    j = get_json(k, "job", "crash", "-n", ns)
    failed = condition(j, "Failed")
    assert failed is not None
    assert (failed["status"], failed["reason"], failed["message"]) == (
        "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    ft = condition(j, "FailureTarget")
    assert ft is not None and ft["reason"] == "BackoffLimitExceeded"
    assert j["status"]["failed"] == 3 and not j["status"].get("succeeded")
    assert not j["status"].get("active")
    ps = sorted(job_pods(k, ns, "crash"), key=lambda p: p["metadata"]["creationTimestamp"])
    assert len(ps) == 3, names(ps)
    assert all(phase(p) == "Failed" for p in ps)
    for p in ps:
        [cs] = p["status"]["containerStatuses"]
        assert cs["state"]["terminated"]["exitCode"] == 1
    for i, delay in enumerate((10, 20)):
        finished = ts(ps[i]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"])
        created = ts(ps[i + 1]["metadata"]["creationTimestamp"])
        assert created - finished >= delay - 1, (
            f"pod {i + 1} created {created - finished:.0f} s after pod {i} failed; "
            f"backoff is {delay} s")
    # no fourth pod once the Job has failed
    assert len(job_pods(k, ns, "crash")) == 3
    ev = [(e["type"], e["reason"], e["message"]) for e in events_of(k, ns, "crash")]
    assert ("Warning", "BackoffLimitExceeded",
            "Job has reached the specified backoff limit") in ev, ev
    assert sum(1 for e in ev if e[1] == "SuccessfulCreate") == 3, ev


def test_indexed_job_reports_completed_indexes(kubectl_up: Kubectl, ns: str) -> None:
    """completionMode Indexed: pods carry their index (annotation, label, hostname, env); completedIndexes."""
    k = kubectl_up
    apply(k, ns, job("idx", run_seconds=0.3, completions=4, parallelism=2,
                     completionMode="Indexed"))
    kubectl_wait(k, ns, "job/idx", "condition=complete")
    j = get_json(k, "job", "idx", "-n", ns)
    assert j["status"]["completedIndexes"] == "0-3"
    assert j["status"]["succeeded"] == 4
    ps = job_pods(k, ns, "idx")
    assert len(ps) == 4
    indexes = set()
    for p in ps:
        meta = p["metadata"]
        idx = meta["annotations"]["batch.kubernetes.io/job-completion-index"]
        assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == idx
        assert meta["name"].startswith(f"idx-{idx}-")
        assert p["spec"]["hostname"] == f"idx-{idx}"
        env = {e["name"]: e for e in p["spec"]["containers"][0].get("env") or []}
        assert env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.labels['batch.kubernetes.io/job-completion-index']")
        assert phase(p) == "Succeeded"
        indexes.add(idx)
    assert indexes == {"0", "1", "2", "3"}


def test_pod_failure_policy_fail_job_on_exit_code_42(kubectl_up: Kubectl, ns: str,
                                                     watches: list[Watch]) -> None:
    """A podFailurePolicy FailJob rule on exit code 42 fails the Job at its first failed pod."""
    k = kubectl_up
    pw = Watch(k, ns, "pods", "-l", "batch.kubernetes.io/job-name=pfp")
    watches.append(pw)
    policy = {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                              "values": [42]}}]}
    apply(k, ns, job("pfp", run_seconds=0.3, exit_code=42, backoffLimit=6,
                     podFailurePolicy=policy))
    kubectl_wait(k, ns, "job/pfp", "condition=failed")
    j = get_json(k, "job", "pfp", "-n", ns)
    [pod] = job_pods(k, ns, "pfp")
    failed = condition(j, "Failed")
    assert failed is not None
    assert (failed["status"], failed["reason"]) == ("True", "PodFailurePolicy")
    assert failed["message"] == (
        f"Container main for pod {ns}/{pod['metadata']['name']} failed with exit code 42 "
        "matching FailJob rule at index 1")
    assert j["status"]["failed"] == 1 and not j["status"].get("active")
    assert phase(pod) == "Failed"
    # backoffLimit 6 was not used: no replacement pod was ever created
    assert pw.seen <= {pod["metadata"]["name"]}, sorted(pw.seen)
    ev = [(e["type"], e["reason"], e["message"]) for e in events_of(k, ns, "pfp")]
    assert ("Warning", "PodFailurePolicy", failed["message"]) in ev, ev


def test_suspended_job_creates_no_pods_until_resumed(kubectl_up: Kubectl, ns: str,
                                                     watches: list[Watch]) -> None:
    """suspend: true: condition Suspended (JobSuspended) and no pod; resumed: pods run and it completes."""
    k = kubectl_up
    pw = Watch(k, ns, "pods", "-l", "batch.kubernetes.io/job-name=later")
    watches.append(pw)
    apply(k, ns, job("later", run_seconds=0.3, completions=2, parallelism=2, suspend=True))

    def suspended() -> Any:
        j = get_json(k, "job", "later", "-n", ns)
        c = condition(j, "Suspended")
        return (c is not None and c["status"] == "True" and j) or NotYet(j.get("status"))

    j = wait_until(suspended, "the Suspended condition")
    s = condition(j, "Suspended")
    assert s is not None and (s["reason"], s["message"]) == ("JobSuspended", "Job suspended")
    assert not j["status"].get("active") and not j["status"].get("startTime")
    assert not job_pods(k, ns, "later")
    assert not pw.seen, sorted(pw.seen)

    k.ok("patch", "job", "later", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    kubectl_wait(k, ns, "job/later", "condition=complete")
    j = get_json(k, "job", "later", "-n", ns)
    s = condition(j, "Suspended")
    assert s is not None and (s["status"], s["reason"], s["message"]) == (
        "False", "JobResumed", "Job resumed")
    assert j["status"]["succeeded"] == 2 and j["status"].get("startTime")
    assert len(job_pods(k, ns, "later")) == 2
    ev = [(e["reason"], e["message"]) for e in events_of(k, ns, "later")]
    assert ("Suspended", "Job suspended") in ev and ("Resumed", "Job resumed") in ev, ev


def test_ttl_seconds_after_finished_deletes_job_and_pods(kubectl_up: Kubectl, ns: str) -> None:
    """ttlSecondsAfterFinished 3: the finished Job is deleted in the foreground, its pods first.

    The pods carry a finalizer of the test's own (from the pod template), so
    they stay, marked for deletion, after the TTL controller's DELETE (with
    propagationPolicy Foreground, as upstream): the Job must then still
    exist with the foregroundDeletion finalizer; once the pods are released,
    the Job goes. The deletion must not come before the TTL has expired
    (a lower bound, with 1 s for the API's second precision).
    """
    k = kubectl_up
    ttl = 3
    apply(k, ns, job("brief", run_seconds=0.3, completions=2, parallelism=2,
                     ttlSecondsAfterFinished=ttl, pod_finalizers=[HOLD]))
    kubectl_wait(k, ns, "job/brief", "condition=complete")

    def marked() -> Any:
        j = get_json(k, "job", "brief", "-n", ns)
        return (j if j["metadata"].get("deletionTimestamp") else None) or NotYet(j["metadata"])

    j = wait_until(marked, "the TTL controller to delete the Job")
    assert "foregroundDeletion" in (j["metadata"].get("finalizers") or [])
    assert ts(j["metadata"]["deletionTimestamp"]) >= ts(j["status"]["completionTime"]) + ttl - 1

    def pods_marked() -> Any:
        ps = job_pods(k, ns, "brief")
        return (ps if len(ps) == 2 and all(p["metadata"].get("deletionTimestamp") for p in ps)
                else None) or NotYet([(p["metadata"]["name"], p["metadata"].get(
                    "deletionTimestamp")) for p in ps])

    ps = wait_until(pods_marked, "the Job's pods to be deleted before it")
    assert exists(k, "job", "brief", "-n", ns)
    for p in ps:
        assert phase(p) == "Succeeded"
        k.ok("patch", "pod", p["metadata"]["name"], "-n", ns, "--type=merge",
             "-p", json.dumps({"metadata": {"finalizers": None}}))
    r = k.run("wait", "-n", ns, "--for=delete", "job/brief", f"--timeout={int(WAIT)}s",
              timeout=WAIT + 30)
    assert r.returncode == 0, r.stderr
    assert not job_pods(k, ns, "brief")
    ev = [(e["reason"], e["message"]) for e in events_of(k, ns, "brief")]
    assert ("Completed", "Job completed") in ev, ev


# -- CronJob ----------------------------------------------------------------------------------

# pykcm's Job/CronJob controllers on the real kube-apiserver: the differential tests
# (job-backoff-limit-exceeded, cronjob-*) check them; this clock-bound test runs on the
# whole pykcm cluster and proves itself on the real kube-controller-manager
@pytest.mark.clusters("pykcm", "kube-controller-manager")
def test_cronjob_schedule_history_limit_and_forbid(kubectl_up: Kubectl, ns: str) -> None:
    """CronJobs on "*/1 * * * *" over two schedule ticks (the real clock: 1 to 2 minutes).

    * ``quick``: fast Jobs, successfulJobsHistoryLimit 1: a Job named
      ``quick-<scheduled time in minutes>`` at each tick; after the second,
      the first (finished) Job is deleted, oldest first, with its pods.
    * ``slow``: concurrencyPolicy Forbid, a Job that runs for ever: at the
      second tick no second Job is created (event JobAlreadyActive) and the
      first one stays in ``status.active``.
    """
    k = kubectl_up

    def cronjob(name: str, run_seconds: float | None, **spec: Any) -> dict[str, Any]:
        tmpl = job(name, run_seconds=run_seconds)["spec"]
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
                "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": tmpl}, **spec}}

    # Both CronJobs must see the same ticks: not created across a minute boundary.
    if (left := 60 - time.time() % 60) < 3:
        time.sleep(left + 0.5)
    apply(k, ns, cronjob("quick", 0.2, successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1))
    apply(k, ns, cronjob("slow", None, concurrencyPolicy="Forbid"))

    def jobs_of(cj: str) -> list[dict[str, Any]]:
        return [j for j in items(k, ns, "jobs")
                if (controller_ref(j) or {}).get("name") == cj]

    def check_job(j: dict[str, Any], cj: dict[str, Any]) -> int:
        """Name and ownership of a scheduled Job; its scheduled time (epoch minutes)."""
        ref = controller_ref(j)
        assert ref is not None and (ref["kind"], ref["uid"]) == ("CronJob", cj["metadata"]["uid"])
        sched = j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        t = ts(sched)
        assert t % 60 == 0, sched
        assert j["metadata"]["name"] == f"{cj['metadata']['name']}-{int(t) // 60}"
        return int(t) // 60

    # first tick
    [q1] = wait_until(lambda: jobs_of("quick") or NotYet([]), "the first scheduled Job",
                      timeout=WAIT)
    quick = get_json(k, "cronjob", "quick", "-n", ns)
    m1 = check_job(q1, quick)
    [s1] = wait_until(lambda: jobs_of("slow") or NotYet([]), "slow's first Job")
    slow = get_json(k, "cronjob", "slow", "-n", ns)
    assert check_job(s1, slow) == m1
    kubectl_wait(k, ns, f"job/{q1['metadata']['name']}", "condition=complete")

    # second tick: quick gets its second Job and deletes the first; slow is forbidden
    def quick_rotated() -> Any:
        got = jobs_of("quick")
        return (len(got) == 1 and got[0]["metadata"]["name"] != q1["metadata"]["name"]
                and got) or NotYet(names(got))

    [q2] = wait_until(quick_rotated, "quick's second Job to replace the first", timeout=WAIT)
    assert check_job(q2, quick) == m1 + 1
    kubectl_wait(k, ns, f"job/{q2['metadata']['name']}", "condition=complete")
    assert not exists(k, "job", q1["metadata"]["name"], "-n", ns)
    wait_until(lambda: not job_pods(k, ns, q1["metadata"]["name"]),
               "the first Job's pods to be deleted with it")

    def saw_forbid() -> Any:
        ev = events_of(k, ns, "slow")
        return [e for e in ev if e["reason"] == "JobAlreadyActive"] or NotYet(
            sorted({e["reason"] for e in ev}))

    [forbid] = wait_until(saw_forbid, "the JobAlreadyActive event of the Forbid CronJob")[:1]
    assert forbid["type"] == "Normal"
    assert forbid["message"] == ("Not starting job because prior execution is running and "
                                 "concurrency policy is Forbid")
    assert names(jobs_of("slow")) == [s1["metadata"]["name"]]
    slow = get_json(k, "cronjob", "slow", "-n", ns)
    assert [a["name"] for a in slow["status"].get("active") or []] == [s1["metadata"]["name"]]
    assert ts(slow["status"]["lastScheduleTime"]) == m1 * 60

    quick = get_json(k, "cronjob", "quick", "-n", ns)
    wait_until(lambda: (c := get_json(k, "cronjob", "quick", "-n", ns))["status"].get(
        "lastSuccessfulTime") and not c["status"].get("active") or NotYet(c["status"]),
        "quick's status to record the second success")
    quick = get_json(k, "cronjob", "quick", "-n", ns)
    assert ts(quick["status"]["lastScheduleTime"]) == (m1 + 1) * 60
    q2_now = get_json(k, "job", q2["metadata"]["name"], "-n", ns)
    assert quick["status"]["lastSuccessfulTime"] == q2_now["status"]["completionTime"]
    ev = {(e["type"], e["reason"], e["message"]) for e in events_of(k, ns, "quick")}
    n1, n2 = q1["metadata"]["name"], q2["metadata"]["name"]
    for want in (("Normal", "SuccessfulCreate", f"Created job {n1}"),
                 ("Normal", "SuccessfulCreate", f"Created job {n2}"),
                 ("Normal", "SawCompletedJob", f"Saw completed job: {n1}, condition: Complete"),
                 ("Normal", "SuccessfulDelete", f"Deleted job {n1}")):
        assert want in ev, (want, sorted(ev))
