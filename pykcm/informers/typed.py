"""Typed accessors: one attribute per built-in resource, grouped by API group and version.

client-go's generated informers (``factory.Core().V1().Pods()``), Python style:
``factory.core_v1.pods``, ``factory.apps_v1.deployments``,
``factory.batch_v1.jobs``, ``factory.coordination_v1.leases``,
``factory.events_v1.events``, ``factory.discovery_v1.endpointslices``,
``factory.apiextensions_v1.customresourcedefinitions``.

Data flow: an accessor is a name only. Reading ``factory.core_v1.pods`` calls
``factory.for_resource("", "v1", "pods")``, which returns the factory's one
:class:`~pykcm.informers.generic.GenericInformer` for pods, creating it on
first use; the factory's ``start()`` then starts it. Every resource of the
built-in registry (:data:`pykcm.api.resources.BUILTIN_RESOURCES`) that is
stored (listable and watchable: not the authentication.k8s.io reviews) has
exactly one accessor here (a unit test holds the two lists together).
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from pykcm.informers.generic import GenericInformer

__all__ = [
    "GROUP_VERSION_ACCESSORS",
    "ApiextensionsV1Informers",
    "AppsV1Informers",
    "BatchV1Informers",
    "CoordinationV1Informers",
    "CoreV1Informers",
    "DiscoveryV1Informers",
    "EventsV1Informers",
    "GroupVersionInformers",
    "InformerSource",
    "PolicyV1Informers",
    "RbacV1Informers",
    "StorageV1Informers",
]


class InformerSource(Protocol):
    """What the accessors need of the factory."""

    def for_resource(self, group: str, version: str, resource: str) -> GenericInformer: ...


class GroupVersionInformers:
    """The accessors of one API group version (client-go ``<group>/<version>.Interface``)."""

    GROUP: ClassVar[str]
    VERSION: ClassVar[str]
    RESOURCES: ClassVar[tuple[str, ...]]

    __slots__ = ("_factory",)

    def __init__(self, factory: InformerSource) -> None:
        self._factory = factory

    def _get(self, resource: str) -> GenericInformer:
        return self._factory.for_resource(self.GROUP, self.VERSION, resource)

    def __repr__(self) -> str:
        gv = f"{self.GROUP}/{self.VERSION}" if self.GROUP else self.VERSION
        return f"<{type(self).__name__} {gv}>"


class CoreV1Informers(GroupVersionInformers):
    """core/v1 (client-go ``informers/core/v1``)."""

    GROUP = ""
    VERSION = "v1"
    RESOURCES = ("configmaps", "endpoints", "events", "limitranges", "namespaces", "nodes",
                 "persistentvolumeclaims", "persistentvolumes", "pods", "podtemplates",
                 "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts",
                 "services")
    __slots__ = ()

    @property
    def persistentvolumeclaims(self) -> GenericInformer:
        return self._get("persistentvolumeclaims")

    @property
    def persistentvolumes(self) -> GenericInformer:
        return self._get("persistentvolumes")

    @property
    def replicationcontrollers(self) -> GenericInformer:
        return self._get("replicationcontrollers")

    @property
    def resourcequotas(self) -> GenericInformer:
        return self._get("resourcequotas")

    @property
    def limitranges(self) -> GenericInformer:
        return self._get("limitranges")

    @property
    def configmaps(self) -> GenericInformer:
        return self._get("configmaps")

    @property
    def endpoints(self) -> GenericInformer:
        return self._get("endpoints")

    @property
    def events(self) -> GenericInformer:
        return self._get("events")

    @property
    def namespaces(self) -> GenericInformer:
        return self._get("namespaces")

    @property
    def nodes(self) -> GenericInformer:
        return self._get("nodes")

    @property
    def pods(self) -> GenericInformer:
        return self._get("pods")

    @property
    def podtemplates(self) -> GenericInformer:
        return self._get("podtemplates")

    @property
    def secrets(self) -> GenericInformer:
        return self._get("secrets")

    @property
    def serviceaccounts(self) -> GenericInformer:
        return self._get("serviceaccounts")

    @property
    def services(self) -> GenericInformer:
        return self._get("services")


class AppsV1Informers(GroupVersionInformers):
    """apps/v1 (client-go ``informers/apps/v1``)."""

    GROUP = "apps"
    VERSION = "v1"
    RESOURCES = ("controllerrevisions", "daemonsets", "deployments", "replicasets",
                 "statefulsets")
    __slots__ = ()

    @property
    def controllerrevisions(self) -> GenericInformer:
        return self._get("controllerrevisions")

    @property
    def daemonsets(self) -> GenericInformer:
        return self._get("daemonsets")

    @property
    def deployments(self) -> GenericInformer:
        return self._get("deployments")

    @property
    def replicasets(self) -> GenericInformer:
        return self._get("replicasets")

    @property
    def statefulsets(self) -> GenericInformer:
        return self._get("statefulsets")


class BatchV1Informers(GroupVersionInformers):
    """batch/v1 (client-go ``informers/batch/v1``)."""

    GROUP = "batch"
    VERSION = "v1"
    RESOURCES = ("cronjobs", "jobs")
    __slots__ = ()

    @property
    def cronjobs(self) -> GenericInformer:
        return self._get("cronjobs")

    @property
    def jobs(self) -> GenericInformer:
        return self._get("jobs")


class CoordinationV1Informers(GroupVersionInformers):
    """coordination.k8s.io/v1 (client-go ``informers/coordination/v1``)."""

    GROUP = "coordination.k8s.io"
    VERSION = "v1"
    RESOURCES = ("leases",)
    __slots__ = ()

    @property
    def leases(self) -> GenericInformer:
        return self._get("leases")


class EventsV1Informers(GroupVersionInformers):
    """events.k8s.io/v1 (client-go ``informers/events/v1``)."""

    GROUP = "events.k8s.io"
    VERSION = "v1"
    RESOURCES = ("events",)
    __slots__ = ()

    @property
    def events(self) -> GenericInformer:
        return self._get("events")


class DiscoveryV1Informers(GroupVersionInformers):
    """discovery.k8s.io/v1 (client-go ``informers/discovery/v1``)."""

    GROUP = "discovery.k8s.io"
    VERSION = "v1"
    RESOURCES = ("endpointslices",)
    __slots__ = ()

    @property
    def endpointslices(self) -> GenericInformer:
        return self._get("endpointslices")


class StorageV1Informers(GroupVersionInformers):
    """storage.k8s.io/v1 (client-go ``informers/storage/v1``)."""

    GROUP = "storage.k8s.io"
    VERSION = "v1"
    RESOURCES = ("storageclasses",)
    __slots__ = ()

    @property
    def storageclasses(self) -> GenericInformer:
        return self._get("storageclasses")


class PolicyV1Informers(GroupVersionInformers):
    """policy/v1 (client-go ``informers/policy/v1``)."""

    GROUP = "policy"
    VERSION = "v1"
    RESOURCES = ("poddisruptionbudgets",)
    __slots__ = ()

    @property
    def poddisruptionbudgets(self) -> GenericInformer:
        return self._get("poddisruptionbudgets")


class RbacV1Informers(GroupVersionInformers):
    """rbac.authorization.k8s.io/v1 (client-go ``informers/rbac/v1``)."""

    GROUP = "rbac.authorization.k8s.io"
    VERSION = "v1"
    RESOURCES = ("clusterroles", "clusterrolebindings", "roles", "rolebindings")
    __slots__ = ()

    @property
    def clusterroles(self) -> GenericInformer:
        return self._get("clusterroles")

    @property
    def clusterrolebindings(self) -> GenericInformer:
        return self._get("clusterrolebindings")

    @property
    def roles(self) -> GenericInformer:
        return self._get("roles")

    @property
    def rolebindings(self) -> GenericInformer:
        return self._get("rolebindings")


class ApiextensionsV1Informers(GroupVersionInformers):
    """apiextensions.k8s.io/v1 (apiextensions-apiserver's generated informers)."""

    GROUP = "apiextensions.k8s.io"
    VERSION = "v1"
    RESOURCES = ("customresourcedefinitions",)
    __slots__ = ()

    @property
    def customresourcedefinitions(self) -> GenericInformer:
        return self._get("customresourcedefinitions")


GROUP_VERSION_ACCESSORS: dict[str, type[GroupVersionInformers]] = {
    "core_v1": CoreV1Informers,
    "apps_v1": AppsV1Informers,
    "batch_v1": BatchV1Informers,
    "coordination_v1": CoordinationV1Informers,
    "events_v1": EventsV1Informers,
    "discovery_v1": DiscoveryV1Informers,
    "apiextensions_v1": ApiextensionsV1Informers,
    "storage_v1": StorageV1Informers,
    "policy_v1": PolicyV1Informers,
    "rbac_v1": RbacV1Informers,
}
"""The factory attribute of each group version's accessors."""
