"""Writes built from compact cached objects (FrozenObject): the client's JSON bodies and the
Deployment controller's deep_copy encode them as the dicts they stand for."""

from __future__ import annotations

from typing import Any

import orjson

from pykcm.cache.frozen_object import CompactDecoder
from pykcm.client.rest_client import _dumps
from pykcm.controllers.deployment.util import deep_copy

OBJ: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "labels": {"app": "web"},
                 "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o",
                                      "uid": "u0", "controller": True}]},
    "spec": {"replicas": 3}, "status": {"replicas": 1}}


def _frozen() -> Any:
    lst = orjson.dumps({"kind": "StatefulSetList", "apiVersion": "apps/v1",
                        "metadata": {"resourceVersion": "1"}, "items": [OBJ]})
    return CompactDecoder().list(lst)["items"][0]


def test_client_body_with_frozen_parts_is_the_plain_json() -> None:
    frozen = _frozen()
    # a status write as controllers build it: a shallow copy keeping the cached metadata
    body = {**frozen, "status": {"replicas": 3}}
    assert orjson.loads(_dumps(body)) == {**OBJ, "status": {"replicas": 3}}
    assert orjson.loads(_dumps({"refs": frozen["metadata"]["ownerReferences"]})) == {
        "refs": OBJ["metadata"]["ownerReferences"]}


def test_deployment_deep_copy_of_a_frozen_object_is_a_mutable_dict() -> None:
    copy = deep_copy(_frozen())
    assert copy == OBJ and type(copy) is dict
    copy["metadata"]["labels"]["x"] = "y"  # a private copy
