"""Matching a namespace's orphan pods against an owner's selector, the cheap way, with
the plain way's answer: ``labels_of`` (the compact objects' shared labels),
``filter_pods_by_owner_and_selector`` (a sync's candidates) and the claim that skips
the orphans it does not match without a coroutine."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.api.accessors import labels_of
from pykcm.api.labels import selector_from_label_selector
from pykcm.cache.frozen_object import CompactDecoder, FrozenObject
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.store import new_indexer
from pykcm.controller.active_pods import (
    POD_ORPHAN_LABELS_INDEX,
    add_pod_controller_indexer,
    add_pod_orphan_labels_indexer,
    filter_pods_by_owner,
    filter_pods_by_owner_and_selector,
)
from pykcm.controller.controller_ref_manager import PodControllerRefManager

LABELS = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"]),
                         max_size=2)
RS = {"metadata": {"name": "rs", "namespace": "ns", "uid": "u1"}}
MINE = {"kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}
THEIRS = {"kind": "ReplicaSet", "name": "rs2", "uid": "u2", "controller": True}


def pod(i: int, labels: dict[str, str] | None, ref: dict[str, Any] | None = None,
        ns: str = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p{i}", "namespace": ns, "uid": f"p{i}"}
    if labels is not None:
        meta["labels"] = labels
    if ref is not None:
        meta["ownerReferences"] = [ref]
    return {"metadata": meta, "spec": {}}


def test_labels_of_reads_dicts_and_compact_objects_alike() -> None:
    a = {"metadata": {"labels": {"app": "a"}}}
    assert labels_of(a) is a["metadata"]["labels"]
    assert labels_of({"metadata": {"name": "x"}}) is None
    assert labels_of({}) is None and labels_of({"metadata": "junk"}) is None
    decoder = CompactDecoder()  # an informer's: one per ListWatch
    f1: Any = decoder.object(orjson.dumps(pod(1, {"app": "a"})))
    f2: Any = decoder.object(orjson.dumps(pod(2, {"app": "a"})))
    assert labels_of(f1) == {"app": "a"}
    assert labels_of(f1) is labels_of(f2)  # decoded once, shared
    f3: Any = FrozenObject.from_dict(pod(3, None))
    f4: Any = FrozenObject.from_dict(pod(4, {}))
    assert labels_of(f3) is None
    assert labels_of(f4) == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), LABELS),
                          st.sampled_from([None, MINE, THEIRS]),
                          st.sampled_from(["ns", "other"])), max_size=12),
       st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"])),
       st.booleans(), st.booleans(), st.integers(0, 11))
def test_owner_and_selector_filter_keeps_what_a_claim_can_keep(
        pods: list[tuple[dict[str, str] | None, dict[str, Any] | None, str]],
        match_labels: dict[str, str], compact: bool, grouped: bool, changed: int) -> None:
    indexer = new_indexer(meta_namespace_key)
    add_pod_controller_indexer(indexer)
    if grouped:
        add_pod_orphan_labels_indexer(indexer)
    for i, (labels, ref, ns) in enumerate(pods):
        p: Any = pod(i, labels, ref, ns)
        indexer.add(FrozenObject.from_dict(p) if compact else p)
    if changed < len(pods):
        # one pod changes owner and labels after it was indexed
        labels, ref, ns = pods[changed]
        p = pod(changed, {"app": "a"} if labels is None else None,
                MINE if ref is None else None, ns)
        indexer.update(FrozenObject.from_dict(p) if compact else p)
    sel = selector_from_label_selector({"matchLabels": match_labels})
    plain = [p for p in filter_pods_by_owner(indexer, RS, "ReplicaSet", True)
             if (p["metadata"].get("ownerReferences") or sel.matches(labels_of(p)))]
    got = filter_pods_by_owner_and_selector(indexer, RS, "ReplicaSet", sel)
    # the owner's pods first, in the index's order; then the orphans it selects (the
    # namespace's orphans have no order: with the label-set index, group by group)
    owned = len(filter_pods_by_owner(indexer, RS, "ReplicaSet", False))
    assert [id(p) for p in got[:owned]] == [id(p) for p in plain[:owned]]
    assert sorted(id(p) for p in got[owned:]) == sorted(id(p) for p in plain[owned:])
    assert len(got) == len(plain)


def test_the_label_set_index_holds_each_orphan_once_under_its_namespace_and_labels() -> None:
    indexer = new_indexer(meta_namespace_key)
    add_pod_orphan_labels_indexer(indexer)
    add_pod_orphan_labels_indexer(indexer)  # idempotent
    a, b, c = pod(1, {"tier": "x", "app": "a"}), pod(2, {"app": "a", "tier": "x"}), pod(3, None)
    for p in (a, b, c, pod(4, {"app": "a"}, MINE)):
        indexer.add(p)
    values = indexer.list_index_func_values(POD_ORPHAN_LABELS_INDEX)
    assert sorted(values) == ['ns\x00[["app","a"],["tier","x"]]', "ns\x00[]"]
    assert {id(p) for p in indexer.by_index(POD_ORPHAN_LABELS_INDEX, values[0])} == {
        id(a), id(b)}
    indexer.update(pod(1, {"app": "a", "tier": "x"}, MINE))  # adopted: out of the index
    assert len(indexer.by_index(POD_ORPHAN_LABELS_INDEX, values[0])) == 1


class _Control:
    def __init__(self) -> None:
        self.patched: list[str] = []

    async def patch_pod(self, namespace: str, name: str, patch: Any) -> Any:
        self.patched.append(name)
        return {}


def test_a_claim_adopts_the_orphans_it_matches_and_ignores_the_rest() -> None:
    control = _Control()
    checked: list[str] = []

    async def can_adopt() -> None:
        checked.append("x")

    sel = selector_from_label_selector({"matchLabels": {"app": "a"}})
    m = PodControllerRefManager(control, RS, sel, "apps/v1", "ReplicaSet",  # type: ignore[arg-type]
                                can_adopt)
    pods = [pod(1, {"app": "a"}), pod(2, {"app": "b"}), pod(3, None), pod(4, {"app": "a"}, MINE),
            pod(5, {"app": "b"}, MINE), pod(6, {"app": "a"}, THEIRS)]
    claimed = asyncio.run(m.claim_pods(pods))
    assert [p["metadata"]["name"] for p in claimed] == ["p1", "p4"]
    assert control.patched == ["p1", "p5"]  # adopted p1, released p5
    assert checked == ["x"]
