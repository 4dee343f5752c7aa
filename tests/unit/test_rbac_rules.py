"""Unit tests of RBAC rule matching (pykcm.apiserver.rbac.rules), the authorizer over
in-memory bindings (subjects, reasons, rules review), escalation's Covers/CompactRules
(rbac.escalation), the bootstrap reconciliation (rbac.bootstrap), the request attributes
and impersonation (rbac.request_filter) and the aggregation controller's rule
collection; properties with Hypothesis where a rule's meaning is a set."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.apiserver import errors
from pykcm.apiserver.auth.authentication import User
from pykcm.apiserver.rbac.authorizer import RBACAuthorizer, forbidden_error
from pykcm.apiserver.rbac.bootstrap import bootstrap_policy, reconcile_binding, reconcile_role
from pykcm.apiserver.rbac.escalation import breakdown, compact, covers
from pykcm.apiserver.rbac.request_filter import impersonate, request_attributes
from pykcm.apiserver.rbac.rules import Attributes, compact_string, rule_allows
from pykcm.controllers.clusterroleaggregation import aggregated_rules

BOB = User("bob", groups=("system:authenticated",))
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
GROUPS = ("", "apps", "batch")
RESOURCES = ("pods", "deployments", "jobs")
SUBS = ("", "status", "scale")


def res(verb: str, resource: str, group: str = "", sub: str = "", name: str = "",
        ns: str = "ns", user: User = BOB) -> Attributes:
    return Attributes(user, verb, namespace=ns, api_group=group, resource=resource,
                      subresource=sub, name=name)


def test_rule_matching_wildcards() -> None:
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    assert rule_allows(res("get", "pods"), pods)
    assert not rule_allows(res("get", "pods", sub="log"), pods)  # subresources are separate
    assert not rule_allows(res("get", "pods", group="apps"), pods)
    assert not rule_allows(res("list", "pods"), pods)
    scale = {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]}
    assert rule_allows(res("patch", "deployments", "apps", "scale"), scale)
    assert not rule_allows(res("patch", "deployments", "apps"), scale)
    assert not rule_allows(res("patch", "deployments", "apps", "status"), scale)
    named = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"],
             "verbs": ["get"]}
    assert rule_allows(res("get", "configmaps", name="a"), named)
    assert not rule_allows(res("get", "configmaps", name="b"), named)
    assert not rule_allows(res("get", "configmaps"), named)  # a list names nothing
    urls = {"nonResourceURLs": ["/healthz", "/api/*"], "verbs": ["get"]}
    path = Attributes(BOB, "get", is_resource_request=False, path="/api/v1")
    assert rule_allows(path, urls)
    assert not rule_allows(Attributes(BOB, "get", is_resource_request=False, path="/apis"),
                           urls)
    assert not rule_allows(path, pods)  # resource rules never match paths
    assert not rule_allows(res("get", "pods"), urls)


@given(st.sampled_from(VERBS), st.sampled_from(GROUPS), st.sampled_from(RESOURCES),
       st.sampled_from(SUBS), st.lists(st.sampled_from(VERBS), max_size=3),
       st.lists(st.sampled_from(GROUPS), max_size=2),
       st.lists(st.sampled_from(RESOURCES + ("*", "pods/status", "*/scale")), max_size=3))
def test_rule_allows_is_the_product_of_its_lists(verb: str, group: str, resource: str,
                                                 sub: str, verbs: list[str],
                                                 groups: list[str],
                                                 resources: list[str]) -> None:
    rule = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    combined = f"{resource}/{sub}" if sub else resource
    want = (verb in verbs and group in groups
            and ("*" in resources or combined in resources
                 or (bool(sub) and f"*/{sub}" in resources)))
    assert rule_allows(res(verb, resource, group, sub), rule) == want
    # "*" in a list matches everything that list is about
    assert rule_allows(res(verb, resource, group, sub),
                       {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})


_rules = st.lists(st.fixed_dictionaries({
    "verbs": st.lists(st.sampled_from(VERBS + ("*",)), min_size=1, max_size=3),
    "apiGroups": st.lists(st.sampled_from(GROUPS + ("*",)), min_size=1, max_size=2),
    "resources": st.lists(st.sampled_from(RESOURCES + ("*", "pods/status")), min_size=1,
                          max_size=2)}), max_size=3)


@given(_rules, _rules)
def test_covers_agrees_with_the_matcher(owner: list[dict[str, Any]],
                                        wanted: list[dict[str, Any]]) -> None:
    """What Covers leaves out is exactly what no owner rule allows (for concrete subrules;
    a wildcard subrule is covered only by a wildcard)."""
    missing = covers(owner, wanted)
    for sub in breakdown_all(wanted):
        concrete = "*" not in sub["verbs"] + sub["apiGroups"] + sub["resources"]
        if not concrete:
            continue
        resource, _, subresource = sub["resources"][0].partition("/")
        attrs = res(sub["verbs"][0], resource, sub["apiGroups"][0], subresource)
        assert (sub in missing) == (not any(rule_allows(attrs, o) for o in owner))
    assert covers(wanted, wanted) == []  # a role covers itself


def breakdown_all(rules: Iterable[Mapping[str, Any]]) -> list[dict[str, list[str]]]:
    return [sub for r in rules for sub in breakdown(r)]


def test_compact_merges_verbs_and_prints_as_upstream() -> None:
    missing = covers([], [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                          {"nonResourceURLs": ["/x"], "verbs": ["get"]}])
    assert sorted(compact_string(r) for r in compact(missing)) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/x"], Verbs:["get"]}']


class Objects:
    """RBACObjects over plain lists."""

    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = objs

    def _of(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objs if o["kind"] == kind]

    def cluster_role_bindings(self) -> list[dict[str, Any]]:
        return self._of("ClusterRoleBinding")

    def role_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return [o for o in self._of("RoleBinding") if o["metadata"]["namespace"] == namespace]

    def cluster_role(self, name: str) -> dict[str, Any] | None:
        return next((o for o in self._of("ClusterRole") if o["metadata"]["name"] == name),
                    None)

    def role(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self._of("Role") if o["metadata"] == {
            "name": name, "namespace": namespace}), None)


def _binding(name: str, ns: str, role_kind: str, role: str,
             *subjects: dict[str, str]) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"kind": "RoleBinding" if ns else "ClusterRoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                        "name": role}, "subjects": list(subjects)}


READ_PODS = {"kind": "ClusterRole", "metadata": {"name": "read-pods"},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}


def test_subjects_and_reasons() -> None:
    sa = User("system:serviceaccount:ns:robot", groups=("system:serviceaccounts",))
    authz = RBACAuthorizer(Objects(
        READ_PODS,
        _binding("by-group", "", "ClusterRole", "read-pods",
                 {"kind": "Group", "name": "readers"}),
        # a ServiceAccount subject without a namespace is the binding's
        _binding("robot", "ns", "ClusterRole", "read-pods",
                 {"kind": "ServiceAccount", "name": "robot"}),
        _binding("dangling", "ns", "Role", "gone", {"kind": "User", "name": "bob"})))
    assert authz.authorize(res("list", "pods", user=sa)) == (
        True, ('RBAC: allowed by RoleBinding "robot/ns" of ClusterRole "read-pods" to '
              'ServiceAccount "robot/ns"'))
    assert not authz.allowed(res("list", "pods", ns="other", user=sa))
    reader = User("x", groups=("readers",))
    assert authz.authorize(res("get", "pods", ns="", user=reader)) == (
        True, ('RBAC: allowed by ClusterRoleBinding "by-group" of ClusterRole "read-pods" to '
              'Group "readers"'))
    assert authz.authorize(res("get", "pods")) == (
        False, 'RBAC: role.rbac.authorization.k8s.io "gone" not found')
    assert authz.authorize(res("delete", "nodes", ns="", user=User(
        "root", groups=("system:masters",)))) == (True, "")
    rules = authz.rules_for(sa, "ns")
    assert rules.resource_rules == [{"verbs": ["get", "list"], "apiGroups": [""],
                                     "resources": ["pods"]}]
    assert authz.rules_for(BOB, "ns").errors == [
        'role.rbac.authorization.k8s.io "gone" not found']


def test_forbidden_status() -> None:
    err = forbidden_error(res("get", "deployments", "apps", "scale", "d"), "")
    assert (err.code, err.reason, err.message, err.details) == (
        403, "Forbidden", ('deployments.apps "d" is forbidden: User "bob" cannot get resource '
        '"deployments/scale" in API group "apps" in the namespace "ns"'),
        {"name": "d", "group": "apps", "kind": "deployments"})
    err = forbidden_error(Attributes(User("<a&b>"), "get", is_resource_request=False,
                                     path="/x"), "RBAC: why")
    assert (err.message, err.details) == (
        'forbidden: User "&lt;a&amp;b&gt;" cannot get path "/x": RBAC: why', {})


def test_request_attributes() -> None:
    a = request_attributes(BOB, "GET", "/api/v1/namespaces/ns1", {})
    assert (a.verb, a.resource, a.name, a.namespace) == ("get", "namespaces", "ns1", "ns1")
    a = request_attributes(BOB, "GET", "/api/v1/namespaces/ns/pods",
                           {"watch": "true", "fieldSelector": "metadata.name=p"})
    assert (a.verb, a.name) == ("watch", "p")
    a = request_attributes(BOB, "DELETE", "/apis/apps/v1/namespaces/ns/deployments", {})
    assert (a.verb, a.api_group) == ("deletecollection", "apps")
    a = request_attributes(BOB, "POST", "/healthz", {})
    assert (a.is_resource_request, a.verb, a.path) == (False, "post", "/healthz")


def test_impersonation() -> None:
    root = User("admin", groups=("system:masters", "system:authenticated"))
    authz = RBACAuthorizer(Objects())
    sa = impersonate(authz, root, {"Impersonate-User": "system:serviceaccount:ns:x"}, [])
    assert (sa.name, sa.groups) == ("system:serviceaccount:ns:x", (
        "system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"))
    grouped = impersonate(authz, root, {"Impersonate-User": "u"},
                          [("Impersonate-Group", "g"), ("Impersonate-Extra-Scopes", "s")])
    assert (grouped.groups, grouped.extra) == (("g", "system:authenticated"),
                                               (("scopes", ("s",)),))
    assert impersonate(authz, root, {}, []) is root
    with pytest.raises(errors.StatusError) as info:
        impersonate(authz, BOB, {"Impersonate-User": "root"}, [])
    assert (info.value.code, info.value.message) == (403, (
        'users "root" is forbidden: User "bob" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'))
    with pytest.raises(errors.StatusError) as info:
        impersonate(authz, root, {}, [("Impersonate-Group", "g")])
    assert info.value.code == 400


def test_bootstrap_reconciliation_adds_what_is_missing() -> None:
    policy = bootstrap_policy()
    view = next(r for r in policy["clusterroles"] if r["metadata"]["name"] == "system:node")
    existing: dict[str, Any] = {"metadata": {"name": "system:node", "labels": {"mine": "1"},
                             "annotations": {"rbac.authorization.kubernetes.io/autoupdate":
                                             "true"}},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
                          {"apiGroups": ["x"], "resources": ["y"], "verbs": ["z"]}]}
    assert reconcile_role(existing, view)
    assert existing["metadata"]["labels"] == {
        "mine": "1", "kubernetes.io/bootstrapping": "rbac-defaults"}
    assert existing["rules"][1] == {"apiGroups": ["x"], "resources": ["y"], "verbs": ["z"]}
    assert covers(existing["rules"], view["rules"]) == []
    assert not reconcile_role(existing, view)  # idempotent
    crb = next(b for b in policy["clusterrolebindings"]
               if b["metadata"]["name"] == "system:basic-user")
    mine = {**crb, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                 "name": "me"}]}
    assert reconcile_binding(mine, crb)
    assert len(mine["subjects"]) == 2
    other_ref = {**crb, "roleRef": {**crb["roleRef"], "name": "other"}}
    assert reconcile_binding(other_ref, crb) is None  # recreate


def test_aggregated_rules_in_selector_then_name_order() -> None:
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    agg: dict[str, Any] = {"metadata": {"name": "agg", "labels": {"a": "1"}}, "aggregationRule": {
        "clusterRoleSelectors": [{"matchLabels": {"b": "1"}}, {"matchLabels": {"a": "1"}}]},
        "rules": [{"verbs": ["x"]}]}
    roles: list[dict[str, Any]] = [agg,
             {"metadata": {"name": "z", "labels": {"a": "1"}}, "rules": [pods]},
             {"metadata": {"name": "y", "labels": {"a": "1", "b": "1"}},
              "rules": [{"nonResourceURLs": ["/y"], "verbs": ["get"], "apiGroups": []}]},
             {"metadata": {"name": "w", "labels": {"a": "1"}}, "rules": [pods]}]
    assert aggregated_rules(agg, roles) == [
        {"verbs": ["get"], "nonResourceURLs": ["/y"]}, pods]


class Versioned(Objects):
    """Objects with a generation, as the store's: the authorizer caches per subject."""

    def __init__(self, *objs: dict[str, Any]) -> None:
        super().__init__(*objs)
        self.gen = 0

    def generation(self) -> tuple[int, ...]:
        return (self.gen,)


def test_cached_visits_follow_the_generation() -> None:
    objs = Versioned(READ_PODS)
    authz = RBACAuthorizer(objs)
    assert not authz.allowed(res("list", "pods"))
    objs.objs = (*objs.objs, _binding("b", "ns", "ClusterRole", "read-pods",
                                      {"kind": "User", "name": "bob"}))
    assert not authz.allowed(res("list", "pods"))  # same generation: the cached answer
    objs.gen += 1
    assert authz.allowed(res("list", "pods"))
