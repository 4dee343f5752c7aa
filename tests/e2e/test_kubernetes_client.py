"""The official `kubernetes` Python client against the embedded API server."""

# The client's models make every field Optional and parts of it are untyped.
# mypy: disable-error-code="union-attr,arg-type,misc,operator,no-untyped-call"

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from pykcm.testing.server_thread import ServerThread
from tests.conftest import Api

pytestmark = pytest.mark.e2e

TIMEOUT = 20  # seconds, for every request (`_request_timeout`)


@pytest.fixture(scope="session")
def kube(pykcm_apiserver: ServerThread) -> Iterator[client.ApiClient]:
    cfg = client.Configuration()
    config.load_kube_config(config_file=pykcm_apiserver.kubeconfig_path,
                            client_configuration=cfg)
    with client.ApiClient(cfg) as c:
        yield c


@pytest.fixture
def core(kube: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube)


@pytest.fixture
def apps(kube: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(kube)


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body or "")
    assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
    assert body["status"] == "Failure"
    return body


def _cm(name: str, labels: dict[str, str] | None = None,
        data: dict[str, str] | None = None) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def _deployment(name: str, replicas: int = 1) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[
                    client.V1Container(name="web", image="nginx:1.27"),
                    client.V1Container(name="sidecar", image="busybox:1.36"),
                ]))))


# --- CRUD, selectors, paging ----------------------------------------------------------


def test_create_get_and_typed_round_trip(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    created = core.create_namespaced_config_map(ns, _cm("a", {"app": "x"}, {"k": "v"}),
                                                _request_timeout=TIMEOUT)
    assert isinstance(created, client.V1ConfigMap)
    assert created.metadata.name == "a" and created.metadata.namespace == ns
    assert created.metadata.uid and int(created.metadata.resource_version) > 0
    assert created.metadata.creation_timestamp is not None
    got = core.read_namespaced_config_map("a", ns, _request_timeout=TIMEOUT)
    assert got.data == {"k": "v"} and got.metadata.labels == {"app": "x"}
    assert got.metadata.resource_version == created.metadata.resource_version
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_config_map(ns, _cm("a"), _request_timeout=TIMEOUT)
    assert ei.value.status == 409
    assert _status(ei.value)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as ei:
        core.read_namespaced_config_map("nope", ns, _request_timeout=TIMEOUT)
    assert ei.value.status == 404
    err = _status(ei.value)
    assert err["reason"] == "NotFound" and err["message"] == 'configmaps "nope" not found'


def test_list_label_selectors(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    for name, labels in (("a", {"app": "web", "tier": "fe"}), ("b", {"app": "web"}),
                         ("c", {"app": "db", "tier": "be"}), ("d", {})):
        core.create_namespaced_config_map(ns, _cm(name, labels), _request_timeout=TIMEOUT)

    def names(selector: str) -> list[str]:
        lst = core.list_namespaced_config_map(ns, label_selector=selector,
                                              _request_timeout=TIMEOUT)
        assert isinstance(lst, client.V1ConfigMapList)
        return [i.metadata.name for i in lst.items]

    assert names("") == ["a", "b", "c", "d"]
    assert names("app=web") == ["a", "b"]
    assert names("app!=web") == ["c", "d"]
    assert names("app in (web,db),tier") == ["a", "c"]
    assert names("!tier") == ["b", "d"]
    assert names("app notin (web)") == ["c", "d"]
    assert names("tier=fe,app=web") == ["a"]
    with pytest.raises(ApiException) as ei:
        names("app==(")
    assert ei.value.status == 400


def test_list_paging_limit_continue(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    for i in range(5):
        core.create_namespaced_config_map(ns, _cm(f"c{i}"), _request_timeout=TIMEOUT)
    first = core.list_namespaced_config_map(ns, limit=2, _request_timeout=TIMEOUT)
    assert [i.metadata.name for i in first.items] == ["c0", "c1"]
    assert first.metadata._continue and first.metadata.remaining_item_count == 3
    rv = first.metadata.resource_version
    # a write between pages is not seen by the later pages (consistent snapshot)
    core.create_namespaced_config_map(ns, _cm("c2a"), _request_timeout=TIMEOUT)
    core.delete_namespaced_config_map("c3", ns, _request_timeout=TIMEOUT)
    names: list[str] = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    pages = 1
    while token:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=token,
                                               _request_timeout=TIMEOUT)
        assert page.metadata.resource_version == rv
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        pages += 1
    assert names == ["c0", "c1", "c2", "c3", "c4"] and pages == 3
    assert page.metadata.remaining_item_count is None
    # a fresh list sees the writes
    now = core.list_namespaced_config_map(ns, _request_timeout=TIMEOUT)
    assert [i.metadata.name for i in now.items] == ["c0", "c1", "c2", "c2a", "c4"]
    assert int(now.metadata.resource_version) > int(rv)
    assert now.metadata._continue is None
    # a garbage continue token is a 400
    with pytest.raises(ApiException) as ei:
        core.list_namespaced_config_map(ns, limit=2, _continue="not-a-token",
                                        _request_timeout=TIMEOUT)
    assert ei.value.status == 400


def test_replace_with_stale_resource_version_conflicts(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    core.create_namespaced_config_map(ns, _cm("a", data={"v": "0"}), _request_timeout=TIMEOUT)
    stale = core.read_namespaced_config_map("a", ns, _request_timeout=TIMEOUT)
    fresh = core.read_namespaced_config_map("a", ns, _request_timeout=TIMEOUT)
    fresh.data = {"v": "1"}
    updated = core.replace_namespaced_config_map("a", ns, fresh, _request_timeout=TIMEOUT)
    assert updated.data == {"v": "1"}
    assert int(updated.metadata.resource_version) > int(stale.metadata.resource_version)
    stale.data = {"v": "2"}
    with pytest.raises(ApiException) as ei:
        core.replace_namespaced_config_map("a", ns, stale, _request_timeout=TIMEOUT)
    assert ei.value.status == 409
    err = _status(ei.value)
    assert err["reason"] == "Conflict"
    assert err["message"] == ('Operation cannot be fulfilled on configmaps "a": the object has '
                              'been modified; please apply your changes to the latest version '
                              'and try again')
    assert core.read_namespaced_config_map("a", ns, _request_timeout=TIMEOUT).data == {"v": "1"}


# --- patch ------------------------------------------------------------------------------


def test_patch_dict_is_strategic_merge_by_container_name(api: Api,
                                                         apps: client.AppsV1Api) -> None:
    ns = api.ns()
    apps.create_namespaced_deployment(ns, _deployment("d"), _request_timeout=TIMEOUT)
    patched = apps.patch_namespaced_deployment(
        "d", ns, {"spec": {"template": {"spec": {"containers": [
            {"name": "sidecar", "image": "busybox:1.37"}]}}}}, _request_timeout=TIMEOUT)
    containers = [(c.name, c.image) for c in patched.spec.template.spec.containers]
    assert containers == [("web", "nginx:1.27"), ("sidecar", "busybox:1.37")]
    # the defaults of the kept container survive
    web = patched.spec.template.spec.containers[0]
    assert web.image_pull_policy == "IfNotPresent"
    assert web.termination_message_path == "/dev/termination-log"
    assert patched.metadata.generation == 2
    # $patch: delete directive removes one element by its merge key
    patched = apps.patch_namespaced_deployment(
        "d", ns, {"spec": {"template": {"spec": {"containers": [
            {"name": "sidecar", "$patch": "delete"}]}}}}, _request_timeout=TIMEOUT)
    assert [c.name for c in patched.spec.template.spec.containers] == ["web"]
    got = apps.read_namespaced_deployment("d", ns, _request_timeout=TIMEOUT)
    assert [c.name for c in got.spec.template.spec.containers] == ["web"]


def test_patch_list_is_json_patch(api: Api, apps: client.AppsV1Api) -> None:
    ns = api.ns()
    apps.create_namespaced_deployment(ns, _deployment("d"), _request_timeout=TIMEOUT)
    patched = apps.patch_namespaced_deployment("d", ns, [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}},
        {"op": "remove", "path": "/spec/template/spec/containers/1"},
    ], _request_timeout=TIMEOUT)
    assert patched.spec.replicas == 3 and patched.metadata.labels == {"x": "y"}
    assert [c.name for c in patched.spec.template.spec.containers] == ["web"]
    # a failing test op is a conflict-free 422 (Invalid) and changes nothing
    rv = patched.metadata.resource_version
    with pytest.raises(ApiException) as ei:
        apps.patch_namespaced_deployment("d", ns, [
            {"op": "test", "path": "/spec/replicas", "value": 9},
            {"op": "replace", "path": "/spec/replicas", "value": 9},
        ], _request_timeout=TIMEOUT)
    assert ei.value.status == 422
    got = apps.read_namespaced_deployment("d", ns, _request_timeout=TIMEOUT)
    assert got.spec.replicas == 3 and got.metadata.resource_version == rv


# --- delete propagation -----------------------------------------------------------------


def test_delete_propagation_policies(api: Api, apps: client.AppsV1Api) -> None:
    ns = api.ns()
    for name in ("bg", "fg", "orphan"):
        apps.create_namespaced_deployment(ns, _deployment(name), _request_timeout=TIMEOUT)

    apps.delete_namespaced_deployment(
        "bg", ns, body=client.V1DeleteOptions(propagation_policy="Background"),
        _request_timeout=TIMEOUT)
    with pytest.raises(ApiException) as ei:
        apps.read_namespaced_deployment("bg", ns, _request_timeout=TIMEOUT)
    assert ei.value.status == 404

    for name, policy, finalizer in (("fg", "Foreground", "foregroundDeletion"),
                                    ("orphan", "Orphan", "orphan")):
        apps.delete_namespaced_deployment(
            name, ns, body=client.V1DeleteOptions(propagation_policy=policy),
            _request_timeout=TIMEOUT)
        # no garbage collector runs here: the finalizer keeps the object, marked deleted
        got = apps.read_namespaced_deployment(name, ns, _request_timeout=TIMEOUT)
        assert got.metadata.deletion_timestamp is not None, name
        assert finalizer in (got.metadata.finalizers or []), (name, got.metadata.finalizers)
        # removing the finalizer lets the deletion finish
        apps.patch_namespaced_deployment(
            name, ns, [{"op": "remove", "path": "/metadata/finalizers"}],
            _request_timeout=TIMEOUT)
        with pytest.raises(ApiException) as ei:
            apps.read_namespaced_deployment(name, ns, _request_timeout=TIMEOUT)
        assert ei.value.status == 404, name


def test_delete_preconditions(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    cm = core.create_namespaced_config_map(ns, _cm("a"), _request_timeout=TIMEOUT)
    with pytest.raises(ApiException) as ei:
        core.delete_namespaced_config_map(
            "a", ns, body=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid="00000000-0000-0000-0000-000000000000")),
            _request_timeout=TIMEOUT)
    assert ei.value.status == 409 and _status(ei.value)["reason"] == "Conflict"
    core.delete_namespaced_config_map(
        "a", ns, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid=cm.metadata.uid,
                                                 resource_version=cm.metadata.resource_version)),
        _request_timeout=TIMEOUT)
    with pytest.raises(ApiException) as ei:
        core.delete_namespaced_config_map("a", ns, _request_timeout=TIMEOUT)
    assert ei.value.status == 404


# --- subresources -----------------------------------------------------------------------


def test_status_subresource(api: Api, apps: client.AppsV1Api) -> None:
    ns = api.ns()
    d = apps.create_namespaced_deployment(ns, _deployment("d", replicas=2),
                                          _request_timeout=TIMEOUT)
    gen = d.metadata.generation
    # patching status: status changes, spec changes are ignored, generation is kept
    s = apps.patch_namespaced_deployment_status(
        "d", ns, {"spec": {"replicas": 7},
                  "status": {"observedGeneration": gen, "replicas": 2, "readyReplicas": 1}},
        _request_timeout=TIMEOUT)
    assert s.status.replicas == 2 and s.status.ready_replicas == 1
    assert s.status.observed_generation == gen
    assert s.spec.replicas == 2 and s.metadata.generation == gen
    # replacing status (with the current resourceVersion)
    s.status.ready_replicas = 2
    s.status.conditions = [client.V1DeploymentCondition(
        type="Available", status="True", reason="MinimumReplicasAvailable",
        message="Deployment has minimum availability.")]
    r = apps.replace_namespaced_deployment_status("d", ns, s, _request_timeout=TIMEOUT)
    assert r.status.ready_replicas == 2
    assert [(c.type, c.status) for c in r.status.conditions] == [("Available", "True")]
    assert int(r.metadata.resource_version) > int(s.metadata.resource_version)
    assert r.metadata.generation == gen
    # a stale status replace conflicts
    s.status.ready_replicas = 0
    with pytest.raises(ApiException) as ei:
        apps.replace_namespaced_deployment_status("d", ns, s, _request_timeout=TIMEOUT)
    assert ei.value.status == 409
    # the main resource ignores status
    got = apps.read_namespaced_deployment("d", ns, _request_timeout=TIMEOUT)
    got.status.ready_replicas = 0
    got.spec.replicas = 3
    upd = apps.replace_namespaced_deployment("d", ns, got, _request_timeout=TIMEOUT)
    assert upd.status.ready_replicas == 2 and upd.spec.replicas == 3
    assert upd.metadata.generation == gen + 1


def test_scale_subresource(api: Api, apps: client.AppsV1Api) -> None:
    ns = api.ns()
    apps.create_namespaced_deployment(ns, _deployment("d", replicas=2), _request_timeout=TIMEOUT)
    sc = apps.read_namespaced_deployment_scale("d", ns, _request_timeout=TIMEOUT)
    assert isinstance(sc, client.V1Scale)
    assert sc.kind == "Scale" and sc.api_version == "autoscaling/v1"
    assert sc.metadata.name == "d" and sc.metadata.namespace == ns
    assert sc.spec.replicas == 2 and sc.status.selector == "app=d"

    sc = apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 4}},
                                                _request_timeout=TIMEOUT)
    assert sc.spec.replicas == 4
    d = apps.read_namespaced_deployment("d", ns, _request_timeout=TIMEOUT)
    assert d.spec.replicas == 4 and d.metadata.generation == 2
    assert sc.metadata.resource_version == d.metadata.resource_version

    body = client.V1Scale(metadata=client.V1ObjectMeta(
        name="d", namespace=ns, resource_version=sc.metadata.resource_version),
        spec=client.V1ScaleSpec(replicas=1))
    sc2 = apps.replace_namespaced_deployment_scale("d", ns, body, _request_timeout=TIMEOUT)
    assert sc2.spec.replicas == 1
    assert apps.read_namespaced_deployment("d", ns, _request_timeout=TIMEOUT).spec.replicas == 1
    # the same (now stale) resourceVersion conflicts
    body.spec.replicas = 5
    with pytest.raises(ApiException) as ei:
        apps.replace_namespaced_deployment_scale("d", ns, body, _request_timeout=TIMEOUT)
    assert ei.value.status == 409
    # negative replicas are invalid
    with pytest.raises(ApiException) as ei:
        apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": -1}},
                                               _request_timeout=TIMEOUT)
    assert ei.value.status == 422
    with pytest.raises(ApiException) as ei:
        apps.read_namespaced_deployment_scale("nope", ns, _request_timeout=TIMEOUT)
    assert ei.value.status == 404


# --- watch ------------------------------------------------------------------------------


def test_watch_resumes_from_list_resource_version(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    core.create_namespaced_config_map(ns, _cm("before"), _request_timeout=TIMEOUT)
    lst = core.list_namespaced_config_map(ns, _request_timeout=TIMEOUT)
    rv = lst.metadata.resource_version
    core.create_namespaced_config_map(ns, _cm("a"), _request_timeout=TIMEOUT)
    core.patch_namespaced_config_map("a", ns, {"data": {"k": "v"}}, _request_timeout=TIMEOUT)
    core.create_namespaced_config_map(ns, _cm("b"), _request_timeout=TIMEOUT)
    core.delete_namespaced_config_map("a", ns, _request_timeout=TIMEOUT)
    core.delete_namespaced_config_map("before", ns, _request_timeout=TIMEOUT)

    w = watch.Watch()
    start = time.monotonic()
    events = list(w.stream(core.list_namespaced_config_map, ns, resource_version=rv,
                           timeout_seconds=1, _request_timeout=TIMEOUT))
    assert time.monotonic() - start < 10
    got = [(e["type"], e["object"].metadata.name) for e in events]
    assert got == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a"),
                   ("DELETED", "before")]
    assert all(isinstance(e["object"], client.V1ConfigMap) for e in events)
    rvs = [int(e["object"].metadata.resource_version) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs) and rvs[0] > int(rv)
    assert events[1]["object"].data == {"k": "v"}
    assert events[3]["raw_object"]["data"] == {"k": "v"}
    assert w.resource_version == str(rvs[-1])


def test_watch_from_compacted_resource_version_gets_410(api: Api, core: client.CoreV1Api,
                                                        pykcm_apiserver: ServerThread) -> None:
    ns = api.ns()
    first = core.create_namespaced_config_map(ns, _cm("c0"), _request_timeout=TIMEOUT)
    for i in range(1, 4):
        core.create_namespaced_config_map(ns, _cm(f"c{i}"), _request_timeout=TIMEOUT)
    store = pykcm_apiserver.server.store
    assert store is not None

    async def compact() -> None:
        store.resource("core/configmaps").trim(now=1e12, max_events=1, max_age=0)

    pykcm_apiserver.call(compact())
    w = watch.Watch()
    # with timeout_seconds the client does not retry: the in-stream ERROR
    # (a Status 410 Expired) surfaces as ApiException(410)
    with pytest.raises(ApiException) as ei:
        for _ in w.stream(core.list_namespaced_config_map, ns,
                          resource_version=first.metadata.resource_version,
                          timeout_seconds=5, _request_timeout=TIMEOUT):
            pass
    assert ei.value.status == 410
    assert ei.value.reason.startswith("Expired: ")
    # the raw stream (the same call with _preload_content=False): HTTP 200, then one
    # ERROR event carrying a Status 410 Expired
    resp: Any = core.list_namespaced_config_map(
        ns, watch=True, resource_version=first.metadata.resource_version, timeout_seconds=5,
        _preload_content=False, _request_timeout=TIMEOUT)
    try:
        assert resp.status == 200
        lines = [ln for ln in resp.read().split(b"\n") if ln.strip()]
    finally:
        resp.release_conn()
    assert len(lines) == 1, lines
    ev = json.loads(lines[0])
    assert ev["type"] == "ERROR"
    status = ev["object"]
    assert status["kind"] == "Status" and status["apiVersion"] == "v1"
    assert status["status"] == "Failure" and status["code"] == 410
    assert status["reason"] == "Expired"
    # a fresh list and watch from its resourceVersion works again
    lst = core.list_namespaced_config_map(ns, _request_timeout=TIMEOUT)
    assert [i.metadata.name for i in lst.items] == ["c0", "c1", "c2", "c3"]
    evs = list(watch.Watch().stream(core.list_namespaced_config_map, ns,
                                    resource_version=lst.metadata.resource_version,
                                    timeout_seconds=1, _request_timeout=TIMEOUT))
    assert evs == []


# --- events and leases ------------------------------------------------------------------


def test_events_field_selector(api: Api, core: client.CoreV1Api) -> None:
    ns = api.ns()
    for i, (obj, reason) in enumerate((("web-1", "Scheduled"), ("web-2", "Pulled"),
                                       ("web-1", "Started"))):
        ev = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=f"ev{i}"),
            involved_object=client.V1ObjectReference(kind="Pod", name=obj, namespace=ns,
                                                     api_version="v1"),
            reason=reason, message=f"{reason} {obj}", type="Normal", count=1,
            source=client.V1EventSource(component="e2e"))
        created = core.create_namespaced_event(ns, ev, _request_timeout=TIMEOUT)
        assert created.involved_object.name == obj and created.reason == reason
    lst = core.list_namespaced_event(ns, field_selector="involvedObject.name=web-1",
                                     _request_timeout=TIMEOUT)
    assert isinstance(lst, client.CoreV1EventList)
    assert [(e.metadata.name, e.reason) for e in lst.items] == [("ev0", "Scheduled"),
                                                                ("ev2", "Started")]
    lst = core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=Pod,reason=Pulled", _request_timeout=TIMEOUT)
    assert [e.metadata.name for e in lst.items] == ["ev1"]
    lst = core.list_namespaced_event(ns, field_selector="involvedObject.name!=web-1",
                                     _request_timeout=TIMEOUT)
    assert [e.metadata.name for e in lst.items] == ["ev1"]
    # an unsupported field is a 400
    with pytest.raises(ApiException) as ei:
        core.list_namespaced_event(ns, field_selector="spec.nope=x", _request_timeout=TIMEOUT)
    assert ei.value.status == 400


def test_lease_update_requires_resource_version(api: Api, kube: client.ApiClient) -> None:
    ns = api.ns()
    coord = client.CoordinationV1Api(kube)
    lease = coord.create_namespaced_lease(ns, client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15)),
        _request_timeout=TIMEOUT)
    assert lease.spec.holder_identity == "a"
    # the client sends what it is given: a body without resourceVersion
    no_rv = client.V1Lease(metadata=client.V1ObjectMeta(name="leader"),
                           spec=client.V1LeaseSpec(holder_identity="b"))
    with pytest.raises(ApiException) as ei:
        coord.replace_namespaced_lease("leader", ns, no_rv, _request_timeout=TIMEOUT)
    assert ei.value.status == 422
    err = _status(ei.value)
    assert err["reason"] == "Invalid"
    assert [c["field"] for c in err["details"]["causes"]] == ["metadata.resourceVersion"]
    # the same over raw HTTP
    code, body = api.put(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/leader",
                         {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                          "metadata": {"name": "leader"}, "spec": {"holderIdentity": "b"}})
    assert code == 422 and body["reason"] == "Invalid", body
    # with the resourceVersion it succeeds
    lease.spec.holder_identity = "b"
    upd = coord.replace_namespaced_lease("leader", ns, lease, _request_timeout=TIMEOUT)
    assert upd.spec.holder_identity == "b"
    # a ConfigMap (unconditional update allowed) takes an update without resourceVersion
    code, _ = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "cm"}})
    code, body = api.put(f"/api/v1/namespaces/{ns}/configmaps/cm",
                         {"metadata": {"name": "cm"}, "data": {"x": "1"}})
    assert code == 200 and body["data"] == {"x": "1"}, body


def test_lease_update_without_resource_version_error_wording(
        api: Api, kube: client.ApiClient) -> None:
    # upstream (registry Store.Update) builds this Invalid error from the *resource*:
    # qualifiedKind := GroupKind{Group: qualifiedResource.Group, Kind: qualifiedResource.Resource}
    # so the message starts `leases.coordination.k8s.io "leader"` and details.kind is "leases"
    ns = api.ns()
    coord = client.CoordinationV1Api(kube)
    coord.create_namespaced_lease(ns, client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"), spec=client.V1LeaseSpec()),
        _request_timeout=TIMEOUT)
    with pytest.raises(ApiException) as ei:
        coord.replace_namespaced_lease("leader", ns, client.V1Lease(
            metadata=client.V1ObjectMeta(name="leader"), spec=client.V1LeaseSpec()),
            _request_timeout=TIMEOUT)
    err = _status(ei.value)
    assert err["code"] == 422
    # v1.36 renders the uint64 0 as JSON (field.Error), not %#v's 0x0
    assert err["message"] == ('leases.coordination.k8s.io "leader" is invalid: '
                              'metadata.resourceVersion: Invalid value: 0: '
                              'must be specified for an update')
    assert err["details"]["kind"] == "leases"
    assert err["details"]["group"] == "coordination.k8s.io"
    assert err["details"]["name"] == "leader"
    assert err["details"]["causes"] == [{
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 0: must be specified for an update",
        "field": "metadata.resourceVersion"}]


def test_server_side_apply_with_the_dynamic_client(kube: client.ApiClient, api: Api) -> None:
    from kubernetes import dynamic
    from kubernetes.dynamic.exceptions import ConflictError

    ns = api.ns()
    cms = dynamic.DynamicClient(kube).resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"},
            "data": {"a": "1"}}
    out = cms.server_side_apply(body=body, field_manager="first", namespace=ns)
    assert [(m.manager, m.operation) for m in out.metadata.managedFields] == [("first", "Apply")]
    body["data"]["a"] = "2"
    with pytest.raises(ConflictError):
        cms.server_side_apply(body=body, field_manager="second", namespace=ns)
    out = cms.server_side_apply(body=body, field_manager="second", namespace=ns,
                                force_conflicts=True)
    assert out.to_dict()["data"] == {"a": "2"}
    assert [m.manager for m in out.metadata.managedFields] == ["second"]
