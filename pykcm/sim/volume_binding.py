"""The simulated scheduler's VolumeBinding plugin: pods with PersistentVolumeClaims.

Role: what kube-scheduler's ``VolumeBinding`` plugin (and its volume binder) does,
so that claims of a ``volumeBindingMode: WaitForFirstConsumer`` class are bound
or provisioned where their first pod is scheduled, and pods whose volumes
are tied to a node (a PersistentVolume's ``spec.nodeAffinity``) go there.

Data flow, per pod (the scheduler calls these; the caches are the simulator's
claims, volumes and classes informers)::

    pre_filter(pod) ── a claim missing / being deleted, or unbound in an
        │              Immediate class ─► the pod is unschedulable on every node
        │              (upstream's PreFilter messages)
        ▼ PodVolumes: bound claims (their volumes), unbound delayed claims
    filter(volumes, node) ── bound: the volume exists and its node affinity allows
        │                    the node; unbound: an Available volume that fits and
        │                    allows the node (static binding), else a class whose
        │                    provisioner can provision there (dynamic) ─► reasons
        ▼ the node chosen
    plan(volumes, node) ── the static bindings and the claims to provision
    bind(client, plan) ── PUT each chosen volume with claimRef (pre-bound, as the
        │                 scheduler's binder does; the PV controller binds the
        │                 claim), annotate each claim to provision with
        │                 volume.kubernetes.io/selected-node (the PV controller
        │                 then hands it to its provisioner) ─► wait until every
        │                 claim is Bound (upstream's PreBind, --bind-timeout 600 s)
        ▼
    the pod is bound to the node

Deviations: no CSI storage capacity, volume limits or zone checks (no
drivers); static volumes are chosen smallest-first by capacity then name
(upstream's order too, without its access-mode buckets); the volumes chosen
for one pod are remembered only during its binding (upstream's assume cache
also holds them across pods: two pods racing for the last static volume
here may both pick it; the loser's claim then waits for the next one).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pod_util import pod_claim_names
from pykcm.api.progress_poll import PROGRESS_POLLS
from pykcm.api.pv_helpers import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    check_node_affinity,
    claim_class,
    find_matching_volume,
)
from pykcm.cache.frozen_object import thaw
from pykcm.client import Client

__all__ = [
    "BIND_TIMEOUT",
    "ERR_BIND_CONFLICT",
    "ERR_NODE_CONFLICT",
    "ERR_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "BindPlan",
    "PodVolumes",
    "VolumeBinder",
]

log = logging.getLogger("pykcm.sim.volume_binding")

NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
BIND_TIMEOUT: Final = 600.0
"""kube-scheduler's VolumeBinding bindTimeoutSeconds default."""

ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
ERR_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
ERR_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to " \
    "non-existent pv(s)"


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _delayed(cls: Mapping[str, Any] | None) -> bool:
    return cls is not None and cls.get("volumeBindingMode") == "WaitForFirstConsumer"


@dataclass(slots=True)
class PodVolumes:
    """A pod's claims as the pre-filter sorted them."""

    bound: list[tuple[Mapping[str, Any], str]] = field(default_factory=list)
    """(claim, the name of its volume)."""
    unbound: list[Mapping[str, Any]] = field(default_factory=list)
    """Claims of a WaitForFirstConsumer class the scheduler binds or provisions."""

    def __bool__(self) -> bool:
        return bool(self.bound or self.unbound)


@dataclass(slots=True)
class BindPlan:
    """What binding a pod's volumes to one node takes."""

    node: str
    static: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = field(default_factory=list)
    """(claim, the volume to pre-bind to it)."""
    provision: list[Mapping[str, Any]] = field(default_factory=list)
    """Claims to provision on the node."""
    claims: list[str] = field(default_factory=list)
    """Every claim of the pod (namespace/name), to wait for."""


class VolumeBinder:
    """The plugin over the simulator's caches (indexers with ``get_by_key``/``list``)."""

    def __init__(self, claims: Any, volumes: Any, classes: Any, *,
                 bind_timeout: float = BIND_TIMEOUT, poll: float = 0.05,
                 clock: Clock = REAL_CLOCK) -> None:
        # the bind timeout is the scheduler's setting, on the simulator's clock; the poll
        # for the PV controller's progress is real time (I/O progress, not cluster time)
        self.clock = clock
        self._claims = claims
        self._volumes = volumes
        self._classes = classes
        self.bind_timeout = bind_timeout
        self._poll = poll

    def _class(self, claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
        name = claim_class(claim)
        cls: Mapping[str, Any] | None = self._classes.get_by_key(name) if name else None
        return cls

    # -- PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, pod: Mapping[str, Any]) -> tuple[PodVolumes, str]:
        """(the pod's claims, "") or (empty, why no node can take the pod)."""
        out = PodVolumes()
        ns = str(_m(pod.get("metadata")).get("namespace") or "")
        immediate_unbound = False
        for name in pod_claim_names(pod):
            claim = self._claims.get_by_key(f"{ns}/{name}")
            if claim is None:
                return PodVolumes(), f'persistentvolumeclaim "{name}" not found'
            if _m(claim.get("metadata")).get("deletionTimestamp"):
                return PodVolumes(), f'persistentvolumeclaim "{name}" is being deleted'
            volume_name = str(_m(claim.get("spec")).get("volumeName") or "")
            if volume_name and _m(claim.get("status")).get("phase") == "Bound":
                out.bound.append((claim, volume_name))
            elif _delayed(self._class(claim)):
                out.unbound.append(claim)
            else:
                immediate_unbound = True
        if immediate_unbound:
            return PodVolumes(), ERR_UNBOUND_IMMEDIATE
        return out, ""

    # -- Filter ------------------------------------------------------------------------------

    def filter(self, pod_volumes: PodVolumes, node: Mapping[str, Any]) -> list[str]:
        """Why the pod's volumes rule ``node`` out (empty: they allow it)."""
        plan = self._find(pod_volumes, node)
        return plan if isinstance(plan, list) else []

    def plan(self, pod_volumes: PodVolumes, node: Mapping[str, Any]) -> BindPlan | None:
        """The bindings for ``node`` (None: the node does not fit any more)."""
        plan = self._find(pod_volumes, node)
        return plan if isinstance(plan, BindPlan) else None

    def _find(self, pod_volumes: PodVolumes, node: Mapping[str, Any]) -> BindPlan | list[str]:
        node_name = str(_m(node.get("metadata")).get("name") or "")
        plan = BindPlan(node_name)
        reasons: list[str] = []
        for claim, volume_name in pod_volumes.bound:
            plan.claims.append(_key(claim))
            volume = self._volumes.get_by_key(volume_name)
            if volume is None:
                return [ERR_PV_NOT_EXIST]
            if not check_node_affinity(volume, node) and ERR_NODE_CONFLICT not in reasons:
                reasons.append(ERR_NODE_CONFLICT)
        chosen: set[str] = set()
        for claim in pod_volumes.unbound:
            plan.claims.append(_key(claim))
            candidates = [v for v in self._volumes.list()
                          if str(_m(v.get("metadata")).get("name")) not in chosen]
            volume = find_matching_volume(claim, candidates, delay_binding=True, node=node)
            if volume is not None:
                chosen.add(str(_m(volume.get("metadata")).get("name")))
                plan.static.append((claim, volume))
                continue
            if self._can_provision(claim, node):
                plan.provision.append(claim)
            elif ERR_BIND_CONFLICT not in reasons:
                reasons.append(ERR_BIND_CONFLICT)
        return reasons or plan

    def _can_provision(self, claim: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
        """upstream checkVolumeProvisions: a class whose provisioner provisions, and whose
        allowedTopologies (if any) admit the node."""
        cls = self._class(claim)
        if cls is None or str(cls.get("provisioner") or "") in ("", NO_PROVISIONER):
            return False
        topologies = cls.get("allowedTopologies") or []
        if not topologies:
            return True
        labels = _m(_m(node.get("metadata")).get("labels"))
        for term in topologies:
            exprs = _m(term).get("matchLabelExpressions") or []
            if all(labels.get(str(e.get("key"))) in (e.get("values") or []) for e in exprs):
                return True
        return False

    # -- PreBind -----------------------------------------------------------------------------

    async def bind(self, client: Client, plan: BindPlan) -> None:
        """Write the plan and wait until every claim of the pod is Bound.

        Raises TimeoutError after ``bind_timeout`` (the pod is then retried, as upstream's
        PreBind failure unreserves it)."""
        for claim, volume in plan.static:
            await self._pre_bind(client, claim, volume)
        for claim in plan.provision:
            if _m(_m(claim.get("metadata")).get("annotations")).get(ANN_SELECTED_NODE) \
                    == plan.node:
                continue
            meta = _m(claim.get("metadata"))
            await client.patch("persistentvolumeclaims", str(meta.get("name")),
                               {"metadata": {"annotations": {ANN_SELECTED_NODE: plan.node}}},
                               "merge", str(meta.get("namespace")))
        deadline = self.clock.monotonic() + self.bind_timeout
        while not self._all_bound(plan.claims):
            if self.clock.monotonic() >= deadline:
                raise TimeoutError(f"binding volumes: timed out waiting for the condition "
                                   f"({', '.join(plan.claims)})")
            # a progress poll (pykcm.api.progress_poll): not slept out on virtual time
            await PROGRESS_POLLS.sleep(lambda: self._all_bound(plan.claims), self._poll)

    @staticmethod
    async def _pre_bind(client: Client, claim: Mapping[str, Any],
                        volume: Mapping[str, Any]) -> None:
        """The volume's claimRef set to the claim (upstream BindVolumeToClaim)."""
        cmeta = _m(claim.get("metadata"))
        pv = thaw(volume)
        pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                  "namespace": cmeta.get("namespace"),
                                  "name": cmeta.get("name"), "uid": cmeta.get("uid"),
                                  "resourceVersion": cmeta.get("resourceVersion")}
        pv["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        await client.update("persistentvolumes", pv)

    def _all_bound(self, keys: list[str]) -> bool:
        for key in keys:
            claim = self._claims.get_by_key(key)
            if claim is None or _m(claim.get("status")).get("phase") != "Bound":
                return False
        return True


def _key(claim: Mapping[str, Any]) -> str:
    meta = _m(claim.get("metadata"))
    return f"{meta.get('namespace')}/{meta.get('name')}"
