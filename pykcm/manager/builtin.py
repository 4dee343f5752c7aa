"""The built-in controllers of ``pykcm controller-manager`` (upstream ``NewControllerDescriptors``).

Role: :func:`pykcm.manager.registry.builtin_registry` calls
:func:`register_builtin_controllers` to fill a registry with one
:class:`~pykcm.manager.registry.ControllerDescriptor` per controller of
``pykcm.controllers``: its canonical name and alias as kube-controller-manager
v1.36 spells them, the option holding its worker count, and an init function
that builds it from the :class:`~pykcm.manager.context.ControllerContext`:
informers from the one shared factory, a client of its own (user agent and
QPS bucket per controller, named as upstream's client builder names them),
an event recorder. Controller packages are imported only when enabled.

The service-account-token controller is special, as upstream's: it uses the
manager's own credentials (the others may use tokens it or TokenRequest
mints, ``--use-service-account-credentials``), starts first and ignores
``--controllers``; without ``--service-account-private-key-file`` it is not
started. The root CA (token Secrets' ``ca.crt``, ``kube-root-ca.crt``) is
``--root-ca-file``'s, else the CA the manager's kubeconfig trusts.

Deviations: the EndpointSlice and mirroring controllers are skipped (logged)
when the API server does not serve discovery.k8s.io/v1 EndpointSlices;
upstream would start them and fail to list.
The StatefulSet controller runs without its PersistentVolumeClaim informer there
(logged): sets without volumeClaimTemplates work, claims cannot be created. The
ReplicationController controller is skipped (logged) where v1 replicationcontrollers
are not served. The disruption controller is skipped (logged) where policy/v1
poddisruptionbudgets are not served, and runs without ReplicationControllers where those
are not.
"""

from __future__ import annotations

import logging

from cryptography import x509

from pykcm.manager.context import ControllerContext
from pykcm.manager.registry import ControllerDescriptor, ControllerRegistry, RunnableController

__all__ = ["register_builtin_controllers"]

log = logging.getLogger("pykcm.manager")


def _read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _read_ca(path: str) -> bytes:
    """upstream readCA: the file's bytes, which must hold PEM certificates."""
    data = _read_file(path)
    try:
        if not x509.load_pem_x509_certificates(data):
            raise ValueError("data does not contain any valid RSA or ECDSA certificates")
    except ValueError as exc:
        raise ValueError(f"error parsing root-ca-file at {path}: {exc}") from None
    return data


def _root_ca(ctx: ControllerContext, client_name: str) -> bytes:
    if ctx.options.root_ca_file:
        return _read_ca(ctx.options.root_ca_file)
    return ctx.client_builder.config(client_name).read_ca_data() or b""


async def _service_account_token(ctx: ControllerContext, name: str
                                 ) -> RunnableController | None:
    o = ctx.options
    if not o.service_account_private_key_file:
        log.info("Controller is disabled because there is no private key",
                 extra={"controller": name})
        return None
    from pykcm.api.serviceaccount import LEGACY_ISSUER, JWTTokenGenerator, load_private_key
    from pykcm.controllers.serviceaccount import TokensController

    try:
        key = load_private_key(_read_file(o.service_account_private_key_file))
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"error reading key for service account token controller: {exc}"
                         ) from None
    f_ = ctx.informer_factory
    return TokensController(
        client=ctx.client_builder.root_client("tokens-controller"),
        sa_informer=f_.core_v1.serviceaccounts, secret_informer=f_.core_v1.secrets,
        token_generator=JWTTokenGenerator(LEGACY_ISSUER, key),
        root_ca=_root_ca(ctx, "tokens-controller"),
        clock=ctx.clock, rng=ctx.rng.stream(name))


async def _serviceaccount(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.serviceaccount import ServiceAccountsController

    return ServiceAccountsController(
        client=ctx.client_builder.client("service-account-controller"),
        sa_informer=ctx.informer_factory.core_v1.serviceaccounts,
        ns_informer=ctx.informer_factory.core_v1.namespaces,
        clock=ctx.clock)


async def _root_ca_cert_publisher(ctx: ControllerContext, name: str
                                  ) -> RunnableController | None:
    from pykcm.controllers.rootcacertpublisher import Publisher

    return Publisher(client=ctx.client_builder.client("root-ca-cert-publisher"),
                     cm_informer=ctx.informer_factory.core_v1.configmaps,
                     ns_informer=ctx.informer_factory.core_v1.namespaces,
                     root_ca=_root_ca(ctx, "root-ca-cert-publisher"),
                     clock=ctx.clock)


async def _legacy_token_cleaner(ctx: ControllerContext, name: str
                                ) -> RunnableController | None:
    from pykcm.controllers.serviceaccount import LegacySATokenCleaner

    f = ctx.informer_factory
    return LegacySATokenCleaner(
        client=ctx.client_builder.client("legacy-service-account-token-cleaner"),
        sa_informer=f.core_v1.serviceaccounts, secret_informer=f.core_v1.secrets,
        pod_informer=f.core_v1.pods,
        clean_up_period=ctx.options.legacy_service_account_token_clean_up_period,
        clock=ctx.clock)


async def _endpoints(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.endpoint import EndpointController

    f = ctx.informer_factory
    return EndpointController(
        client=ctx.client_builder.client("endpoint-controller"),
        pod_informer=f.core_v1.pods, service_informer=f.core_v1.services,
        endpoints_informer=f.core_v1.endpoints,
        recorder=ctx.event_recorder("endpoint-controller"),
        batch_period=ctx.options.endpoint_updates_batch_period,
        clock=ctx.clock)


async def _serves_endpoint_slices(ctx: ControllerContext, client_name: str, name: str) -> bool:
    from pykcm.client import NoResourceMatchError

    try:
        await ctx.client_builder.client(client_name).resolve("discovery.k8s.io/v1/endpointslices")
    except NoResourceMatchError:
        log.warning("Skipping controller: the API server does not serve "
                    "discovery.k8s.io/v1 endpointslices", extra={"controller": name})
        return False
    return True


async def _endpointslice(ctx: ControllerContext, name: str) -> RunnableController | None:
    if not await _serves_endpoint_slices(ctx, "endpointslice-controller", name):
        return None
    from pykcm.api.endpoints import ENDPOINT_SLICES
    from pykcm.controllers.endpointslice import EVENT_SOURCE, EndpointSliceController

    f = ctx.informer_factory
    return EndpointSliceController(
        client=ctx.client_builder.client("endpointslice-controller"),
        pod_informer=f.core_v1.pods, service_informer=f.core_v1.services,
        node_informer=f.core_v1.nodes, endpointslice_informer=f.informer_for(ENDPOINT_SLICES),
        max_endpoints_per_slice=ctx.options.max_endpoints_per_slice,
        batch_period=ctx.options.endpointslice_updates_batch_period,
        recorder=ctx.event_recorder("endpointslice-controller", EVENT_SOURCE),
        clock=ctx.clock)


async def _endpointslice_mirroring(ctx: ControllerContext, name: str
                                   ) -> RunnableController | None:
    if not await _serves_endpoint_slices(ctx, "endpointslicemirroring-controller", name):
        return None
    from pykcm.api.endpoints import ENDPOINT_SLICES
    from pykcm.controllers.endpointslicemirroring import (
        EVENT_SOURCE,
        EndpointSliceMirroringController,
    )

    f = ctx.informer_factory
    o = ctx.options
    return EndpointSliceMirroringController(
        client=ctx.client_builder.client("endpointslicemirroring-controller"),
        endpoints_informer=f.core_v1.endpoints,
        endpointslice_informer=f.informer_for(ENDPOINT_SLICES),
        service_informer=f.core_v1.services,
        max_endpoints_per_subset=o.mirroring_max_endpoints_per_subset,
        batch_period=o.mirroring_endpointslice_updates_batch_period,
        recorder=ctx.event_recorder("endpointslicemirroring-controller", EVENT_SOURCE),
        clock=ctx.clock)


async def _daemonset(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.daemon import DaemonSetsController

    f = ctx.informer_factory
    return DaemonSetsController(
        ds_informer=f.apps_v1.daemonsets, history_informer=f.apps_v1.controllerrevisions,
        pod_informer=f.core_v1.pods, node_informer=f.core_v1.nodes,
        client=ctx.client_builder.client("daemon-set-controller"),
        recorder=ctx.event_recorder("daemon-set-controller", "daemonset-controller"),
        clock=ctx.clock)


async def _statefulset(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.client import NoResourceMatchError
    from pykcm.controllers.statefulset import PERSISTENT_VOLUME_CLAIMS, StatefulSetController

    f = ctx.informer_factory
    client = ctx.client_builder.client("statefulset-controller")
    pvc_informer = None
    try:
        await client.resolve("persistentvolumeclaims")
        pvc_informer = f.informer_for(PERSISTENT_VOLUME_CLAIMS)
    except NoResourceMatchError:
        log.warning("The API server does not serve persistentvolumeclaims: StatefulSets with "
                    "volumeClaimTemplates cannot get their claims", extra={"controller": name})
    return StatefulSetController(
        pod_informer=f.core_v1.pods, set_informer=f.apps_v1.statefulsets,
        pvc_informer=pvc_informer, revision_informer=f.apps_v1.controllerrevisions,
        client=client, recorder=ctx.event_recorder("statefulset-controller"),
        clock=ctx.clock, rng=ctx.rng.stream(name))


async def _replicationcontroller(ctx: ControllerContext, name: str
                                 ) -> RunnableController | None:
    from pykcm.client import NoResourceMatchError
    from pykcm.controllers.replication import REPLICATION_CONTROLLERS, ReplicationManager

    client = ctx.client_builder.client("replication-controller")
    try:
        await client.resolve("replicationcontrollers")
    except NoResourceMatchError:
        log.warning("Skipping controller: the API server does not serve v1 "
                    "replicationcontrollers", extra={"controller": name})
        return None
    f = ctx.informer_factory
    return ReplicationManager(
        pod_informer=f.core_v1.pods, rc_informer=f.informer_for(REPLICATION_CONTROLLERS),
        client=client, recorder=ctx.event_recorder("replication-controller"),
        clock=ctx.clock)


async def _podgc(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.podgc import PodGCController

    f = ctx.informer_factory
    return PodGCController(client=ctx.client_builder.client("pod-garbage-collector"),
                           pod_informer=f.core_v1.pods, node_informer=f.core_v1.nodes,
                           terminated_pod_threshold=ctx.options.terminated_pod_gc_threshold,
                           clock=ctx.clock)


async def _resourcequota(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.client import NoResourceMatchError
    from pykcm.controllers.resourcequota import ResourceQuotaController

    client = ctx.client_builder.client("resourcequota-controller")
    try:
        quotas = await client.resolve("v1/resourcequotas")
    except NoResourceMatchError:
        log.warning("Skipping controller: the API server does not serve v1 resourcequotas",
                    extra={"controller": name})
        return None
    rq = ResourceQuotaController(client=client, quota_informer=ctx.informer_factory.informer_for(
        quotas), informer_factory=ctx.informer_factory,
        resync_period=ctx.options.resource_quota_sync_period,
        metadata_informers=ctx.object_or_metadata_informers(),
                                 clock=ctx.clock)
    # (its monitors are resolved when it runs, once every controller is built)
    return rq


async def _clusterrole_aggregation(ctx: ControllerContext, name: str
                                   ) -> RunnableController | None:
    from pykcm.controllers.clusterroleaggregation import ClusterRoleAggregationController

    return ClusterRoleAggregationController(
        cluster_role_informer=ctx.informer_factory.rbac_v1.clusterroles,
        client=ctx.client_builder.client("clusterrole-aggregation-controller"),
        clock=ctx.clock)


async def _csr_signing(ctx: ControllerContext, name: str) -> RunnableController | None:
    # (upstream skips the controller when no signing cert/key is given)
    o = ctx.options
    if not o.cluster_signing_cert_file or not o.cluster_signing_key_file:
        log.info("Skipping CSR signer controller because no csr cert/key was specified")
        return None
    from pykcm.controllers.certificates import CSRSigningController

    return CSRSigningController(
        csr_informer=ctx.informer_factory.for_resource(
            "certificates.k8s.io", "v1", "certificatesigningrequests"),
        client=ctx.client_builder.client("certificate-controller"),
        cert_file=o.cluster_signing_cert_file, key_file=o.cluster_signing_key_file,
        duration=o.cluster_signing_duration,
        clock=ctx.clock)


async def _csr_approving(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.certificates import CSRApprovingController

    return CSRApprovingController(
        csr_informer=ctx.informer_factory.for_resource(
            "certificates.k8s.io", "v1", "certificatesigningrequests"),
        client=ctx.client_builder.client("certificate-controller"),
        clock=ctx.clock)


async def _csr_cleaner(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.certificates import CSRCleanerController

    return CSRCleanerController(
        csr_informer=ctx.informer_factory.for_resource(
            "certificates.k8s.io", "v1", "certificatesigningrequests"),
        client=ctx.client_builder.client("certificate-controller"),
        clock=ctx.clock)


async def _ttl(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.ttl import TTLController

    return TTLController(node_informer=ctx.informer_factory.core_v1.nodes,
                         client=ctx.client_builder.client("ttl-controller"),
                         clock=ctx.clock)


async def _namespace(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.namespace import NamespaceController

    return NamespaceController(
        client=ctx.client_builder.client("namespace-controller"),
        namespace_informer=ctx.informer_factory.core_v1.namespaces,
        resync_period=ctx.options.namespace_sync_period,
        clock=ctx.clock)


async def _garbage_collector(ctx: ControllerContext, name: str) -> RunnableController | None:
    if not ctx.options.enable_garbage_collector:
        return None
    from pykcm.controllers.garbagecollector import GarbageCollector

    return GarbageCollector(
        client=ctx.client_builder.client("generic-garbage-collector"),
        informer_factory=ctx.object_or_metadata_informers(),
        recorder=ctx.event_recorder("generic-garbage-collector",
                                    "garbage-collector-controller"),
        clock=ctx.clock, rng=ctx.rng.stream(name))


async def _replicaset(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.replicaset import ReplicaSetController

    f = ctx.informer_factory
    return ReplicaSetController(
        pod_informer=f.core_v1.pods, rs_informer=f.apps_v1.replicasets,
        client=ctx.client_builder.client("replicaset-controller"),
        recorder=ctx.event_recorder("replicaset-controller"),
        clock=ctx.clock)


async def _deployment(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.deployment import DeploymentController

    f = ctx.informer_factory
    return DeploymentController(
        deployment_informer=f.apps_v1.deployments, rs_informer=f.apps_v1.replicasets,
        pod_informer=f.core_v1.pods,
        client=ctx.client_builder.client("deployment-controller"),
        recorder=ctx.event_recorder("deployment-controller"),
        clock=ctx.clock)


async def _disruption(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.client import NoResourceMatchError
    from pykcm.controllers.disruption import DisruptionController

    client = ctx.client_builder.client("disruption-controller")
    try:
        pdbs = await client.resolve("policy/v1/poddisruptionbudgets")
    except NoResourceMatchError:
        log.warning("Skipping controller: the API server does not serve policy/v1 "
                    "poddisruptionbudgets", extra={"controller": name})
        return None
    f = ctx.informer_factory
    try:
        rc_informer = f.informer_for(await client.resolve("replicationcontrollers"))
    except NoResourceMatchError:
        rc_informer = None
    return DisruptionController(
        client=client, pod_informer=f.core_v1.pods, pdb_informer=f.informer_for(pdbs),
        rc_informer=rc_informer, rs_informer=f.apps_v1.replicasets,
        deployment_informer=f.apps_v1.deployments, statefulset_informer=f.apps_v1.statefulsets,
        # upstream's recorder source is "controllermanager", not the controller's name
        recorder=ctx.event_recorder("disruption-controller", "controllermanager"),
        clock=ctx.clock)


async def _horizontal_pod_autoscaler(ctx: ControllerContext, name: str
                                     ) -> RunnableController | None:
    from pykcm.client import NoResourceMatchError
    from pykcm.controllers.podautoscaler import HorizontalController

    client = ctx.client_builder.client("horizontal-pod-autoscaler")
    try:
        hpas = await client.resolve("autoscaling/v2/horizontalpodautoscalers")
    except NoResourceMatchError:
        log.warning("Skipping controller: the API server does not serve autoscaling/v2 "
                    "horizontalpodautoscalers", extra={"controller": name})
        return None
    o = ctx.options
    return HorizontalController(
        client=client, hpa_informer=ctx.informer_factory.informer_for(hpas),
        pod_informer=ctx.informer_factory.core_v1.pods,
        recorder=ctx.event_recorder("horizontal-pod-autoscaler"),
        sync_period=o.horizontal_pod_autoscaler_sync_period,
        downscale_stabilization=o.horizontal_pod_autoscaler_downscale_stabilization,
        tolerance=o.horizontal_pod_autoscaler_tolerance,
        cpu_initialization_period=o.horizontal_pod_autoscaler_cpu_initialization_period,
        initial_readiness_delay=o.horizontal_pod_autoscaler_initial_readiness_delay,
        clock=ctx.clock)


async def _job(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.job import JobController

    f = ctx.informer_factory
    return JobController(
        job_informer=f.batch_v1.jobs, pod_informer=f.core_v1.pods,
        client=ctx.client_builder.client("job-controller"),
        recorder=ctx.event_recorder("job-controller"),
        clock=ctx.clock)


async def _cronjob(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.cronjob import CronJobController

    f = ctx.informer_factory
    return CronJobController(
        cronjob_informer=f.batch_v1.cronjobs, job_informer=f.batch_v1.jobs,
        client=ctx.client_builder.client("cronjob-controller"),
        recorder=ctx.event_recorder("cronjob-controller"),
        clock=ctx.clock)


async def _node_lifecycle(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.nodelifecycle import NodeLifecycleController

    f = ctx.informer_factory
    o = ctx.options
    # upstream: the node-controller client and event source for both node controllers.
    return NodeLifecycleController(
        client=ctx.client_builder.client("node-controller"),
        node_informer=f.core_v1.nodes, pod_informer=f.core_v1.pods,
        lease_informer=f.coordination_v1.leases,
        recorder=ctx.event_recorder("node-controller"),
        node_monitor_period=o.node_monitor_period,
        node_monitor_grace_period=o.node_monitor_grace_period,
        node_startup_grace_period=o.node_startup_grace_period,
        eviction_limiter_qps=o.node_eviction_rate,
        secondary_eviction_limiter_qps=o.secondary_node_eviction_rate,
        large_cluster_threshold=o.large_cluster_size_threshold,
        unhealthy_zone_threshold=o.unhealthy_zone_threshold,
        clock=ctx.clock)


async def _taint_eviction(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.tainteviction import TaintEvictionController

    f = ctx.informer_factory
    return TaintEvictionController(
        client=ctx.client_builder.client("node-controller"),
        pod_informer=f.core_v1.pods, node_informer=f.core_v1.nodes,
        # upstream records through the node-controller client too (its ServiceAccount's
        # role; there is no taint-eviction-controller account), as taint-eviction-controller
        recorder=ctx.event_recorder("node-controller", "taint-eviction-controller"),
        clock=ctx.clock)


async def _persistentvolume_binder(ctx: ControllerContext, name: str
                                   ) -> RunnableController | None:
    from pykcm.controllers.persistentvolume import PersistentVolumeController

    f = ctx.informer_factory
    return PersistentVolumeController(
        claim_informer=f.core_v1.persistentvolumeclaims, volume_informer=f.core_v1.persistentvolumes,
        class_informer=f.storage_v1.storageclasses,
        client=ctx.client_builder.client("persistent-volume-binder"),
        recorder=ctx.event_recorder("persistent-volume-binder", "persistentvolume-controller"),
        sync_period=ctx.options.pvclaimbinder_sync_period,
        clock=ctx.clock)


async def _pvc_protection(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.pvcprotection import PVCProtectionController

    f = ctx.informer_factory
    return PVCProtectionController(
        claim_informer=f.core_v1.persistentvolumeclaims, pod_informer=f.core_v1.pods,
        client=ctx.client_builder.client("pvc-protection-controller"),
        clock=ctx.clock)


async def _pv_protection(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.pvprotection import PVProtectionController

    return PVProtectionController(
        volume_informer=ctx.informer_factory.core_v1.persistentvolumes,
        client=ctx.client_builder.client("pv-protection-controller"),
        clock=ctx.clock)


async def _ttl_after_finished(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.ttlafterfinished import TTLAfterFinishedController

    return TTLAfterFinishedController(
        job_informer=ctx.informer_factory.batch_v1.jobs,
        client=ctx.client_builder.client("ttl-after-finished-controller"),
        clock=ctx.clock)


def register_builtin_controllers(registry: ControllerRegistry) -> None:
    """Register every built-in controller in ``registry``, in upstream's order."""
    for d in (
        ControllerDescriptor("serviceaccount-token-controller", _service_account_token,
                             aliases=("serviceaccount-token",),
                             concurrency="concurrent_serviceaccount_token_syncs",
                             requires_special_handling=True),
        ControllerDescriptor("endpoints-controller", _endpoints, aliases=("endpoint",),
                             concurrency="concurrent_endpoint_syncs"),
        ControllerDescriptor("endpointslice-controller", _endpointslice,
                             aliases=("endpointslice",),
                             concurrency="concurrent_service_endpoint_syncs"),
        ControllerDescriptor("endpointslice-mirroring-controller", _endpointslice_mirroring,
                             aliases=("endpointslicemirroring",),
                             concurrency="mirroring_concurrent_service_endpoint_syncs"),
        ControllerDescriptor("replicationcontroller-controller", _replicationcontroller,
                             aliases=("replicationcontroller",), concurrency="concurrent_rc_syncs"),
        ControllerDescriptor("pod-garbage-collector-controller", _podgc, aliases=("podgc",),
                             concurrency=1),
        ControllerDescriptor("namespace-controller", _namespace, aliases=("namespace",),
                             concurrency="concurrent_namespace_syncs"),
        ControllerDescriptor("serviceaccount-controller", _serviceaccount,
                             aliases=("serviceaccount",), concurrency=1),
        ControllerDescriptor("garbage-collector-controller", _garbage_collector,
                             aliases=("garbagecollector",), concurrency="concurrent_gc_syncs"),
        ControllerDescriptor("daemonset-controller", _daemonset, aliases=("daemonset",),
                             concurrency="concurrent_daemonset_syncs"),
        ControllerDescriptor("replicaset-controller", _replicaset, aliases=("replicaset",),
                             concurrency="concurrent_replicaset_syncs"),
        ControllerDescriptor("job-controller", _job, aliases=("job",),
                             concurrency="concurrent_job_syncs"),
        ControllerDescriptor("deployment-controller", _deployment, aliases=("deployment",),
                             concurrency="concurrent_deployment_syncs"),
        ControllerDescriptor("horizontal-pod-autoscaler-controller", _horizontal_pod_autoscaler,
                             aliases=("horizontalpodautoscaling",),
                             concurrency="concurrent_horizontal_pod_autoscaler_syncs"),
        ControllerDescriptor("disruption-controller", _disruption, aliases=("disruption",),
                             concurrency=1),
        ControllerDescriptor("statefulset-controller", _statefulset, aliases=("statefulset",),
                             concurrency="concurrent_statefulset_syncs"),
        ControllerDescriptor("cronjob-controller", _cronjob, aliases=("cronjob",),
                             concurrency="concurrent_cron_job_syncs"),
        ControllerDescriptor("clusterrole-aggregation-controller", _clusterrole_aggregation,
                             aliases=("clusterrole-aggregation",), concurrency=5),
        ControllerDescriptor("certificatesigningrequest-signing-controller", _csr_signing,
                             aliases=("csrsigning",), concurrency=5),
        ControllerDescriptor("certificatesigningrequest-approving-controller", _csr_approving,
                             aliases=("csrapproving",), concurrency=5),
        ControllerDescriptor("certificatesigningrequest-cleaner-controller", _csr_cleaner,
                             aliases=("csrcleaner",), concurrency=1),
        ControllerDescriptor("ttl-controller", _ttl, aliases=("ttl",), concurrency=5),
        ControllerDescriptor("resourcequota-controller", _resourcequota,
                             aliases=("resourcequota",),
                             concurrency="concurrent_resource_quota_syncs"),
        ControllerDescriptor("node-lifecycle-controller", _node_lifecycle,
                             aliases=("nodelifecycle",), concurrency=1),
        ControllerDescriptor("persistentvolume-binder-controller", _persistentvolume_binder,
                             aliases=("persistentvolume-binder",), concurrency=1),
        ControllerDescriptor("persistentvolumeclaim-protection-controller", _pvc_protection,
                             aliases=("pvc-protection",), concurrency=1),
        ControllerDescriptor("persistentvolume-protection-controller", _pv_protection,
                             aliases=("pv-protection",), concurrency=1),
        ControllerDescriptor("ttl-after-finished-controller", _ttl_after_finished,
                             aliases=("ttl-after-finished",),
                             concurrency="concurrent_ttl_after_finished_syncs"),
        ControllerDescriptor("root-ca-certificate-publisher-controller", _root_ca_cert_publisher,
                             aliases=("root-ca-cert-publisher",), concurrency=1),
        ControllerDescriptor("legacy-serviceaccount-token-cleaner-controller",
                             _legacy_token_cleaner,
                             aliases=("legacy-service-account-token-cleaner",), concurrency=1),
        ControllerDescriptor("taint-eviction-controller", _taint_eviction, concurrency=1),
    ):
        registry.register(d)
