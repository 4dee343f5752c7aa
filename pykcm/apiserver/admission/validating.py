"""The quota admission plugins wired to the store: LimitRanger and ResourceQuota.

kube-apiserver runs LimitRanger's defaulting with the mutating plugins and its
checks, then ResourceQuota (the last plugin), after the object has been
validated and just before it is stored. rest_storage calls:

- :meth:`QuotaPlugins.mutate` on a create, beside the other mutating plugins
  (``admission.admit``): the namespace's LimitRanges' container defaults;
- :meth:`QuotaPlugins.validate` on a create or update, after validation:
  LimitRanger's min/max/ratio checks, then quota admission, which charges the
  request to the namespace's quotas (their status written before the object is;
  a dry run is checked, never charged).

Both read the store's newest versions (``ResourceStore.current``): a quota
status just written by the previous request is what the next one is checked
against. The plugins' rules are in ``limit_ranger.py`` and
``resource_quota.py`` (over ``pykcm.api.quota``).

Deliberate deviation: a create is charged after the store's name check, so one refused
as AlreadyExists is not charged (kube-apiserver charges it, and the usage stays counted
until the resourcequota-controller's next full resync).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pykcm.api.quota import Attributes
from pykcm.api.resources import ResourceInfo
from pykcm.apiserver import errors
from pykcm.apiserver.admission import limit_ranger
from pykcm.apiserver.admission.resource_quota import QuotaAdmission
from pykcm.apiserver.storage import ResourceStore

__all__ = ["QuotaPlugins"]

StoreOf = Callable[[str], "ResourceStore | None"]
"""The ResourceStore of a core/v1 resource by plural (None where it is not served)."""
WriteStatus = Callable[[dict[str, Any]], Awaitable[None]]


class QuotaPlugins:
    """LimitRanger and ResourceQuota admission over the server's store."""

    def __init__(self, store_of: StoreOf, write_quota_status: WriteStatus) -> None:
        self._store_of = store_of
        self.quota = QuotaAdmission(self._quotas, write_quota_status)

    def _objects(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        rs = self._store_of(plural)
        if rs is None:
            return []
        out = []
        for key in rs.keys_in(rs.sorted_keys(), namespace):
            entry = rs.current(key)
            if entry is not None:
                out.append(entry.obj)
        return out

    async def _quotas(self, namespace: str) -> list[dict[str, Any]]:
        return self._objects("resourcequotas", namespace)

    def mutate(self, info: ResourceInfo, namespace: str, obj: dict[str, Any]) -> None:
        """LimitRanger's defaults into a pod being created."""
        if info.group or info.kind != "Pod" or not namespace:
            return
        ranges = self._objects("limitranges", namespace)
        if ranges:
            limit_ranger.mutate_pod(obj, ranges)

    async def validate(self, info: ResourceInfo, namespace: str, obj: dict[str, Any],
                       old: dict[str, Any] | None, subresource: str = "",
                       dry_run: bool = False) -> None:
        """LimitRanger's checks, then quota admission; raises StatusError 403."""
        if not namespace or not info.namespaced:
            return
        op = "CREATE" if old is None else "UPDATE"
        name = str((obj.get("metadata") or {}).get("name") or "")
        if limit_ranger.supports(info.kind, info.group, op, subresource) and not (
                old is not None and (old.get("metadata") or {}).get("deletionTimestamp")):
            why = limit_ranger.validate(info.kind, obj, self._objects("limitranges", namespace))
            if why:
                raise errors.forbidden(info.plural, info.group, name, why)
        await self.quota.admit(Attributes(op, info.group, info.plural, subresource, namespace,
                                          name, obj, old), dry_run=dry_run)
