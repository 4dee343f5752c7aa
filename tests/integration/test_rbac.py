"""RBAC on both API servers: a namespaced Role granting a user what it lists, the 403
Status of what it does not grant (message, reason, details), escalation prevention,
binding-resolution errors in the reason, validation of the four kinds, the ClusterRole
aggregation, and (upstream-marked) ``kubectl auth can-i --list`` and the bootstrap policy
compared between pykcm's server and kube-apiserver v1.36.2 side by side.

The test user is impersonated (``Impersonate-User``) by the admin, as ``kubectl --as``
does; every expected body below is the real server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.controllers.clusterroleaggregation import (
    ClusterRoleAggregationController,
    aggregated_rules,
)
from pykcm.informers import SharedInformerFactory
from pykcm.testing.server_thread import ServerThread
from pykcm.testing.upstream import ControlPlane
from tests.conftest import UPSTREAM, Api, Backend
from tests.polling import eventually

KUBECTL = str(Path(sys.executable).parent / "kubectl")
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _ns(api: Api) -> str:
    name = f"rbac-{uuid.uuid4().hex[:10]}"
    code, body = api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert code == 201, body
    return name


def _as(user: str) -> dict[str, str]:
    return {"Impersonate-User": user}


def _grant(api: Api, ns: str, name: str, user: str, rules: list[dict[str, Any]]) -> None:
    code, body = api.post(f"{RBAC}/namespaces/{ns}/roles",
                          {"metadata": {"name": name}, "rules": rules})
    assert code == 201, body
    code, body = api.post(f"{RBAC}/namespaces/{ns}/rolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "User", "name": user}]})
    assert code == 201, body
    assert body["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"  # defaulted
    # kube-apiserver's authorizer sees the binding through its informers a moment later:
    # wait until the first rule is allowed, as Kubernetes' e2e framework does
    rule = rules[0]
    resource, _, subresource = rule["resources"][0].partition("/")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": user, "resourceAttributes": {
                  "namespace": ns, "verb": rule["verbs"][0], "group": rule["apiGroups"][0],
                  "resource": resource, "subresource": subresource}}}
    deadline = time.monotonic() + 30
    while True:
        code, body = api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
        assert code == 201, body
        if body["status"].get("allowed") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert body["status"].get("allowed"), body


def _forbidden(message: str, kind: str, name: str = "", group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Forbidden", "details": details, "code": 403}


def test_namespaced_role_grants_list_pods(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = _ns(api)
    user = f"bob-{ns}"
    _grant(api, ns, "pod-reader", user, [{"apiGroups": [""], "resources": ["pods"],
                                          "verbs": ["list"]}])
    code, body = api.get(f"/api/v1/namespaces/{ns}/pods", headers=_as(user))
    assert (code, body["kind"], body["items"]) == (200, "PodList", [])
    cannot = f'User "{user}" cannot'
    assert api.get(f"/api/v1/namespaces/{ns}/pods/x", headers=_as(user)) == (403, _forbidden(
        f'pods "x" is forbidden: {cannot} get resource "pods" in API group "" in the '
        f'namespace "{ns}"', "pods", "x"))
    assert api.get("/api/v1/nodes", headers=_as(user)) == (403, _forbidden(
        f'nodes is forbidden: {cannot} list resource "nodes" in API group "" at the cluster '
        "scope", "nodes"))
    assert api.get(f"/apis/apps/v1/namespaces/{ns}/deployments/d/scale",
                   headers=_as(user)) == (403, _forbidden(
        f'deployments.apps "d" is forbidden: {cannot} get resource "deployments/scale" in '
        f'API group "apps" in the namespace "{ns}"', "deployments", "d", "apps"))
    assert api.get(f"/api/v1/namespaces/{ns}", headers=_as(user)) == (403, _forbidden(
        f'namespaces "{ns}" is forbidden: {cannot} get resource "namespaces" in API group '
        f'"" in the namespace "{ns}"', "namespaces", ns))
    code, body = api.get("/healthz/x", headers=_as(user))
    assert (code, body["message"], body["details"]) == (
        403, f'forbidden: {cannot} get path "/healthz/x"', {})
    # another namespace: not granted there
    other = _ns(api)
    code, body = api.get(f"/api/v1/namespaces/{other}/pods", headers=_as(user))
    assert code == 403
    # the review says which binding allowed it
    code, body = api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {"spec": {
        "user": user, "resourceAttributes": {"namespace": ns, "verb": "list",
                                             "resource": "pods"}}})
    assert (code, body["status"]) == (201, {
        "allowed": True, "reason": f'RBAC: allowed by RoleBinding "pod-reader/{ns}" of Role '
                                   f'"pod-reader" to User "{user}"'})


def test_escalation_is_refused(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = _ns(api)
    user = f"eve-{ns}"
    _grant(api, ns, "role-writer", user, [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
         "verbs": ["create", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
    role = {"metadata": {"name": "more"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "delete"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}
    code, body = api.post(f"{RBAC}/namespaces/{ns}/roles", role, headers=_as(user))
    assert (code, body) == (403, _forbidden(
        f'roles.rbac.authorization.k8s.io "more" is forbidden: user "{user}" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}',
        "roles", "more", "rbac.authorization.k8s.io"))
    # what the user holds may be granted
    role["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    code, body = api.post(f"{RBAC}/namespaces/{ns}/roles", role, headers=_as(user))
    assert code == 201, body
    # binding a role whose permissions the user lacks (and no bind verb)
    binding = {"metadata": {"name": "to-admin"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "system:controller:replicaset-controller"},
               "subjects": [{"kind": "User", "name": "mallory"}]}
    code, body = api.post(f"{RBAC}/namespaces/{ns}/rolebindings", binding, headers=_as(user))
    assert (code, body["reason"], body["message"].split("\n")[0]) == (
        403, "Forbidden", (f'rolebindings.rbac.authorization.k8s.io "to-admin" is forbidden: '
                           f'user "{user}" (groups=["system:authenticated"]) is attempting to '
                           "grant RBAC permissions not currently held:"))
    # the admin (system:masters) may
    code, body = api.post(f"{RBAC}/namespaces/{ns}/rolebindings", binding)
    assert code == 201, body


def test_unresolvable_role_is_the_reason(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = _ns(api)
    user = f"carol-{ns}"
    code, body = api.post(f"{RBAC}/namespaces/{ns}/rolebindings", {
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nope"},
        "subjects": [{"kind": "User", "name": user}]})
    assert code == 201, body
    want = (403, (
        f'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" in the '
        f'namespace "{ns}": RBAC: role.rbac.authorization.k8s.io "nope" not found'))
    # kube-apiserver's authorizer sees the binding through its informers a moment later
    # (until then the 403 has no reason): ask again until it does, within 30 s
    deadline = time.monotonic() + 30
    while True:
        code, body = api.get(f"/api/v1/namespaces/{ns}/pods", headers=_as(user))
        if (code, body["message"]) == want or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert (code, body["message"]) == want


def test_validation(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = _ns(api)
    code, body = api.post(f"{RBAC}/namespaces/{ns}/roles", {
        "metadata": {"name": "bad"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"nonResourceURLs": ["/x"], "verbs": ["get"]},
            {"verbs": ["get"]}]})
    assert (code, body["message"]) == (422, (
        'Role.rbac.authorization.k8s.io "bad" is invalid: [rules[0].verbs: Required value: '
        "verbs must contain at least one value, rules[1].nonResourceURLs: Invalid value: "
        '["/x"]: namespaced rules cannot apply to non-resource URLs, rules[2].apiGroups: '
        "Required value: resource rules must supply at least one api group, "
        "rules[2].resources: Required value: resource rules must supply at least one "
        "resource]"))
    code, body = api.post(f"{RBAC}/namespaces/{ns}/rolebindings", {
        "metadata": {"name": "bad"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Foo", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "Bad_Name"}, {"kind": "Robot",
                                                                      "name": "r2d2"}]})
    assert (code, body["message"]) == (422, (
        'RoleBinding.rbac.authorization.k8s.io "bad" is invalid: [roleRef.kind: Unsupported '
        'value: "Foo": supported values: "Role", "ClusterRole", subjects[0].name: Invalid '
        "value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case "
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), subjects[1].kind: Unsupported "
        'value: "Robot": supported values: "ServiceAccount", "User", "Group"]'))
    code, body = api.post(f"{RBAC}/clusterroles", {
        "metadata": {"name": f"agg-{ns}"}, "aggregationRule": {"clusterRoleSelectors": []}})
    assert (code, body["message"]) == (422, (
        f'ClusterRole.rbac.authorization.k8s.io "agg-{ns}" is invalid: '
        "aggregationRule.clusterRoleSelectors: Required value: at least one "
        "clusterRoleSelector required if aggregationRule is non-nil"))
    binding = {"metadata": {"name": "b"},
               "roleRef": {"kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "Group", "name": "g"}]}
    code, body = api.post(f"{RBAC}/namespaces/{ns}/rolebindings", binding)
    assert (code, body["roleRef"]["apiGroup"]) == (201, "rbac.authorization.k8s.io"), body
    body["roleRef"]["name"] = "edit"
    code, body = api.put(f"{RBAC}/namespaces/{ns}/rolebindings/b", body)
    assert (code, body["message"]) == (422, (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        '{"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: '
        "cannot change roleRef"))


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


async def test_clusterrole_aggregation(client: Client, apiserver: Backend) -> None:
    """The real server's support manager runs kube-controller-manager's aggregation
    controller; on pykcm's, pykcm's runs for the test. Same expectations on both."""
    key = f"test.pykcm.io/agg-{uuid.uuid4().hex[:8]}"
    names = [f"{key.split('/')[1]}-{n}" for n in ("all", "b", "a", "other")]
    factory = SharedInformerFactory(client, name="")
    ctl = None
    if not apiserver.real:
        ctl = ClusterRoleAggregationController(cluster_role_informer=factory.for_resource(
            "rbac.authorization.k8s.io", "v1", "clusterroles"), client=client)
        factory.start()
    task = asyncio.create_task(ctl.run(2)) if ctl is not None else None
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    try:
        await client.create("clusterroles", {
            "metadata": {"name": names[0]},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {key: "true"}}]}})
        # "-b" sorts after "-a": the rules come in name order, each once
        await client.create("clusterroles", {"metadata": {"name": names[1], "labels": {
            key: "true"}}, "rules": [pods, {"nonResourceURLs": ["/b"], "verbs": ["get"]}]})
        await client.create("clusterroles", {"metadata": {"name": names[2], "labels": {
            key: "true"}}, "rules": [pods, {"apiGroups": ["apps"], "resources": ["*"],
                                            "verbs": ["list"]}]})
        await client.create("clusterroles", {"metadata": {"name": names[3]}, "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]})
        want = [pods, {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["list"]},
                {"nonResourceURLs": ["/b"], "verbs": ["get"]}]

        async def rules() -> list[Any] | None:
            got = (await client.get("clusterroles", names[0])).get("rules")
            return got if got == want else None
        await eventually(rules, what="the aggregated rules")
        await client.delete("clusterroles", names[2])
        want = [pods, {"nonResourceURLs": ["/b"], "verbs": ["get"]}]
        await eventually(rules, what="the rules of the deleted role dropped")
        role = await client.get("clusterroles", names[0])
        managers = {m["manager"] for m in role["metadata"].get("managedFields") or []}
        if apiserver.real or managers:
            assert "clusterrole-aggregation-controller" in managers
    finally:
        if ctl is not None and task is not None:
            ctl.shutdown()
            await task
            await factory.shutdown()
        for n in names:
            with contextlib.suppress(Exception):
                await client.delete("clusterroles", n)


def _can_i_list(kubeconfig: str, *args: str) -> list[str]:
    r = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "auth", "can-i", "--list", *args],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    # kubectl merges the verbs of a resource's rules in the order the server lists the
    # rules, which kube-apiserver takes from its cache's map (random): compare verb sets
    lines = []
    for line in r.stdout.splitlines():
        head, sep, verbs = line.rpartition("[")
        lines.append(head + sep + " ".join(sorted(verbs.rstrip("]").split())) + "]"
                     if sep else line)
    return sorted(lines)


@UPSTREAM
@pytest.mark.parametrize("who", [
    ("--as=system:kube-controller-manager",),
    ("--as=system:serviceaccount:kube-system:replicaset-controller",),
    ("--as=system:kube-scheduler", "-n", "kube-system"),
    ("--as=someone", "--as-group=system:nodes", "-n", "default"),
])
def test_kubectl_auth_can_i_list_of_bootstrap_identities(
        pykcm_apiserver: ServerThread, kube_control_plane: ControlPlane,
        who: tuple[str, ...]) -> None:
    assert _can_i_list(pykcm_apiserver.kubeconfig_path, *who) == _can_i_list(
        kube_control_plane.kubeconfig_path, *who)


@UPSTREAM
def test_kubectl_auth_can_i_list_with_a_namespaced_role(
        pykcm_apiserver: ServerThread, kube_control_plane: ControlPlane) -> None:
    user = f"dana-{uuid.uuid4().hex[:8]}"
    outs = []
    for st in (pykcm_apiserver, kube_control_plane):
        api = Api(Backend("x", st.kubeconfig_path, st.url, st.token, st.ca_pem or b""))
        ns = f"rbac-list-{user}"
        assert api.post("/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
        _grant(api, ns, "r", user, [
            {"apiGroups": ["", "apps"], "resources": ["pods", "deployments/scale"],
             "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm"],
             "verbs": ["update"]}])
        outs.append(_can_i_list(st.kubeconfig_path, f"--as={user}", "-n", ns))
    assert outs[0] == outs[1]
    assert any(line.startswith("pods ") for line in outs[0])


@UPSTREAM
def test_bootstrap_policy_is_kube_apiservers(pykcm_apiserver: ServerThread,
                                             kube_control_plane: ControlPlane) -> None:
    """Every bootstrap object, as both servers store it (the aggregated roles' rules
    aside: the real server's aggregation controller fills them, pykcm's session server
    runs none)."""
    def policy(st: ServerThread | ControlPlane) -> dict[str, Any]:
        api = Api(Backend("x", st.kubeconfig_path, st.url, st.token, st.ca_pem or b""))
        out: dict[str, Any] = {}
        for plural in ("clusterroles", "clusterrolebindings", "roles", "rolebindings"):
            code, body = api.get(f"{RBAC}/{plural}",
                                 params={"labelSelector": "kubernetes.io/bootstrapping="
                                                          "rbac-defaults"})
            assert code == 200
            for o in body["items"]:
                meta = o["metadata"]
                if o.get("aggregationRule"):
                    o.pop("rules", None)
                out[f"{plural}/{meta.get('namespace', '')}/{meta['name']}"] = {
                    k: v for k, v in o.items() if k not in ("metadata",)} | {
                    "labels": meta.get("labels"), "annotations": meta.get("annotations")}
        return out
    assert policy(pykcm_apiserver) == policy(kube_control_plane)


@UPSTREAM
def test_aggregated_bootstrap_roles_as_kube_controller_managers(
        pykcm_apiserver: ServerThread, kube_control_plane: ControlPlane) -> None:
    """admin, edit, view: the rules pykcm's aggregation converges to from pykcm's
    bootstrap ClusterRoles are the rules kube-controller-manager's wrote on the real
    server (its support manager runs it), in the same order."""
    def cluster_roles(st: ServerThread | ControlPlane) -> dict[str, Any]:
        api = Api(Backend("x", st.kubeconfig_path, st.url, st.token, st.ca_pem or b""))
        code, body = api.get(f"{RBAC}/clusterroles", params={
            "labelSelector": "kubernetes.io/bootstrapping=rbac-defaults"})
        assert code == 200
        return {o["metadata"]["name"]: o for o in body["items"]}
    ours = cluster_roles(pykcm_apiserver)
    aggregated = [n for n, o in ours.items() if o.get("aggregationRule")]
    assert {"admin", "edit", "view"} <= set(aggregated)
    # the controller's convergence: aggregated roles select aggregated roles (admin
    # selects edit, edit view), so apply until nothing changes
    changed = True
    while changed:
        changed = False
        for name in aggregated:
            rules = aggregated_rules(ours[name], ours.values())
            if rules != ours[name].get("rules"):
                ours[name] = {**ours[name], "rules": rules}
                changed = True
    want = {name: ours[name]["rules"] for name in aggregated}

    def real_rules() -> dict[str, Any]:
        real = cluster_roles(kube_control_plane)
        return {name: real[name].get("rules") for name in aggregated}
    # the session's support manager may still be converging
    deadline = time.monotonic() + 60
    got = real_rules()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.2)
        got = real_rules()
    for name in aggregated:
        assert got[name] == want[name], name
