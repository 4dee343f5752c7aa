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
    RESOURCES = ("csidrivers", "csinodes", "csistoragecapacities", "storageclasses",
                 "volumeattachments", "volumeattributesclasses")
    __slots__ = ()

    @property
    def csidrivers(self) -> GenericInformer:
        return self._get("csidrivers")

    @property
    def csinodes(self) -> GenericInformer:
        return self._get("csinodes")

    @property
    def csistoragecapacities(self) -> GenericInformer:
        return self._get("csistoragecapacities")

    @property
    def storageclasses(self) -> GenericInformer:
        return self._get("storageclasses")

    @property
    def volumeattachments(self) -> GenericInformer:
        return self._get("volumeattachments")

    @property
    def volumeattributesclasses(self) -> GenericInformer:
        return self._get("volumeattributesclasses")


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


class AdmissionregistrationV1Informers(GroupVersionInformers):
    """admissionregistration.k8s.io/v1 (client-go ``informers/admissionregistration/v1``)."""

    GROUP = "admissionregistration.k8s.io"
    VERSION = "v1"
    RESOURCES = ("mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
                 "mutatingwebhookconfigurations", "validatingadmissionpolicies",
                 "validatingadmissionpolicybindings", "validatingwebhookconfigurations")
    __slots__ = ()

    @property
    def mutatingadmissionpolicies(self) -> GenericInformer:
        return self._get("mutatingadmissionpolicies")

    @property
    def mutatingadmissionpolicybindings(self) -> GenericInformer:
        return self._get("mutatingadmissionpolicybindings")

    @property
    def validatingadmissionpolicies(self) -> GenericInformer:
        return self._get("validatingadmissionpolicies")

    @property
    def validatingadmissionpolicybindings(self) -> GenericInformer:
        return self._get("validatingadmissionpolicybindings")

    @property
    def mutatingwebhookconfigurations(self) -> GenericInformer:
        return self._get("mutatingwebhookconfigurations")

    @property
    def validatingwebhookconfigurations(self) -> GenericInformer:
        return self._get("validatingwebhookconfigurations")


class ApiregistrationV1Informers(GroupVersionInformers):
    """apiregistration.k8s.io/v1 (kube-aggregator's generated informers)."""

    GROUP = "apiregistration.k8s.io"
    VERSION = "v1"
    RESOURCES = ("apiservices",)
    __slots__ = ()

    @property
    def apiservices(self) -> GenericInformer:
        return self._get("apiservices")


class AutoscalingV1Informers(GroupVersionInformers):
    """autoscaling/v1 (client-go ``informers/autoscaling/v1``)."""

    GROUP = "autoscaling"
    VERSION = "v1"
    RESOURCES = ("horizontalpodautoscalers",)
    __slots__ = ()

    @property
    def horizontalpodautoscalers(self) -> GenericInformer:
        return self._get("horizontalpodautoscalers")


class AutoscalingV2Informers(GroupVersionInformers):
    """autoscaling/v2 (client-go ``informers/autoscaling/v2``)."""

    GROUP = "autoscaling"
    VERSION = "v2"
    RESOURCES = ("horizontalpodautoscalers",)
    __slots__ = ()

    @property
    def horizontalpodautoscalers(self) -> GenericInformer:
        return self._get("horizontalpodautoscalers")


class CertificatesV1Informers(GroupVersionInformers):
    """certificates.k8s.io/v1 (client-go ``informers/certificates/v1``)."""

    GROUP = "certificates.k8s.io"
    VERSION = "v1"
    RESOURCES = ("certificatesigningrequests",)
    __slots__ = ()

    @property
    def certificatesigningrequests(self) -> GenericInformer:
        return self._get("certificatesigningrequests")


class FlowcontrolV1Informers(GroupVersionInformers):
    """flowcontrol.apiserver.k8s.io/v1 (client-go ``informers/flowcontrol/v1``)."""

    GROUP = "flowcontrol.apiserver.k8s.io"
    VERSION = "v1"
    RESOURCES = ("flowschemas", "prioritylevelconfigurations")
    __slots__ = ()

    @property
    def flowschemas(self) -> GenericInformer:
        return self._get("flowschemas")

    @property
    def prioritylevelconfigurations(self) -> GenericInformer:
        return self._get("prioritylevelconfigurations")


class NetworkingV1Informers(GroupVersionInformers):
    """networking.k8s.io/v1 (client-go ``informers/networking/v1``)."""

    GROUP = "networking.k8s.io"
    VERSION = "v1"
    RESOURCES = ("ingressclasses", "ingresses", "ipaddresses", "networkpolicies", "servicecidrs")
    __slots__ = ()

    @property
    def ingressclasses(self) -> GenericInformer:
        return self._get("ingressclasses")

    @property
    def ingresses(self) -> GenericInformer:
        return self._get("ingresses")

    @property
    def ipaddresses(self) -> GenericInformer:
        return self._get("ipaddresses")

    @property
    def networkpolicies(self) -> GenericInformer:
        return self._get("networkpolicies")

    @property
    def servicecidrs(self) -> GenericInformer:
        return self._get("servicecidrs")


class NodeV1Informers(GroupVersionInformers):
    """node.k8s.io/v1 (client-go ``informers/node/v1``)."""

    GROUP = "node.k8s.io"
    VERSION = "v1"
    RESOURCES = ("runtimeclasses",)
    __slots__ = ()

    @property
    def runtimeclasses(self) -> GenericInformer:
        return self._get("runtimeclasses")


class ResourceV1Informers(GroupVersionInformers):
    """resource.k8s.io/v1 (client-go ``informers/resource/v1``)."""

    GROUP = "resource.k8s.io"
    VERSION = "v1"
    RESOURCES = ("deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices")
    __slots__ = ()

    @property
    def deviceclasses(self) -> GenericInformer:
        return self._get("deviceclasses")

    @property
    def resourceclaims(self) -> GenericInformer:
        return self._get("resourceclaims")

    @property
    def resourceclaimtemplates(self) -> GenericInformer:
        return self._get("resourceclaimtemplates")

    @property
    def resourceslices(self) -> GenericInformer:
        return self._get("resourceslices")


class SchedulingV1Informers(GroupVersionInformers):
    """scheduling.k8s.io/v1 (client-go ``informers/scheduling/v1``)."""

    GROUP = "scheduling.k8s.io"
    VERSION = "v1"
    RESOURCES = ("priorityclasses",)
    __slots__ = ()

    @property
    def priorityclasses(self) -> GenericInformer:
        return self._get("priorityclasses")


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
    "admissionregistration_v1": AdmissionregistrationV1Informers,
    "apiregistration_v1": ApiregistrationV1Informers,
    "autoscaling_v1": AutoscalingV1Informers,
    "autoscaling_v2": AutoscalingV2Informers,
    "certificates_v1": CertificatesV1Informers,
    "flowcontrol_v1": FlowcontrolV1Informers,
    "networking_v1": NetworkingV1Informers,
    "node_v1": NodeV1Informers,
    "resource_v1": ResourceV1Informers,
    "scheduling_v1": SchedulingV1Informers,
}
"""The factory attribute of each group version's accessors."""
