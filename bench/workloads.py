"""Benchmark of the DaemonSet and StatefulSet controllers, side by side with kube-controller-manager.

    .venv/bin/python bench/workloads.py [--quick] [--runs N] [--nodes N] [--replicas N]
                                        [--qps 20/30] [--setups kube/kube,kube/pykcm,pykcm/pykcm,kube/pykcm-dicts,kube/pykcm-compact]
                                        [--profile] [--no-record]

Issue 13's acceptance benchmark: a DaemonSet on 100 simulated nodes, created
and then rolled to a new image, and a StatefulSet of 100 replicas in Parallel
pod management; wall time and requests next to the real controller in the
same run.

The cluster is bench/controllers.py's Stack (each component a process of its
own, fresh per run; setups interleaved): the API server (the real
kube-apiserver v1.36.2 + etcd from the kit, or `pykcm apiserver`), `pykcm sim
--nodes N` (the scheduler and kubelets) and the controller manager under test
with pykcm's set of controllers (real or pykcm's; on the real API server a
support kube-controller-manager runs the controllers pykcm lacks). Phases in
order on one cluster, each timed from its first request to a watch seeing:

  ds-create   DaemonSet "agent" (RollingUpdate, maxUnavailable 10%; its pods'
              terminationGracePeriodSeconds 1, as the StatefulSet's) created,
              until observedGeneration is current and desiredNumberScheduled ==
              numberAvailable == updatedNumberScheduled == the node count
  ds-rollout  a new image (merge patch), until the same holds for the new
              template (updatedNumberScheduled counts the new pods)
  ss-parallel StatefulSet "db" (podManagementPolicy Parallel, no volumes)
              of R replicas created, until readyReplicas == availableReplicas ==
              R and the current revision is the update revision

Per phase: wall time, when a pod watch first saw one of the phase's new pods
(the first create, as seen; the log line adds the last pod seen and the last
pod Ready), the time from the last pod seen Ready to the end of the phase (the
controller's status write, as seen), the controller manager's CPU seconds, its own requests
(rest_client_requests_total) and the requests on the API server that are not
the driver's (apiserver_request_total). Medians over the runs; ratios to the
real kube-controller-manager on the real kube-apiserver. Prints a Markdown
section and appends it to bench/RESULTS.md (--no-record to skip). --quick:
10 nodes, 10 replicas, 1 run. --profile attaches py-spy (when installed) to
pykcm's controller manager during every phase of the last kube/pykcm run (else
pykcm/pykcm) and adds the profiles to the section.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import append_results, log, machine_load, run_async
from _kube import kit_or_reason
from controllers import (
    BenchError,
    Driver,
    Run,
    Stack,
    Watch,
    git_state,
    machine,
    med,
    summarize_pyspy,
)

NS = "bench-workloads"
PHASES = ("ds-create", "ds-rollout", "ss-parallel")
SETUPS = ("kube/kube", "kube/pykcm", "pykcm/pykcm")
SETUP_TITLES = {
    "kube/kube": "kube-controller-manager v1.36.2 on kube-apiserver",
    "kube/pykcm": "pykcm controller manager on kube-apiserver",
    "pykcm/pykcm": "pykcm controller manager on pykcm apiserver",
    # the manager with each cache representation whatever the default (bench/controllers.py)
    "kube/pykcm-compact": "pykcm controller manager --compact-informer-objects on "
                          "kube-apiserver",
    "kube/pykcm-dicts": "pykcm controller manager --compact-informer-objects=false on "
                        "kube-apiserver",
}
REF = "kube/kube"
RESOURCES = {"requests": {"cpu": "1m", "memory": "1Mi"}}
GRACE = 1
"""terminationGracePeriodSeconds of the pods: the simulated kubelet keeps a deleted pod
Terminating that long, and the DaemonSet rollout replaces a node's pod only once the old
one is gone (30 s, the default, would make the phase the grace period times the waves)."""


def daemonset(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": "10%"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"terminationGracePeriodSeconds": GRACE,
                                           "containers": [{"name": "agent", "image": image,
                                                           "resources": RESOURCES}]}}}}


def statefulset(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {"replicas": replicas, "serviceName": "db",
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"terminationGracePeriodSeconds": GRACE,
                                           "containers": [{"name": "db", "image": "postgres:16",
                                                           "resources": RESOURCES}]}}}}


def ds_state(obj: dict[str, Any]) -> tuple[Any, ...]:
    """(generation, observedGeneration, desired, available, updated, image)."""
    st = obj.get("status") or {}
    return (obj["metadata"].get("generation", 0), st.get("observedGeneration", 0),
            st.get("desiredNumberScheduled", 0), st.get("numberAvailable", 0),
            st.get("updatedNumberScheduled", 0),
            obj["spec"]["template"]["spec"]["containers"][0]["image"])


def ds_done(s: tuple[Any, ...] | None, nodes: int, image: str) -> bool:
    return s is not None and s[1] >= s[0] and s[5] == image and \
        s[2] == s[3] == s[4] == nodes


def ss_state(obj: dict[str, Any]) -> tuple[Any, ...]:
    """(generation, observedGeneration, ready, available, currentRevision, updateRevision)."""
    st = obj.get("status") or {}
    return (obj["metadata"].get("generation", 0), st.get("observedGeneration", 0),
            st.get("readyReplicas", 0), st.get("availableReplicas", 0),
            st.get("currentRevision"), st.get("updateRevision"))


class PodTimeline:
    """When each pod of the namespace was first seen and first seen Ready (perf_counter)."""

    def __init__(self) -> None:
        self.added: dict[str, float] = {}
        self.ready: dict[str, float] = {}

    def keep(self, obj: dict[str, Any]) -> None:
        now = time.perf_counter()
        name = obj["metadata"]["name"]
        self.added.setdefault(name, now)
        if name not in self.ready and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (obj.get("status") or {}).get("conditions") or ()):
            self.ready[name] = now

    def between(self, t0: float, t1: float) -> dict[str, float]:
        """First/last pod seen and last pod Ready in [t0, t1], in s after t0 (nan if none)."""
        added = [t - t0 for t in self.added.values() if t0 <= t <= t1]
        ready = [t - t0 for t in self.ready.values() if t0 <= t <= t1]
        nan = float("nan")
        return {"first_pod": min(added, default=nan), "last_pod": max(added, default=nan),
                "last_ready": max(ready, default=nan)}


class EventTimeline:
    """When the controller manager's Event writes were seen (perf_counter): one entry per
    Event resourceVersion (a create, or a count bump), the simulator's and scheduler's left
    out. The writes share the controllers' token bucket with their pod creations (as
    upstream's event sinks do), so the ones seen before a phase's last pod took tokens
    the creations waited for."""

    def __init__(self, components: frozenset[str]) -> None:
        self.components = components
        self.seen: dict[tuple[str, str], float] = {}

    def keep(self, obj: dict[str, Any]) -> None:
        if (obj.get("source") or {}).get("component") not in self.components:
            return
        meta = obj["metadata"]
        self.seen.setdefault((meta["name"], meta.get("resourceVersion") or ""),
                             time.perf_counter())

    def count(self, t0: float, t1: float) -> int:
        return sum(1 for t in self.seen.values() if t0 <= t <= t1)


class WriteTimeline:
    """When each write (name, resourceVersion) of a watched collection was first seen."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], float] = {}

    def wrap(self, keep: Any) -> Any:
        def note(obj: dict[str, Any]) -> Any:
            meta = obj["metadata"]
            self.seen.setdefault((meta["name"], meta.get("resourceVersion") or ""),
                                 time.perf_counter())
            return keep(obj)
        return note


def interleaving(pods: PodTimeline, t0: float, t1: float,
                 others: dict[str, dict[tuple[str, str], float]]) -> str:
    """The phase's pod creations (P) and the other writes (one letter each: E for the
    controllers' Events, S for the set's own writes, R for ControllerRevisions) in the
    order they were seen, runs compressed ("P15 E1 P16 ..."): which requests took tokens
    between the creations."""
    seq = sorted([(t, "P") for t in pods.added.values() if t0 <= t <= t1]
                 + [(t, c) for c, seen in others.items() for t in seen.values()
                    if t0 <= t <= t1])
    runs: list[list[Any]] = []
    for _, c in seq:
        if runs and runs[-1][0] == c:
            runs[-1][1] += 1
        else:
            runs.append([c, 1])
    return " ".join(f"{c}{n}" for c, n in runs)


def ss_done(s: tuple[Any, ...] | None, replicas: int) -> bool:
    return s is not None and s[1] >= s[0] and s[2] == s[3] == replicas and \
        bool(s[4]) and s[4] == s[5]


class WorkloadRun(Run):
    """One fresh cluster of one setup, the three phases on it (Run.measure records each)."""

    async def run(self) -> dict[str, Any]:
        a = self.args
        tree = git_state()
        stack = Stack(self.qps, self.burst, nodes=a.nodes, max_pods=a.max_pods,
                      events=True, apiserver=self.apiserver, manager=self.manager, kit=self.kit,
                      audit=a.audit)
        drv: Driver | None = None
        watches: list[Watch] = []
        try:
            stack.start()
            drv = Driver(stack)
            await self._ready(stack, drv)
            await drv.request("POST", "namespaces", "POST", "/api/v1/namespaces",
                              {"metadata": {"name": NS}})
            await self._service_accounts_in(stack, drv, NS)
            sets, revisions = WriteTimeline(), WriteTimeline()
            dsw = Watch(drv, "daemonsets.apps", f"/apis/apps/v1/namespaces/{NS}/daemonsets",
                        sets.wrap(ds_state))
            ssw = Watch(drv, "statefulsets.apps",
                        f"/apis/apps/v1/namespaces/{NS}/statefulsets", sets.wrap(ss_state))
            rw = Watch(drv, "controllerrevisions.apps",
                       f"/apis/apps/v1/namespaces/{NS}/controllerrevisions",
                       revisions.wrap(lambda o: None))
            pods = PodTimeline()
            pw = Watch(drv, "pods", f"/api/v1/namespaces/{NS}/pods", pods.keep)
            events = EventTimeline(frozenset({"daemonset-controller",
                                              "statefulset-controller"}))
            ew = Watch(drv, "events", f"/api/v1/namespaces/{NS}/events", events.keep)
            watches = [dsw, ssw, pw, ew, rw]
            starts: dict[str, float] = {}
            for w in watches:
                w.start()
            for w in watches:
                await w.synced.wait()
            await asyncio.sleep(1.0)
            nodes, replicas = a.nodes, a.replicas

            def ds_progress(o: dict[str, Any]) -> str:
                s = o.get("agent")
                return "no DaemonSet" if s is None else \
                    f"desired {s[2]}, available {s[3]}, updated {s[4]} of {nodes}"

            async def ds_create() -> None:
                starts["ds-create"] = time.perf_counter()
                await drv.request("POST", "daemonsets.apps", "POST",
                                  f"/apis/apps/v1/namespaces/{NS}/daemonsets",
                                  daemonset("fluentd:1.16"))
                await dsw.wait(lambda o: ds_done(o.get("agent"), nodes, "fluentd:1.16"),
                               a.timeout, ds_progress, stack.check)

            async def ds_rollout() -> None:
                patch = {"spec": {"template": {"spec": {"containers": [
                    {"name": "agent", "image": "fluentd:1.17", "resources": RESOURCES}]}}}}
                starts["ds-rollout"] = time.perf_counter()
                await drv.request("PATCH", "daemonsets.apps", "PATCH",
                                  f"/apis/apps/v1/namespaces/{NS}/daemonsets/agent", patch,
                                  ctype="application/merge-patch+json")
                await dsw.wait(lambda o: ds_done(o.get("agent"), nodes, "fluentd:1.17"),
                               a.timeout, ds_progress, stack.check)

            async def ss_parallel() -> None:
                starts["ss-parallel"] = time.perf_counter()
                await drv.request("POST", "statefulsets.apps", "POST",
                                  f"/apis/apps/v1/namespaces/{NS}/statefulsets",
                                  statefulset(replicas))
                await ssw.wait(lambda o: ss_done(o.get("db"), replicas), a.timeout,
                               lambda o: f"ready {o['db'][2] if 'db' in o else 0}/{replicas}",
                               stack.check)

            prof = bool(self.profile_dir)
            await self.measure("ds-create", stack, drv, ds_create, profile=prof)
            await self.measure("ds-rollout", stack, drv, ds_rollout, profile=prof)
            await self.measure("ss-parallel", stack, drv, ss_parallel, profile=prof)
            for ph, t0 in starts.items():
                if ph in self.phases:
                    t1 = t0 + self.phases[ph]["wall"]
                    self.phases[ph]["timeline"] = tl = pods.between(t0, t1)
                    tl["events_before_last_pod"] = float(events.count(t0, t0 + tl["last_pod"]))
                    log(f"bench: [{self.label}] {ph}: pods first seen {tl['first_pod']:.2f} s, "
                        f"last {tl['last_pod']:.2f} s, last Ready {tl['last_ready']:.2f} s "
                        f"after the first request; {tl['events_before_last_pod']:.0f} Event "
                        "writes seen before the last pod")
                    log(f"bench: [{self.label}] {ph}: order seen: "
                        f"{interleaving(pods, t0, t0 + tl['last_pod'], {'E': events.seen, 'S': sets.seen, 'R': revisions.seen})}")
            return {"phases": self.phases, "tree": tree, "failures": list(drv.failures)}
        except BenchError as exc:
            log(f"bench: [{self.label}] failed: {exc}")
            for name in stack.names():
                log(f"bench:   {name} log tail: {stack.log_tail(name, 3)[:600]}")
            return {"phases": self.phases, "error": str(exc), "tree": tree,
                    "failures": list(drv.failures) if drv else []}
        finally:
            for w in watches:
                await w.stop()
            if drv is not None:
                await drv.close()
            if a.keep_logs:
                stack.copy_logs(os.path.join(a.keep_logs, self.label.replace("/", "-")
                                             .replace(" ", "_")))
            stack.stop()

    async def _service_accounts_in(self, stack: Stack, drv: Driver, ns: str,
                                   timeout: float = 60.0) -> None:
        """The namespace's `default` ServiceAccount (pods need it) before the clock starts."""
        deadline = time.monotonic() + timeout
        while True:
            st, _ = await drv.request("GET", "serviceaccounts", "GET",
                                      f"/api/v1/namespaces/{ns}/serviceaccounts/default",
                                      ok=(404,))
            if st == 200:
                return
            stack.check()
            if time.monotonic() > deadline:
                raise BenchError(f"no ServiceAccount {ns}/default after {timeout:.0f} s")
            await asyncio.sleep(0.1)


# -- the report ----------------------------------------------------------------------------

def _figures(r: dict[str, Any], ph: str) -> dict[str, float] | None:
    p = r["phases"].get(ph)
    if p is None:
        return None
    tl = p.get("timeline") or {}
    return {"wall": p["wall"], "cpu": p["cpu"].get("controller-manager", float("nan")),
            "first_pod": tl.get("first_pod", float("nan")),
            "tail": p["wall"] - tl.get("last_ready", float("nan")),
            "cm": float(sum(p["cm_requests"].values())),
            "server": float(sum(p["requests"].values()))}


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]],
           wall: float, profiles: dict[str, list[tuple[str, float]]] | None = None) -> str:
    when = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    setups = list(results)
    L = [f"## DaemonSet and StatefulSet, side by side with kube-controller-manager — {when}"
         + (" (quick smoke run, not comparable)" if args.quick else ""), "",
         f"Machine: {machine()}; {args.load_note}.  ",
         f"Run: `bench/workloads.py {' '.join(sys.argv[1:])}`, {wall:.0f} s wall, tree "
         f"{git_state()}. Setups (API server / controller manager), fresh per run, "
         "interleaved: " + "; ".join(f"{s} = {SETUP_TITLES[s]}" for s in setups)
         + f". Nodes: `pykcm sim --nodes {args.nodes} --max-pods {args.max_pods}`; "
         f"--kube-api-qps/burst {args.qps} for both managers. Phases on one cluster: "
         f"ds-create = a DaemonSet (maxUnavailable 10%) until available and updated on all "
         f"{args.nodes} nodes; ds-rollout = a new image until the same holds for it; "
         f"ss-parallel = a StatefulSet of {args.replicas} (Parallel) until all ready and "
         "available at one revision. Time from the phase's first request to a watch "
         f"seeing the condition. Medians of {args.runs} run(s).", ""]
    if args.kube_note:
        L += [f"⚠️ {args.kube_note}.", ""]
    others = [s for s in setups if s != REF]
    head = ["phase", "figure", *(SETUP_TITLES[s] for s in setups)]
    head += [f"{s} ÷ {REF}" for s in others if REF in setups]
    L.append("| " + " | ".join(head) + " |")
    L.append("|---|---|" + "---:|" * (len(head) - 2))
    names = {"wall": "wall (s)", "first_pod": "first pod seen (s after the first request)",
             "tail": "from the last pod Ready to the status seen (s)",
             "cpu": "controller manager CPU s",
             "cm": "the manager's own requests", "server": "requests on the API server "
             "(not the driver's)"}
    for ph in PHASES:
        for fig, title in names.items():
            vals: dict[str, float] = {}
            for s in setups:
                got = [f[fig] for r in results[s] if (f := _figures(r, ph)) is not None]
                vals[s] = med(got) if got else float("nan")
            cells = [ph, title]
            for s in setups:
                v = vals[s]
                cells.append("failed" if math.isnan(v) else (
                    f"{v:.2f}" if fig in ("wall", "cpu", "first_pod", "tail")
                    else f"{v:,.0f}"))
            if REF in setups:
                for s in others:
                    ref, v = vals[REF], vals[s]
                    ok = not (math.isnan(ref) or math.isnan(v)) and ref
                    cells.append(f"{v / ref:.2f}×" if ok else "—")
            L.append("| " + " | ".join(cells) + " |")
    L.append("")
    errors = [f"{s}: {r['error']}" for s, runs in results.items() for r in runs
              if r.get("error")]
    if errors:
        L += ["Failed runs: " + "; ".join(errors) + ".", ""]
    for name, summ in (profiles or {}).items():
        if not summ:
            continue
        L += [(f"Profile of pykcm's controller manager ({args.profiled}), {name} (py-spy "
               "--native, 100 Hz, share of samples; leaf Python frame, then inclusive):"), ""]
        L += [f"- {share * 100:.1f}% {frame}" for frame, share in summ]
        L.append("")
    return "\n".join(L)


async def main_async(args: argparse.Namespace) -> int:
    q, _, b = args.qps.partition("/")
    qps, burst = float(q), int(b or 0) or int(float(q) * 1.5)
    kit, args.kube_note = kit_or_reason(False)
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    for s in setups:
        if s not in SETUP_TITLES:
            raise SystemExit(f"bench: unknown setup {s!r} (one of {', '.join(SETUP_TITLES)})")
    if kit is None:
        log(f"bench: {args.kube_note}")
        setups = [s for s in setups if s == "pykcm/pykcm"]
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in setups}
    prof_dir = tempfile.mkdtemp(prefix="pykcm-bench-prof-") if args.profile else None
    args.profiled = next((s for s in ("kube/pykcm", "pykcm/pykcm") if s in setups), "")
    t0 = time.perf_counter()
    for i in range(args.runs):
        for s in setups:  # interleaved: load changes spread over every setup
            profile = prof_dir if s == args.profiled and i == args.runs - 1 else None
            r = await WorkloadRun(args, qps, burst, f"{s}#{i + 1}", profile, s, kit).run()
            results[s].append(r)
    profiles: dict[str, list[tuple[str, float]]] = {}
    if prof_dir:
        for ph in PHASES:
            profiles[ph] = summarize_pyspy(os.path.join(prof_dir, f"{ph}.txt"))
        if args.keep_logs:
            shutil.copytree(prof_dir, os.path.join(args.keep_logs, "profiles"),
                            dirs_exist_ok=True)
        shutil.rmtree(prof_dir, ignore_errors=True)
    text = report(args, results, time.perf_counter() - t0, profiles)
    print(text)
    if not args.no_record:
        append_results(text)
        log("bench: appended to bench/RESULTS.md")
    return 1 if any(r.get("error") for runs in results.values() for r in runs) else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="10 nodes, 10 replicas, 1 run")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--max-pods", type=int, default=110)
    p.add_argument("--replicas", type=int, default=100)
    p.add_argument("--qps", default="20/30", help="both managers' --kube-api-qps/burst")
    p.add_argument("--setups", default=",".join(SETUPS))
    p.add_argument("--timeout", type=float, default=600.0, help="per phase (s)")
    p.add_argument("--keep-logs", metavar="DIR", help="copy each run's logs to DIR")
    p.add_argument("--profile", action="store_true",
                   help="py-spy on pykcm's controller manager in the last run")
    p.add_argument("--no-record", action="store_true")
    p.add_argument("--audit", action="store_true",
                   help="kube-apiserver writes an audit log (JSON lines; kept with --keep-logs), "
                   "to tell the requests on the API server apart by client")
    args = p.parse_args()
    if args.quick:
        args.nodes, args.replicas, args.runs = 10, 10, 1
    args.deployments = args.big = args.jobs = 0  # Run's own phases: not run here
    args.load_note = machine_load()
    return run_async(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
