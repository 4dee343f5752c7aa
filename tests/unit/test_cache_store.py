"""pykcm.cache keys, ThreadSafeStore, Store and Indexer (client-go tools/cache).

Index maintenance first (update and delete must remove old values and never
leave empty value sets), then add_indexers, lookups, keys, and a stateful
Hypothesis model of the Indexer.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pykcm.cache import (
    NAMESPACE_INDEX,
    Cache,
    CacheError,
    DeletedFinalStateUnknown,
    ExplicitKey,
    Indexer,
    IndexerConflictError,
    IndexNotFoundError,
    InvalidKeyError,
    KeyFuncError,
    NoMetaError,
    Store,
    ThreadSafeStore,
    deletion_handling_meta_namespace_key,
    meta_namespace_index_func,
    meta_namespace_key,
    new_indexer,
    new_store,
    split_meta_namespace_key,
)
from pykcm.cache.frozen_object import FrozenObject


def obj(name: str, ns: str | None = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    return {"metadata": meta}


def label_pairs(o: Any) -> list[str]:
    """A multi-value index function: one value per label."""
    return [f"{k}={v}" for k, v in sorted(o["metadata"].get("labels", {}).items())]


def app_index(o: Any) -> list[str]:
    app = o["metadata"].get("labels", {}).get("app")
    return [app] if app is not None else []


def make_indexer() -> Indexer:
    return new_indexer(
        meta_namespace_key,
        {NAMESPACE_INDEX: meta_namespace_index_func, "labels": label_pairs},
    )


# --- index maintenance ------------------------------------------------------


def test_update_moves_key_between_index_values_and_drops_empty_sets() -> None:
    idx = make_indexer()
    a = obj("a", "ns1", app="web")
    idx.add(a)
    assert idx.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    assert idx.list_index_func_values("labels") == ["app=web"]

    a2 = obj("a", "ns1", app="db")
    idx.update(a2)
    assert idx.by_index("labels", "app=db") == [a2]
    assert idx.by_index("labels", "app=web") == []
    # The emptied value set is gone, not left behind (client-go #84959).
    assert idx.list_index_func_values("labels") == ["app=db"]
    assert idx.by_index(NAMESPACE_INDEX, "ns1")[0] is a2


def test_update_with_multi_value_index_keeps_shared_values() -> None:
    idx = make_indexer()
    idx.add(obj("a", app="web", tier="front"))
    idx.add(obj("b", app="web"))
    idx.update(obj("a", app="web", tier="back"))
    assert idx.index_keys("labels", "app=web") == ["default/a", "default/b"]
    assert idx.index_keys("labels", "tier=back") == ["default/a"]
    assert sorted(idx.list_index_func_values("labels")) == ["app=web", "tier=back"]
    idx.update(obj("a"))  # no labels at all: no values
    assert idx.index_keys("labels", "app=web") == ["default/b"]
    assert idx.list_index_func_values("labels") == ["app=web"]


def test_delete_removes_index_entries_and_empty_values() -> None:
    idx = make_indexer()
    idx.add(obj("a", "ns1", app="web"))
    idx.add(obj("b", "ns1", app="web"))
    idx.add(obj("c", "ns2", app="db"))
    idx.delete(obj("c", "ns2"))  # delete needs only the key
    assert sorted(idx.list_index_func_values(NAMESPACE_INDEX)) == ["ns1"]
    assert idx.list_index_func_values("labels") == ["app=web"]
    idx.delete(obj("a", "ns1"))
    assert idx.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/b"]
    idx.delete(obj("b", "ns1"))
    assert idx.list_index_func_values(NAMESPACE_INDEX) == []
    assert idx.list_index_func_values("labels") == []
    assert idx.list() == []


def test_delete_of_absent_key_is_a_no_op() -> None:
    idx = make_indexer()
    idx.add(obj("a"))
    idx.delete(obj("zzz"))
    assert idx.list_keys() == ["default/a"]


def test_duplicate_values_from_an_index_func_are_one_entry() -> None:
    store = ThreadSafeStore({"dup": lambda o: ["x", "x"]})
    store.add("k", {"metadata": {}})
    assert store.index_keys("dup", "x") == ["k"]
    store.delete("k")
    assert store.list_index_func_values("dup") == []


def test_index_func_error_leaves_store_unchanged() -> None:
    def picky(o: Any) -> list[str]:
        if o["metadata"].get("bad"):
            raise RuntimeError("boom")
        return [o["metadata"]["name"]]

    store = ThreadSafeStore({NAMESPACE_INDEX: meta_namespace_index_func, "picky": picky})
    good = obj("a", "ns1")
    store.add("ns1/a", good)
    bad = {"metadata": {"name": "a", "namespace": "ns2", "bad": True}}
    with pytest.raises(RuntimeError):
        store.update("ns1/a", bad)
    assert store.get("ns1/a") is good
    assert store.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    assert store.list_index_func_values(NAMESPACE_INDEX) == ["ns1"]


def test_replace_rebuilds_every_index() -> None:
    idx = make_indexer()
    idx.add(obj("old", "ns0", app="gone"))
    a, b = obj("a", "ns1", app="web"), obj("b", "ns2", app="web")
    idx.replace([a, b], "42")
    assert sorted(idx.list_keys()) == ["ns1/a", "ns2/b"]
    assert sorted(idx.list_index_func_values(NAMESPACE_INDEX)) == ["ns1", "ns2"]
    assert idx.index_keys("labels", "app=web") == ["ns1/a", "ns2/b"]
    assert idx.by_index("labels", "app=gone") == []
    idx.replace([], "43")
    assert idx.list() == []
    assert idx.list_index_func_values("labels") == []


def test_thread_safe_store_replace_copies_the_mapping() -> None:
    store = ThreadSafeStore({NAMESPACE_INDEX: meta_namespace_index_func})
    items = {"ns/a": obj("a", "ns")}
    store.replace(items, "1")
    items["ns/b"] = obj("b", "ns")
    assert store.list_keys() == ["ns/a"]
    assert store.index_keys(NAMESPACE_INDEX, "ns") == ["ns/a"]


# --- add_indexers, lookups ---------------------------------------------------


def test_add_indexers_indexes_what_is_already_stored() -> None:
    idx = new_indexer(meta_namespace_key)
    idx.add(obj("a", app="web"))
    idx.add(obj("b", app="db"))
    idx.add(obj("c"))
    idx.add_indexers({"app": app_index})
    assert idx.index_keys("app", "web") == ["default/a"]
    assert sorted(idx.list_index_func_values("app")) == ["db", "web"]
    # ... and maintains it from then on.
    idx.update(obj("a", app="db"))
    assert idx.index_keys("app", "db") == ["default/a", "default/b"]
    assert idx.list_index_func_values("app") == ["db"]
    assert set(idx.get_indexers()) == {NAMESPACE_INDEX, "app"}


def test_add_indexers_conflict_is_an_error_and_adds_nothing() -> None:
    idx = make_indexer()
    idx.add(obj("a", app="web"))
    with pytest.raises(IndexerConflictError) as info:
        idx.add_indexers({"app": app_index, NAMESPACE_INDEX: meta_namespace_index_func})
    assert info.value.names == [NAMESPACE_INDEX]
    assert isinstance(info.value, ValueError) and isinstance(info.value, CacheError)
    assert set(idx.get_indexers()) == {NAMESPACE_INDEX, "labels"}
    with pytest.raises(IndexNotFoundError):
        idx.by_index("app", "web")


def test_get_indexers_is_a_copy() -> None:
    idx = make_indexer()
    idx.get_indexers()["x"] = app_index
    assert set(idx.get_indexers()) == {NAMESPACE_INDEX, "labels"}


def test_by_index_index_keys_and_index() -> None:
    idx = make_indexer()
    a = obj("a", "ns1", app="web", tier="front")
    b = obj("b", "ns1", app="db")
    c = obj("c", "ns2", tier="front")
    for o in (c, b, a):
        idx.add(o)
    assert {id(o) for o in idx.by_index(NAMESPACE_INDEX, "ns1")} == {id(a), id(b)}
    assert idx.by_index(NAMESPACE_INDEX, "nope") == []
    assert idx.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a", "ns1/b"]  # sorted
    assert idx.index_keys(NAMESPACE_INDEX, "nope") == []
    # index(): objects sharing any value with the probe, each once.
    probe = obj("x", "ns9", app="web", tier="front")
    assert {id(o) for o in idx.index("labels", probe)} == {id(a), id(c)}
    assert idx.index(NAMESPACE_INDEX, obj("y", "ns2")) == [c]
    assert idx.index("labels", obj("z")) == []
    with pytest.raises(IndexNotFoundError):
        idx.by_index("nope", "x")
    with pytest.raises(IndexNotFoundError):
        idx.index_keys("nope", "x")
    with pytest.raises(IndexNotFoundError):
        idx.index("nope", a)
    assert idx.list_index_func_values("nope") == []


def test_list_returns_the_stored_references() -> None:
    idx = make_indexer()
    objs = [obj(f"p{i}") for i in range(5)]
    for o in objs:
        idx.add(o)
    assert {id(o) for o in idx.list()} == {id(o) for o in objs}
    assert idx.get(obj("p3")) is objs[3]
    assert idx.get_by_key("default/p3") is objs[3]
    assert idx.get_by_key("default/none") is None
    assert len(idx) == 5  # type: ignore[arg-type]


def test_add_is_update() -> None:
    store = new_store(meta_namespace_key)
    first, second = obj("a"), obj("a")
    store.add(first)
    store.add(second)
    assert store.list() == [second] and store.get(first) is second


def test_none_is_not_a_storable_object() -> None:
    store = ThreadSafeStore()
    with pytest.raises(ValueError):
        store.add("k", None)
    with pytest.raises(ValueError):
        store.replace({"k": None})


def test_key_errors_propagate_and_leave_store_unchanged() -> None:
    idx = make_indexer()
    idx.add(obj("a"))
    with pytest.raises(NoMetaError):
        idx.add({"kind": "Pod"})
    with pytest.raises(NoMetaError):
        idx.replace([obj("b"), {"kind": "Pod"}], "1")
    assert idx.list_keys() == ["default/a"]


def test_resync_is_a_no_op() -> None:
    idx = make_indexer()
    idx.add(obj("a"))
    idx.resync()
    assert idx.list_keys() == ["default/a"]


def test_constructors_and_protocols() -> None:
    store = new_store(meta_namespace_key)
    assert isinstance(store, Store) and isinstance(store, Cache)
    assert store.thread_safe_store.get_indexers() == {}
    idx = new_indexer(deletion_handling_meta_namespace_key)
    assert isinstance(idx, Indexer)
    # The namespace index by default, as every informer asks for it...
    assert idx.get_indexers() == {NAMESPACE_INDEX: meta_namespace_index_func}
    # ... and exactly what is asked for otherwise.
    assert new_indexer(meta_namespace_key, {}).get_indexers() == {}


def test_deletion_handling_indexer_deletes_by_tombstone() -> None:
    idx = new_indexer(deletion_handling_meta_namespace_key)
    idx.add(obj("a", "ns"))
    idx.delete(DeletedFinalStateUnknown("ns/a", None))
    assert idx.list() == []
    assert idx.list_index_func_values(NAMESPACE_INDEX) == []


def test_cluster_scoped_objects_index_under_empty_namespace() -> None:
    idx = new_indexer(meta_namespace_key)
    node = obj("n1", None)
    idx.add(node)
    assert idx.list_keys() == ["n1"]
    assert idx.by_index(NAMESPACE_INDEX, "") == [node]


def test_reads_from_another_thread_while_the_loop_thread_writes() -> None:
    idx = make_indexer()
    for i in range(200):
        idx.add(obj(f"p{i}", "ns", app="a"))
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                for o in idx.by_index("labels", "app=b"):
                    assert o["metadata"]["labels"]["app"] == "b"
                idx.index_keys("labels", "app=b")
                idx.index("labels", obj("x", app="a"))
                assert len(idx.list()) == 200
                idx.list_index_func_values(NAMESPACE_INDEX)
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    t = threading.Thread(target=reader)
    t.start()
    try:
        for rnd in range(20):
            for i in range(200):
                app = "b" if (i + rnd) % 2 else "a"
                idx.update(obj(f"p{i}", "ns", app=app))
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert errors == []


# --- keys -----------------------------------------------------------------


def test_meta_namespace_key() -> None:
    assert meta_namespace_key(obj("a", "ns")) == "ns/a"
    assert meta_namespace_key(obj("a", None)) == "a"
    assert meta_namespace_key(obj("a", "")) == "a"
    assert meta_namespace_key("ns/explicit") == "ns/explicit"
    assert meta_namespace_key(ExplicitKey("k")) == "k"
    bads: list[Any] = [{"kind": "Pod"}, None, 42, {"metadata": None}, {"metadata": []}]
    for bad in bads:
        with pytest.raises(NoMetaError) as info:
            meta_namespace_key(bad)
        assert isinstance(info.value, KeyFuncError)
        assert isinstance(info.value, TypeError)


def test_deletion_handling_meta_namespace_key() -> None:
    assert deletion_handling_meta_namespace_key(obj("a", "ns")) == "ns/a"
    tomb = DeletedFinalStateUnknown("ns/a", None)
    assert deletion_handling_meta_namespace_key(tomb) == "ns/a"
    # The tombstone's key wins over its (possibly stale) object's.
    stale = DeletedFinalStateUnknown("ns/a", obj("other", "x"))
    assert deletion_handling_meta_namespace_key(stale) == "ns/a"


def test_split_meta_namespace_key() -> None:
    assert split_meta_namespace_key("ns/a") == ("ns", "a")
    assert split_meta_namespace_key("a") == ("", "a")
    assert split_meta_namespace_key("/a") == ("", "a")
    assert split_meta_namespace_key("") == ("", "")
    with pytest.raises(InvalidKeyError) as info:
        split_meta_namespace_key("a/b/c")
    assert isinstance(info.value, ValueError) and info.value.key == "a/b/c"


def test_deleted_final_state_unknown_is_a_frozen_value() -> None:
    t = DeletedFinalStateUnknown("ns/a", None)
    assert t == DeletedFinalStateUnknown("ns/a", None)
    with pytest.raises(AttributeError):
        t.key = "x"  # type: ignore[misc]


def test_meta_namespace_index_func() -> None:
    assert meta_namespace_index_func(obj("a", "ns")) == ["ns"]
    assert meta_namespace_index_func(obj("a", None)) == [""]
    with pytest.raises(NoMetaError):
        meta_namespace_index_func({})


# --- stateful model ---------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
NAMESPACES = st.sampled_from(["ns1", "ns2", "ns3"])
LABELS = st.dictionaries(st.sampled_from(["app", "tier", "x"]), st.sampled_from(["1", "2"]))

EXTRA_INDEXERS = {
    "app": app_index,
    "label-keys": lambda o: sorted(o["metadata"].get("labels", {})),
    # Duplicate values in one answer must count once.
    "ns-twice": lambda o: [o["metadata"]["namespace"]] * 2,
}


class IndexerMachine(RuleBasedStateMachine):
    """The Indexer against a dict with indexes recomputed from scratch."""

    def __init__(self) -> None:
        super().__init__()
        self.idx = make_indexer()
        self.model: dict[str, dict[str, Any]] = {}
        self.indexers = {NAMESPACE_INDEX: meta_namespace_index_func, "labels": label_pairs}
        self.version = 0

    def _obj(self, name: str, ns: str, labels: dict[str, str]) -> dict[str, Any]:
        self.version += 1
        o = obj(name, ns, **labels)
        o["metadata"]["resourceVersion"] = str(self.version)
        return o

    @rule(name=NAMES, ns=NAMESPACES, labels=LABELS)
    def add(self, name: str, ns: str, labels: dict[str, str]) -> None:
        o = self._obj(name, ns, labels)
        self.idx.add(o)
        self.model[f"{ns}/{name}"] = o

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), labels=LABELS)
    def update_existing(self, data: st.DataObject, labels: dict[str, str]) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        ns, name = split_meta_namespace_key(key)
        o = self._obj(name, ns, labels)
        self.idx.update(o)
        self.model[key] = o

    @rule(name=NAMES, ns=NAMESPACES, labels=LABELS, compact=st.booleans())
    def swap(self, name: str, ns: str, labels: dict[str, str], compact: bool) -> None:
        # The informer's get-then-update in one call, with dicts and with compact
        # objects (whose unchanged key lets the namespace index skip its function).
        o: Any = self._obj(name, ns, labels)
        if compact:
            o = FrozenObject.from_dict(o)
        key = f"{ns}/{name}"
        old = self.idx.thread_safe_store.swap(key, o)  # type: ignore[attr-defined]
        assert old is self.model.get(key)
        self.model[key] = o

    @rule(name=NAMES, ns=NAMESPACES)
    def delete(self, name: str, ns: str) -> None:
        self.idx.delete(obj(name, ns))
        self.model.pop(f"{ns}/{name}", None)

    @rule(entries=st.lists(st.tuples(NAMES, NAMESPACES, LABELS), max_size=8))
    def replace(self, entries: list[tuple[str, str, dict[str, str]]]) -> None:
        objs = [self._obj(*e) for e in entries]
        self.idx.replace(objs, str(self.version))
        self.model = {meta_namespace_key(o): o for o in objs}

    @rule(name=st.sampled_from(sorted(EXTRA_INDEXERS) + [NAMESPACE_INDEX]))
    def add_indexer(self, name: str) -> None:
        func = EXTRA_INDEXERS.get(name, meta_namespace_index_func)
        if name in self.indexers:
            with pytest.raises(IndexerConflictError):
                self.idx.add_indexers({name: func})
        else:
            self.idx.add_indexers({name: func})
            self.indexers[name] = func

    @invariant()
    def same_objects(self) -> None:
        assert sorted(self.idx.list_keys()) == sorted(self.model)
        assert {id(o) for o in self.idx.list()} == {id(o) for o in self.model.values()}
        for key, o in self.model.items():
            assert self.idx.get_by_key(key) is o

    @invariant()
    def same_indexes(self) -> None:
        assert set(self.idx.get_indexers()) == set(self.indexers)
        for name, func in self.indexers.items():
            expected: dict[str, set[str]] = {}
            for key, o in self.model.items():
                for value in func(o):
                    expected.setdefault(value, set()).add(key)
            # No value without keys survives (no leak).
            assert sorted(self.idx.list_index_func_values(name)) == sorted(expected)
            for value, keys in expected.items():
                assert self.idx.index_keys(name, value) == sorted(keys)
                assert {id(o) for o in self.idx.by_index(name, value)} == {
                    id(self.model[k]) for k in keys
                }


IndexerMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestIndexerModel = IndexerMachine.TestCase
