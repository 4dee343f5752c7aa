"""The owner-selector index of pykcm.controller.owner_resolver against the plain scan.

``OwnerResolver.selecting`` looks up only the owners whose selector index values meet
the values an object's labels offer; upstream (and ``OwnerResolver.scan``) match every
owner of the namespace. Hypothesis draws labels and metav1 selectors over a small
alphabet (so that matches, overlaps and misses all happen) and checks that both give
the same owners, in the same order."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.cache.frozen_object import FrozenObject
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.controller.owner_resolver import (
    OwnerResolver,
    label_index_values,
    selector_index_values,
)
from pykcm.informers.generic import GenericInformer, GroupVersionResource

KEYS = st.sampled_from(["app", "tier", "env", "pod-template-hash"])
VALUES = st.sampled_from(["a", "b", "c", ""])
LABELS = st.dictionaries(KEYS, VALUES, max_size=4)
EXPR = st.one_of(
    st.fixed_dictionaries({"key": KEYS, "operator": st.sampled_from(["In", "NotIn"]),
                           "values": st.lists(VALUES, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"key": KEYS,
                           "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
    # invalid: an unknown operator, an In without values (the owner matches nothing)
    st.fixed_dictionaries({"key": KEYS, "operator": st.just("Gt"), "values": st.just(["1"])}),
    st.fixed_dictionaries({"key": KEYS, "operator": st.just("In"), "values": st.just([])}),
)
SELECTOR = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"matchLabels": LABELS,
                                        "matchExpressions": st.lists(EXPR, max_size=3)}),
    # expressions only: the index then keys an In by each of its values, or a key
    st.fixed_dictionaries({"matchExpressions": st.lists(EXPR, min_size=1, max_size=2)}),
)


def resolver(owners: list[Any]) -> OwnerResolver:
    inf = SharedIndexInformer(cast(Any, None))
    gi = GenericInformer(GroupVersionResource("apps", "v1", "statefulsets"), inf,
                         GenericLister(inf.get_indexer(), "statefulsets"))
    r = OwnerResolver("StatefulSet", gi)  # before the objects: the index is built as they come
    for o in owners:
        inf.get_indexer().add(o)
    return r


def owner(i: int, selector: Any, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": f"o{i}", "namespace": ns, "uid": f"u{i}"},
            "spec": {"selector": selector}}


def pod(labels: dict[str, str], ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": ns, "labels": labels}}


@settings(max_examples=400, deadline=None)
@given(LABELS, SELECTOR)
@example({"app": "a"}, {"matchExpressions": [{"key": "app", "operator": "In",
                                              "values": ["b", "a"]}]})
@example({"app": "a"}, {"matchExpressions": [{"key": "app", "operator": "Exists"}]})
@example({"app": "a"}, {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})
def test_a_matching_selector_meets_one_of_the_labels_index_values(
        labels: dict[str, str], selector: Any) -> None:
    try:
        sel = selector_from_label_selector(selector)
    except SelectorParseError:
        return
    values = set(selector_index_values("ns", sel))
    offered = set(label_index_values("ns", labels))
    if sel.empty or sel.is_nothing:
        assert not values
    elif sel.matches(labels):
        assert values & offered


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(SELECTOR, st.sampled_from(["ns", "other"])), max_size=8),
       st.lists(LABELS, min_size=1, max_size=6), st.booleans())
def test_selecting_finds_what_the_scan_finds(owners: list[tuple[Any, str]],
                                             pods: list[dict[str, str]],
                                             compact: bool) -> None:
    objs: list[Any] = [owner(i, sel, ns) for i, (sel, ns) in enumerate(owners)]
    if compact:
        objs = [FrozenObject.from_dict(o) for o in objs]
    r = resolver(objs)
    for labels in pods:
        p: Any = pod(labels)
        if compact:
            p = FrozenObject.from_dict(p)
        want = r.scan("ns", labels) if labels else []
        assert [id(o) for o in r.selecting(p)] == [id(o) for o in want]


def test_owners_changed_after_the_start_are_found_under_their_new_selector() -> None:
    a = owner(1, {"matchLabels": {"app": "a"}})
    r = resolver([a])
    assert r.selecting(pod({"app": "a"})) == [a]
    b = owner(1, {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]})
    r._indexer.update(b)
    assert r.selecting(pod({"app": "a"})) == []
    assert r.selecting(pod({"app": "z"})) == [b]  # only NotIn: under the namespace
    r._indexer.delete(b)
    assert r.selecting(pod({"app": "z"})) == []


def test_two_matching_owners_come_in_the_scan_order() -> None:
    owners = [owner(i, {"matchLabels": {"app": "a"}} if i % 2 else
                    {"matchExpressions": [{"key": "app", "operator": "Exists"}]})
              for i in range(6)]
    r = resolver(owners)
    got = r.selecting(pod({"app": "a"}))
    assert len(got) == 6
    assert [id(o) for o in got] == [id(o) for o in r.scan("ns", {"app": "a"})]


def test_a_resolver_built_after_the_start_scans() -> None:
    inf = SharedIndexInformer(cast(Any, None))
    gi = GenericInformer(GroupVersionResource("apps", "v1", "statefulsets"), inf,
                         GenericLister(inf.get_indexer(), "statefulsets"))
    a = owner(1, {"matchLabels": {"app": "a"}})
    inf.get_indexer().add(a)
    inf._started = True  # what run() sets: indexers are refused from then on
    r = OwnerResolver("StatefulSet", gi)
    assert r._index is None
    assert r.selecting(pod({"app": "a"})) == [a]
