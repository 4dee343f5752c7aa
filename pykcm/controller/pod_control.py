"""PodControl: how controllers create, delete and patch the pods they manage (upstream PodControlInterface).

The ReplicaSet, Job, DaemonSet and StatefulSet controllers never talk to the
pods endpoint directly: they go through a ``PodControl`` so that tests can
swap in :class:`FakePodControl` and count what would have been written.

Data flow of a create (:class:`RealPodControl`)::

    template (spec.template of the owner) + owner + controller_ref
        │ validate_controller_ref          (apiVersion, kind, controller, blockOwnerDeletion)
        │ get_pod_from_template            (labels / annotations / finalizers copied,
        ▼                                   generateName "<owner>-", ownerReferences, spec copy)
    POST pods ──ok──►  Normal  SuccessfulCreate "Created pod: <name>"   on the owner
              └─err─►  Warning FailedCreate    "Error creating: <err>"  (unless the namespace
                                                is terminating), then the error is raised

A delete records ``SuccessfulDelete`` / ``FailedDelete``. As upstream, a pod
that is already gone (NotFound) raises NotFound *without* a FailedDelete
event: the caller decides (the ReplicaSet controller counts it as observed
and carries on); any other failure raises :class:`DeletePodError`, whose
message is upstream's ``unable to delete pods: <cause>`` (the ReplicaSet's
ReplicaFailure condition shows it), the API error chained as its cause. A patch is a strategic merge patch and records nothing.

``on_write(pod, controller_ref)`` (upstream's RealPodControl.OnWrite), when
given, hears of every pod created or patched, as the API server answered
(``controller_ref``: the pod's controller reference, or None): the ReplicaSet
and Job controllers feed their consistency store with it. Deletes are not
reported (the API's answer to a delete is not used upstream either).

Events go through the :class:`~pykcm.controller.event_recorder.EventRecorder`,
which never blocks: the owner passed in must carry ``kind`` and
``apiVersion`` (objects from pykcm informers do), or the event is dropped
with a log line, as client-go does.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from pykcm.api.owner_refs import get_controller_of
from pykcm.api.validation import name_is_dns_subdomain
from pykcm.client import Client
from pykcm.client.errors import has_status_cause, is_not_found
from pykcm.controller.event_recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder

__all__ = [
    "FAILED_CREATE_POD_REASON",
    "FAILED_DELETE_POD_REASON",
    "SUCCESSFUL_CREATE_POD_REASON",
    "SUCCESSFUL_DELETE_POD_REASON",
    "DeletePodError",
    "FakePodControl",
    "OnPodWrite",
    "PodControl",
    "RealPodControl",
    "get_pod_from_template",
    "validate_controller_ref",
]

log = logging.getLogger("pykcm.controller.pod_control")

# Event reasons, as upstream's pkg/controller constants (also used in conditions).
FAILED_CREATE_POD_REASON = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON = "SuccessfulCreate"
FAILED_DELETE_POD_REASON = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON = "SuccessfulDelete"

# v1.NamespaceTerminatingCause: the StatusCause type the API server attaches
# when a create is refused because its namespace is being deleted.
_NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


class DeletePodError(Exception):
    """A pod delete failed for another reason than NotFound (``__cause__``: the API error)."""


class PodControl(Protocol):
    """What a controller may do to pods (upstream PodControlInterface)."""

    async def create_pods(self, namespace: str, template: Mapping[str, Any],
                          owner: Mapping[str, Any], controller_ref: Mapping[str, Any]) -> None:
        """Create one pod from ``template`` controlled by ``owner``."""
        ...

    async def create_pods_with_generate_name(self, namespace: str, template: Mapping[str, Any],
                                             owner: Mapping[str, Any],
                                             controller_ref: Mapping[str, Any],
                                             generate_name: str) -> None:
        """As :meth:`create_pods`, with ``metadata.generateName`` set to ``generate_name``."""
        ...

    async def delete_pod(self, namespace: str, name: str, owner: Mapping[str, Any]) -> None:
        """Delete the pod ``namespace/name`` on behalf of ``owner``."""
        ...

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Apply a strategic merge patch to the pod."""
        ...


def validate_controller_ref(controller_ref: Mapping[str, Any] | None) -> None:
    """Raise ValueError unless ``controller_ref`` is a usable controller reference.

    Same checks and messages as upstream's validateControllerRef.
    """
    if controller_ref is None:
        raise ValueError("controllerRef is nil")
    if not controller_ref.get("apiVersion"):
        raise ValueError("controllerRef has empty APIVersion")
    if not controller_ref.get("kind"):
        raise ValueError("controllerRef has empty Kind")
    if controller_ref.get("controller") is not True:
        raise ValueError("controllerRef.Controller is not set to true")
    if controller_ref.get("blockOwnerDeletion") is not True:
        raise ValueError("controllerRef.BlockOwnerDeletion is not set")


def _pods_prefix(controller_name: str) -> str:
    # "<name>-" reads better, but only if it is still a valid generateName
    # (a 253-character owner name would overflow): upstream getPodsPrefix.
    prefix = f"{controller_name}-"
    if name_is_dns_subdomain(prefix, True):
        return controller_name
    return prefix


def get_pod_from_template(template: Mapping[str, Any], owner: Mapping[str, Any],
                          controller_ref: Mapping[str, Any] | None) -> dict[str, Any]:
    """The pod a controller creates from its pod template (upstream GetPodFromTemplate).

    Labels, annotations and finalizers are copied from the template's
    metadata (nothing else of it: a template's name is not the pod's),
    ``generateName`` is ``"<owner name>-"``, the controller reference is the
    only ownerReference, and the spec is a deep copy, so the caller's cached
    template is never shared with the new object.
    """
    tmeta: Mapping[str, Any] = template.get("metadata") or {}
    owner_name = str((owner.get("metadata") or {}).get("name", ""))
    meta: dict[str, Any] = {
        "labels": dict(tmeta.get("labels") or {}),
        "annotations": dict(tmeta.get("annotations") or {}),
        "generateName": _pods_prefix(owner_name),
        "finalizers": list(tmeta.get("finalizers") or ()),
    }
    if controller_ref is not None:
        meta["ownerReferences"] = [dict(controller_ref)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": _deep_copy(template.get("spec") or {}),
    }


def _deep_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    # A JSON round trip: several times faster than copy.deepcopy on a pod spec, and a
    # template is JSON by construction (deepcopy stays for a caller's own Mapping types).
    try:
        out: dict[str, Any] = orjson.loads(orjson.dumps(value))
    except TypeError:
        return copy.deepcopy(dict(value))
    return out


def _has_status_cause(exc: BaseException, cause_type: str) -> bool:
    return has_status_cause(exc, cause_type)


#: Called with a pod as written and its controller reference (RealPodControl.OnWrite).
OnPodWrite = Callable[[Mapping[str, Any], Mapping[str, Any] | None], None]


class RealPodControl:
    """The :class:`PodControl` that writes to the API server and records events on the owner."""

    def __init__(self, client: Client, recorder: EventRecorder,
                 on_write: OnPodWrite | None = None) -> None:
        self.client = client
        self.recorder = recorder
        self.on_write = on_write

    async def create_pods(self, namespace: str, template: Mapping[str, Any],
                          owner: Mapping[str, Any], controller_ref: Mapping[str, Any]) -> None:
        await self.create_pods_with_generate_name(namespace, template, owner, controller_ref, "")

    async def create_pods_with_generate_name(self, namespace: str, template: Mapping[str, Any],
                                             owner: Mapping[str, Any],
                                             controller_ref: Mapping[str, Any],
                                             generate_name: str) -> None:
        validate_controller_ref(controller_ref)
        pod = get_pod_from_template(template, owner, controller_ref)
        if generate_name:
            pod["metadata"]["generateName"] = generate_name
        await self._create_pod(namespace, pod, owner)

    async def _create_pod(self, namespace: str, pod: dict[str, Any],
                          owner: Mapping[str, Any]) -> None:
        if not pod["metadata"]["labels"]:
            # A controller finds its pods by label: an unlabelled pod would be
            # created and then never seen again.
            raise ValueError("unable to create pods, no labels")
        try:
            new_pod = await self.client.create("pods", pod, namespace)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # No event when the namespace is going away: every controller in
            # it would report the same refusal (upstream skips it too).
            if not _has_status_cause(exc, _NAMESPACE_TERMINATING_CAUSE):
                self.recorder.eventf(owner, EVENT_TYPE_WARNING, FAILED_CREATE_POD_REASON,
                                     "Error creating: %s", exc)
            raise
        name = (new_pod.get("metadata") or {}).get("name")
        if self.on_write is not None:
            self.on_write(new_pod, get_controller_of(new_pod))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("Controller %s created pod %s/%s",
                      (owner.get("metadata") or {}).get("name"), namespace, name)
        self.recorder.eventf(owner, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON,
                             "Created pod: %s", name)

    async def delete_pod(self, namespace: str, name: str, owner: Mapping[str, Any]) -> None:
        """Delete the pod; a pod already gone raises NotFound with no event (as upstream)."""
        log.debug("Controller %s deleting pod %s/%s",
                  (owner.get("metadata") or {}).get("name"), namespace, name)
        try:
            await self.client.delete("pods", name, namespace)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_not_found(exc):
                log.debug("Pod %s/%s has already been deleted.", namespace, name)
                raise
            self.recorder.eventf(owner, EVENT_TYPE_WARNING, FAILED_DELETE_POD_REASON,
                                 "Error deleting: %s", exc)
            raise DeletePodError(f"unable to delete pods: {exc}") from exc
        self.recorder.eventf(owner, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON,
                             "Deleted pod: %s", name)

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        pod = await self.client.patch("pods", name, dict(patch), "strategic", namespace)
        if self.on_write is not None:
            self.on_write(pod, get_controller_of(pod))


@dataclass
class FakePodControl:
    """A :class:`PodControl` that records what it is asked and writes nothing (upstream FakePodControl).

    ``err``: raised by every call after it has been recorded. ``create_limit``
    (0: none): creates past that many calls raise without being recorded, to
    test partial batches.
    """

    templates: list[Mapping[str, Any]] = field(default_factory=list)
    controller_refs: list[Mapping[str, Any]] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    generate_names: list[str] = field(default_factory=list)
    delete_pod_names: list[str] = field(default_factory=list)
    patches: list[Mapping[str, Any]] = field(default_factory=list)
    err: BaseException | None = None
    create_limit: int = 0
    create_call_count: int = 0

    async def create_pods(self, namespace: str, template: Mapping[str, Any],
                          owner: Mapping[str, Any], controller_ref: Mapping[str, Any]) -> None:
        await self.create_pods_with_generate_name(namespace, template, owner, controller_ref, "")

    async def create_pods_with_generate_name(self, namespace: str, template: Mapping[str, Any],
                                             owner: Mapping[str, Any],
                                             controller_ref: Mapping[str, Any],
                                             generate_name: str) -> None:
        self.create_call_count += 1
        if self.create_limit and self.create_call_count > self.create_limit:
            raise RuntimeError(f"not creating pod, limit {self.create_limit} already reached "
                               f"(create call {self.create_call_count})")
        self.templates.append(template)
        self.controller_refs.append(controller_ref)
        self.namespaces.append(namespace)
        self.generate_names.append(generate_name)
        if self.err is not None:
            raise self.err

    async def delete_pod(self, namespace: str, name: str, owner: Mapping[str, Any]) -> None:
        self.delete_pod_names.append(name)
        if self.err is not None:
            raise self.err

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.patches.append(patch)
        if self.err is not None:
            raise self.err

    def clear(self) -> None:
        """Forget everything recorded and lift ``create_limit`` (``err`` stays), as upstream Clear."""
        self.templates.clear()
        self.controller_refs.clear()
        self.namespaces.clear()
        self.generate_names.clear()
        self.delete_pod_names.clear()
        self.patches.clear()
        self.create_limit = 0
        self.create_call_count = 0
