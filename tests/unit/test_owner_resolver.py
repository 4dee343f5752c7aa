"""pykcm.controller.owner_resolver: routing an owned object's events to its controller."""

from __future__ import annotations

from typing import Any, cast

from pykcm.api.accessors import meta_of, spec_of, status_of
from pykcm.cache.keys import DeletedFinalStateUnknown, deleted_object
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.controller.owner_resolver import OwnerResolver, controller_ref_changed
from pykcm.informers.generic import GenericInformer, GroupVersionResource


def owners(*objs: dict[str, Any]) -> OwnerResolver:
    inf = SharedIndexInformer(cast(Any, None))
    for o in objs:
        inf.get_indexer().add(o)
    gi = GenericInformer(GroupVersionResource("apps", "v1", "statefulsets"), inf,
                         GenericLister(inf.get_indexer(), "statefulsets"))
    return OwnerResolver("StatefulSet", gi)


def owner(name: str, selector: Any, uid: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"},
            "spec": {"selector": selector}}


def pod(labels: dict[str, str] | None = None, ref: dict[str, Any] | None = None,
        rv: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "resourceVersion": rv}
    if labels is not None:
        meta["labels"] = labels
    if ref is not None:
        meta["ownerReferences"] = [{"controller": True, **ref}]
    return {"metadata": meta}


WEB = owner("web", {"matchLabels": {"app": "web"}})
ALL = owner("all", {})  # an empty selector selects nothing
BAD = owner("bad", {"matchExpressions": [{"key": "app", "operator": "Nope"}]})
REF = {"kind": "StatefulSet", "name": "web", "uid": "uid-web"}


def test_resolve_needs_our_kind_and_the_cached_uid() -> None:
    r = owners(WEB)
    assert r.resolve("ns", REF) is WEB
    assert r.resolve("ns", {**REF, "uid": "older"}) is None  # same name, another object
    assert r.resolve("ns", {**REF, "kind": "ReplicaSet"}) is None
    assert r.resolve("other", REF) is None
    assert r.owner_of(pod(ref=REF)) is WEB and r.owner_of(pod()) is None


def test_selecting_skips_empty_and_invalid_selectors() -> None:
    r = owners(WEB, ALL, BAD)
    assert r.selecting(pod({"app": "web"})) == [WEB]
    assert r.selecting(pod({"app": "db"})) == [] and r.selecting(pod()) == []


def test_updated_routes_to_former_current_or_candidate_owners() -> None:
    other = owner("other", {"matchLabels": {"app": "web"}})
    r = owners(WEB, other)
    other_ref = {"kind": "StatefulSet", "name": "other", "uid": "uid-other"}
    moved = r.updated(pod({"app": "web"}, other_ref), pod({"app": "web"}, REF, "2"))
    assert (moved.previous, moved.current, moved.candidates) == (other, WEB, [])
    released = r.updated(pod({"app": "web"}, REF), pod({"app": "web"}, rv="2"))
    assert released.previous is WEB and released.current is None
    assert released.candidates == [WEB, other] or released.candidates == [other, WEB]
    relabelled = r.updated(pod({"app": "x"}), pod({"app": "web"}, rv="2"))
    assert relabelled.previous is None and len(relabelled.candidates) == 2
    unchanged = r.updated(pod({"app": "web"}), pod({"app": "web"}, rv="2"))
    assert unchanged == (None, None, [])
    assert controller_ref_changed(pod(ref=REF), pod()) and not controller_ref_changed(
        pod(ref=REF), pod(ref=dict(REF)))


def test_controller_ref_changed_compares_dicts_and_other_mappings_alike() -> None:
    """The dict fast path and the Mapping path (a compact cache's read-only references)
    answer the same."""
    from types import MappingProxyType

    frozen = MappingProxyType(dict(REF))
    assert not controller_ref_changed(pod(ref=REF), pod(ref=cast(Any, frozen)))
    assert not controller_ref_changed(pod(ref=cast(Any, frozen)), pod(ref=REF))
    moved = dict(REF, uid="uid-other")
    assert controller_ref_changed(pod(ref=cast(Any, frozen)), pod(ref=moved))
    assert controller_ref_changed(pod(ref=REF), pod(ref=moved))
    assert not controller_ref_changed(pod(), pod())


def test_accessors_answer_empty_for_missing_parts() -> None:
    obj = {"metadata": {"name": "a"}, "spec": None, "status": "garbage"}
    assert meta_of(obj) == {"name": "a"} and spec_of(obj) == {} and status_of(obj) == {}
    assert meta_of({}) == {}
    # a dict is handed out as is (the fast path), another Mapping too
    from types import MappingProxyType

    meta = {"name": "b"}
    assert meta_of({"metadata": meta}) is meta
    proxy = MappingProxyType(meta)
    assert meta_of({"metadata": proxy}) is proxy and spec_of({"spec": proxy}) is proxy


def test_deleted_object_unwraps_tombstones() -> None:
    p = pod()
    assert deleted_object(p) is p
    assert deleted_object(DeletedFinalStateUnknown("ns/p", p)) is p
    assert deleted_object(DeletedFinalStateUnknown("ns/p", None)) is None
    assert deleted_object("ns/p") is None
