"""The evaluator registry and a quota's usage: ``pkg/quota/v1/evaluator/core/registry.go``,
``install/registry.go`` and ``CalculateUsage`` of ``k8s.io/apiserver/pkg/quota/v1``.

``new_registry(list_for)`` holds the evaluators of kube-controller-manager
and kube-apiserver: pods, services, persistentvolumeclaims, and object counts
with a legacy alias for configmaps, resourcequotas, replicationcontrollers and
secrets. Any other group/resource gets an object-count evaluator the first
time it is asked for (``get_or_add``), as the controller's monitors and the
admission plugin add them. ``list_for(group, resource)`` gives the function
that lists one resource of a namespace, or None where none can be listed.

Deliberate deviation: no resourceclaims evaluator (DRA is not served).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.quota.evaluator import Evaluator, ListByNamespace, ObjectCountEvaluator
from pykcm.api.quota.persistent_volume_claims import PersistentVolumeClaimEvaluator
from pykcm.api.quota.pods import PodEvaluator
from pykcm.api.quota.resources import ResourceList, add, mask
from pykcm.api.quota.services import ServiceEvaluator

__all__ = ["IGNORED_RESOURCES", "Registry", "calculate_usage", "new_registry"]

ListFor = Callable[[str, str], ListByNamespace | None]

LEGACY_OBJECT_COUNT_ALIASES: Final = {
    ("", "configmaps"): "configmaps",
    ("", "resourcequotas"): "resourcequotas",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "secrets"): "secrets",
}

IGNORED_RESOURCES: Final = frozenset({
    ("", "bindings"), ("", "componentstatuses"), ("", "events"), ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"), ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
})
"""Resources quota never evaluates (install.DefaultIgnoredResources)."""


class Registry:
    """Evaluators by (group, resource), in the order they were added."""

    def __init__(self, list_for: ListFor | None = None) -> None:
        self._list_for = list_for
        self._by_gr: dict[tuple[str, str], Evaluator] = {}

    def add(self, evaluator: Evaluator) -> None:
        self._by_gr[evaluator.group_resource()] = evaluator

    def get(self, group: str, resource: str) -> Evaluator | None:
        return self._by_gr.get((group, resource))

    def get_or_add(self, group: str, resource: str) -> Evaluator:
        """The evaluator of a group/resource; an object-count one if there is none yet."""
        ev = self._by_gr.get((group, resource))
        if ev is None:
            ev = ObjectCountEvaluator(group, resource, self._lister(group, resource))
            self.add(ev)
        return ev

    def list(self) -> list[Evaluator]:
        return list(self._by_gr.values())

    def _lister(self, group: str, resource: str) -> ListByNamespace | None:
        return self._list_for(group, resource) if self._list_for else None


def new_registry(list_for: ListFor | None = None, *,
                 clock: Callable[[], float] | None = None) -> Registry:
    """kube-controller-manager's and kube-apiserver's evaluators (core.NewEvaluators);
    ``clock`` (wall seconds) is the pod evaluator's (terminating pods' deadlines)."""
    reg = Registry(list_for)

    def lister(resource: str) -> ListByNamespace | None:
        return list_for("", resource) if list_for else None

    reg.add(PodEvaluator(lister("pods"), clock=clock if clock is not None else REAL_CLOCK.now))
    reg.add(ServiceEvaluator(lister("services")))
    reg.add(PersistentVolumeClaimEvaluator(lister("persistentvolumeclaims")))
    for (group, resource), alias in LEGACY_OBJECT_COUNT_ALIASES.items():
        reg.add(ObjectCountEvaluator(group, resource, lister(resource), alias))
    return reg


def calculate_usage(namespace: str, scopes: Sequence[str], hard: Mapping[str, Any],
                    registry: Registry, scope_selector: Mapping[str, Any] | None) -> ResourceList:
    """The usage the namespace's objects add up to, for the hard resources some evaluator tracks.

    An evaluator whose listing fails (raises) leaves its resources out, as upstream
    drops the resources whose calculation errored; the error is re-raised after the
    others are summed, so the caller can record it and still write the rest.
    """
    hard_names = list(hard)
    matched = {n for ev in registry.list() for n in ev.matching_resources(hard_names)}
    used: ResourceList = {}
    error: Exception | None = None
    for ev in registry.list():
        names = ev.matching_resources(n for n in hard_names if n in matched)
        if not names:
            continue
        try:
            stats = ev.usage_stats(namespace, names, scopes, scope_selector)
        except Exception as exc:  # noqa: BLE001 - upstream aggregates and goes on
            error = exc
            matched.difference_update(names)
            continue
        used = add(used, stats)
    used = mask(used, matched)
    if error is not None:
        raise UsageError(used, error)
    return used


class UsageError(Exception):
    """Some evaluator failed; ``partial`` is the usage of the others."""

    def __init__(self, partial: ResourceList, cause: Exception) -> None:
        super().__init__(str(cause))
        self.partial = partial
        self.cause = cause
