"""The corpus of apply/update sequences the field manager is proven on.

A sequence is a list of steps on one object, run in a fresh namespace on the real
kube-apiserver; each step is replayed through pykcm's field manager from the live
object the real server held before it. Step keys:

- ``op``: ``apply`` (server-side apply), ``patch`` (JSON merge patch: an Update),
  ``create`` (POST: an Update on create), ``put`` (an unconditional update);
- ``manager``: ``?fieldManager=``; ``force``: ``?force=true``; ``sub``: ``status``;
- ``body``: the applied configuration, patch or object (``metadata.name`` added).

Families (each generated over seeded variations, :func:`sequences`): two managers
sharing and fighting over ConfigMap keys; removal of keys a manager stops applying,
kept while someone else owns them; Deployment containers/ports/env list-map merges;
finalizers (a set list); the atomic selector; status applies through ``/status``;
a custom resource whose schema has map/set/atomic lists and an atomic map, with
status conditions; force; update-then-apply (conflicts with an Update manager);
managedFields reset then apply (``before-first-apply``); client-side apply's
annotation then ``kubectl`` server-side apply (the upgrade path); the cap of 10
Update managers; list order when configurations reorder, add and share items;
duplicate keys in the live list; conflicts with several managers at once;
untyped (preserve-unknown-fields) values; PUT; managedFields written by a request
(a forged entry, an invalid one, null); Service ports keyed by port and protocol;
``/scale`` applies and updates (the Scale's entries a view of the Deployment's); Pods
with ``/status`` conditions, Secrets' ``stringData``, StatefulSets, Jobs; configurations
naming a list item twice (kube-apiserver's bare 500); a ControllerRevision's ``data``
(a RawExtension: one atomic value); a Deployment created by ``kubectl create`` whose
status the controller manager writes through ``/status`` while others scale and label
it, then applied server-side (conflicts with the Update managers, forced); configurations
with a value of the wrong type or shape, or an undeclared field.
"""

from __future__ import annotations

import json
import random
from typing import Any

Step = dict[str, Any]
Sequence_ = dict[str, Any]   # {"name", "kind", "steps"}

CRD_GROUP = "ssa.pykcm.io"
CRD_NAME = f"widgets.{CRD_GROUP}"
CRD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name", "protocol"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"},
                          "protocol": {"type": "string", "default": "TCP"},
                          "port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set",
                     "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                         "additionalProperties": {"type": "string"}},
            "config": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }},
        "status": {"type": "object", "properties": {
            "phase": {"type": "string"},
            "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["type"],
                           "items": {"type": "object", "required": ["type"], "properties": {
                               "type": {"type": "string"}, "status": {"type": "string"},
                               "reason": {"type": "string"}}}},
        }},
    },
}
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {"group": CRD_GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": CRD_SCHEMA},
                           "subresources": {"status": {}}}]},
}

KINDS: dict[str, dict[str, str]] = {
    "ControllerRevision": {"group": "apps", "version": "v1", "resource": "controllerrevisions"},
    "Pod": {"group": "", "version": "v1", "resource": "pods"},
    "Secret": {"group": "", "version": "v1", "resource": "secrets"},
    "StatefulSet": {"group": "apps", "version": "v1", "resource": "statefulsets"},
    "Job": {"group": "batch", "version": "v1", "resource": "jobs"},
    "Service": {"group": "", "version": "v1", "resource": "services"},
    "ConfigMap": {"group": "", "version": "v1", "resource": "configmaps"},
    "Deployment": {"group": "apps", "version": "v1", "resource": "deployments"},
    "Widget": {"group": CRD_GROUP, "version": "v1", "resource": "widgets"},
}


def _api_version(kind: str) -> str:
    k = KINDS[kind]
    return f"{k['group']}/{k['version']}" if k["group"] else k["version"]


def obj(kind: str, **parts: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": _api_version(kind), "kind": kind}
    out.update(parts)
    out.setdefault("metadata", {})
    return out


def apply(manager: str, body: dict[str, Any], *, force: bool = False, sub: str = "") -> Step:
    return {"op": "apply", "manager": manager, "body": body, "force": force, "sub": sub}


def patch(manager: str, body: dict[str, Any], *, sub: str = "") -> Step:
    return {"op": "patch", "manager": manager, "body": body, "sub": sub}


def create(manager: str, body: dict[str, Any]) -> Step:
    return {"op": "create", "manager": manager, "body": body}


# --- families --------------------------------------------------------------------------

def _cm(data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return obj("ConfigMap", metadata=dict(meta), data=dict(data))


def cm_share(rng: random.Random) -> list[Step]:
    keys = [f"k{i}" for i in range(rng.randint(2, 5))]
    a = {k: rng.choice("xy") for k in rng.sample(keys, rng.randint(1, len(keys)))}
    b = {k: rng.choice("xy") for k in rng.sample(keys, rng.randint(1, len(keys)))}
    steps = [apply("alpha", _cm(a)), apply("beta", _cm(b))]
    if rng.random() < 0.5:
        steps.append(apply("beta", _cm(b), force=True))
    if rng.random() < 0.5:
        steps.append(apply("alpha", _cm(dict(list(a.items())[:1]))))
    return steps


def cm_remove(rng: random.Random) -> list[Step]:
    data = {f"k{i}": f"v{i}" for i in range(rng.randint(2, 5))}
    labels = {f"l{i}": "on" for i in range(rng.randint(0, 3))}
    steps = [apply("alpha", _cm(data, labels=labels) if labels else _cm(data))]
    if rng.random() < 0.6:
        shared = dict(rng.sample(sorted(data.items()), 1))
        steps.append(apply("beta", _cm(shared)))
    kept = dict(list(data.items())[: rng.randint(0, len(data) - 1)])
    kept_labels = dict(list(labels.items())[: max(0, len(labels) - 1)])
    steps.append(apply("alpha", _cm(kept, labels=kept_labels) if kept_labels else _cm(kept)))
    if rng.random() < 0.5:
        steps.append(apply("alpha", _cm({})))
    return steps


def _container(name: str, image: str, ports: list[int] | None = None,
               env: dict[str, str] | None = None, proto: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    if ports:
        c["ports"] = [{"containerPort": p, **({"protocol": proto} if proto else {})}
                      for p in ports]
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return c


def _deploy(containers: list[dict[str, Any]] | None = None, *, replicas: int | None = None,
            labels: dict[str, str] | None = None, selector: dict[str, str] | None = None,
            finalizers: list[str] | None = None, template_labels: bool = True
            ) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if replicas is not None:
        spec["replicas"] = replicas
    if selector is not None:
        spec["selector"] = {"matchLabels": selector}
    if containers is not None:
        tmpl: dict[str, Any] = {"spec": {"containers": containers}}
        if template_labels:
            tmpl["metadata"] = {"labels": {"app": "web"}}
        spec["template"] = tmpl
    meta: dict[str, Any] = {}
    if labels:
        meta["labels"] = labels
    if finalizers is not None:
        meta["finalizers"] = finalizers
    return obj("Deployment", metadata=meta, spec=spec)


def _full_deploy(rng: random.Random, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return _deploy(containers, replicas=rng.randint(1, 3), selector={"app": "web"})


def deploy_lists(rng: random.Random) -> list[Step]:
    n = rng.randint(1, 3)
    cs = [_container(f"c{i}", "nginx", ports=rng.sample([80, 443, 8080], rng.randint(0, 2)),
                     env={f"E{j}": str(j) for j in range(rng.randint(0, 3))},
                     proto=rng.choice([None, "TCP"])) for i in range(n)]
    steps = [apply("deployer", _full_deploy(rng, cs))]
    # a sidecar injector adds its own container and an env var to the first one
    side = [_container("sidecar", "envoy", ports=[9901])]
    if rng.random() < 0.7:
        side.insert(0, {"name": "c0", "env": [{"name": "INJECTED", "value": "yes"}]})
    steps.append(apply("injector", _deploy(side, template_labels=False)))
    # the deployer drops a container or a port, changes an image
    cs2 = [dict(c) for c in cs[: max(1, n - rng.randint(0, 1))]]
    if rng.random() < 0.5 and cs2[0].get("ports"):
        cs2[0]["ports"] = cs2[0]["ports"][:-1]
    if rng.random() < 0.5:
        cs2[-1]["image"] = "nginx:2"
    steps.append(apply("deployer", _full_deploy(rng, cs2), force=rng.random() < 0.3))
    if rng.random() < 0.5:
        steps.append(apply("injector", _deploy([_container("c0", "evil")], template_labels=False),
                           force=rng.random() < 0.5))
    return steps


def deploy_finalizers(rng: random.Random) -> list[Step]:
    pool = ["example.com/a", "example.com/b", "example.com/c"]
    base = _full_deploy(rng, [_container("c", "nginx")])
    a = rng.sample(pool, rng.randint(1, 3))
    b = rng.sample(pool, rng.randint(1, 2))
    base["metadata"]["finalizers"] = a
    steps = [apply("alpha", base), apply("beta", _deploy(finalizers=b))]
    a2 = a[: rng.randint(0, len(a))]
    base2 = _full_deploy(rng, [_container("c", "nginx")])
    base2["metadata"]["finalizers"] = a2
    steps.append(apply("alpha", base2))
    steps.append(patch("cleaner", {"metadata": {"finalizers": None}}))
    return steps


def deploy_selector(rng: random.Random) -> list[Step]:
    sel = {"app": "web"}
    if rng.random() < 0.5:
        sel["tier"] = "fe"
    d = _deploy([_container("c", "nginx")], replicas=1, selector=sel)
    d["spec"]["template"]["metadata"]["labels"] = dict(sel)
    steps = [apply("alpha", d)]
    other = dict(sel)
    other["extra"] = "1"
    d2 = _deploy(selector=other)
    steps.append(apply("beta", d2))   # forced, it would be refused as immutable (422)
    steps.append(apply("beta", _deploy(replicas=rng.randint(2, 5)), force=rng.random() < 0.5))
    return steps


def deploy_status(rng: random.Random) -> list[Step]:
    steps = [apply("deployer", _full_deploy(rng, [_container("c", "nginx")]))]
    conds = [{"type": "Available", "status": rng.choice(["True", "False"]), "reason": "R"}]
    if rng.random() < 0.5:
        conds.append({"type": "Progressing", "status": "True", "reason": "P"})
    st = obj("Deployment", status={"replicas": rng.randint(0, 3), "conditions": conds,
                                   "observedGeneration": 1})
    steps.append(apply("ctrl", st, sub="status"))
    steps.append(apply("other-ctrl", obj("Deployment", status={"replicas": 7}), sub="status",
                       force=rng.random() < 0.5))
    # the main resource never sets status; status never sets spec
    again = _full_deploy(rng, [_container("c", "nginx")])
    again["spec"]["replicas"] = 4
    again["status"] = {"replicas": 99}
    steps.append(apply("deployer", again))
    if rng.random() < 0.5:
        steps.append(apply("ctrl", obj("Deployment", status={"conditions": conds[:1]}),
                           sub="status"))
    if rng.random() < 0.5:
        steps.append(patch("status-patcher", {"status": {"readyReplicas": 1}}, sub="status"))
    return steps


def _widget(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
            **meta: Any) -> dict[str, Any]:
    out = obj("Widget", metadata=dict(meta))
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


def crd_lists(rng: random.Random) -> list[Step]:
    ports = [{"name": f"p{i}", "port": 8000 + i} for i in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        ports[0]["protocol"] = "UDP"
    spec = {"replicas": 1, "ports": ports, "tags": rng.sample(["a", "b", "c"], 2),
            "args": ["--x", "--y"], "selector": {"app": "w"}, "config": {"k1": "v1"}}
    if rng.random() < 0.4:
        spec["extra"] = {"free": {"form": rng.randint(1, 9)}}
    steps = [apply("owner", _widget(spec))]
    spec_b: dict[str, Any] = {"ports": [{"name": "p0", "port": 9000 if rng.random() < 0.5
                                         else ports[0]["port"],
                                         **({"protocol": ports[0]["protocol"]}
                                            if "protocol" in ports[0] else {})}],
                              "tags": [rng.choice(["c", "d"])], "config": {"k2": "v2"}}
    if rng.random() < 0.5:
        spec_b["args"] = ["--z"]
    if rng.random() < 0.5:
        spec_b["selector"] = {"app": "w2"}
    steps.append(apply("helper", _widget(spec_b), force=rng.random() < 0.4))
    spec2 = dict(spec)
    spec2["ports"] = ports[:1]
    spec2["tags"] = list(spec["tags"])[:1]  # type: ignore[call-overload]
    spec2.pop("config")
    steps.append(apply("owner", _widget(spec2)))
    return steps


def crd_status(rng: random.Random) -> list[Step]:
    steps = [apply("owner", _widget({"replicas": 2}))]
    conds = [{"type": t, "status": "True"} for t in rng.sample(["Ready", "Synced", "Healthy"], 2)]
    steps.append(apply("ctrl", _widget(status={"phase": "Running", "conditions": conds}),
                       sub="status"))
    steps.append(apply("ctrl2", _widget(status={"conditions": [{"type": conds[0]["type"],
                                                               "status": "False"}]}),
                       sub="status", force=rng.random() < 0.5))
    steps.append(apply("owner", _widget({"replicas": 3}, status={"phase": "Ignored"})))
    if rng.random() < 0.5:
        steps.append(patch("patcher", {"spec": {"replicas": 5}}))
    return steps


def update_then_apply(rng: random.Random) -> list[Step]:
    kind = rng.choice(["ConfigMap", "Deployment", "Widget"])
    if kind == "ConfigMap":
        first = create("kubectl-create", _cm({"a": "1", "b": "2"}, labels={"x": "y"}))
        upd = patch("kubectl-edit", {"data": {"a": "changed"}, "metadata": {"labels": {"z": "1"}}})
        app = apply("applier", _cm({"a": "mine", "c": "3"}))
    elif kind == "Deployment":
        first = create("kubectl-create", _full_deploy(rng, [_container("c", "nginx", ports=[80])]))
        upd = patch("kubectl-scale", {"spec": {"replicas": 5}})
        app = apply("applier", _deploy(replicas=2))
    else:
        first = create("kubectl-create", _widget({"replicas": 1, "tags": ["a"]}))
        upd = patch("kubectl-edit", {"spec": {"replicas": 2, "tags": ["a", "b"]}})
        app = apply("applier", _widget({"replicas": 3, "tags": ["b"]}))
    force = rng.random() < 0.5
    steps = [first, upd, app]
    if force:
        steps.append(dict(app, force=True))
    if rng.random() < 0.5:
        steps.append(patch("kubectl-edit", rng.choice([{"metadata": {"labels": {"q": "1"}}},
                                                       {"metadata": {"annotations": {"n": "1"}}}])))
    return steps


def reset_then_apply(rng: random.Random) -> list[Step]:
    kind = rng.choice(["ConfigMap", "Deployment"])
    first = (create("creator", _cm({"a": "1"}, labels={"l": "1"})) if kind == "ConfigMap"
             else create("creator", _full_deploy(rng, [_container("c", "nginx")])))
    reset: list[dict[str, Any]] = rng.choice([[], [{}]])
    steps = [first, patch("resetter", {"metadata": {"managedFields": reset}})]
    if rng.random() < 0.5:
        steps.append(patch("updater", {"metadata": {"labels": {"m": "2"}}}))
    steps.append(apply("applier", _cm({"a": "2", "b": "1"}) if kind == "ConfigMap"
                       else _deploy(replicas=3), force=rng.random() < 0.5))
    return steps


def last_applied(rng: random.Random) -> list[Step]:
    cfg = _cm({"a": "1", "b": "2"})
    cfg["metadata"]["name"] = "{name}"
    ann = json.dumps(cfg, separators=(",", ":"), sort_keys=True) + "\n"
    body = _cm({"a": "1", "b": "2"},
               annotations={"kubectl.kubernetes.io/last-applied-configuration": ann})
    steps = [create("kubectl-client-side-apply", body)]
    if rng.random() < 0.5:
        steps.append(patch("kubectl-edit", {"data": {"b": "edited"}}))
    new = {"a": rng.choice(["1", "9"]), "b": rng.choice(["2", "8"])}
    if rng.random() < 0.5:
        new["c"] = "3"
    manager = rng.choice(["kubectl", "kubectl", "someone"])
    steps.append(apply(manager, _cm(new)))
    return steps


def put(manager: str, body: dict[str, Any], *, sub: str = "") -> Step:
    return {"op": "put", "manager": manager, "body": body, "sub": sub}


def controller_status(rng: random.Random) -> list[Step]:
    """A Deployment as clusters hold it: created by ``kubectl create``, its status written
    by the controller manager through ``/status`` (an Update entry with subresource
    status), scaled and labelled by other clients, then applied server-side."""
    steps = [create("kubectl-create", _full_deploy(rng, [_container("c", "nginx",
                                                                    ports=[80])]))]
    kcm = "kube-controller-manager"
    for gen in range(1, rng.randint(2, 4)):
        ready = rng.randint(0, 3)
        conds = [{"type": "Available", "status": rng.choice(["True", "False"]),
                  "reason": "MinimumReplicasAvailable"}]
        if rng.random() < 0.5:
            conds.append({"type": "Progressing", "status": "True",
                          "reason": "NewReplicaSetAvailable"})
        steps.append(patch(kcm, {"status": {"observedGeneration": gen, "replicas": 3,
                                            "readyReplicas": ready, "conditions": conds}},
                           sub="status"))
        if rng.random() < 0.5:
            steps.append(patch(rng.choice(["kubectl-scale", "kubectl-edit"]),
                               {"spec": {"replicas": rng.randint(1, 5)}}))
        if rng.random() < 0.4:
            steps.append(patch("kubectl-label", {"metadata": {"labels": {"tier": str(gen)}}}))
    app = apply("kubectl", _deploy([_container("c", rng.choice(["nginx", "nginx:2"]))],
                                   replicas=2, selector={"app": "web"}))
    steps.append(app)
    if rng.random() < 0.6:
        steps.append(dict(app, force=True))
    if rng.random() < 0.5:
        steps.append(patch(kcm, {"status": {"observedGeneration": 9, "readyReplicas": 0}},
                           sub="status"))
    return steps


def list_order(rng: random.Random) -> list[Step]:
    names = ["a", "b", "c", "d", "e"]
    first = rng.sample(names, rng.randint(2, 4))
    steps = [apply("deployer", _full_deploy(rng, [_container(n, "nginx") for n in first]))]
    other = rng.sample(names, rng.randint(1, 3))
    steps.append(apply("injector", _deploy(
        [{"name": n, "env": [{"name": "X", "value": n}],
          **({} if n in first else {"image": "side"})} for n in other], template_labels=False)))
    again = list(first)
    rng.shuffle(again)
    if rng.random() < 0.5:
        again.append(rng.choice([n for n in names if n not in first] or ["z"]))
    steps.append(apply("deployer", _full_deploy(rng, [_container(n, "nginx") for n in again])))
    env = [f"V{i}" for i in range(rng.randint(2, 5))]
    c = _container(again[0], "nginx", env={e: "1" for e in env})
    steps.append(apply("deployer", _full_deploy(
        rng, [c] + [_container(n, "nginx") for n in again[1:]])))
    rng.shuffle(env)
    c2 = _container(again[0], "nginx", env={e: "2" for e in env[: rng.randint(1, len(env))]})
    steps.append(apply("envoy", _deploy([c2], template_labels=False), force=True))
    return steps


def duplicates(rng: random.Random) -> list[Step]:
    env = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
    if rng.random() < 0.5:
        env.append({"name": "B", "value": "3"})
    c = {"name": "c", "image": "nginx", "env": env}
    steps = [create("creator", _full_deploy(rng, [c]))]
    env2 = [{"name": rng.choice(["A", "B", "C"]), "value": "9"}]
    steps.append(apply("applier", _deploy([{"name": "c", "env": env2}], template_labels=False),
                       force=rng.random() < 0.5))
    if rng.random() < 0.5:
        steps.append(patch("editor", {"spec": {"replicas": 4}}))
    return steps


def multi_conflicts(rng: random.Random) -> list[Step]:
    keys = ["a", "b", "c", "d"]
    steps = [apply("alpha", _cm({k: "1" for k in keys[:2]})),
             apply("beta", _cm({k: "1" for k in keys[2:]}))]
    if rng.random() < 0.5:
        steps.append(patch("editor", {"data": {"e": "1"}}))
        keys.append("e")
    take = rng.sample(keys, rng.randint(2, len(keys)))
    steps.append(apply("gamma", _cm({k: "2" for k in take})))
    steps.append(apply("gamma", _cm({k: "2" for k in take}), force=True))
    steps.append(apply("alpha", _cm({"a": "1", "b": "1"})))
    return steps


def crd_deduced(rng: random.Random) -> list[Step]:
    def extra() -> dict[str, Any]:
        return {"m": {"x": rng.randint(1, 2), "l": [rng.randint(1, 3)]},
                rng.choice(["p", "q"]): {"deep": {"er": rng.choice([True, "s", 1.5])}}}
    steps = [apply("owner", _widget({"extra": extra(), "config": {"a": "1"}}))]
    steps.append(apply("helper", _widget({"extra": extra()}), force=rng.random() < 0.5))
    steps.append(apply("owner", _widget({"extra": {"m": {"x": 1}}})))
    steps.append(patch("editor", {"spec": {"extra": {"m": {"l": None, "new": "v"}}}}))
    steps.append(apply("owner", _widget({"config": {"a": "1"}})))
    return steps


def put_updates(rng: random.Random) -> list[Step]:
    kind = rng.choice(["ConfigMap", "Widget"])
    if kind == "ConfigMap":
        first = apply("applier", _cm({"a": "1", "b": "2"}, labels={"l": "1"}))
        body = _cm({"a": "1", "c": "3"}, labels={"l": "2"})
        second = apply("applier", _cm({"a": "1", "b": "2"}))
    else:
        first = apply("applier", _widget({"replicas": 1, "tags": ["a", "b"],
                                          "ports": [{"name": "x", "port": 1}]}))
        body = _widget({"replicas": 2, "tags": ["b", "c"],
                        "ports": [{"name": "x", "port": 2}, {"name": "y", "port": 3}]})
        second = apply("applier", _widget({"replicas": 1, "tags": ["a"]}))
    steps = [first, put("replacer", body), second]
    if rng.random() < 0.5:
        steps.append(dict(second, force=True))
    return steps


def managed_fields_written(rng: random.Random) -> list[Step]:
    steps = [apply("alpha", _cm({"a": "1", "b": "1"}))]
    entry = {"manager": "forged", "operation": "Update", "apiVersion": "v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}}
    choice = rng.choice(["forge", "invalid", "null"])
    if choice == "forge":
        mf: Any = [entry]
    elif choice == "invalid":
        mf = [dict(entry, operation="Bogus")]
    else:
        mf = None
    steps.append(patch("writer", {"data": {"c": "1"}, "metadata": {"managedFields": mf}}))
    steps.append(apply("beta", _cm({"b": "2"}), force=rng.random() < 0.5))
    return steps


def _svc(ports: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return obj("Service", spec={"ports": ports, **spec})


def service_ports(rng: random.Random) -> list[Step]:
    def port(n: int, proto: str | None) -> dict[str, Any]:
        p: dict[str, Any] = {"name": f"p{n}", "port": 8000 + n}
        if proto:
            p["protocol"] = proto
        return p
    ports = [port(i, rng.choice([None, "TCP", "UDP"])) for i in range(rng.randint(1, 3))]
    steps = [apply("owner", _svc(ports, selector={"app": "w"}))]
    extra = [port(9, None)]
    if rng.random() < 0.5:
        extra.append(dict(ports[0], targetPort=9999))
    steps.append(apply("helper", _svc(extra), force=rng.random() < 0.5))
    steps.append(apply("owner", _svc(ports[:1], selector={"app": "w", "v": "2"})))
    return steps


def _scale(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {},
            "spec": {"replicas": replicas}}


def scale(rng: random.Random) -> list[Step]:
    steps = [apply("deployer", _full_deploy(rng, [_container("c", "nginx")]))]
    if rng.random() < 0.5:
        steps.append(patch("kubectl-scale", {"spec": {"replicas": rng.randint(4, 6)}},
                           sub="scale"))
    steps.append(apply("hpa", _scale(rng.randint(7, 9)), sub="scale",
                       force=rng.random() < 0.6))
    if rng.random() < 0.5:
        steps.append(apply("hpa", _scale(10), sub="scale", force=True))
    again = _full_deploy(rng, [_container("c", "nginx")])
    if rng.random() < 0.5:
        again["spec"].pop("replicas")
    steps.append(apply("deployer", again, force=rng.random() < 0.5))
    steps.append(patch("kubectl-scale", {"spec": {"replicas": 2}}, sub="scale"))
    return steps


def pod_apply(rng: random.Random) -> list[Step]:
    cs = [_container(f"c{i}", "nginx", ports=[80 + i], env={"A": str(i)})
          for i in range(rng.randint(1, 2))]
    pod = obj("Pod", metadata={"labels": {"app": "p"}}, spec={"containers": cs})
    if rng.random() < 0.5:
        pod["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    steps = [apply("owner", pod)]
    conds = [{"type": t, "status": "True"} for t in rng.sample(
        ["Ready", "PodScheduled", "Initialized"], rng.randint(1, 3))]
    steps.append(apply("kubelet", obj("Pod", status={"phase": "Running", "conditions": conds}),
                       sub="status"))
    steps.append(apply("labeler", obj("Pod", metadata={"labels": {"extra": "1"},
                                                        "annotations": {"n": "1"}})))
    steps.append(patch("kubelet", {"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}}, sub="status"))
    # the owner changes an image and a label (pods refuse most other spec changes)
    again = json.loads(json.dumps(pod))
    again["metadata"]["labels"] = {"app": "p2"}
    again["spec"]["containers"][0]["image"] = "nginx:2"
    steps.append(apply("owner", again, force=rng.random() < 0.5))
    return steps


def secret_string_data(rng: random.Random) -> list[Step]:
    steps = [apply("owner", obj("Secret", stringData={"user": "u", "pass": "p"}, type="Opaque"))]
    steps.append(apply("rotator", obj("Secret", data={"pass": "cm90YXRlZA=="}),
                       force=rng.random() < 0.5))
    steps.append(apply("owner", obj("Secret", stringData={"user": "u2"}, type="Opaque")))
    return steps


def statefulset_apply(rng: random.Random) -> list[Step]:
    vct = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                   "resources": {"requests": {"storage": "1Gi"}}}}]
    ss = obj("StatefulSet", spec={
        "replicas": 1, "serviceName": "s", "selector": {"matchLabels": {"app": "s"}},
        "template": {"metadata": {"labels": {"app": "s"}},
                     "spec": {"containers": [_container("c", "nginx")]}},
        **({"volumeClaimTemplates": vct} if rng.random() < 0.5 else {})})
    steps = [apply("owner", ss)]
    steps.append(apply("scaler", obj("StatefulSet", spec={"replicas": rng.randint(2, 4)}),
                       force=rng.random() < 0.5))
    steps.append(apply("owner", json.loads(json.dumps(ss).replace('"nginx"', '"nginx:2"'))))
    return steps


def job_apply(rng: random.Random) -> list[Step]:
    job = obj("Job", spec={"backoffLimit": rng.randint(1, 4), "template": {
        "metadata": {"labels": {"app": "j"}},
        "spec": {"restartPolicy": "Never", "containers": [_container("c", "busybox")]}}})
    steps = [apply("owner", job)]
    steps.append(apply("suspender", obj("Job", spec={"suspend": True}),
                       force=rng.random() < 0.5))
    steps.append(apply("owner", obj("Job", metadata={"labels": {"l": "1"}},
                                    spec=job["spec"])))
    return steps


def bad_config(rng: random.Random) -> list[Step]:
    dup = rng.choice(["containers", "env", "finalizers"])
    if dup == "containers":
        d = _full_deploy(rng, [_container("c", "x"), _container("c", "y")])
    elif dup == "env":
        d = _full_deploy(rng, [{"name": "c", "image": "x",
                                "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}])
    else:
        d = _full_deploy(rng, [_container("c", "x")])
        d["metadata"]["finalizers"] = ["example.com/f", "example.com/f"]
    steps = [apply("owner", _full_deploy(rng, [_container("c", "x")])), apply("owner", d)]
    if rng.random() < 0.5:
        steps.insert(0, dict(steps[1]))      # create-on-apply refused the same way
    return steps


def scalar_types(rng: random.Random) -> list[Step]:
    """Configurations SMD's typed conversion refuses for a value's type or shape, or a
    field the struct does not declare (kube-apiserver's bare 500 and its message)."""
    bad: dict[str, Any] = rng.choice([
        {"data": {"a": rng.choice([1, True, 2.5, ["x"], {"k": "v"}])}},
        {"data": rng.choice(["x", 5, ["a"]])},
        {"metadata": {"labels": rng.choice([["a"], "x"])}},
    ] if rng.random() < 0.4 else [
        {"spec": {"replicas": rng.choice(["abc", True, {"n": 1}, ["1"]])}},
        {"spec": {"paused": rng.choice(["yes", 1])}},
        {"spec": rng.choice([5, "x"])},
        {"spec": {"minReadySeconds": 1, "bogusField": 1}},
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": 7}]}}}},
    ])
    kind = "ConfigMap" if ("data" in bad or "metadata" in bad) else "Deployment"
    good = (_cm({"a": "1"}) if kind == "ConfigMap"
            else _full_deploy(rng, [_container("c", "nginx")]))
    config = obj(kind, **bad)
    steps = [apply("owner", config)]
    if rng.random() < 0.5:
        steps = [apply("owner", good), apply("owner", config)]
    return steps


def raw_extension(rng: random.Random) -> list[Step]:
    data = {"spec": {"template": {"x": rng.randint(1, 3)}, "l": [1, 2]}}
    steps = [apply("owner", obj("ControllerRevision", data=data, revision=1))]
    steps.append(apply("other", obj("ControllerRevision", data=data, revision=2),
                       force=rng.random() < 0.5))
    steps.append(apply("owner", obj("ControllerRevision", data=data, revision=1,
                                    metadata={"labels": {"l": "1"}})))
    return steps


def managers_cap(rng: random.Random) -> list[Step]:
    n = rng.randint(10, 12)
    steps = [create("creator", _cm({"base": "1"}))]
    steps += [patch(f"m{i:02d}", {"data": {f"k{i}": "v"}}) for i in range(n)]
    return steps


FAMILIES = {
    "cm-share": (cm_share, 30), "cm-remove": (cm_remove, 30), "deploy-lists": (deploy_lists, 35),
    "deploy-finalizers": (deploy_finalizers, 12), "deploy-selector": (deploy_selector, 12),
    "deploy-status": (deploy_status, 20), "crd-lists": (crd_lists, 25),
    "crd-status": (crd_status, 15), "update-then-apply": (update_then_apply, 24),
    "reset-then-apply": (reset_then_apply, 10), "last-applied": (last_applied, 12),
    "managers-cap": (managers_cap, 3), "list-order": (list_order, 25),
    "duplicates": (duplicates, 10), "multi-conflicts": (multi_conflicts, 15),
    "crd-deduced": (crd_deduced, 15), "put-updates": (put_updates, 12),
    "managed-fields-written": (managed_fields_written, 12),
    "service-ports": (service_ports, 15), "scale": (scale, 15),
    "pod-apply": (pod_apply, 12), "secret-string-data": (secret_string_data, 6),
    "statefulset-apply": (statefulset_apply, 8), "job-apply": (job_apply, 8),
    "bad-config": (bad_config, 9), "raw-extension": (raw_extension, 6),
    "controller-status": (controller_status, 24), "scalar-types": (scalar_types, 16),
}


def _kind_of(steps: list[Step]) -> str:
    return str(steps[0]["body"]["kind"])


def sequences(seed: int = 16) -> list[Sequence_]:
    out = []
    for family, (gen, count) in FAMILIES.items():
        for i in range(count):
            rng = random.Random(f"{seed}-{family}-{i}")
            steps = gen(rng)
            out.append({"name": f"{family}-{i}", "kind": _kind_of(steps), "steps": steps})
    return out
