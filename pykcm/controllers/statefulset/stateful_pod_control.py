"""StatefulPodControl: a StatefulSet's writes to pods and claims, each with its event.

kube-controller-manager v1.36 ``pkg/controller/statefulset/stateful_pod_control.go``.

- create a pod: its missing claims first (``<claim>-<set>-<ordinal>``), then the pod,
  then the claims' owner references per the retention policy;
- update a pod whose identity or storage drifted (name labels, claim volumes), creating
  missing claims, fixing claim owners, retrying conflicts on a fresh cached copy;
- delete a pod (already gone counts as deleted).

Events on the StatefulSet (source ``statefulset-controller``): ``SuccessfulCreate``
"create Pod web-0 in StatefulSet web successful" (verbs capitalized as upstream's
``cases.Title``: "Create Pod ..."), ``SuccessfulCreate`` "Create Claim data-web-0 Pod
web-0 in StatefulSet web success", ``SuccessfulDelete``, ``SuccessfulUpdate``, and the
``Failed*`` Warning counterparts with the error; ``ConflictingController`` when another
controller manages a claim.

Claims are read from the claim informer's cache; without one (an API server that does
not serve PersistentVolumeClaims) every claim reads as missing.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.randomness import RandomSource, random_of
from pykcm.client import Client
from pykcm.client.errors import is_already_exists, is_conflict, is_not_found
from pykcm.controller.consistency import ConsistencyStoreLike, NoopConsistencyStore
from pykcm.controller.controller_ref_manager import AggregateError
from pykcm.controller.event_recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from pykcm.controllers.statefulset.stateful_set_utils import (
    CLAIMS_GROUP_RESOURCE,
    PERSISTENT_VOLUME_CLAIMS,
    get_ordinal,
    get_persistent_volume_claim_name,
    get_persistent_volume_claims,
    has_stale_owner_ref,
    has_unexpected_controller,
    identity_matches,
    is_claim_owner_up_to_date,
    retention_policy,
    storage_matches,
    update_claim_owner_refs,
    update_identity,
    update_storage,
)

__all__ = ["StatefulPodControl"]

log = logging.getLogger("pykcm.controllers.statefulset")

_DEFAULT_BACKOFF: Final = (0.01, 5.0, 4)  # client-go retry.DefaultBackoff: 10ms, x5, 4 steps


class StatefulPodControl:
    """Creates, updates and deletes a StatefulSet's pods and claims, recording events."""

    def __init__(self, client: Client, pod_indexer: Any, claim_indexer: Any | None,
                 recorder: EventRecorder,
                 consistency: ConsistencyStoreLike | None = None,
                 clock: Clock | None = None, rng: RandomSource | None = None) -> None:
        self.client = client
        self._rng = random_of(rng)
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        self.pod_indexer = pod_indexer
        self.claim_indexer = claim_indexer
        self.recorder = recorder
        self.consistency: ConsistencyStoreLike = (consistency if consistency is not None
                                                  else NoopConsistencyStore())

    def _wrote(self, set_: Mapping[str, Any], resource: str, obj: Mapping[str, Any]) -> None:
        """A pod or claim written for ``set_``: its next sync waits for the cache to see it."""
        meta = meta_of(set_)
        self.consistency.wrote_at(f"{meta.get('namespace')}/{meta.get('name')}",
                                  str(meta.get("uid") or ""), resource,
                                  str(meta_of(obj).get("resourceVersion") or ""))

    # -- reads ---------------------------------------------------------------------------------

    def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        if self.claim_indexer is None:
            return None
        claim: Mapping[str, Any] | None = self.claim_indexer.get_by_key(f"{namespace}/{name}")
        return claim

    # -- events --------------------------------------------------------------------------------

    def record_pod_event(self, verb: str, set_: Mapping[str, Any], pod: Mapping[str, Any],
                         err: BaseException | None) -> None:
        title = verb.title()
        pod_name, set_name = meta_of(pod).get("name"), meta_of(set_).get("name")
        if err is None:
            self.recorder.event(set_, EVENT_TYPE_NORMAL, f"Successful{title}",
                                f"{title} Pod {pod_name} in StatefulSet {set_name} successful")
        else:
            self.recorder.event(set_, EVENT_TYPE_WARNING, f"Failed{title}",
                                f"{title} Pod {pod_name} in StatefulSet {set_name} failed "
                                f"error: {err}")

    def record_claim_event(self, verb: str, set_: Mapping[str, Any], pod: Mapping[str, Any],
                           claim: Mapping[str, Any], err: BaseException | None) -> None:
        title = verb.title()
        claim_name = meta_of(claim).get("name")
        pod_name, set_name = meta_of(pod).get("name"), meta_of(set_).get("name")
        if err is None:
            self.recorder.event(set_, EVENT_TYPE_NORMAL, f"Successful{title}",
                                f"{title} Claim {claim_name} Pod {pod_name} in StatefulSet "
                                f"{set_name} success")
        else:
            self.recorder.event(set_, EVENT_TYPE_WARNING, f"Failed{title}",
                                f"{title} Claim {claim_name} for Pod {pod_name} in StatefulSet "
                                f"{set_name} failed error: {err}")

    # -- pods ----------------------------------------------------------------------------------

    async def create_stateful_pod(self, set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
        try:
            await self.create_persistent_volume_claims(set_, pod)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.record_pod_event("create", set_, pod, exc)
            raise
        err: BaseException | None = None
        try:
            self._wrote(set_, "pods", await self.client.create(
                "pods", pod, str(meta_of(pod).get("namespace") or "")))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_already_exists(exc):
                raise
            err = exc
        try:
            await self.update_pod_claim_for_retention_policy(set_, pod)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.record_pod_event("update", set_, pod, exc)
            raise
        self.record_pod_event("create", set_, pod, err)
        if err is not None:
            raise err

    async def update_stateful_pod(self, set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
        """Bring the pod's identity, storage and claim owners in line; retries conflicts
        on a fresh copy from the cache (client-go's RetryOnConflict, DefaultBackoff)."""
        attempted = False
        err: BaseException | None = None
        delay, factor, steps = _DEFAULT_BACKOFF
        for step in range(steps):
            err = None
            try:
                consistent = True
                if not identity_matches(set_, pod):
                    update_identity(set_, pod)
                    consistent = False
                if not storage_matches(set_, pod):
                    update_storage(set_, pod)
                    consistent = False
                    await self._recorded("update", set_, pod,
                                         self.create_persistent_volume_claims(set_, pod))
                if not await self.claims_match_retention_policy(set_, pod):
                    await self._recorded("update", set_, pod,
                                         self.update_pod_claim_for_retention_policy(set_, pod))
                    consistent = False
                if consistent:
                    return
                attempted = True
                try:
                    self._wrote(set_, "pods", await self.client.update(
                        "pods", pod, str(meta_of(pod).get("namespace") or "")))
                    break
                except asyncio.CancelledError:
                    raise
                except Exception:
                    cached = self.pod_indexer.get_by_key(
                        f"{meta_of(set_).get('namespace')}/{meta_of(pod).get('name')}")
                    if cached is not None:
                        pod = copy.deepcopy(dict(cached))
                    raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - retried on conflict, else raised
                err = exc
                if not is_conflict(exc) or step == steps - 1:
                    break
                await self.clock.sleep(delay * (1 + 0.1 * self._rng.random()))
                delay *= factor
        if attempted:
            self.record_pod_event("update", set_, pod, err)
        if err is not None:
            raise err

    async def _recorded(self, verb: str, set_: Mapping[str, Any], pod: Mapping[str, Any],
                        op: Any) -> None:
        """Await ``op``; a failure gets a Failed<verb> event before it is raised."""
        try:
            await op
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.record_pod_event(verb, set_, pod, exc)
            raise

    async def delete_stateful_pod(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        try:
            await self.client.delete("pods", str(meta_of(pod).get("name")),
                                     str(meta_of(pod).get("namespace") or ""))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not is_not_found(exc):
                self.record_pod_event("delete", set_, pod, exc)
                raise
        self.record_pod_event("delete", set_, pod, None)

    # -- claims --------------------------------------------------------------------------------

    async def claims_match_retention_policy(self, set_: Mapping[str, Any],
                                            pod: Mapping[str, Any]) -> bool:
        ordinal = get_ordinal(pod)
        ns = str(meta_of(set_).get("namespace") or "")
        for template in (set_.get("spec") or {}).get("volumeClaimTemplates") or ():
            claim = self.get_claim(ns, get_persistent_volume_claim_name(set_, template, ordinal))
            if claim is None:
                continue  # picked up by a later sync
            if not is_claim_owner_up_to_date(claim, set_, pod):
                return False
        return True

    async def update_pod_claim_for_retention_policy(self, set_: Mapping[str, Any],
                                                    pod: Mapping[str, Any]) -> None:
        ordinal = get_ordinal(pod)
        ns = str(meta_of(set_).get("namespace") or "")
        for template in (set_.get("spec") or {}).get("volumeClaimTemplates") or ():
            name = get_persistent_volume_claim_name(set_, template, ordinal)
            claim = self.get_claim(ns, name)
            if claim is None:
                continue
            if has_unexpected_controller(claim, set_, pod):
                self.recorder.event(set_, EVENT_TYPE_WARNING, "ConflictingController",
                                    f"PersistentVolumeClaim {name} has a conflicting "
                                    "OwnerReference that acts as a manging controller, the "
                                    "retention policy is ignored for this claim")
            if not is_claim_owner_up_to_date(claim, set_, pod):
                updated = _deep_copy(claim)
                update_claim_owner_refs(updated, set_, pod)
                try:
                    self._wrote(set_, CLAIMS_GROUP_RESOURCE, await self.client.update(
                        PERSISTENT_VOLUME_CLAIMS, updated, ns))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    raise RuntimeError(f"could not update claim {name} for delete policy "
                                       f"ownerRefs: {exc}") from exc

    def pod_claim_is_stale(self, set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        """With whenScaled Delete: a claim still owned by a previous pod of the same name
        blocks the pod's creation (the garbage collector is deleting it)."""
        when_scaled, _ = retention_policy(set_)
        if when_scaled == "Retain":
            return False
        for claim in get_persistent_volume_claims(set_, pod).values():
            pvc = self.get_claim(str(claim["metadata"]["namespace"] or ""),
                                 claim["metadata"]["name"])
            if pvc is not None and has_stale_owner_ref(pvc, pod, "v1", "Pod"):
                return True
        return False

    async def create_missing_persistent_volume_claims(self, set_: Mapping[str, Any],
                                                      pod: Mapping[str, Any]) -> None:
        await self.create_persistent_volume_claims(set_, pod)
        try:
            await self.update_pod_claim_for_retention_policy(set_, pod)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.record_pod_event("update", set_, pod, exc)
            raise

    async def create_persistent_volume_claims(self, set_: Mapping[str, Any],
                                              pod: Mapping[str, Any]) -> None:
        """Create the pod's missing claims; raises the failures together."""
        errs: list[BaseException] = []
        for claim in get_persistent_volume_claims(set_, pod).values():
            name = claim["metadata"]["name"]
            existing = self.get_claim(str(claim["metadata"]["namespace"] or ""), name)
            if existing is None:
                try:
                    self._wrote(set_, CLAIMS_GROUP_RESOURCE, await self.client.create(
                        PERSISTENT_VOLUME_CLAIMS, claim, str(claim["metadata"]["namespace"] or "")))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - collected
                    errs.append(RuntimeError(f"failed to create PVC {name}: {exc}"))
                    if not is_already_exists(exc):
                        self.record_claim_event("create", set_, pod, claim, exc)
                    continue
                self.record_claim_event("create", set_, pod, claim, None)
            elif meta_of(existing).get("deletionTimestamp"):
                errs.append(RuntimeError(f"pvc {name} is being deleted"))
        if len(errs) == 1:
            raise errs[0]
        if errs:
            raise AggregateError(errs)


def _deep_copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(obj))
