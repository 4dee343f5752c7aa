"""pykcm.informers.SharedInformerFactory with fake Reflectors (no API server).

The factory's informers are real SharedIndexInformers; only their Reflector
is faked (through ``default_new_informer``, which the factory calls for
every informer it builds), so start, sync, shutdown and the transform run
the real code. Tricky parts first: one informer per resource, start twice,
shutdown; then accessors, settings, CRDs and the transform helper.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from pykcm.api.resources import BUILTIN_RESOURCES, ResourceInfo, builtin_registry
from pykcm.cache import DeltaFIFO, InformerAlreadyStartedError, ListWatch, SharedIndexInformer
from pykcm.cache.metrics import REGISTRY
from pykcm.client import Client, Config, NoResourceMatchError, NotFound
from pykcm.informers import (
    GenericInformer,
    GroupVersionInformers,
    GroupVersionResource,
    SharedInformerFactory,
    strip_managed_fields,
)
from pykcm.informers import factory as factory_module
from pykcm.informers.typed import GROUP_VERSION_ACCESSORS

REGISTRY_INFO = builtin_registry()


def obj(name: str, rv: int = 1, ns: str = "ns", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": str(rv)}
    meta.update(extra)
    return {"metadata": meta}


class FakeReflector:
    """Lists ``items`` into the FIFO (unless told not to), then idles until cancelled."""

    def __init__(self, lw: Any, store: DeltaFIFO, *, name: str, resync_period: float,
                 should_resync: Callable[[], bool], clock: Callable[[], float], rng: Any,
                 items: list[Any], sync: bool, fail: BaseException | None) -> None:
        self.lw = lw
        self.store = store
        self.name = name
        self.items = items
        self.sync = sync
        self.fail = fail
        self.started = asyncio.Event()

    async def run(self) -> None:
        self.started.set()
        if self.fail is not None:
            raise self.fail
        if self.sync:
            self.store.replace(list(self.items), "1")
        await asyncio.Event().wait()

    def last_sync_resource_version(self) -> str:
        return "1" if self.sync else ""

    def set_watch_error_handler(self, handler: Any) -> None:
        pass


class Fakes:
    """What the fake default_new_informer built: one reflector per informer run."""

    def __init__(self) -> None:
        self.built: list[str] = []           # informer names, in build order
        self.reflectors: dict[str, FakeReflector] = {}
        self.items: dict[str, list[Any]] = {}  # informer name -> initial list
        self.unsynced: set[str] = set()
        self.failing: dict[str, BaseException] = {}
        self.resync: dict[str, float] = {}

    def new_informer(self, lw: ListWatch, resync: float, name: str) -> SharedIndexInformer:
        self.built.append(name)
        self.resync[name] = resync

        def reflector(lw: Any, store: DeltaFIFO, **kw: Any) -> FakeReflector:
            r = FakeReflector(lw, store, items=self.items.get(name, []),
                              sync=name not in self.unsynced, fail=self.failing.get(name),
                              **kw)
            self.reflectors[name] = r
            return r

        return SharedIndexInformer(lw, resync_period=resync, name=name,
                                   reflector_factory=reflector)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Fakes:
    f = Fakes()
    monkeypatch.setattr(factory_module, "default_new_informer", f.new_informer)
    return f


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    # Nothing listens there: no test may reach the network.
    async with Client(Config(host="https://127.0.0.1:1", token="t")) as c:
        yield c


@pytest.fixture
async def make_factory(client: Client) -> AsyncIterator[Callable[..., SharedInformerFactory]]:
    made: list[SharedInformerFactory] = []

    def make(*args: Any, **kwargs: Any) -> SharedInformerFactory:
        f = SharedInformerFactory(client, *args, **kwargs)
        made.append(f)
        return f

    yield make
    for f in made:
        await f.shutdown()


async def eventually(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


# --- one informer per resource ---------------------------------------------------


async def test_one_informer_per_resource_whoever_asks(
        make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory()
    pods = f.core_v1.pods
    assert f.core_v1.pods is pods
    assert f.for_resource("", "v1", "pods") is pods
    pods_info = REGISTRY_INFO.get("", "v1", "pods")
    assert pods_info is not None
    assert f.informer_for(pods_info) is pods
    assert f.informer_for(GroupVersionResource("", "v1", "pods")) is pods
    # Same plural, other group: another resource, another informer.
    assert f.core_v1.events is not f.events_v1.events
    assert f.core_v1.events.gvr == ("", "v1", "events")
    assert f.events_v1.events.gvr == ("events.k8s.io", "v1", "events")
    assert set(f.informers()) == {GroupVersionResource("", "v1", "pods"),
                                  GroupVersionResource("", "v1", "events"),
                                  GroupVersionResource("events.k8s.io", "v1", "events")}
    # Two factories share nothing.
    assert make_factory().core_v1.pods is not pods


async def test_informer_for_first_constructor_wins(
        make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory()
    calls: list[str] = []

    def custom(lw: ListWatch, resync: float, name: str) -> SharedIndexInformer:
        calls.append(name)
        return SharedIndexInformer(lw, resync_period=resync, name=name, indexers={})

    info = REGISTRY_INFO.get("apps", "v1", "deployments")
    assert info is not None
    first = f.informer_for(info, custom)
    again = f.informer_for(info, custom)
    assert first is again is f.apps_v1.deployments
    assert calls == ["shared-informer-factory/deployments.apps"]
    # The custom constructor's indexers (none) were kept.
    assert first.informer.get_indexer().get_indexers() == {}
    # The default constructor gives the namespace index, as client-go's informers.
    assert "namespace" in f.core_v1.pods.informer.get_indexer().get_indexers()


# --- start, sync, shutdown -------------------------------------------------------------


async def test_start_twice_starts_only_the_new_informers(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory()
    pods, nodes = f.core_v1.pods, f.core_v1.nodes
    assert not f.is_started(pods.gvr)
    f.start()
    assert f.is_started(pods.gvr) and f.is_started(nodes.gvr)
    tasks = dict(f._tasks)
    await eventually(lambda: len(fakes.reflectors) == 2)
    first_reflectors = dict(fakes.reflectors)

    f.start()  # nothing new: nothing happens
    assert f._tasks == tasks
    await asyncio.sleep(0.05)
    assert fakes.reflectors == first_reflectors

    leases = f.coordination_v1.leases
    assert not f.is_started(leases.gvr)
    f.start()
    assert f.is_started(leases.gvr)
    assert {k: v for k, v in f._tasks.items() if k != leases.gvr} == tasks
    await eventually(lambda: len(fakes.reflectors) == 3)
    # The first two were not run again (one reflector each, the same ones).
    assert all(fakes.reflectors[n] is r for n, r in first_reflectors.items())
    assert fakes.built == ["shared-informer-factory/pods", "shared-informer-factory/nodes",
                           "shared-informer-factory/leases.coordination.k8s.io"]
    synced = await f.wait_for_cache_sync(timeout=5)
    assert synced == {pods.info: True, nodes.info: True, leases.info: True}


async def test_start_needs_a_running_loop(client: Client) -> None:
    f = SharedInformerFactory(client)
    _ = f.core_v1.pods

    def outside() -> None:
        f.start()

    with pytest.raises(RuntimeError):
        await asyncio.to_thread(outside)


async def test_wait_for_cache_sync_reports_each_started_informer(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory()
    fakes.items["shared-informer-factory/pods"] = [obj("a"), obj("b", ns="other")]
    fakes.unsynced.add("shared-informer-factory/secrets")
    pods, secrets = f.core_v1.pods, f.core_v1.secrets
    # Nothing started: nothing to wait for.
    assert await f.wait_for_cache_sync(timeout=0.1) == {}
    f.start()
    _ = f.core_v1.configmaps  # requested after start, never started: not waited for
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    synced = await f.wait_for_cache_sync(timeout=0.5)
    assert loop.time() - t0 >= 0.45
    pods_info = REGISTRY_INFO.get("", "v1", "pods")
    secrets_info = REGISTRY_INFO.get("", "v1", "secrets")
    assert synced == {pods_info: True, secrets_info: False}
    assert pods.lister.by_namespace("ns").get("a")["metadata"]["name"] == "a"
    assert sorted(o["metadata"]["name"] for o in pods.lister.list()) == ["a", "b"]
    assert not secrets.has_synced()


async def test_wait_for_cache_sync_does_not_wait_for_a_failed_informer(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory],
        caplog: pytest.LogCaptureFixture) -> None:
    f = make_factory()
    fakes.failing["shared-informer-factory/nodes"] = RuntimeError("boom")
    nodes, pods = f.core_v1.nodes, f.core_v1.pods
    f.start()
    with caplog.at_level(logging.ERROR, logger="pykcm.informers.factory"):
        synced = await asyncio.wait_for(f.wait_for_cache_sync(), 5)
    assert synced == {nodes.info: False, pods.info: True}
    assert nodes.informer.is_stopped()
    assert "boom" in caplog.text
    assert "informer[shared-informer-factory/nodes]" in caplog.text


async def test_shutdown_stops_everything_and_start_is_then_a_no_op(
        fakes: Fakes, client: Client) -> None:
    async with SharedInformerFactory(client) as f:
        pods, jobs = f.core_v1.pods, f.batch_v1.jobs
        f.start()
        assert all((await f.wait_for_cache_sync(timeout=5)).values())
        tasks = list(f._tasks.values())
        assert not f.shutting_down
    # __aexit__ shut it down and waited.
    assert f.shutting_down
    assert all(t.done() for t in tasks)
    assert pods.informer.is_stopped() and jobs.informer.is_stopped()
    await f.shutdown()  # idempotent
    later = f.apps_v1.deployments  # created, as client-go does, but never started
    f.start()
    assert not f.is_started(later.gvr)
    assert not later.informer.has_started()
    assert len(fakes.reflectors) == 2


async def test_informers_are_named_for_metrics(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory(name="unit-factory")
    deployments = f.apps_v1.deployments
    assert deployments.informer.name == "unit-factory/deployments.apps"
    f.start()
    assert all((await f.wait_for_cache_sync(timeout=5)).values())
    labels = 'name="unit-factory/deployments.apps",group="apps",version="v1",' \
             'resource="deployments"'
    assert f"informer_queued_items{{{labels}}} 0" in REGISTRY.expose()
    await f.shutdown()
    assert "unit-factory" not in REGISTRY.expose()
    # name="" leaves them unnamed: no metrics.
    assert make_factory(name="").core_v1.pods.informer.name == ""


# --- accessors --------------------------------------------------------------------------


def _accessor_names(cls: type[GroupVersionInformers]) -> set[str]:
    return {n for n, v in vars(cls).items() if isinstance(v, property)}


async def test_every_builtin_resource_has_its_accessor(
        make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory()
    reached: set[tuple[str, str, str]] = set()
    for attr, cls in GROUP_VERSION_ACCESSORS.items():
        accessors = getattr(f, attr)
        assert type(accessors) is cls
        assert _accessor_names(cls) == set(cls.RESOURCES), cls.__name__
        for resource in cls.RESOURCES:
            gi = getattr(accessors, resource)
            assert isinstance(gi, GenericInformer)
            info = REGISTRY_INFO.get(cls.GROUP, cls.VERSION, resource)
            assert info is not None, (cls.GROUP, cls.VERSION, resource)
            assert gi.gvr == (info.group, info.version, info.plural)
            assert gi.info == info
            lw = gi.informer.list_watch
            assert isinstance(lw, ListWatch) and lw.resource == info
            reached.add(gi.gvr)
    stored = [r for r in BUILTIN_RESOURCES if r.stored]  # the reviews cannot be watched
    assert reached == {(r.group, r.version, r.plural) for r in stored}
    assert len(f.informers()) == len(stored)


async def test_the_documented_accessors(make_factory: Callable[..., SharedInformerFactory]
                                        ) -> None:
    f = make_factory()
    cases = {
        f.core_v1.pods: ("", "v1", "pods"),
        f.core_v1.namespaces: ("", "v1", "namespaces"),
        f.apps_v1.deployments: ("apps", "v1", "deployments"),
        f.batch_v1.jobs: ("batch", "v1", "jobs"),
        f.coordination_v1.leases: ("coordination.k8s.io", "v1", "leases"),
        f.apiextensions_v1.customresourcedefinitions:
            ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        f.events_v1.events: ("events.k8s.io", "v1", "events"),
    }
    for gi, gvr in cases.items():
        assert gi.gvr == gvr
        assert gi.info is not None and gi.info.kind
        assert gi.lister.indexer is gi.informer.get_indexer()


# --- settings ----------------------------------------------------------------------------


async def test_namespace_and_tweak_reach_the_list_watch(
        make_factory: Callable[..., SharedInformerFactory]) -> None:
    def tweak(opts: dict[str, Any]) -> None:
        opts["labelSelector"] = "app=web"

    f = make_factory(namespace="team-a", tweak_list_options=tweak)
    assert f.namespace == "team-a"
    pods_lw = f.core_v1.pods.informer.list_watch
    assert isinstance(pods_lw, ListWatch)
    assert pods_lw.namespace == "team-a"
    assert pods_lw.tweak_list_options is tweak
    # Cluster-scoped resources are watched whole.
    for gi in (f.core_v1.namespaces, f.core_v1.nodes,
               f.apiextensions_v1.customresourcedefinitions):
        lw = gi.informer.list_watch
        assert isinstance(lw, ListWatch) and lw.namespace is None
    assert make_factory(namespace="").namespace is None


async def test_default_and_custom_resync(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory(30.0, custom_resync={"deployments.apps": 5.0, "pods": 0.0,
                                          "leases.coordination.k8s.io": 12.5})
    assert f.default_resync == 30.0
    assert f.apps_v1.deployments.informer.resync_check_period == 5.0
    assert f.core_v1.pods.informer.resync_check_period == 0.0
    assert f.coordination_v1.leases.informer.resync_check_period == 12.5
    assert f.core_v1.configmaps.informer.resync_check_period == 30.0
    # The constructor was told the same.
    assert fakes.resync["shared-informer-factory/deployments.apps"] == 5.0
    assert f.resync_period_for(GroupVersionResource("example.com", "v1", "widgets")) == 30.0
    with pytest.raises(ValueError):
        make_factory(-1.0)
    with pytest.raises(ValueError):
        make_factory(custom_resync={"pods": -2.0})


async def test_the_transform_is_applied_to_every_informer(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory]) -> None:
    managed = [{"manager": "kubectl", "operation": "Update"}]
    fakes.items["shared-informer-factory/pods"] = [obj("p", managedFields=managed)]
    fakes.items["shared-informer-factory/configmaps"] = [obj("c", managedFields=managed)]
    f = make_factory(transform=strip_managed_fields)
    pods, cms = f.core_v1.pods, f.core_v1.configmaps
    f.start()
    assert all((await f.wait_for_cache_sync(timeout=5)).values())
    for gi, name in ((pods, "p"), (cms, "c")):
        cached = gi.lister.by_namespace("ns").get(name)
        assert "managedFields" not in cached["metadata"]
        assert cached["metadata"]["resourceVersion"] == "1"
    # The informer's own setting is refused after start, like any informer's.
    with pytest.raises(InformerAlreadyStartedError):
        pods.informer.set_transform(None)


# --- resources outside the registry (CRDs) ----------------------------------------------


WIDGETS = ResourceInfo(group="example.com", version="v1", kind="Widget", plural="widgets",
                       singular="widget", namespaced=True)


@pytest.fixture
def discovery(monkeypatch: pytest.MonkeyPatch, client: Client) -> list[Any]:
    """The client's resolve() answers from WIDGETS (else NoResourceMatchError); calls logged."""
    calls: list[Any] = []

    async def resolve(resource: Any) -> ResourceInfo:
        calls.append(resource)
        if isinstance(resource, ResourceInfo):
            return resource
        if resource in ("example.com/v1/widgets", "example.com/v1/Widget"):
            return WIDGETS
        raise NoResourceMatchError(resource)

    monkeypatch.setattr(client, "resolve", resolve)
    return calls


async def test_for_resource_resolves_a_crd_lazily(
        discovery: list[Any], make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory(namespace="ns1")
    widgets = f.for_resource("example.com", "v1", "widgets")
    assert f.for_resource("example.com", "v1", "widgets") is widgets
    assert widgets.gvr == ("example.com", "v1", "widgets")
    assert widgets.info is None and discovery == []  # no I/O yet
    assert widgets.informer.name == "shared-informer-factory/widgets.example.com"
    with pytest.raises(NotFound) as exc:
        widgets.lister.by_namespace("ns1").get("w")
    assert exc.value.status["message"] == 'widgets.example.com "w" not found'
    assert await widgets.resolve() == WIDGETS
    assert widgets.info == WIDGETS
    assert discovery == ["example.com/v1/widgets"]
    # for_resource_async on the same resource: the same informer.
    assert await f.for_resource_async("example.com", "v1", "widgets") is widgets


async def test_for_resource_async_resolves_first(
        discovery: list[Any], make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory()
    with pytest.raises(NoResourceMatchError):
        await f.for_resource_async("example.com", "v1", "gadgets")
    assert f.informers() == {}
    widgets = await f.for_resource_async("example.com", "v1", "widgets")
    assert widgets.info == WIDGETS
    assert f.for_resource("example.com", "v1", "widgets") is widgets
    # Built-ins need no discovery.
    discovery.clear()
    pods = await f.for_resource_async("", "v1", "pods")
    assert pods is f.core_v1.pods and pods.info is not None
    assert discovery == []


async def test_wait_for_cache_sync_keys_an_unresolved_resource_provisionally(
        fakes: Fakes, discovery: list[Any],
        make_factory: Callable[..., SharedInformerFactory]) -> None:
    f = make_factory(name="")
    fakes.unsynced.add("")
    gadgets = f.for_resource("example.com", "v1", "gadgets")
    f.start()
    synced = await f.wait_for_cache_sync(timeout=0.2)
    assert list(synced.values()) == [False]
    (key,) = synced
    assert (key.group, key.version, key.plural, key.kind) == \
        ("example.com", "v1", "gadgets", "")
    assert gadgets.info is None


# --- strip_managed_fields ------------------------------------------------------------------


def test_strip_managed_fields_copies_only_what_it_must() -> None:
    labels = {"a": "b"}
    spec: dict[str, Any] = {"containers": []}
    o = {"kind": "Pod", "metadata": {"name": "p", "labels": labels,
                                     "managedFields": [{"manager": "m"}]}, "spec": spec}
    out = strip_managed_fields(o)
    assert out == {"kind": "Pod", "metadata": {"name": "p", "labels": labels}, "spec": spec}
    # The input is untouched; what did not change is shared, not copied.
    assert "managedFields" in o["metadata"]
    assert out is not o and out["metadata"] is not o["metadata"]
    assert out["spec"] is spec and out["metadata"]["labels"] is labels
    # Nothing to strip: the object itself.
    plain = {"metadata": {"name": "q"}}
    assert strip_managed_fields(plain) is plain
    assert strip_managed_fields({"kind": "X"}) == {"kind": "X"}
    sentinel = object()
    assert strip_managed_fields(sentinel) is sentinel


def test_gvr_names() -> None:
    assert str(GroupVersionResource("", "v1", "pods")) == "v1/pods"
    assert str(GroupVersionResource("apps", "v1", "deployments")) == "apps/v1/deployments"
    assert GroupVersionResource("apps", "v1", "deployments").group_resource == \
        "deployments.apps"
    info = REGISTRY_INFO.get("batch", "v1", "jobs")
    assert info is not None
    assert GroupVersionResource.of(info) == ("batch", "v1", "jobs")



# --- GC policy -------------------------------------------------------------------------

@pytest.fixture
def gc_state() -> Iterator[None]:
    import gc

    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


async def test_gc_policy_raises_thresholds_and_freezes_once_synced(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory], gc_state: None) -> None:
    import gc

    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    f = make_factory()
    fakes.items["shared-informer-factory/pods"] = [obj("a")]
    fakes.unsynced.add("shared-informer-factory/secrets")
    _ = f.core_v1.pods, f.core_v1.secrets
    f.start()
    assert gc.get_threshold() == (100_000, 50, 1_000)
    # not every cache synced: nothing frozen yet
    await f.wait_for_cache_sync(timeout=0.2)
    assert gc.get_freeze_count() == 0
    fakes.unsynced.clear()
    g = make_factory(name="second")
    fakes.items["second/pods"] = [obj("a")]
    _ = g.core_v1.pods
    g.start()
    assert all((await g.wait_for_cache_sync(timeout=5)).values())
    assert gc.get_freeze_count() > 0


async def test_gc_policy_can_be_left_to_the_application(
        fakes: Fakes, make_factory: Callable[..., SharedInformerFactory], gc_state: None) -> None:
    import gc

    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    f = make_factory(tune_gc=False)
    fakes.items["shared-informer-factory/pods"] = [obj("a")]
    _ = f.core_v1.pods
    f.start()
    assert all((await f.wait_for_cache_sync(timeout=5)).values())
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_tune_thresholds_never_lowers() -> None:
    import gc

    from pykcm.cache import gc_policy

    before = gc.get_threshold()
    try:
        gc.set_threshold(200_000, 10, 10)
        prev = gc_policy.tune_thresholds()
        assert prev == (200_000, 10, 10)
        assert gc.get_threshold() == (200_000, 50, 1_000)
    finally:
        gc.set_threshold(*before)
