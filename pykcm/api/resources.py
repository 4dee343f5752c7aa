"""The resource registry: what each built-in resource is called and how it behaves.

Every layer that names a resource (the client building a path, the API server
routing a request and filling discovery, informers choosing what to watch)
reads it from here, so the group/version/kind/plural of a resource is written
down exactly once. The data mirrors kube-apiserver v1.36's discovery documents.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One REST resource: the facts discovery publishes, plus server behaviour flags."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # Subresources served, e.g. ("status", "scale").
    subresources: tuple[str, ...] = ()
    # metadata.generation is bumped on every spec change (the kinds whose
    # controllers report status.observedGeneration).
    track_generation: bool = False
    # Writes to the main resource keep the stored status; /status writes keep
    # everything else. Only for kinds with a status subresource.
    status_subresource: bool = False
    # Updates must carry metadata.resourceVersion (no unconditional update).
    require_resource_version_on_update: bool = False
    # Default propagationPolicy for DELETE when the client gives none.
    default_propagation: str = "Background"
    # Kept in storage (listable, watchable, with a storageVersionHash); False for the
    # create-only review resources (tokenreviews, subjectaccessreviews, ...), which only answer.
    stored: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def group_resource(self) -> str:
        """`plural.group` as kube-apiserver names a resource in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of a collection or an object."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
        return base


def _r(
    group: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    generation: bool = False,
    version: str = "v1",
    require_rv: bool = False,
    default_propagation: str = "Background",
    verbs: tuple[str, ...] = ALL_VERBS,
    stored: bool = True,
) -> ResourceInfo:
    return ResourceInfo(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=short,
        categories=categories,
        subresources=sub,
        track_generation=generation,
        status_subresource="status" in sub,
        require_resource_version_on_update=require_rv,
        default_propagation=default_propagation,
        verbs=verbs,
        stored=stored,
    )


BUILTIN_RESOURCES: tuple[ResourceInfo, ...] = (
    # core/v1
    # (no deletecollection: kube-apiserver's namespace REST has none)
    _r("", "Namespace", "namespaces", namespaced=False, short=("ns",), sub=("finalize", "status"),
       verbs=tuple(v for v in ALL_VERBS if v != "deletecollection")),
    _r("", "Pod", "pods", short=("po",), categories=("all",),
       sub=("binding", "eviction", "status"), generation=True),
    _r("", "Node", "nodes", namespaced=False, short=("no",), sub=("status",)),
    _r("", "Event", "events", short=("ev",)),
    _r("", "ConfigMap", "configmaps", short=("cm",)),
    _r("", "Secret", "secrets"),
    _r("", "Service", "services", short=("svc",), categories=("all",), sub=("status",)),
    _r("", "ServiceAccount", "serviceaccounts", short=("sa",), sub=("token",)),
    _r("", "Endpoints", "endpoints", short=("ep",)),
    _r("", "PodTemplate", "podtemplates", generation=True),
    _r("", "PersistentVolume", "persistentvolumes", namespaced=False, short=("pv",),
       sub=("status",)),
    _r("", "PersistentVolumeClaim", "persistentvolumeclaims", short=("pvc",), sub=("status",)),
    _r("", "ResourceQuota", "resourcequotas", short=("quota",), sub=("status",)),
    _r("", "LimitRange", "limitranges", short=("limits",)),
    # core/v1 ReplicationControllers orphan their pods by default (the GC policy upstream
    # keeps for compatibility, as for batch/v1 Jobs)
    _r("", "ReplicationController", "replicationcontrollers", short=("rc",),
       categories=("all",), sub=("scale", "status"), generation=True,
       default_propagation="Orphan"),
    # core/v1 Bindings: create only, a pod bound as through pods/binding (never stored);
    # ComponentStatuses: get and list only, probed at each request (registry/core/
    # componentstatus.py; deprecated upstream since v1.19, still served)
    _r("", "Binding", "bindings", verbs=("create",), stored=False),
    _r("", "ComponentStatus", "componentstatuses", namespaced=False, short=("cs",),
       verbs=("get", "list"), stored=False),
    # apps/v1
    _r("apps", "Deployment", "deployments", short=("deploy",), categories=("all",),
       sub=("scale", "status"), generation=True),
    _r("apps", "ReplicaSet", "replicasets", short=("rs",), categories=("all",),
       sub=("scale", "status"), generation=True),
    _r("apps", "StatefulSet", "statefulsets", short=("sts",), categories=("all",),
       sub=("scale", "status"), generation=True),
    _r("apps", "DaemonSet", "daemonsets", short=("ds",), categories=("all",), sub=("status",),
       generation=True),
    _r("apps", "ControllerRevision", "controllerrevisions"),
    # batch/v1
    # batch/v1 Jobs orphan their pods by default, kept for compatibility upstream.
    _r("batch", "Job", "jobs", categories=("all",), sub=("status",), generation=True,
       default_propagation="Orphan"),
    _r("batch", "CronJob", "cronjobs", short=("cj",), categories=("all",), sub=("status",),
       generation=True),
    # coordination.k8s.io/v1
    _r("coordination.k8s.io", "Lease", "leases", require_rv=True),
    # events.k8s.io/v1: a view of the core/v1 events (same storage)
    _r("events.k8s.io", "Event", "events", short=("ev",)),
    # authentication.k8s.io/v1: reviews answered at once, never stored
    _r("authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews", namespaced=False,
       verbs=("create",), stored=False),
    _r("authentication.k8s.io", "TokenReview", "tokenreviews", namespaced=False,
       verbs=("create",), stored=False),
    # rbac.authorization.k8s.io/v1 (pykcm/apiserver/rbac, registry/rbac)
    _r("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", namespaced=False),
    _r("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings",
       namespaced=False),
    _r("rbac.authorization.k8s.io", "Role", "roles"),
    _r("rbac.authorization.k8s.io", "RoleBinding", "rolebindings"),
    # authorization.k8s.io/v1: reviews answered at once by the RBAC authorizer, never stored
    _r("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews",
       verbs=("create",), stored=False),
    _r("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
       namespaced=False, verbs=("create",), stored=False),
    _r("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
       namespaced=False, verbs=("create",), stored=False),
    _r("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews",
       namespaced=False, verbs=("create",), stored=False),
    # apiextensions.k8s.io/v1
    _r("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions",
       namespaced=False, short=("crd", "crds"), categories=("api-extensions",),
       sub=("status",), generation=True),
    # discovery.k8s.io/v1
    _r("discovery.k8s.io", "EndpointSlice", "endpointslices", generation=True),
    # admissionregistration.k8s.io/v1 (registry/admissionregistration: stored, never
    # called; a warning says so)
    _r("admissionregistration.k8s.io", "MutatingWebhookConfiguration",
       "mutatingwebhookconfigurations", namespaced=False, categories=("api-extensions",),
       generation=True),
    _r("admissionregistration.k8s.io", "ValidatingWebhookConfiguration",
       "validatingwebhookconfigurations", namespaced=False, categories=("api-extensions",),
       generation=True),
    # the CEL admission policies and their bindings: stored, their expressions never
    # evaluated (a warning says so); updates need a resourceVersion, as upstream
    _r("admissionregistration.k8s.io", "MutatingAdmissionPolicy", "mutatingadmissionpolicies",
       namespaced=False, categories=("api-extensions",), generation=True, require_rv=True),
    _r("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding",
       "mutatingadmissionpolicybindings", namespaced=False, categories=("api-extensions",),
       generation=True, require_rv=True),
    _r("admissionregistration.k8s.io", "ValidatingAdmissionPolicy",
       "validatingadmissionpolicies", namespaced=False, categories=("api-extensions",),
       sub=("status",), generation=True, require_rv=True),
    _r("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding",
       "validatingadmissionpolicybindings", namespaced=False, categories=("api-extensions",),
       generation=True, require_rv=True),
    # resource.k8s.io/v1 (registry/resource: stored; nothing allocates in pykcm)
    _r("resource.k8s.io", "DeviceClass", "deviceclasses", namespaced=False, generation=True),
    _r("resource.k8s.io", "ResourceClaim", "resourceclaims", sub=("status",)),
    _r("resource.k8s.io", "ResourceClaimTemplate", "resourceclaimtemplates"),
    _r("resource.k8s.io", "ResourceSlice", "resourceslices", namespaced=False,
       generation=True),
    # apiregistration.k8s.io/v1 (registry/apiregistration: stored; the local ones made at
    # start, no aggregation)
    _r("apiregistration.k8s.io", "APIService", "apiservices", namespaced=False,
       categories=("api-extensions",), sub=("status",)),
    # flowcontrol.apiserver.k8s.io/v1 (registry/flowcontrol: stored, the bootstrap
    # configuration made at start; pykcm's request path does not classify by them)
    _r("flowcontrol.apiserver.k8s.io", "FlowSchema", "flowschemas", namespaced=False,
       sub=("status",), generation=True),
    _r("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration",
       "prioritylevelconfigurations", namespaced=False, sub=("status",), generation=True),
    # certificates.k8s.io/v1 (registry/certificates; /approval takes the conditions)
    _r("certificates.k8s.io", "CertificateSigningRequest", "certificatesigningrequests",
       namespaced=False, short=("csr",), sub=("approval", "status")),
    # storage.k8s.io/v1
    _r("storage.k8s.io", "StorageClass", "storageclasses", namespaced=False, short=("sc",)),
    # (registry/storage; updates need a resourceVersion but VolumeAttributesClass's)
    _r("storage.k8s.io", "CSIDriver", "csidrivers", namespaced=False, generation=True,
       require_rv=True),
    _r("storage.k8s.io", "CSINode", "csinodes", namespaced=False, require_rv=True),
    _r("storage.k8s.io", "CSIStorageCapacity", "csistoragecapacities", require_rv=True),
    _r("storage.k8s.io", "VolumeAttachment", "volumeattachments", namespaced=False,
       sub=("status",), require_rv=True),
    _r("storage.k8s.io", "VolumeAttributesClass", "volumeattributesclasses",
       namespaced=False, short=("vac",)),
    # autoscaling/v2, and v1 as a view of the same storage (converted by the API server)
    _r("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short=("hpa",),
       categories=("all",), sub=("status",), version="v2"),
    _r("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short=("hpa",),
       categories=("all",), sub=("status",), version="v1"),
    # metrics.k8s.io/v1beta1: metrics-server's API, answered by pykcm's server from the
    # simulated kubelets' usage (pykcm/apiserver/registry/resource_metrics.py), never stored
    _r("metrics.k8s.io", "NodeMetrics", "nodes", namespaced=False, version="v1beta1",
       verbs=("get", "list"), stored=False),
    _r("metrics.k8s.io", "PodMetrics", "pods", version="v1beta1", verbs=("get", "list"),
       stored=False),
    # networking.k8s.io/v1 (registry/networking)
    _r("networking.k8s.io", "IngressClass", "ingressclasses", namespaced=False,
       generation=True),
    _r("networking.k8s.io", "Ingress", "ingresses", short=("ing",), sub=("status",),
       generation=True),
    _r("networking.k8s.io", "IPAddress", "ipaddresses", namespaced=False, short=("ip",)),
    _r("networking.k8s.io", "NetworkPolicy", "networkpolicies", short=("netpol",),
       generation=True),
    _r("networking.k8s.io", "ServiceCIDR", "servicecidrs", namespaced=False, sub=("status",)),
    # node.k8s.io/v1
    # (PUT creates a missing one; updates need a resourceVersion, as upstream)
    _r("node.k8s.io", "RuntimeClass", "runtimeclasses", namespaced=False, require_rv=True),
    # scheduling.k8s.io/v1 (the system classes are created at start; Priority admission)
    _r("scheduling.k8s.io", "PriorityClass", "priorityclasses", namespaced=False,
       short=("pc",), generation=True),
    # policy/v1
    # (updates need a resourceVersion: AllowUnconditionalUpdate is false upstream)
    _r("policy", "PodDisruptionBudget", "poddisruptionbudgets", short=("pdb",), sub=("status",),
       generation=True, require_rv=True),
)


# Built-in kinds served at more than one version: by_kind answers the storage version.
_MULTI_VERSION_KINDS: frozenset[tuple[str, str]] = frozenset(
    {("autoscaling", "HorizontalPodAutoscaler")})


class ResourceRegistry:
    """Looks resources up by group/version/plural, by kind, or by short name."""

    def __init__(self, resources: tuple[ResourceInfo, ...] | list[ResourceInfo] = ()) -> None:
        self._by_path: dict[tuple[str, str, str], ResourceInfo] = {}
        self._by_kind: dict[tuple[str, str], ResourceInfo] = {}
        for r in resources:
            self.add(r)

    def add(self, r: ResourceInfo) -> None:
        self._by_path[(r.group, r.version, r.plural)] = r
        current = self._by_kind.get((r.group, r.kind))
        # a built-in kind served at two versions (autoscaling/v2 and v1) is looked up by kind
        # at the first, its storage version; other kinds: the latest added wins
        if current is None or (r.group, r.kind) not in _MULTI_VERSION_KINDS:
            self._by_kind[(r.group, r.kind)] = r

    def remove(self, r: ResourceInfo) -> None:
        self._by_path.pop((r.group, r.version, r.plural), None)
        self._by_kind.pop((r.group, r.kind), None)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, group: str, kind: str) -> ResourceInfo | None:
        return self._by_kind.get((group, kind))

    def all(self) -> list[ResourceInfo]:
        return list(self._by_path.values())

    def group_versions(self) -> dict[str, list[str]]:
        """{group: [versions]} in registration order; "" is the legacy core group."""
        out: dict[str, list[str]] = {}
        for r in self._by_path.values():
            versions = out.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        return out


def builtin_registry() -> ResourceRegistry:
    return ResourceRegistry(BUILTIN_RESOURCES)


def preferred_resources(resources: Iterable[ResourceInfo]) -> list[ResourceInfo]:
    """Each group's resources at the server's preferred version (ServerPreferredResources).

    Discovery lists each group's preferred version first, so the first
    version seen of a ``(group, plural)`` wins; a resource served only by a
    non-preferred version is kept at that version.
    """
    seen: set[tuple[str, str]] = set()
    out: list[ResourceInfo] = []
    for r in resources:
        key = (r.group, r.plural)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
