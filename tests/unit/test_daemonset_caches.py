"""The DaemonSet controller's memos give the answers a fresh computation gives.

- PlacementCache (placement_cache.py): node_should_run_daemon_pod per template
  fingerprint and node resourceVersion, over sequences of template and node
  changes in which, as in an informer's cache, a node's resourceVersion names
  one content;
- get_nodes_to_daemon_pods' memo (the same pod objects as the last call, no
  claim write): equal to claiming and grouping afresh, while pods are added,
  replaced by new versions, deleted, orphaned or taken by another owner.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.controller.pod_control import FakePodControl
from pykcm.controllers.daemon import DaemonSetsController
from pykcm.controllers.daemon.placement_cache import PlacementCache, placement_fingerprint
from pykcm.controllers.daemon.util import node_should_run_daemon_pod
from tests.unit.fake_informer import FakeInformer

# -- placement -------------------------------------------------------------------------------

_KEYS = ("zone", "disk", "node.kubernetes.io/unreachable", "node.kubernetes.io/network-unavailable",
         "dedicated")
_VALUES = ("a", "b", "")
_EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")

labels_st = st.dictionaries(st.sampled_from(_KEYS[:2]), st.sampled_from(_VALUES[:2]),
                            max_size=2)
taint_st = st.fixed_dictionaries({"key": st.sampled_from(_KEYS),
                                  "effect": st.sampled_from(_EFFECTS)},
                                 optional={"value": st.sampled_from(_VALUES)})
toleration_st = st.fixed_dictionaries(
    {}, optional={"key": st.sampled_from(_KEYS), "effect": st.sampled_from(_EFFECTS + ("",)),
                  "operator": st.sampled_from(("Exists", "Equal")),
                  "value": st.sampled_from(_VALUES)})
expression_st = st.fixed_dictionaries({
    "key": st.sampled_from(_KEYS[:2]), "operator": st.sampled_from(("In", "NotIn", "Exists")),
    "values": st.lists(st.sampled_from(_VALUES[:2]), max_size=2)})
field_st = st.fixed_dictionaries({"key": st.just("metadata.name"),
                                  "operator": st.sampled_from(("In", "NotIn")),
                                  "values": st.lists(st.sampled_from(("n0", "n1", "n2")),
                                                     min_size=1, max_size=1)})
affinity_st = st.none() | st.builds(
    lambda terms: {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}},
    st.lists(st.fixed_dictionaries({}, optional={
        "matchExpressions": st.lists(expression_st, max_size=2),
        "matchFields": st.lists(field_st, max_size=1)}), min_size=1, max_size=2))
template_st = st.fixed_dictionaries({}, optional={
    "nodeName": st.sampled_from(("n0", "n1", "n2")),
    "nodeSelector": labels_st,
    "affinity": affinity_st,
    "tolerations": st.lists(toleration_st, max_size=3),
    "hostNetwork": st.booleans(),
})
node_content_st = st.tuples(st.sampled_from(("n0", "n1", "n2")), labels_st,
                            st.lists(taint_st, max_size=3))


def ds_of(template_spec: dict[str, Any], uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": "d", "namespace": "ns", "uid": uid, "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}],
                                           **template_spec}}}}


class NodeVersions:
    """Nodes as an informer hands them out: a new resourceVersion for every new content."""

    def __init__(self) -> None:
        self.rv = 0
        self.current: dict[str, tuple[Any, dict[str, Any]]] = {}

    def node(self, name: str, labels: dict[str, str], taints: list[dict[str, str]]
             ) -> dict[str, Any]:
        content = (sorted(labels.items()), taints)
        cur = self.current.get(name)
        if cur is not None and cur[0] == content:
            return cur[1]
        self.rv += 1
        obj = {"metadata": {"name": name, "resourceVersion": str(self.rv),
                            "labels": dict(labels)},
               "spec": {"taints": copy.deepcopy(taints)}}
        self.current[name] = (content, obj)
        return obj


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from((0, 1, 2)), node_content_st), min_size=1,
                max_size=30),
       st.lists(template_st, min_size=1, max_size=3),
       st.integers(min_value=1, max_value=3))
def test_placement_cache_answers_as_a_fresh_computation(
        steps: list[tuple[int, tuple[str, dict[str, str], list[dict[str, str]]]]],
        templates: list[dict[str, Any]], max_templates: int) -> None:
    cache = PlacementCache(max_templates=max_templates)
    nodes = NodeVersions()
    for which, (name, labels, taints) in steps:
        ds = ds_of(templates[which % len(templates)])
        n = nodes.node(name, labels, taints)
        assert cache.should_run(n, ds) == node_should_run_daemon_pod(n, ds)
        # asked again (the status after manage): the memo, the same answer
        assert cache.for_daemon_set(ds).should_run(n, ds) == node_should_run_daemon_pod(n, ds)
    assert len(cache) <= max_templates


def test_placement_memo_keys_on_the_node_version_and_the_template() -> None:
    cache = PlacementCache()
    ds = ds_of({"nodeSelector": {"zone": "a"}})
    plain = {"metadata": {"name": "n0", "resourceVersion": "1", "labels": {"zone": "a"}}}
    relabelled = {"metadata": {"name": "n0", "resourceVersion": "2", "labels": {"zone": "b"}}}
    assert cache.should_run(plain, ds) == (True, True)
    assert cache.should_run(relabelled, ds) == (False, False)
    # a template that selects another zone: its own answers
    assert cache.should_run(relabelled, ds_of({"nodeSelector": {"zone": "b"}})) == (True, True)
    assert len(cache) == 2
    # a node without a resourceVersion (made by hand) is never memoised
    placement = cache.for_daemon_set(ds)
    placement.retain(set())
    assert len(placement) == 0
    assert placement.should_run({"metadata": {"name": "x", "labels": {"zone": "a"}}}, ds) \
        == (True, True)
    assert len(placement) == 0


def test_placement_fingerprint_reads_only_the_placement_fields_and_ignores_key_order() -> None:
    a = ds_of({"nodeSelector": {"zone": "a", "disk": "b"}})
    b = ds_of({"nodeSelector": {"disk": "b", "zone": "a"}})
    b["spec"]["template"]["spec"]["containers"][0]["image"] = "other"  # not placement
    assert placement_fingerprint(a) == placement_fingerprint(b)
    c = ds_of({"nodeSelector": {"zone": "a", "disk": "b"}, "hostNetwork": True})
    assert placement_fingerprint(a) != placement_fingerprint(c)


def test_placement_retain_forgets_deleted_nodes() -> None:
    cache = PlacementCache()
    ds = ds_of({})
    placement = cache.for_daemon_set(ds)
    for i in range(3):
        placement.should_run({"metadata": {"name": f"n{i}", "resourceVersion": "1"}}, ds)
    assert len(placement) == 3
    placement.retain({"n0", "n2"})
    assert len(placement) == 2


# -- the pods by node --------------------------------------------------------------------------

class IndexedInformer(FakeInformer):
    """FakeInformer with the indexer calls the DaemonSet controller makes at build time."""

    def get_indexer(self) -> Any:
        return self.indexer

    def get_indexers(self) -> Any:
        return self.indexer.get_indexers()

    def add_indexers(self, indexers: Any) -> None:
        self.indexer.add_indexers(indexers)


DS_UID = "ds-uid"
OWNER_REF = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": DS_UID,
             "controller": True, "blockOwnerDeletion": True}
OTHER_REF = {**OWNER_REF, "name": "e", "uid": "other-uid"}


def pod(i: int, version: int, owner: str, labels_match: bool, node: str, done: bool
        ) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p{i}", "namespace": "ns",
                            "resourceVersion": str(version),
                            "labels": {"app": "d" if labels_match else "x"}}
    if owner == "ours":
        meta["ownerReferences"] = [OWNER_REF]
    elif owner == "other":
        meta["ownerReferences"] = [OTHER_REF]
    if done:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta,
            "spec": {"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In",
                                      "values": [node]}]}]}}}},
            "status": {"phase": "Succeeded" if done else "Running"}}


# An orphan whose labels match would be adopted (a write, and a live GET of the
# DaemonSet first): the steps keep orphans unselected, ours and others' either way.
pod_step_st = st.tuples(
    st.sampled_from(("put", "delete", "ask")), st.integers(0, 5),
    st.sampled_from(("ours", "ours", "ours", "other", "orphan")), st.booleans(),
    st.sampled_from(("n0", "n1", "n2")), st.booleans(), st.booleans())


@settings(max_examples=60, deadline=None)
@given(st.lists(pod_step_st, min_size=1, max_size=25))
def test_nodes_to_daemon_pods_memo_answers_as_a_fresh_claim(
        steps: list[tuple[str, int, str, bool, str, bool, bool]]) -> None:
    async def run() -> None:
        informers = {r: IndexedInformer(r) for r in
                     ("daemonsets", "controllerrevisions", "pods", "nodes")}
        dsc = DaemonSetsController(
            ds_informer=cast(Any, informers["daemonsets"]),
            history_informer=cast(Any, informers["controllerrevisions"]),
            pod_informer=cast(Any, informers["pods"]),
            node_informer=cast(Any, informers["nodes"]),
            client=cast(Any, None), recorder=cast(Any, None), pod_control=FakePodControl(),
            stale_controller_consistency=False)
        ds = ds_of({}, uid=DS_UID)
        pods = informers["pods"].indexer
        version = 0
        for action, i, owner, match, node, done, include in steps:
            if action == "put":
                version += 1
                p = pod(i, version, owner, match and owner != "orphan", node, done)
                pods.update(p)
            elif action == "delete":
                old = pods.get_by_key(f"ns/p{i}")
                if old is not None:
                    pods.delete(old)
            got = await dsc.get_nodes_to_daemon_pods(ds, include)
            fresh = dsc._group_by_node(ds, await dsc.get_daemon_pods(ds), include)
            assert got == fresh
            # what a caller does to the answer does not reach the memo
            got.setdefault("new-node", []).append({})
            assert await dsc.get_nodes_to_daemon_pods(ds, include) == fresh

    asyncio.run(run())
