"""DaemonSet placement and update helpers (pure logic): which nodes run a daemon pod,
the tolerations and node affinity its pods get, surge/unavailable counts, the backoff."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.scheduling import (
    add_or_update_toleration,
    find_matching_untolerated_taint,
    match_node_selector_terms,
    required_node_affinity_matches,
    toleration_tolerates_taint,
)
from pykcm.controllers.daemon.update import find_updated_pods_on_node
from pykcm.controllers.daemon.util import (
    Backoff,
    add_or_update_daemon_pod_tolerations,
    allows_surge,
    create_pod_template,
    get_target_node_name,
    is_pod_updated,
    node_should_run_daemon_pod,
    pod_by_creation_timestamp_and_phase_key,
    replace_daemon_set_pod_node_name_node_affinity,
    surge_count,
    unavailable_count,
)


def node(name: str, labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []}}


def ds(spec: dict[str, Any] | None = None, strategy: dict[str, Any] | None = None,
       annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "d", "namespace": "ns", "uid": "u",
                         "annotations": annotations or {}},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c"}], **(spec or {})}},
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1}}}}


@pytest.mark.parametrize(("spec", "n", "want"), [
    ({}, node("n"), (True, True)),
    ({"nodeSelector": {"disk": "ssd"}}, node("n"), (False, False)),
    ({"nodeSelector": {"disk": "ssd"}}, node("n", {"disk": "ssd"}), (True, True)),
    ({"nodeName": "other"}, node("n"), (False, False)),
    ({"nodeName": "n"}, node("n"), (True, True)),
    # untolerated NoSchedule: no new pod, an existing one may stay
    ({}, node("n", taints=[{"key": "k", "effect": "NoSchedule"}]), (False, True)),
    # untolerated NoExecute: the pod must go too
    ({}, node("n", taints=[{"key": "k", "effect": "NoExecute"}]), (False, False)),
    ({"tolerations": [{"key": "k", "operator": "Exists"}]},
     node("n", taints=[{"key": "k", "effect": "NoExecute"}]), (True, True)),
    # PreferNoSchedule does not matter
    ({}, node("n", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), (True, True)),
    # the daemon tolerations: node problems and cordoned nodes
    ({}, node("n", taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                           {"key": "node.kubernetes.io/unschedulable",
                            "effect": "NoSchedule"}]), (True, True)),
    ({}, node("n", taints=[{"key": "node.kubernetes.io/network-unavailable",
                            "effect": "NoSchedule"}]), (False, True)),
    ({"hostNetwork": True}, node("n", taints=[{"key": "node.kubernetes.io/network-unavailable",
                                               "effect": "NoSchedule"}]), (True, True)),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}},
     node("n", {"zone": "c"}), (False, False)),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "NotIn", "values": ["n"]}]}]}}}},
     node("n"), (False, False)),
])
def test_node_should_run_daemon_pod(spec: dict[str, Any], n: dict[str, Any],
                                    want: tuple[bool, bool]) -> None:
    assert node_should_run_daemon_pod(n, ds(spec)) == want


def test_node_selector_terms_rules() -> None:
    n = node("n", {"cpus": "8", "zone": "a"})

    def terms(*ts: dict[str, Any]) -> dict[str, Any]:
        return {"nodeSelectorTerms": list(ts)}

    assert match_node_selector_terms(n, terms({"matchExpressions": [
        {"key": "cpus", "operator": "Gt", "values": ["4"]}]}))
    assert not match_node_selector_terms(n, terms({"matchExpressions": [
        {"key": "cpus", "operator": "Lt", "values": ["4"]}]}))
    # an invalid term matches nothing, the other one may
    assert match_node_selector_terms(n, terms(
        {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["x"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}))
    assert not match_node_selector_terms(n, terms({}))  # empty terms match nothing
    assert not match_node_selector_terms(n, terms())
    assert not match_node_selector_terms(n, terms({"matchExpressions": [
        {"key": "zone", "operator": "Bogus", "values": ["a"]}]}))
    assert not match_node_selector_terms(n, terms({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n", "m"]}]}))
    assert match_node_selector_terms(n, terms({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n"]}], "matchExpressions": [
        {"key": "zone", "operator": "NotIn", "values": ["b"]}]}))
    assert required_node_affinity_matches({"spec": {}}, n)


def test_toleration_matching() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert toleration_tolerates_taint({"key": "k", "value": "v"}, taint)
    assert toleration_tolerates_taint({"key": "k", "operator": "Equal", "value": "v",
                                       "effect": "NoSchedule"}, taint)
    assert not toleration_tolerates_taint({"key": "k", "value": "w"}, taint)
    assert not toleration_tolerates_taint({"key": "k", "operator": "Exists",
                                           "effect": "NoExecute"}, taint)
    assert toleration_tolerates_taint({"operator": "Exists"}, taint)
    # comparison operators are behind a feature gate that is off in v1.36
    assert not toleration_tolerates_taint({"key": "k", "operator": "Gt", "value": "1"},
                                          {"key": "k", "value": "2", "effect": "NoSchedule"})
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]
    assert find_matching_untolerated_taint(taints, [{"key": "a", "operator": "Exists"}]) == \
        taints[1]
    assert find_matching_untolerated_taint(
        taints, [], lambda t: t["effect"] == "NoExecute") == taints[1]


def test_daemon_tolerations_replace_a_matching_user_toleration() -> None:
    spec: dict[str, Any] = {"tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": "mine", "operator": "Exists"}]}
    add_or_update_daemon_pod_tolerations(spec)
    assert spec["tolerations"][0] == {"key": "node.kubernetes.io/not-ready",
                                      "operator": "Exists", "effect": "NoExecute"}
    assert spec["tolerations"][1] == {"key": "mine", "operator": "Exists"}
    assert len(spec["tolerations"]) == 7
    assert not add_or_update_toleration(spec, dict(spec["tolerations"][0]))


def test_create_pod_template_labels_and_copies() -> None:
    d = ds(annotations={"deprecated.daemonset.template.generation": "3"})
    t = create_pod_template(d["spec"]["template"], 3, "abc")
    assert t["metadata"]["labels"] == {"a": "b", "controller-revision-hash": "abc",
                                       "pod-template-generation": "3"}
    assert "tolerations" not in d["spec"]["template"]["spec"]  # the cached one untouched


def test_node_affinity_replacement_keeps_the_rest() -> None:
    affinity = {"podAntiAffinity": {"x": 1}, "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}],
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}
    got = replace_daemon_set_pod_node_name_node_affinity(affinity, "n1")
    assert got["podAntiAffinity"] == {"x": 1}
    assert got["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == \
        [{"weight": 1}]
    assert got["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    assert affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0] == {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"affinity": got}}
    assert get_target_node_name(pod) == "n1"
    assert get_target_node_name({"spec": {"nodeName": "n2", "affinity": got}}) == "n2"
    with pytest.raises(ValueError, match="no spec.affinity"):
        get_target_node_name({"metadata": {"name": "p", "namespace": "ns"}, "spec": {}})


def test_surge_and_unavailable_counts() -> None:
    d = ds(strategy={"type": "RollingUpdate",
                     "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": "25%"}})
    assert unavailable_count(d, 15) == 2  # rounded up
    assert surge_count(d, 15) == 4
    assert allows_surge(d)
    assert surge_count(ds(strategy={"type": "OnDelete"}), 10) == 0
    assert not allows_surge(ds())
    with pytest.raises(ValueError):
        unavailable_count(ds(strategy={"type": "RollingUpdate",
                                       "rollingUpdate": {"maxUnavailable": "x"}}), 3)


def _pod(name: str, hash_: str, *, node_name: str = "", ts: str = "2024-01-01T00:00:00Z",
         deleting: bool = False, gen: str | None = None) -> dict[str, Any]:
    labels = {"controller-revision-hash": hash_}
    if gen is not None:
        labels["pod-template-generation"] = gen
    meta: dict[str, Any] = {"name": name, "labels": labels, "creationTimestamp": ts}
    if deleting:
        meta["deletionTimestamp"] = ts
    return {"metadata": meta, "spec": {"nodeName": node_name}}


def test_updated_pods_and_ordering() -> None:
    d = ds(annotations={"deprecated.daemonset.template.generation": "2"})
    assert is_pod_updated(_pod("a", "new"), "new", None)
    assert is_pod_updated(_pod("a", "old", gen="2"), "new", 2)
    assert not is_pod_updated(_pod("a", "old", gen="1"), "new", 2)
    new, old, ok = find_updated_pods_on_node(d, [_pod("a", "new"), _pod("b", "old"),
                                                 _pod("c", "old", deleting=True)], "new")
    assert ok and new is not None and old is not None
    assert (new["metadata"]["name"], old["metadata"]["name"]) == ("a", "b")
    assert find_updated_pods_on_node(d, [_pod("a", "old"), _pod("b", "old")], "new")[2] is False
    pods = [_pod("c", "h", ts="2024-01-01T00:00:01Z"), _pod("b", "h", node_name="n",
                                                             ts="2024-01-01T00:00:05Z"),
            _pod("a", "h", ts="2024-01-01T00:00:01Z")]
    assert [p["metadata"]["name"] for p in sorted(pods, key=pod_by_creation_timestamp_and_phase_key)
            ] == ["b", "a", "c"]


def test_backoff_doubles_up_to_the_maximum_and_expires() -> None:
    now = [100.0]
    b = Backoff(1.0, 8.0, clock=lambda: now[0])
    assert not b.is_in_back_off_since_update("k", now[0])
    b.next("k", now[0])
    assert b.get("k") == 1.0 and b.is_in_back_off_since_update("k", now[0] + 0.5)
    assert not b.is_in_back_off_since_update("k", now[0] + 1.0)
    for want in (2.0, 4.0, 8.0, 8.0):
        b.next("k", now[0])
        assert b.get("k") == want
    now[0] += 17.0  # quiet for more than twice the maximum: starts again
    b.next("k", now[0])
    assert b.get("k") == 1.0
    now[0] += 17.0
    b.gc()
    assert b.get("k") == 0.0
