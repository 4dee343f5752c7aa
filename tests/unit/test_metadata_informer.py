"""Metadata-only informers without a server: MetadataListWatch's decoding (list pages and
watch lines, managedFields dropped, whole objects reduced to their metadata), the
factory's one-informer-per-resource rule, the ObjectOrMetadata choice, and the lister
over a PartialObjectMetadata cache (Hypothesis: it answers as a plain filter would)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.client import Client, Config
from pykcm.informers import SharedInformerFactory
from pykcm.informers.metadata_factory import MetadataSharedInformerFactory
from pykcm.informers.metadata_list_watch import (
    LIST_ACCEPT,
    OBJECT_ACCEPT,
    MetadataListWatch,
    as_partial_object_metadata,
)
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory

MANAGED = [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {}}}]


def _partial(name: str, ns: str = "default", **meta: Any) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                         "resourceVersion": "5", **meta}}


class _FakeClient:
    """The one method MetadataListWatch.list calls, answering canned bytes."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.calls: list[dict[str, Any]] = []

    async def list_raw(self, resource: Any, namespace: Any, **kw: Any) -> bytes:
        self.calls.append({"namespace": namespace, **kw})
        return self.body


def _client() -> Client:
    return Client(Config(host="https://127.0.0.1:1", token="t"))


async def test_list_asks_for_partial_object_metadata_and_drops_managed_fields() -> None:
    body = orjson.dumps({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                         "metadata": {"resourceVersion": "7"},
                         "items": [_partial("a", managedFields=MANAGED)]})
    fake = _FakeClient(body)
    lw = MetadataListWatch(fake, "v1/configmaps", namespace="ns1")  # type: ignore[arg-type]
    out = await lw.list(limit=500)
    assert fake.calls[0]["accept"] == LIST_ACCEPT and fake.calls[0]["limit"] == 500
    assert fake.calls[0]["namespace"] == "ns1"
    assert out["metadata"] == {"resourceVersion": "7"}
    assert out["items"] == [_partial("a")]


async def test_empty_list_has_null_items_and_managed_fields_can_be_kept() -> None:
    body = orjson.dumps({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                         "metadata": {"resourceVersion": "7"}, "items": None})
    lw = MetadataListWatch(_FakeClient(body), "v1/configmaps")  # type: ignore[arg-type]
    assert (await lw.list())["items"] == []
    keep = MetadataListWatch(_FakeClient(orjson.dumps({"items": [_partial(
        "a", managedFields=MANAGED)]})), "v1/configmaps",  # type: ignore[arg-type]
        strip_managed_fields=False)
    assert (await keep.list())["items"][0]["metadata"]["managedFields"] == MANAGED


def test_watch_lines_become_partial_object_metadata() -> None:
    lw = MetadataListWatch(_FakeClient(b""), "v1/configmaps")  # type: ignore[arg-type]
    whole = {"kind": "ConfigMap", "apiVersion": "v1", "data": {"k": "v"},
             "metadata": {"name": "a", "managedFields": MANAGED}}
    typ, obj = lw._event(orjson.dumps({"type": "MODIFIED", "object": whole}))
    # A server that ignored the Accept parameters: only the metadata is cached.
    assert (typ, obj) == ("MODIFIED", {"kind": "PartialObjectMetadata",
                                       "apiVersion": "meta.k8s.io/v1",
                                       "metadata": {"name": "a"}})
    status = {"kind": "Status", "code": 410, "reason": "Expired"}
    assert lw._event(orjson.dumps({"type": "ERROR", "object": status})) == ("ERROR", status)
    assert "as=PartialObjectMetadata;" in OBJECT_ACCEPT


def test_as_partial_object_metadata_of_odd_input() -> None:
    assert as_partial_object_metadata(None, True)["metadata"] == {}
    assert as_partial_object_metadata({"metadata": "x"}, True)["metadata"] == {}


async def test_factory_one_informer_per_resource_and_the_object_or_metadata_choice() -> None:
    client = _client()
    try:
        objects = SharedInformerFactory(client, name="")
        metadata = MetadataSharedInformerFactory(client, name="meta")
        gi = metadata.for_resource("apps", "v1", "deployments")
        assert metadata.for_resource("apps", "v1", "deployments") is gi
        assert gi.informer.name == "meta/deployments.apps"
        assert isinstance(gi._lw, MetadataListWatch)
        # a CRD: resolved through discovery when it first lists
        crd = metadata.for_resource("example.com", "v1", "widgets")
        assert crd.info is None
        both = ObjectOrMetadataInformerFactory(objects, metadata)
        assert both.for_resource("apps", "v1", "deployments") is gi
        full = objects.apps_v1.deployments
        assert both.for_resource("apps", "v1", "deployments") is full
        assert not both.is_metadata_only(full) and both.is_metadata_only(crd)
        with pytest.raises(ValueError):
            MetadataSharedInformerFactory(client, resync=-1)
        await metadata.shutdown()
        metadata.start()  # nothing after shutdown
        assert await metadata.wait_for_cache_sync(0) == {}
    finally:
        await client.close()


_names = st.text("abcdef", min_size=1, max_size=3)
_objects = st.lists(
    st.tuples(st.sampled_from(["ns1", "ns2"]), _names,
              st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["x", "y"]),
                              max_size=2)),
    max_size=20, unique_by=lambda t: (t[0], t[1]))


@settings(max_examples=60, deadline=None)
@given(_objects, st.sampled_from(["ns1", "ns2"]),
       st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["x", "y"]),
                       max_size=2))
def test_lister_answers_as_a_filter(objs: list[tuple[str, str, dict[str, str]]], ns: str,
                                    selector: dict[str, str]) -> None:
    metadata = MetadataSharedInformerFactory(_CLIENT)
    gi = metadata.for_resource("", "v1", "secrets")
    indexer = gi.informer.get_indexer()
    for o_ns, name, labels in objs:
        indexer.add(_partial(name, o_ns, labels=labels))

    def want(in_ns: str | None) -> set[str]:
        return {f"{o_ns}/{name}" for o_ns, name, labels in objs
                if (in_ns is None or o_ns == in_ns)
                and all(labels.get(k) == v for k, v in selector.items())}

    def got(items: list[Any]) -> set[str]:
        return {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in items}

    assert got(gi.lister.list(selector)) == want(None)
    assert got(gi.lister.by_namespace(ns).list(selector)) == want(ns)
    for o_ns, name, _ in objs:
        assert gi.lister.by_namespace(o_ns).get(name)["metadata"]["uid"] == \
            f"uid-{o_ns}-{name}"


# One client object for the Hypothesis examples (never sends a request).
_CLIENT = Client(Config(host="https://127.0.0.1:1", token="t"))
