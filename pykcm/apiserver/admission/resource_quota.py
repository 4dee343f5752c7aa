"""ResourceQuota admission: a write that would take a namespace over a quota is refused.

kube-apiserver v1.36 ``k8s.io/apiserver/pkg/admission/plugin/resourcequota``
(``controller.go``: CheckRequest, checkQuotas). The evaluation library is
``pykcm.api.quota``, shared with the resourcequota-controller.

Data flow::

    create/update of a quota-tracked kind (after mutating admission and validation)
      ─► evaluator.handles(attrs)? (pods: create, terminating flip; services, claims:
         create/update; everything else counted: create)
      ─► per-namespace lock ─► the namespace's quotas (the writers' view of the store)
      ─► check_request: the quotas that match the object (resources and scopes),
         their constraints ("failed quota: q: must specify ..."), "status unknown for
         quota" without status.used, the usage delta (an update: new - old, floored at 0),
         "exceeded quota: q, requested: ..., used: ..., limited: ..."
      ─► status.used += delta written to each quota with its resourceVersion
         (optimistic: a conflict re-reads the quotas and checks again, 3 retries)
      ─► the object is stored (an error after this leaves usage the controller gives back)

Two racing creates cannot both pass: the per-namespace lock serialises this
server's evaluations (upstream queues a namespace's work the same way), and the
resourceVersion precondition catches a status written meanwhile by anyone else.

Deliberate deviation: no ``LimitedResources`` configuration (kube-apiserver has
none unless ``--admission-control-config-file`` gives one).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from pykcm.api.quota import (
    Attributes,
    Evaluator,
    Registry,
    add,
    from_wire,
    is_negative,
    less_than_or_equal,
    mask,
    new_registry,
    pretty_print,
    remove_zeros,
    subtract_non_negative,
    to_wire,
)
from pykcm.api.quota.registry import IGNORED_RESOURCES
from pykcm.apiserver import errors

__all__ = ["QuotaAdmission", "QuotaRefused", "check_request"]

RETRIES: Final = 3

GetQuotas = Callable[[str], Awaitable[list[dict[str, Any]]]]
"""The namespace's ResourceQuotas as stored (newest versions)."""
UpdateStatus = Callable[[dict[str, Any]], Awaitable[None]]
"""Write a quota's status, conditional on its resourceVersion; raises StatusError 409."""


class QuotaRefused(Exception):
    """The request is refused; the message follows ``<resource> "<name>" is forbidden: ``."""


def _names(rl: Mapping[str, Any] | None) -> list[str]:
    return list((rl or {}).keys())


def _pretty_names(names: list[str]) -> str:
    return ",".join(sorted(names))


def check_request(quotas: list[dict[str, Any]], a: Attributes,
                  evaluator: Evaluator) -> list[dict[str, Any]]:
    """The quotas with their status.used after admitting ``a`` (upstream CheckRequest).

    Returns copies of the quotas whose usage changes (the input is not changed);
    raises :class:`QuotaRefused` with upstream's message.
    """
    if not evaluator.handles(a) or a.obj is None:
        return []
    obj = a.obj
    interesting: list[int] = []
    for i, q in enumerate(quotas):
        if not evaluator.matches(q, obj):
            continue
        hard = (q.get("status") or {}).get("hard") or {}
        restricted = evaluator.matching_resources(_names(hard))
        why = evaluator.constraints(restricted, obj)
        if why:
            raise QuotaRefused(f"failed quota: {q['metadata']['name']}: {why}")
        used = (q.get("status") or {}).get("used") or {}
        if any(r in hard and r not in used for r in restricted):
            raise QuotaRefused(f"status unknown for quota: {q['metadata']['name']}, "
                               f"resources: {_pretty_names(restricted)}")
        interesting.append(i)
    input_usage = evaluator.usage(obj)
    negative = is_negative(input_usage)
    if negative:
        raise QuotaRefused("quota usage is negative for resource(s): "
                           + _pretty_names(negative))
    delta_by_index = dict.fromkeys(interesting, input_usage)
    if a.operation == "UPDATE":
        prev = a.old_obj
        if prev is None:
            raise QuotaRefused("unable to get previous usage since prior version of object "
                               "was not found")
        if (prev.get("metadata") or {}).get("resourceVersion"):
            delta = subtract_non_negative(input_usage, evaluator.usage(prev))
            for i in interesting:
                if evaluator.matches(quotas[i], prev):
                    delta_by_index[i] = delta
    delta_by_index = {i: d for i, d in ((i, remove_zeros(d)) for i, d in delta_by_index.items())
                      if d}
    out: list[dict[str, Any]] = []
    for i in interesting:
        if i not in delta_by_index:
            continue
        q = quotas[i]
        status = q.get("status") or {}
        hard = from_wire(status.get("hard"))
        used = from_wire(status.get("used"))
        requested = mask(delta_by_index[i], hard)
        new_used = add(used, requested)
        if a.subresource != "status":
            ok, exceeded = less_than_or_equal(mask(new_used, requested), hard)
            if not ok:
                raise QuotaRefused(
                    f"exceeded quota: {q['metadata']['name']}, "
                    f"requested: {pretty_print(mask(requested, exceeded))}, "
                    f"used: {pretty_print(mask(used, exceeded))}, "
                    f"limited: {pretty_print(mask(hard, exceeded))}")
        updated = copy.deepcopy(q)
        updated.setdefault("status", {})["used"] = to_wire(new_used)
        out.append(updated)
    return out


class QuotaAdmission:
    """The plugin: one registry of evaluators, one lock per namespace."""

    def __init__(self, get_quotas: GetQuotas, update_status: UpdateStatus) -> None:
        self.registry: Registry = new_registry()
        self._get_quotas = get_quotas
        self._update_status = update_status
        self._locks: dict[str, asyncio.Lock] = {}

    def evaluator_for(self, group: str, resource: str) -> Evaluator | None:
        if (group, resource) in IGNORED_RESOURCES:
            return None
        return self.registry.get_or_add(group, resource)

    async def admit(self, a: Attributes, dry_run: bool = False) -> None:
        """Check ``a`` against the namespace's quotas and charge it (a dry run: only check);
        raises StatusError 403."""
        if not a.namespace:
            return
        ev = self.evaluator_for(a.group, a.resource)
        if ev is None or not ev.handles(a):
            return
        if not await self._get_quotas(a.namespace):
            return  # most namespaces have none: no need to queue behind the others
        lock = self._locks.setdefault(a.namespace, asyncio.Lock())
        async with lock:
            await self._check(a, ev, dry_run)

    async def _check(self, a: Attributes, ev: Evaluator, dry_run: bool) -> None:
        quotas = await self._get_quotas(a.namespace)
        for attempt in range(RETRIES + 1):
            if not quotas:
                return
            try:
                updated = check_request(quotas, a, ev)
            except QuotaRefused as exc:
                raise errors.forbidden(a.resource, a.group, a.name, str(exc)) from None
            if dry_run:
                return
            failed: list[str] = []
            last: errors.StatusError | None = None
            for q in updated:
                try:
                    await self._update_status(q)
                except errors.StatusError as exc:
                    failed.append(q["metadata"]["name"])
                    last = exc
            if not failed:
                return
            if attempt == RETRIES:
                assert last is not None
                raise last  # upstream answers with the last write's error itself
            # Someone else changed a quota meanwhile: check again against its new usage.
            quotas = [q for q in await self._get_quotas(a.namespace)
                      if q["metadata"]["name"] in failed]
