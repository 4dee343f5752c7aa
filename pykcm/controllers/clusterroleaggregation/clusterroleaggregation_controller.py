"""The ClusterRole aggregation controller: an aggregated ClusterRole's rules are the rules
of the ClusterRoles its ``aggregationRule`` selects.

kube-controller-manager v1.36 ``pkg/controller/clusterroleaggregation``. The bootstrap
roles ``admin``, ``edit`` and ``view`` (and ``system:aggregate-to-*`` chains) get their
rules this way, and so does any role a user labels ``rbac.authorization.k8s.io/
aggregate-to-admin: "true"``.

Data flow: ClusterRole informer ── any add/update/delete ──► every ClusterRole with an
aggregationRule queued ── 5 workers ──► for each selector in order, the selected roles
sorted by name (the role itself skipped), their rules appended unless an equal one is
already there ──► when that differs from the role's rules: server-side apply of just
``rules`` as field manager ``clusterrole-aggregation-controller`` with force, as
upstream (absent and empty lists compare equal, as apimachinery's semantic DeepEqual).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pykcm.api.accessors import name_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.labels import selector_from_label_selector
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["FIELD_MANAGER", "ClusterRoleAggregationController", "aggregated_rules"]

log = logging.getLogger("pykcm.controllers.clusterroleaggregation")

FIELD_MANAGER: Final = "clusterrole-aggregation-controller"
_RULE_KEYS: Final = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def _rule(rule: Mapping[str, Any]) -> dict[str, list[str]]:
    """A PolicyRule as plain lists, empty ones left out (nil and empty compare equal)."""
    out: dict[str, list[str]] = {}
    for key in _RULE_KEYS:
        values = rule.get(key)
        if values:
            out[key] = [str(v) for v in values]
    return out


def aggregated_rules(role: Mapping[str, Any],
                     cluster_roles: Iterable[Mapping[str, Any]]) -> list[dict[str, list[str]]]:
    """The rules ``role``'s aggregationRule selects from ``cluster_roles`` (syncClusterRole)."""
    roles = sorted(cluster_roles, key=name_of)
    rules: list[dict[str, list[str]]] = []
    agg = role.get("aggregationRule") or {}
    for selector in agg.get("clusterRoleSelectors") or []:
        sel = selector_from_label_selector(selector)
        for other in roles:
            if name_of(other) == name_of(role):
                continue
            labels = (other.get("metadata") or {}).get("labels") or {}
            if not sel.matches(labels):
                continue
            for r in other.get("rules") or []:
                rule = _rule(r)
                if rule not in rules:
                    rules.append(rule)
    return rules


class ClusterRoleAggregationController(ControllerHost):
    default_workers = 5

    def __init__(self, *, cluster_role_informer: GenericInformer, client: Client,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "clusterrole-aggregation"
        self.client = client
        self.controller = Controller("ClusterRoleAggregator", self.sync_cluster_role,
                                     clock=self._time)
        self.queue = self.controller.queue
        inf = cluster_role_informer.informer
        self.indexer = inf.get_indexer()
        reg = inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda obj: self.enqueue(), update_func=lambda old, new: self.enqueue(),
            delete_func=lambda obj: self.enqueue()))
        self.controller.add_synced(reg.has_synced)

    def enqueue(self) -> None:
        """Every aggregated ClusterRole, whatever changed (upstream does the same)."""
        for role in self.indexer.list():
            if role.get("aggregationRule") is not None:
                self.queue.add(name_of(role))

    async def sync_cluster_role(self, key: str) -> None:
        role = self.indexer.get_by_key(key)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self.indexer.list())
        if rules == [_rule(r) for r in role.get("rules") or []]:
            return
        await self.client.patch(
            "clusterroles", key,
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": key}, "rules": rules},
            "apply", field_manager=FIELD_MANAGER, force=True)
        log.debug("Aggregated %d rules into ClusterRole %s", len(rules), key)
