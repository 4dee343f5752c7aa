"""Running the apply/update corpus on the real kube-apiserver and through pykcm's field manager.

Each step goes to the real server first; the same step is then computed by
:class:`pykcm.apiserver.fieldmanager.FieldManager` from the live object the real
server held before it (so every step is checked on its own, from identical input).
Compared per step:

- the outcome: both succeed, or both fail with the same code; a 409 conflict body:
  message exactly, causes as a multiset (kube-apiserver lists them in Go's map order);
- ``metadata.managedFields`` exactly (entry order included). The clock is an input:
  the library is given the time the real server wrote for this operation's entry, so
  the time-ordered sort is compared too;
- for applies, the resulting object's user fields (``spec``, ``data``, labels,
  annotations, finalizers; ``status`` through ``/status``). Defaulting and Go's
  struct encoding are not the field manager's work: the library's merged object is
  defaulted by a dry-run PUT of it to the real server, and compared after that.

Updates (merge patch, create) need the new object as the server's Update operation
sees it (decoded, defaulted): it is the answer of the same request with
``dryRun=All`` made just before, with the request's own managedFields (a merge patch
may reset them; a create carries none).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykcm.api.patch.merge_patch import apply_merge_patch
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager import FieldManager
from pykcm.apiserver.fieldmanager.manager_name import manager_or_user_agent
from pykcm.apiserver.fieldmanager.reset_fields import (
    custom_resource_reset_fields,
    reset_fields,
)
from pykcm.apiserver.fieldmanager.scale_handler import to_parent, to_subresource
from pykcm.apiserver.fieldmanager.schema import TypeSchema, for_builtin, for_crd
from pykcm.apiserver.registry.defaults import zero_object_fields
from pykcm.testing.upstream import request_json
from tests.differential.fieldmanager.corpus import CRD, CRD_NAME, CRD_SCHEMA, KINDS

Request = Callable[..., tuple[int, Any]]
_USER_FIELDS = ("spec", "data", "stringData", "type")
_META_FIELDS = ("labels", "annotations", "finalizers")


@dataclass
class Result:
    sequences: int = 0
    steps: int = 0
    differences: list[str] = field(default_factory=list)


class Server:
    """The real kube-apiserver: url, token and CA of a control plane."""

    def __init__(self, url: str, token: str, ca_file: str) -> None:
        self.url, self.token, self.ca_file = url, token, ca_file

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> tuple[int, Any]:
        return request_json(self.url + path, self.token, self.ca_file, method=method, body=body,
                            content_type=content_type, timeout=30)

    def setup(self, namespace: str) -> None:
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        # pods need it (ServiceAccount admission); no controller manager may be running
        self.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                     {"metadata": {"name": "default"}})
        code, _ = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                      f"{CRD_NAME}")
        if code == 404:
            self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            code, _ = self.request("GET", f"/apis/{KINDS['Widget']['group']}/v1/namespaces/"
                                          f"{namespace}/widgets")
            if code == 200:
                return
            time.sleep(0.2)
        raise RuntimeError("the Widget CRD was not served in 30 s")


def _path(kind: str, namespace: str, name: str | None, sub: str = "") -> str:
    k = KINDS[kind]
    base = f"/apis/{k['group']}/{k['version']}" if k["group"] else f"/api/{k['version']}"
    out = f"{base}/namespaces/{namespace}/{k['resource']}"
    if name:
        out += f"/{name}"
    if sub:
        out += f"/{sub}"
    return out


def _schema(kind: str) -> TypeSchema:
    k = KINDS[kind]
    if kind == "Widget":
        return for_crd(CRD_SCHEMA)
    s = for_builtin(k["group"], k["version"], kind)
    assert s is not None
    return s


def _field_manager(kind: str, sub: str, now: Callable[[], str]) -> FieldManager:
    k = KINDS[kind]
    reset = (custom_resource_reset_fields(True, sub) if kind == "Widget"
             else reset_fields(k["group"], k["resource"], sub))
    zero = {} if kind == "Widget" else zero_object_fields(k["group"], kind)[0]
    return FieldManager(_schema(kind), k["group"], k["version"], kind, subresource=sub,
                        reset_fields=reset, zero_fields=zero, now=now)


def _entry_time(obj: Any, manager: str, operation: str, sub: str) -> str | None:
    if not isinstance(obj, dict):
        return None
    for e in (obj.get("metadata") or {}).get("managedFields") or ():
        if (e.get("manager") == manager and e.get("operation") == operation
                and (e.get("subresource") or "") == sub):
            t = e.get("time")
            return t if isinstance(t, str) else None
    return None


def _user_view(obj: dict[str, Any], sub: str) -> dict[str, Any]:
    if sub == "status":
        return {"status": obj.get("status")}
    if obj.get("kind") == "Pod":
        # admission adds to a created pod's spec after the field manager (the token volume,
        # tolerations): only its labels and annotations are compared
        meta = obj.get("metadata") or {}
        return {f"metadata.{k}": meta.get(k) for k in ("labels", "annotations")}
    meta = obj.get("metadata") or {}
    out = {k: obj.get(k) for k in _USER_FIELDS}
    out.update({f"metadata.{k}": meta.get(k) for k in _META_FIELDS})
    return out


def _conflict_view(body: Any) -> Any:
    if not isinstance(body, dict):
        return body
    causes = (body.get("details") or {}).get("causes") or []
    return {"code": body.get("code"), "reason": body.get("reason"), "message": body.get("message"),
            "causes": sorted(json.dumps(c, sort_keys=True) for c in causes)}


def _mine(step: dict[str, Any], kind: str, live: dict[str, Any] | None, body: dict[str, Any],
          new: dict[str, Any] | None, now: Callable[[], str]) -> dict[str, Any]:
    sub = step.get("sub", "")
    manager = manager_or_user_agent(step["manager"], "")
    fm = _field_manager(kind, sub, now)
    if step["op"] == "apply":
        return fm.apply(copy.deepcopy(live), body, manager, bool(step.get("force")))
    assert new is not None
    new = copy.deepcopy(new)
    meta = new.setdefault("metadata", {})
    meta.pop("managedFields", None)
    requested = (apply_merge_patch(copy.deepcopy(live), body) if step["op"] == "patch"
                 else body).get("metadata") or {}
    if "managedFields" in requested:
        meta["managedFields"] = requested["managedFields"]
    return fm.update(None if step["op"] == "create" else live, new, manager)


def _send(server: Server, step: dict[str, Any], kind: str, namespace: str, name: str,
          body: dict[str, Any], dry_run: bool) -> tuple[int, Any]:
    query = f"?fieldManager={step['manager']}"
    if step.get("force"):
        query += "&force=true"
    if dry_run:
        query += "&dryRun=All"
    if step["op"] == "create":
        return server.request("POST", _path(kind, namespace, None) + query, body)
    if step["op"] == "put":
        return server.request("PUT", _path(kind, namespace, name, step.get("sub", "")) + query,
                              body)
    ctype = ("application/apply-patch+yaml" if step["op"] == "apply"
             else "application/merge-patch+json")
    return server.request("PATCH", _path(kind, namespace, name, step.get("sub", "")) + query,
                          body, ctype)


_JOB_GENERATED_LABELS = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
                         "controller-uid", "job-name")


def _created_by_strategy(kind: str, mine: dict[str, Any], real: dict[str, Any]) -> None:
    """What a create strategy generates after the field manager (PrepareForCreate), taken
    from the real object: a Job's selector and its controller-uid/job-name labels."""
    if kind != "Job":
        return
    mine["spec"]["selector"] = real["spec"]["selector"]
    labels = mine["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})
    real_labels = real["spec"]["template"]["metadata"]["labels"]
    labels.update({k: real_labels[k] for k in _JOB_GENERATED_LABELS if k in real_labels})


def _defaulted(server: Server, kind: str, namespace: str, name: str, sub: str,
               obj: dict[str, Any], rv: str) -> tuple[int, Any]:
    """The library's object as the server decodes and defaults it (a dry-run PUT)."""
    put = copy.deepcopy(obj)
    meta = put.setdefault("metadata", {})
    for k in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"):
        meta.pop(k, None)
    meta["name"] = name
    meta["resourceVersion"] = rv

    return server.request("PUT", _path(kind, namespace, name, sub) + "?dryRun=All", put)


def _scale_step(server: Server, step: dict[str, Any], kind: str, namespace: str, name: str,
                body: dict[str, Any], live: dict[str, Any], where: str,
                result: Result) -> dict[str, Any] | None:
    """A write through ``/scale``: the Scale's entries are a view of the parent's
    (scale_handler); the field manager runs on the Scale; the parent gets them back."""
    parent_mf = (live.get("metadata") or {}).get("managedFields")
    code, live_scale = server.request("GET", _path(kind, namespace, name, "scale"))
    # GET /scale carries no managedFields; a write's old Scale gets the parent's view
    live_scale["metadata"]["managedFields"] = to_subresource(parent_mf)
    new = None
    if step["op"] != "apply":
        _, new = _send(server, step, kind, namespace, name, body, True)
    code, real = _send(server, step, kind, namespace, name, body, False)
    operation = "Apply" if step["op"] == "apply" else "Update"
    t = _entry_time(real, step["manager"], operation, "scale")
    scale_s = for_builtin("autoscaling", "v1", "Scale")
    assert scale_s is not None
    fm = FieldManager(scale_s, "autoscaling", "v1", "Scale", subresource="scale",
                      now=lambda: t or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    try:
        if step["op"] == "apply":
            mine = fm.apply(live_scale, body, step["manager"], bool(step.get("force")))
        else:
            assert isinstance(new, dict)
            new["metadata"].pop("managedFields", None)
            mine = fm.update(live_scale, new, step["manager"])
    except StatusError as e:
        if code < 400 or _conflict_view(real) != _conflict_view(e.status()):
            result.differences.append(f"{where}: kube-apiserver {code} {_conflict_view(real)}, "
                                      f"pykcm {_conflict_view(e.status())}")
        return None
    if code >= 400:
        result.differences.append(f"{where}: kube-apiserver {code} {real}, pykcm succeeded")
        return None
    parent = to_parent(parent_mf, mine["metadata"].get("managedFields"), "apps/v1")
    _, real_parent = server.request("GET", _path(kind, namespace, name))
    if real_parent["metadata"].get("managedFields") != parent:
        result.differences.append(f"{where}: parent managedFields differ:\n  kube-apiserver "
                                  f"{json.dumps(real_parent['metadata'].get('managedFields'))}\n"
                                  f"  pykcm          {json.dumps(parent)}")
    if real["metadata"].get("managedFields") is not None:   # a Scale answered carries none
        result.differences.append(f"{where}: the answered Scale has managedFields")
    if (real_parent.get("spec") or {}).get("replicas") != mine["spec"].get("replicas"):
        result.differences.append(f"{where}: replicas differ")
    out: dict[str, Any] = real_parent
    return out


def run_sequence(server: Server, seq: dict[str, Any], namespace: str, result: Result) -> None:
    kind = seq["kind"]
    name = seq["name"]
    live: dict[str, Any] | None = None
    result.sequences += 1
    for i, step in enumerate(seq["steps"]):
        result.steps += 1
        sub = step.get("sub", "")
        where = f"{name} step {i} ({step['op']} by {step['manager']}"
        where += f" /{sub})" if sub else ")"
        body = json.loads(json.dumps(step["body"]).replace("{name}", name))
        if step["op"] != "patch":
            body.setdefault("metadata", {})["name"] = name
        if sub == "scale":
            assert live is not None
            live = _scale_step(server, step, kind, namespace, name, body, live, where,
                               result) or live
            continue
        new = None
        if step["op"] != "apply":
            dcode, new = _send(server, step, kind, namespace, name, body, True)
            if dcode >= 400:
                new = None
        code, real = _send(server, step, kind, namespace, name, body, False)
        operation = "Apply" if step["op"] == "apply" else "Update"
        t = _entry_time(real, step["manager"], operation, sub)

        def now(t: str | None = t) -> str:
            return t or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

        if step["op"] != "apply" and not new:
            # the update was refused before any field manager ran (validation): so must the
            # real request be
            if code < 400:
                result.differences.append(f"{where}: dry run refused, the request not: {code}")
            continue
        try:
            mine: dict[str, Any] | StatusError = _mine(step, kind, live, body, new, now)
        except StatusError as e:
            mine = e
        if isinstance(mine, StatusError):
            if code < 400:
                result.differences.append(f"{where}: kube-apiserver {code}, pykcm {mine.code}: "
                                          f"{mine.message}")
            elif _conflict_view(real) != _conflict_view(mine.status()):
                result.differences.append(
                    f"{where}: error bodies differ:\n  kube-apiserver {_conflict_view(real)}\n"
                    f"  pykcm          {_conflict_view(mine.status())}")
            continue
        if code >= 400:
            result.differences.append(f"{where}: kube-apiserver {code} {real}, pykcm succeeded")
            continue
        real_mf = (real.get("metadata") or {}).get("managedFields")
        mine_mf = (mine.get("metadata") or {}).get("managedFields")
        if real_mf != mine_mf:
            result.differences.append(f"{where}: managedFields differ:\n  kube-apiserver "
                                      f"{json.dumps(real_mf)}\n  pykcm          "
                                      f"{json.dumps(mine_mf)}")
        if step["op"] == "apply":
            if live is None:
                _created_by_strategy(kind, mine, real)
            if kind in ("Pod", "ControllerRevision") and not sub:
                # nothing to default, and no PUT: a pod's view is labels and annotations; a
                # revision's data is immutable byte for byte (a RawExtension keeps the
                # request's bytes, which a re-encoding never reproduces)
                dcode, defaulted = 200, mine
            else:
                dcode, defaulted = _defaulted(server, kind, namespace, name, sub, mine,
                                              real["metadata"]["resourceVersion"])
            rv = _user_view(real, sub)
            mv = _user_view(defaulted, sub) if dcode < 400 else {"dry-run PUT": defaulted}
            if rv != mv:
                result.differences.append(f"{where}: objects differ:\n  kube-apiserver "
                                          f"{json.dumps(rv, sort_keys=True)}\n  pykcm          "
                                          f"{json.dumps(mv, sort_keys=True)}")
        live = real


def run(server: Server, sequences: list[dict[str, Any]], namespace: str) -> Result:
    server.setup(namespace)
    result = Result()
    for seq in sequences:
        run_sequence(server, seq, namespace, result)
    return result


def main() -> None:
    """``python -m tests.differential.fieldmanager.runner ENV_FILE [-k SUBSTRING]``: run the
    corpus against a running control plane (the kit's ``DIR/env`` file)."""
    import sys
    import uuid

    from tests.differential.fieldmanager.corpus import sequences
    env = dict(line.split("=", 1) for line in open(sys.argv[1]).read().split())  # noqa: SIM115
    with open(env["KUBE_TOKEN_FILE"]) as f:
        token = f.read().strip()
    server = Server(env["KUBE_APISERVER_URL"], token, env["KUBE_CA_FILE"])
    seqs = sequences()
    if len(sys.argv) > 3 and sys.argv[2] == "-k":
        seqs = [s for s in seqs if sys.argv[3] in s["name"]]
    res = run(server, seqs, f"ssa-{uuid.uuid4().hex[:6]}")
    for d in res.differences:
        print(d)
    print(f"{res.sequences} sequences, {res.steps} steps, {len(res.differences)} differences")


if __name__ == "__main__":
    main()
