"""PodControl: the pod built from a template, RealPodControl's writes and events (with a fake
client and recorder), and FakePodControl's bookkeeping."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.api.owner_refs import new_controller_ref
from pykcm.client import Client
from pykcm.client.errors import Forbidden, InternalError, NotFound
from pykcm.controller import (
    DeletePodError,
    EventRecorder,
    FakePodControl,
    RealPodControl,
    get_pod_from_template,
    validate_controller_ref,
)

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid"}}
REF = new_controller_ref(OWNER, "apps/v1", "ReplicaSet")
TEMPLATE = {
    "metadata": {"name": "ignored", "labels": {"app": "web"}, "annotations": {"a": "1"},
                 "finalizers": ["f.io/x"], "namespace": "ignored-too"},
    "spec": {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "A", "value": "1"}]}]},
}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Mapping[str, Any], str, str, str]] = []

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((obj, type_, reason, message))

    def eventf(self, obj: Mapping[str, Any], type_: str, reason: str, fmt: str,
               *args: Any) -> None:
        self.event(obj, type_, reason, fmt % args)


class FakeClient:
    def __init__(self, err: Exception | None = None) -> None:
        self.err = err
        self.calls: list[tuple[Any, ...]] = []

    async def create(self, resource: str, body: Mapping[str, Any],
                     namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("create", resource, copy.deepcopy(dict(body)), namespace))
        if self.err is not None:
            raise self.err
        out = copy.deepcopy(dict(body))
        out["metadata"]["name"] = out["metadata"]["generateName"] + "abcde"
        return out

    async def delete(self, resource: str, name: str, namespace: str | None = None) -> None:
        self.calls.append(("delete", resource, name, namespace))
        if self.err is not None:
            raise self.err

    async def patch(self, resource: str, name: str, body: Any, patch_type: str = "merge",
                    namespace: str | None = None) -> None:
        self.calls.append(("patch", resource, name, body, patch_type, namespace))


def real(err: Exception | None = None) -> tuple[RealPodControl, FakeClient, Recorder]:
    c, r = FakeClient(err), Recorder()
    return RealPodControl(cast(Client, c), cast(EventRecorder, r)), c, r


def status(code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None
           ) -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason,
            "message": message, "details": {"causes": causes or []}}


def test_get_pod_from_template() -> None:
    before = copy.deepcopy(TEMPLATE)
    pod = get_pod_from_template(TEMPLATE, OWNER, REF)
    assert pod == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"},
                     "generateName": "web-", "finalizers": ["f.io/x"],
                     "ownerReferences": [REF]},
        "spec": TEMPLATE["spec"],
    }
    # Copies, not shared: a write to the pod never reaches the (cached) template.
    pod["spec"]["containers"][0]["env"][0]["value"] = "2"
    pod["metadata"]["labels"]["x"] = "y"
    assert TEMPLATE == before
    assert "ownerReferences" not in get_pod_from_template(TEMPLATE, OWNER, None)["metadata"]


def test_pods_prefix_falls_back_to_the_name_when_invalid() -> None:
    # Upstream validates "<name>-" with maskTrailingDash, which drops two
    # characters: a 253-character name still gets its dash, 254 does not.
    long_name = "a" * 254
    pod = get_pod_from_template(TEMPLATE, {"metadata": {"name": long_name}}, REF)
    assert pod["metadata"]["generateName"] == long_name
    assert get_pod_from_template(TEMPLATE, {"metadata": {"name": "a" * 253}},
                                 REF)["metadata"]["generateName"] == "a" * 253 + "-"


@pytest.mark.parametrize(("ref", "message"), [
    (None, "controllerRef is nil"),
    ({**REF, "apiVersion": ""}, "controllerRef has empty APIVersion"),
    ({**REF, "kind": ""}, "controllerRef has empty Kind"),
    ({**REF, "controller": False}, "controllerRef.Controller is not set to true"),
    ({k: v for k, v in REF.items() if k != "blockOwnerDeletion"},
     "controllerRef.BlockOwnerDeletion is not set"),
])
async def test_invalid_controller_ref_rejected_before_any_write(
        ref: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        validate_controller_ref(ref)
    pc, client, rec = real()
    with pytest.raises(ValueError, match=f"^{message}$"):
        await pc.create_pods("ns", TEMPLATE, OWNER, cast(dict[str, Any], ref))
    assert client.calls == [] and rec.events == []


async def test_create_records_success_event() -> None:
    pc, client, rec = real()
    await pc.create_pods("ns", TEMPLATE, OWNER, REF)
    assert client.calls[0][:2] == ("create", "pods") and client.calls[0][3] == "ns"
    assert client.calls[0][2] == get_pod_from_template(TEMPLATE, OWNER, REF)
    assert rec.events == [(OWNER, "Normal", "SuccessfulCreate", "Created pod: web-abcde")]


async def test_create_with_generate_name() -> None:
    pc, client, rec = real()
    await pc.create_pods_with_generate_name("ns", TEMPLATE, OWNER, REF, "job-x-")
    assert client.calls[0][2]["metadata"]["generateName"] == "job-x-"
    assert rec.events[0][3] == "Created pod: job-x-abcde"


async def test_create_without_labels_is_refused() -> None:
    pc, client, rec = real()
    with pytest.raises(ValueError, match="^unable to create pods, no labels$"):
        await pc.create_pods("ns", {"spec": {}}, OWNER, REF)
    assert client.calls == [] and rec.events == []


async def test_create_failure_records_warning_and_reraises() -> None:
    err = Forbidden(status(403, "Forbidden", 'pods "web-" is forbidden: exceeded quota'))
    pc, _, rec = real(err)
    with pytest.raises(Forbidden) as ei:
        await pc.create_pods("ns", TEMPLATE, OWNER, REF)
    assert ei.value is err
    assert rec.events == [(OWNER, "Warning", "FailedCreate",
                           'Error creating: pods "web-" is forbidden: exceeded quota')]


async def test_create_in_terminating_namespace_records_nothing() -> None:
    err = Forbidden(status(403, "Forbidden", "namespace ns is being terminated",
                           [{"reason": "NamespaceTerminating", "message": "x", "field": "ns"}]))
    pc, _, rec = real(err)
    with pytest.raises(Forbidden):
        await pc.create_pods("ns", TEMPLATE, OWNER, REF)
    assert rec.events == []


async def test_delete_records_events_and_not_found_is_raised_silently() -> None:
    pc, client, rec = real()
    await pc.delete_pod("ns", "web-1", OWNER)
    assert client.calls == [("delete", "pods", "web-1", "ns")]
    assert rec.events == [(OWNER, "Normal", "SuccessfulDelete", "Deleted pod: web-1")]

    pc, _, rec = real(NotFound(status(404, "NotFound", 'pods "web-1" not found')))
    with pytest.raises(NotFound):
        await pc.delete_pod("ns", "web-1", OWNER)
    assert rec.events == []

    pc, _, rec = real(InternalError(status(500, "InternalError", "boom")))
    with pytest.raises(DeletePodError, match="^unable to delete pods: boom$") as info:
        await pc.delete_pod("ns", "web-1", OWNER)
    # upstream's fmt.Errorf("unable to delete pods: %v", err); the API error is the cause.
    assert isinstance(info.value.__cause__, InternalError)
    assert rec.events == [(OWNER, "Warning", "FailedDelete", "Error deleting: boom")]


async def test_patch_is_strategic() -> None:
    pc, client, rec = real()
    await pc.patch_pod("ns", "p", {"metadata": {"labels": {"a": "b"}}})
    assert client.calls == [("patch", "pods", "p", {"metadata": {"labels": {"a": "b"}}},
                             "strategic", "ns")]
    assert rec.events == []


async def test_fake_pod_control_records_and_limits() -> None:
    fake = FakePodControl(create_limit=2)
    await fake.create_pods("ns", TEMPLATE, OWNER, REF)
    await fake.create_pods_with_generate_name("ns", TEMPLATE, OWNER, REF, "g-")
    with pytest.raises(RuntimeError, match=r"limit 2 already reached \(create call 3\)"):
        await fake.create_pods("ns", TEMPLATE, OWNER, REF)
    assert fake.templates == [TEMPLATE, TEMPLATE]
    assert fake.controller_refs == [REF, REF]
    assert fake.generate_names == ["", "g-"]
    assert fake.create_call_count == 3
    await fake.delete_pod("ns", "p1", OWNER)
    await fake.patch_pod("ns", "p1", {"x": 1})
    assert fake.delete_pod_names == ["p1"] and fake.patches == [{"x": 1}]
    fake.clear()
    assert (fake.templates, fake.delete_pod_names, fake.patches, fake.create_call_count,
            fake.create_limit) == ([], [], [], 0, 0)

    boom = RuntimeError("boom")
    fake = FakePodControl(err=boom)
    with pytest.raises(RuntimeError, match="boom"):
        await fake.create_pods("ns", TEMPLATE, OWNER, REF)
    with pytest.raises(RuntimeError, match="boom"):
        await fake.delete_pod("ns", "x", OWNER)
    # Recorded even when failing, as upstream: the controller did try.
    assert len(fake.templates) == 1 and fake.delete_pod_names == ["x"]
