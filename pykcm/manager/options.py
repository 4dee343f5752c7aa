"""The flags of ``pykcm controller-manager``, named and defaulted as kube-controller-manager's.

Role: the command line is parsed once, into one :class:`ControllerManagerOptions`
(the counterpart of upstream's ``KubeControllerManagerOptions`` applied to its
``KubeControllerManagerConfiguration``). The manager reads it; controllers read
their own settings from it through ``ControllerContext.options``; ``/configz``
serves it in upstream's configuration shape (:meth:`ControllerManagerOptions.configz`).

Data flow::

    argv ──argparse (add_flags)──► Namespace ──from_args──► ControllerManagerOptions
                                                              │ validate(registry)
                                                              ▼ errors: one line, exit 1

Flags pykcm has, with upstream's names and defaults: ``--kubeconfig``,
``--master``, ``--controllers`` (``*``), ``--kube-api-qps`` (20),
``--kube-api-burst`` (30), ``--min-resync-period`` (12h), the
``--leader-elect*`` family (true, 15s, 10s, 2s, ``leases``,
``kube-controller-manager`` in ``kube-system``), ``--bind-address``
(0.0.0.0), ``--secure-port`` (10257; 0 turns HTTPS serving off),
``--concurrent-*-syncs`` of the built-in controllers (``--concurrent_rc_syncs`` too, as
upstream spells it), ``--terminated-pod-gc-threshold`` (12500), ``--enable-garbage-collector``,
``--pvclaimbinder-sync-period`` (15s), ``--resource-quota-sync-period`` (5m),
``--namespace-sync-period``, the node lifecycle ones (``--node-monitor-period`` 5s,
``--node-monitor-grace-period`` 50s, ``--node-startup-grace-period`` 60s,
``--node-eviction-rate`` 0.1, ``--secondary-node-eviction-rate`` 0.01,
``--large-cluster-size-threshold`` 50, ``--unhealthy-zone-threshold`` 0.55), the
endpoint controllers' ``--endpoint-updates-batch-period``,
``--endpointslice-updates-batch-period``, ``--max-endpoints-per-slice`` (100),
``--mirroring-*`` (max 1000 addresses per subset), the service account ones
(``--service-account-private-key-file``, ``--root-ca-file``,
``--legacy-service-account-token-clean-up-period`` (8760h),
``--use-service-account-credentials``), the delegated authentication and
authorization of the HTTPS endpoints (``--authentication-kubeconfig``,
``--authentication-skip-lookup``, ``--authentication-tolerate-lookup-failure``,
``--authentication-token-webhook-cache-ttl`` 10s, ``--authorization-kubeconfig``,
``--authorization-always-allow-paths`` (/healthz,/readyz,/livez),
``--authorization-webhook-cache-{authorized,unauthorized}-ttl`` 10s),
``--controller-shutdown-timeout`` (10s) and
``-v/--v``. Durations are Go durations (``15s``, ``1m30s``, ``12h``);
booleans take ``--flag``, ``--flag=true`` or ``--flag=false`` as pflag does.

pykcm-only flags:

- ``--port N``: also serve the same endpoints over plain HTTP on
  ``--bind-address:N`` (0, the default, turns it off). This is the insecure
  port kube-controller-manager had until v1.24, and as it did it serves without
  authentication or authorization (the HTTPS port delegates both); tests use it
  with ``--secure-port=0``.
- ``--compact-informer-objects`` (default true; ``=false`` to turn it off):
  the shared and metadata-only informers cache read-only compact objects
  (FrozenObject: typed metadata, the rest as raw JSON; about a fifth of a dict
  tree's memory) instead of dicts; the built-in controllers read them and
  copy only what they write (issue 19). ``=false`` caches plain dicts, as
  before.
- ``--extra-controllers MODULE:FUNCTION`` (hidden, repeatable; a testing
  hook): ``FUNCTION(registry)`` is called to register more controller
  descriptors before ``--controllers`` is resolved, so a test can run its
  own controller in a ``pykcm controller-manager`` subprocess.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from pykcm.api.go_duration import parse_go_duration_seconds

if TYPE_CHECKING:
    from pykcm.manager.registry import ControllerRegistry

__all__ = [
    "ControllerManagerOptions",
    "OptionsError",
    "add_flags",
    "format_duration",
    "parse_bool",
    "parse_duration",
]


class OptionsError(ValueError):
    """The options cannot be used; the message is one line for the user."""


# -- Go durations ---------------------------------------------------------------------

def parse_duration(text: str) -> float:
    """Seconds of a Go duration flag (``time.ParseDuration``, pykcm.api.go_duration):
    ``"1h2m3.5s"``, ``"-1.5h"``, ``"0"``; a ValueError carries Go's message."""
    return parse_go_duration_seconds(text.strip())


def format_duration(seconds: float) -> str:
    """A Go ``time.Duration.String()``: ``12h0m0s``, ``15s``, ``1m30s``, ``500ms``, ``0s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    h, rem = divmod(ns, 3_600_000_000_000)
    m, rem = divmod(rem, 60_000_000_000)
    secs = _trim(rem / 1e9)
    if h:
        return f"{sign}{h}h{m}m{secs}s"
    if m:
        return f"{sign}{m}m{secs}s"
    return f"{sign}{secs}s"


def _trim(v: float) -> str:
    out = f"{v:.9f}".rstrip("0").rstrip(".")
    return out or "0"


def parse_bool(text: str) -> bool:
    """A Go ``strconv.ParseBool`` value: 1, t, T, TRUE, true, True and the false ones."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


# -- the options --------------------------------------------------------------------------


@dataclass
class ControllerManagerOptions:
    """Every setting of the controller manager; durations in seconds.

    Field names are the flag names in snake case (``--kube-api-qps`` →
    ``kube_api_qps``), so a descriptor names its worker count by field
    (``ControllerDescriptor.concurrency="concurrent_replicaset_syncs"``).
    """

    kubeconfig: str | None = None
    master: str | None = None
    controllers: list[str] = field(default_factory=lambda: ["*"])
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    min_resync_period: float = 12 * 3600.0
    # leader election (component-base's BindLeaderElectionFlags, kcm's defaults)
    leader_elect: bool = True
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    leader_elect_resource_lock: str = "leases"
    leader_elect_resource_name: str = "kube-controller-manager"
    leader_elect_resource_namespace: str = "kube-system"
    # serving
    bind_address: str = "0.0.0.0"
    secure_port: int = 10257
    port: int = 0
    # pykcm only: the informers cache read-only compact objects (pykcm.cache.frozen_object)
    compact_informer_objects: bool = True
    # delegated authentication/authorization of the HTTPS endpoints (k8s.io/apiserver's
    # Delegating*Options; the kubeconfigs default to the manager's own, see delegated_auth.py)
    authentication_kubeconfig: str = ""
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = False
    authentication_token_webhook_cache_ttl: float = 10.0
    authorization_kubeconfig: str = ""
    authorization_always_allow_paths: list[str] = field(
        default_factory=lambda: ["/healthz", "/readyz", "/livez"])
    authorization_webhook_cache_authorized_ttl: float = 10.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0
    # built-in controllers (pkg/controller/*/config/v1alpha1/defaults.go)
    concurrent_replicaset_syncs: int = 5
    concurrent_deployment_syncs: int = 5
    concurrent_job_syncs: int = 5
    concurrent_cron_job_syncs: int = 5
    concurrent_gc_syncs: int = 20
    enable_garbage_collector: bool = True
    concurrent_namespace_syncs: int = 10
    namespace_sync_period: float = 300.0
    concurrent_ttl_after_finished_syncs: int = 5
    concurrent_daemonset_syncs: int = 2
    concurrent_statefulset_syncs: int = 5
    concurrent_rc_syncs: int = 5
    terminated_pod_gc_threshold: int = 12500
    pvclaimbinder_sync_period: float = 15.0
    concurrent_resource_quota_syncs: int = 5
    resource_quota_sync_period: float = 300.0
    # horizontal pod autoscaler (podautoscaler/config/v1alpha1/defaults.go)
    concurrent_horizontal_pod_autoscaler_syncs: int = 5
    horizontal_pod_autoscaler_sync_period: float = 15.0
    horizontal_pod_autoscaler_downscale_stabilization: float = 300.0
    horizontal_pod_autoscaler_tolerance: float = 0.1
    horizontal_pod_autoscaler_cpu_initialization_period: float = 300.0
    horizontal_pod_autoscaler_initial_readiness_delay: float = 30.0
    # node lifecycle (nodelifecycle/config/v1alpha1/defaults.go; KubeCloudShared's period)
    node_monitor_period: float = 5.0
    node_monitor_grace_period: float = 50.0
    node_startup_grace_period: float = 60.0
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    large_cluster_size_threshold: int = 50
    unhealthy_zone_threshold: float = 0.55
    # endpoints, EndpointSlices, mirroring
    concurrent_endpoint_syncs: int = 5
    endpoint_updates_batch_period: float = 0.0
    concurrent_service_endpoint_syncs: int = 5
    max_endpoints_per_slice: int = 100
    endpointslice_updates_batch_period: float = 0.0
    mirroring_concurrent_service_endpoint_syncs: int = 5
    mirroring_max_endpoints_per_subset: int = 1000
    mirroring_endpointslice_updates_batch_period: float = 0.0
    # service accounts
    service_account_private_key_file: str = ""
    root_ca_file: str = ""
    # certificates (the CSR signing controller)
    cluster_signing_cert_file: str = ""
    cluster_signing_key_file: str = ""
    cluster_signing_duration: float = 365 * 24 * 3600.0
    concurrent_serviceaccount_token_syncs: int = 5
    legacy_service_account_token_clean_up_period: float = 365 * 24 * 3600.0
    use_service_account_credentials: bool = False
    # process
    controller_shutdown_timeout: float = 10.0
    v: int = 0
    extra_controllers: list[str] = field(default_factory=list)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ControllerManagerOptions:
        """The options from a Namespace filled by :func:`add_flags` (unknown attributes ignored)."""
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if hasattr(args, f.name):
                value = getattr(args, f.name)
                if value is not None or f.name in ("kubeconfig", "master"):
                    kw[f.name] = value
        if kw.get("controllers") is None:
            kw.pop("controllers", None)
        return cls(**kw)

    @classmethod
    def parse(cls, argv: Sequence[str]) -> ControllerManagerOptions:
        """Parse flags alone (a parser of its own; argparse errors exit 2)."""
        p = argparse.ArgumentParser(prog="controller-manager")
        add_flags(p)
        return cls.from_args(p.parse_args(list(argv)))

    def validate(self, registry: ControllerRegistry | None = None) -> None:
        """Raise :class:`OptionsError` (one line) unless the options are usable.

        Checks upstream's: the lock is ``leases``; the election durations are
        ordered (lease > renew deadline > 1.2 x retry period); and, with a
        registry, every ``--controllers`` name is known.
        """
        errs: list[str] = []
        if self.leader_elect and self.leader_elect_resource_lock != "leases":
            errs.append('resourceLock value must be "leases"')
        if self.leader_elect:
            le, rd, rp = (self.leader_elect_lease_duration, self.leader_elect_renew_deadline,
                          self.leader_elect_retry_period)
            if not (le > 0 and rd > 0 and rp > 0):
                errs.append("leader election durations must be greater than zero")
            elif le <= rd:
                errs.append("leaseDuration must be greater than renewDeadline")
            elif rd <= 1.2 * rp:
                errs.append("renewDeadline must be greater than retryPeriod*JitterFactor")
        if not (self.kube_api_qps >= 0) or math.isinf(self.kube_api_qps):
            errs.append(f"--kube-api-qps must be >= 0, got {self.kube_api_qps}")
        if self.kube_api_burst < 0:
            errs.append(f"--kube-api-burst must be >= 0, got {self.kube_api_burst}")
        for name in ("secure_port", "port"):
            port = getattr(self, name)
            if not 0 <= port <= 65535:
                flag = "--" + name.replace("_", "-")
                errs.append(f"{flag} {port} must be between 0 and 65535, inclusive")
        for f in fields(self):
            if f.name.startswith("concurrent_") and getattr(self, f.name) < 0:
                errs.append(f"--{f.name.replace('_', '-')} must be >= 0")
        for flag, value in (
                ("concurrent-service-endpoint-syncs", self.concurrent_service_endpoint_syncs),
                ("mirroring-concurrent-service-endpoint-syncs",
                 self.mirroring_concurrent_service_endpoint_syncs)):
            if value < 1:
                errs.append(f"{flag} must not be less than 1, but got {value}")
            elif value > 50:
                errs.append(f"{flag} must not be more than 50, but got {value}")
        for flag, value in (("max-endpoints-per-slice", self.max_endpoints_per_slice),
                            ("mirroring-max-endpoints-per-subset",
                             self.mirroring_max_endpoints_per_subset)):
            if value < 1:
                errs.append(f"{flag} must not be less than 1, but got {value}")
            elif value > 1000:
                errs.append(f"{flag} must not be more than 1000, but got {value}")
        for flag, value in (("concurrent-daemonset-syncs", self.concurrent_daemonset_syncs),
                            ("concurrent-statefulset-syncs", self.concurrent_statefulset_syncs)):
            if value < 1:
                errs.append(f"{flag} must be greater than 0, but got {value}")
        if self.min_resync_period < 0:
            errs.append("--min-resync-period must be >= 0")
        if self.controller_shutdown_timeout < 0:
            errs.append("--controller-shutdown-timeout must be >= 0")
        if registry is not None:
            try:
                registry.resolve_enabled(self.controllers)
            except ValueError as exc:
                errs.append(str(exc))
        if errs:
            # utilerrors.NewAggregate: one error as is, several as "[a, b]".
            raise OptionsError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")

    def configz(self) -> dict[str, Any]:
        """The effective configuration in ``KubeControllerManagerConfiguration``'s shape
        (what upstream's ``/configz`` serves under ``kubecontrollermanager.config.k8s.io``)."""
        d = format_duration
        return {
            "Generic": {
                "Port": self.secure_port,
                "Address": self.bind_address,
                "MinResyncPeriod": d(self.min_resync_period),
                "ClientConnection": {
                    "Kubeconfig": self.kubeconfig or "",
                    "AcceptContentTypes": "",
                    "ContentType": "application/json",
                    "QPS": self.kube_api_qps,
                    "Burst": self.kube_api_burst,
                },
                "ControllerStartInterval": "0s",
                "LeaderElection": {
                    "LeaderElect": self.leader_elect,
                    "LeaseDuration": d(self.leader_elect_lease_duration),
                    "RenewDeadline": d(self.leader_elect_renew_deadline),
                    "RetryPeriod": d(self.leader_elect_retry_period),
                    "ResourceLock": self.leader_elect_resource_lock,
                    "ResourceName": self.leader_elect_resource_name,
                    "ResourceNamespace": self.leader_elect_resource_namespace,
                },
                "Controllers": list(self.controllers),
                "ControllerShutdownTimeout": d(self.controller_shutdown_timeout),
            },
            "ReplicaSetController": {"ConcurrentRSSyncs": self.concurrent_replicaset_syncs},
            "DeploymentController": {
                "ConcurrentDeploymentSyncs": self.concurrent_deployment_syncs},
            "JobController": {"ConcurrentJobSyncs": self.concurrent_job_syncs},
            "CronJobController": {"ConcurrentCronJobSyncs": self.concurrent_cron_job_syncs},
            "GarbageCollectorController": {
                "EnableGarbageCollector": self.enable_garbage_collector,
                "ConcurrentGCSyncs": self.concurrent_gc_syncs,
                "GCIgnoredResources": [{"Group": "", "Resource": "events"}],
            },
            "NamespaceController": {
                "NamespaceSyncPeriod": d(self.namespace_sync_period),
                "ConcurrentNamespaceSyncs": self.concurrent_namespace_syncs,
            },
            "TTLAfterFinishedController": {
                "ConcurrentTTLSyncs": self.concurrent_ttl_after_finished_syncs},
            "DaemonSetController": {
                "ConcurrentDaemonSetSyncs": self.concurrent_daemonset_syncs},
            "StatefulSetController": {
                "ConcurrentStatefulSetSyncs": self.concurrent_statefulset_syncs},
            "ReplicationController": {"ConcurrentRCSyncs": self.concurrent_rc_syncs},
            "PodGCController": {
                "TerminatedPodGCThreshold": self.terminated_pod_gc_threshold},
            "EndpointController": {
                "ConcurrentEndpointSyncs": self.concurrent_endpoint_syncs,
                "EndpointUpdatesBatchPeriod": d(self.endpoint_updates_batch_period)},
            "EndpointSliceController": {
                "ConcurrentServiceEndpointSyncs": self.concurrent_service_endpoint_syncs,
                "MaxEndpointsPerSlice": self.max_endpoints_per_slice,
                "EndpointUpdatesBatchPeriod": d(self.endpointslice_updates_batch_period)},
            "EndpointSliceMirroringController": {
                "MirroringConcurrentServiceEndpointSyncs":
                    self.mirroring_concurrent_service_endpoint_syncs,
                "MirroringMaxEndpointsPerSubset": self.mirroring_max_endpoints_per_subset,
                "MirroringEndpointUpdatesBatchPeriod":
                    d(self.mirroring_endpointslice_updates_batch_period)},
            "SAController": {
                "ServiceAccountKeyFile": self.service_account_private_key_file,
                "ConcurrentSATokenSyncs": self.concurrent_serviceaccount_token_syncs,
                "RootCAFile": self.root_ca_file},
            "LegacySATokenCleaner": {
                "CleanUpPeriod": d(self.legacy_service_account_token_clean_up_period)},
            "KubeCloudShared": {
                "UseServiceAccountCredentials": self.use_service_account_credentials,
                "NodeMonitorPeriod": d(self.node_monitor_period)},
            "HPAController": {
                "ConcurrentHorizontalPodAutoscalerSyncs":
                    self.concurrent_horizontal_pod_autoscaler_syncs,
                "HorizontalPodAutoscalerSyncPeriod": d(self.horizontal_pod_autoscaler_sync_period),
                "HorizontalPodAutoscalerDownscaleStabilizationWindow":
                    d(self.horizontal_pod_autoscaler_downscale_stabilization),
                "HorizontalPodAutoscalerTolerance": self.horizontal_pod_autoscaler_tolerance,
                "HorizontalPodAutoscalerCPUInitializationPeriod":
                    d(self.horizontal_pod_autoscaler_cpu_initialization_period),
                "HorizontalPodAutoscalerInitialReadinessDelay":
                    d(self.horizontal_pod_autoscaler_initial_readiness_delay)},
            "ResourceQuotaController": {
                "ResourceQuotaSyncPeriod": d(self.resource_quota_sync_period),
                "ConcurrentResourceQuotaSyncs": self.concurrent_resource_quota_syncs},
            "PersistentVolumeBinderController": {
                "PVClaimBinderSyncPeriod": d(self.pvclaimbinder_sync_period)},
            "NodeLifecycleController": {
                "NodeEvictionRate": self.node_eviction_rate,
                "SecondaryNodeEvictionRate": self.secondary_node_eviction_rate,
                "NodeStartupGracePeriod": d(self.node_startup_grace_period),
                "NodeMonitorGracePeriod": d(self.node_monitor_grace_period),
                "LargeClusterSizeThreshold": self.large_cluster_size_threshold,
                "UnhealthyZoneThreshold": self.unhealthy_zone_threshold},
        }


# -- argparse ----------------------------------------------------------------------------


def _flag_type(flag: str, parse: Any, what: str) -> Any:
    """An argparse type whose error reads like pflag's ("invalid argument ... for ...")."""
    def conv(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f'invalid argument "{text}" for "{flag}" flag: {exc}') from None
    conv.__name__ = what
    return conv


def _int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
    if math.isnan(v):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    return v


def _string_slice(text: str) -> list[str]:
    """pflag's StringSlice: comma-separated; the empty string is the empty list."""
    return [] if text == "" else [s.strip() for s in text.split(",")]


class _SliceAction(argparse.Action):
    """The first use replaces the default, later uses append (pflag's StringSlice)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        seen = f"_{self.dest}_seen"
        current = getattr(namespace, self.dest) if getattr(namespace, seen, False) else []
        setattr(namespace, self.dest, [*current, *values])
        setattr(namespace, seen, True)


def add_flags(p: argparse.ArgumentParser, known: Sequence[str] = (),
              disabled_by_default: Sequence[str] = ()) -> None:
    """Add every controller-manager flag to ``p`` (``known``/``disabled_by_default``
    are listed in the help of ``--controllers``, as upstream does)."""
    o = ControllerManagerOptions()

    def dur(g: Any, flag: str, default: float, help_: str) -> None:
        g.add_argument(flag, type=_flag_type(flag, parse_duration, "duration"),
                       default=default, metavar="DURATION",
                       help=f"{help_} (default {format_duration(default)})")

    def boolean(g: Any, flag: str, default: bool, help_: str) -> None:
        g.add_argument(flag, type=_flag_type(flag, parse_bool, "bool"), nargs="?",
                       const=True, default=default, metavar="BOOL",
                       help=f"{help_} (default {str(default).lower()})")

    def integer(g: Any, flag: str, default: int, help_: str) -> None:
        g.add_argument(flag, type=_flag_type(flag, _int, "int"), default=default,
                       metavar="N", help=f"{help_} (default {default})")

    g = p.add_argument_group("generic flags")
    g.add_argument("--kubeconfig", metavar="FILE",
                   help="path to a kubeconfig file with authorization and master location "
                   "information (default: $KUBECONFIG or ~/.kube/config, else in-cluster)")
    g.add_argument("--master", metavar="URL",
                   help="the address of the Kubernetes API server (overrides any value in "
                   "kubeconfig)")
    g.add_argument("--controllers", type=_flag_type("--controllers", _string_slice, "list"),
                   action=_SliceAction, default=list(o.controllers), metavar="LIST",
                   help="a list of controllers to enable. '*' enables all on-by-default "
                   "controllers, 'foo' enables the controller named 'foo', '-foo' disables "
                   "the controller named 'foo'. All controllers: "
                   f"{', '.join(known) or '(none)'}. Disabled-by-default controllers: "
                   f"{', '.join(disabled_by_default) or '(none)'} (default *)")
    g.add_argument("--kube-api-qps", type=_flag_type("--kube-api-qps", _float, "float"),
                   default=o.kube_api_qps, metavar="QPS",
                   help="QPS to use while talking with kubernetes apiserver, per controller "
                   "client (default 20)")
    integer(g, "--kube-api-burst", o.kube_api_burst,
            "burst to use while talking with kubernetes apiserver, per controller client")
    dur(g, "--min-resync-period", o.min_resync_period,
        "the resync period in reflectors will be random between MinResyncPeriod and "
        "2*MinResyncPeriod")
    dur(g, "--controller-shutdown-timeout", o.controller_shutdown_timeout,
        "how long controllers get to finish the work they hold after SIGTERM")

    le = p.add_argument_group("leader election flags")
    boolean(le, "--leader-elect", o.leader_elect,
            "start a leader election client and gain leadership before executing the main "
            "loop")
    dur(le, "--leader-elect-lease-duration", o.leader_elect_lease_duration,
        "the duration that non-leader candidates will wait after observing a leadership "
        "renewal until attempting to acquire leadership")
    dur(le, "--leader-elect-renew-deadline", o.leader_elect_renew_deadline,
        "the interval between attempts by the acting master to renew a leadership slot "
        "before it stops leading")
    dur(le, "--leader-elect-retry-period", o.leader_elect_retry_period,
        "the duration the clients should wait between attempting acquisition and renewal "
        "of a leadership")
    le.add_argument("--leader-elect-resource-lock", default=o.leader_elect_resource_lock,
                    metavar="TYPE", help="the type of resource object that is used for "
                    "locking during leader election; only 'leases' (default leases)")
    le.add_argument("--leader-elect-resource-name", default=o.leader_elect_resource_name,
                    metavar="NAME", help="the name of resource object that is used for "
                    "locking during leader election (default kube-controller-manager)")
    le.add_argument("--leader-elect-resource-namespace",
                    default=o.leader_elect_resource_namespace, metavar="NS",
                    help="the namespace of resource object that is used for locking during "
                    "leader election (default kube-system)")

    s = p.add_argument_group("serving flags")
    s.add_argument("--bind-address", default=o.bind_address, metavar="IP",
                   help="the IP address on which to listen for the --secure-port and --port "
                   "(default 0.0.0.0)")
    integer(s, "--secure-port", o.secure_port,
            "the port on which to serve HTTPS with a self-signed certificate (/healthz, "
            "/metrics, /configz); 0 turns HTTPS off")
    integer(s, "--port", o.port,
            "pykcm only: also serve plain HTTP on this port (kube-controller-manager's "
            "insecure port before v1.24); 0 turns it off")
    boolean(s, "--compact-informer-objects", o.compact_informer_objects,
            "pykcm only: the shared informers cache read-only compact objects instead of "
            "dicts (about a fifth of the memory); --compact-informer-objects=false caches "
            "plain dicts")

    a = p.add_argument_group("authentication and authorization flags (of the HTTPS endpoints)")
    a.add_argument("--authentication-kubeconfig", default="", metavar="FILE",
                   help="kubeconfig file pointing at the 'core' kubernetes server with enough "
                   "rights to create tokenreviews.authentication.k8s.io (pykcm: default the "
                   "manager's own --kubeconfig, with a warning)")
    boolean(a, "--authentication-skip-lookup", o.authentication_skip_lookup,
            "if false, the authentication-kubeconfig will be used to lookup missing "
            "authentication configuration from the cluster (pykcm: no client certificates, "
            "nothing to look up)")
    boolean(a, "--authentication-tolerate-lookup-failure",
            o.authentication_tolerate_lookup_failure,
            "if true, failures to look up missing authentication configuration from the "
            "cluster are not considered fatal (pykcm: nothing to look up)")
    dur(a, "--authentication-token-webhook-cache-ttl", o.authentication_token_webhook_cache_ttl,
        "the duration to cache responses from the webhook token authenticator")
    a.add_argument("--authorization-kubeconfig", default="", metavar="FILE",
                   help="kubeconfig file pointing at the 'core' kubernetes server with enough "
                   "rights to create subjectaccessreviews.authorization.k8s.io (pykcm: "
                   "default the manager's own --kubeconfig, with a warning)")
    a.add_argument("--authorization-always-allow-paths",
                   type=_flag_type("--authorization-always-allow-paths", _string_slice, "list"),
                   action=_SliceAction, default=list(o.authorization_always_allow_paths),
                   metavar="LIST", help="a list of HTTP paths to skip during authorization, "
                   "i.e. these are authorized without contacting the 'core' kubernetes server "
                   "(default /healthz,/readyz,/livez)")
    dur(a, "--authorization-webhook-cache-authorized-ttl",
        o.authorization_webhook_cache_authorized_ttl,
        "the duration to cache 'authorized' responses from the webhook authorizer")
    dur(a, "--authorization-webhook-cache-unauthorized-ttl",
        o.authorization_webhook_cache_unauthorized_ttl,
        "the duration to cache 'unauthorized' responses from the webhook authorizer")

    c = p.add_argument_group("controller flags")
    integer(c, "--concurrent-replicaset-syncs", o.concurrent_replicaset_syncs,
            "the number of replica sets that are allowed to sync concurrently")
    integer(c, "--concurrent-deployment-syncs", o.concurrent_deployment_syncs,
            "the number of deployment objects that are allowed to sync concurrently")
    integer(c, "--concurrent-job-syncs", o.concurrent_job_syncs,
            "the number of job objects that are allowed to sync concurrently")
    integer(c, "--concurrent-cron-job-syncs", o.concurrent_cron_job_syncs,
            "the number of cron job objects that are allowed to sync concurrently")
    integer(c, "--concurrent-gc-syncs", o.concurrent_gc_syncs,
            "the number of garbage collector workers that are allowed to sync concurrently")
    boolean(c, "--enable-garbage-collector", o.enable_garbage_collector,
            "enables the generic garbage collector")
    integer(c, "--concurrent-namespace-syncs", o.concurrent_namespace_syncs,
            "the number of namespace objects that are allowed to sync concurrently")
    dur(c, "--namespace-sync-period", o.namespace_sync_period,
        "the period for syncing namespace life-cycle updates")
    integer(c, "--concurrent-daemonset-syncs", o.concurrent_daemonset_syncs,
            "the number of daemonset objects that are allowed to sync concurrently")
    integer(c, "--concurrent-statefulset-syncs", o.concurrent_statefulset_syncs,
            "the number of statefulset objects that are allowed to sync concurrently")
    c.add_argument("--concurrent-rc-syncs", "--concurrent_rc_syncs", dest="concurrent_rc_syncs",
                   type=_flag_type("--concurrent-rc-syncs", _int, "int"),
                   default=o.concurrent_rc_syncs, metavar="N",
                   help="the number of replication controllers that are allowed to sync "
                   f"concurrently (default {o.concurrent_rc_syncs})")
    integer(c, "--terminated-pod-gc-threshold", o.terminated_pod_gc_threshold,
            "number of terminated pods that can exist before the terminated pod garbage "
            "collector starts deleting terminated pods; <= 0 disables it")
    integer(c, "--concurrent-ttl-after-finished-syncs", o.concurrent_ttl_after_finished_syncs,
            "the number of ttl-after-finished-controller workers that are allowed to sync "
            "concurrently")
    dur(c, "--pvclaimbinder-sync-period", o.pvclaimbinder_sync_period,
        "the period for syncing persistent volumes and persistent volume claims")
    integer(c, "--concurrent-resource-quota-syncs", o.concurrent_resource_quota_syncs,
            "the number of resource quotas that are allowed to sync concurrently")
    dur(c, "--resource-quota-sync-period", o.resource_quota_sync_period,
        "the period for syncing quota usage status in the system")
    integer(c, "--concurrent-horizontal-pod-autoscaler-syncs",
            o.concurrent_horizontal_pod_autoscaler_syncs,
            "the number of horizontal pod autoscaler objects that are allowed to sync "
            "concurrently")
    dur(c, "--horizontal-pod-autoscaler-sync-period", o.horizontal_pod_autoscaler_sync_period,
        "the period for syncing the number of pods in horizontal pod autoscaler")
    dur(c, "--horizontal-pod-autoscaler-downscale-stabilization",
        o.horizontal_pod_autoscaler_downscale_stabilization,
        "the period for which autoscaler will look backwards and not scale down below any "
        "recommendation it made during that period")
    dur(c, "--horizontal-pod-autoscaler-cpu-initialization-period",
        o.horizontal_pod_autoscaler_cpu_initialization_period,
        "the period after pod start when CPU samples might be skipped")
    dur(c, "--horizontal-pod-autoscaler-initial-readiness-delay",
        o.horizontal_pod_autoscaler_initial_readiness_delay,
        "the period after pod start during which readiness changes will be treated as "
        "initial readiness")
    dur(c, "--node-monitor-period", o.node_monitor_period,
        "the period for syncing NodeStatus in cloud-node-lifecycle-controller")
    dur(c, "--node-monitor-grace-period", o.node_monitor_grace_period,
        "amount of time which we allow running Node to be unresponsive before marking it "
        "unhealthy; must be N times more than kubelet's nodeStatusUpdateFrequency")
    dur(c, "--node-startup-grace-period", o.node_startup_grace_period,
        "amount of time which we allow starting Node to be unresponsive before marking it "
        "unhealthy")

    def rate(flag: str, default: float, help_: str) -> None:
        c.add_argument(flag, type=_flag_type(flag, _float, "float"), default=default,
                       metavar="RATE", help=f"{help_} (default {default})")

    rate("--node-eviction-rate", o.node_eviction_rate,
         "number of nodes per second on which pods are deleted in case of node failure when "
         "a zone is healthy")
    rate("--secondary-node-eviction-rate", o.secondary_node_eviction_rate,
         "number of nodes per second on which pods are deleted in case of node failure when "
         "a zone is unhealthy; 0 below --large-cluster-size-threshold")
    rate("--horizontal-pod-autoscaler-tolerance", o.horizontal_pod_autoscaler_tolerance,
         "the minimum change (from 1.0) in the desired-to-actual metrics ratio for the "
         "horizontal pod autoscaler to consider scaling")
    integer(c, "--large-cluster-size-threshold", o.large_cluster_size_threshold,
            "number of nodes from which node-lifecycle-controller treats the cluster as large "
            "for the eviction logic purposes")
    rate("--unhealthy-zone-threshold", o.unhealthy_zone_threshold,
         "fraction of Nodes in a zone which needs to be not Ready (minimum 3) for zone to be "
         "treated as unhealthy")
    integer(c, "--concurrent-endpoint-syncs", o.concurrent_endpoint_syncs,
            "the number of endpoint syncing operations that will be done concurrently")
    dur(c, "--endpoint-updates-batch-period", o.endpoint_updates_batch_period,
        "the length of endpoint updates batching period: processing of pod changes is "
        "delayed by this duration to join them with potential upcoming updates")
    integer(c, "--concurrent-service-endpoint-syncs", o.concurrent_service_endpoint_syncs,
            "the number of service endpoint syncing operations that will be done "
            "concurrently by the endpointslice-controller (1 to 50)")
    integer(c, "--max-endpoints-per-slice", o.max_endpoints_per_slice,
            "the maximum number of endpoints that will be added to an EndpointSlice "
            "(1 to 1000)")
    dur(c, "--endpointslice-updates-batch-period", o.endpointslice_updates_batch_period,
        "the length of endpoint slice updates batching period")
    integer(c, "--mirroring-concurrent-service-endpoint-syncs",
            o.mirroring_concurrent_service_endpoint_syncs,
            "the number of service endpoint syncing operations that will be done "
            "concurrently by the endpointslice-mirroring-controller (1 to 50)")
    integer(c, "--mirroring-max-endpoints-per-subset", o.mirroring_max_endpoints_per_subset,
            "the maximum number of endpoints that will be added to an EndpointSlice by the "
            "endpointslice-mirroring-controller (1 to 1000)")
    dur(c, "--mirroring-endpointslice-updates-batch-period",
        o.mirroring_endpointslice_updates_batch_period,
        "the length of EndpointSlice updates batching period for the "
        "endpointslice-mirroring-controller")
    c.add_argument("--service-account-private-key-file", default=o.service_account_private_key_file,
                   metavar="FILE", help="enables legacy secret-based tokens when set: a "
                   "PEM-encoded private RSA or ECDSA key used to sign service account tokens")
    c.add_argument("--root-ca-file", default=o.root_ca_file, metavar="FILE",
                   help="if set, this root certificate authority will be included in service "
                   "account's token secret and the kube-root-ca.crt ConfigMaps (default: the "
                   "CA of the kubeconfig)")
    c.add_argument("--cluster-signing-cert-file", default=o.cluster_signing_cert_file,
                   metavar="FILE", help="filename containing a PEM-encoded X509 CA certificate "
                   "used to issue cluster-scoped certificates (the kubernetes.io signers); "
                   "without it the certificatesigningrequest-signing-controller does not start")
    c.add_argument("--cluster-signing-key-file", default=o.cluster_signing_key_file,
                   metavar="FILE", help="filename containing a PEM-encoded RSA or ECDSA private "
                   "key used to sign cluster-scoped certificates")
    dur(c, "--cluster-signing-duration", o.cluster_signing_duration,
        "the max length of duration signed certificates will be given; individual CSRs may "
        "request shorter certs by setting spec.expirationSeconds")
    integer(c, "--concurrent-serviceaccount-token-syncs", o.concurrent_serviceaccount_token_syncs,
            "the number of service account token objects that are allowed to sync "
            "concurrently")
    dur(c, "--legacy-service-account-token-clean-up-period",
        o.legacy_service_account_token_clean_up_period,
        "the period of time since the last usage of an legacy service account token before "
        "it can be deleted")
    boolean(c, "--use-service-account-credentials", o.use_service_account_credentials,
            "if true, use individual service account credentials for each controller "
            "(a TokenRequest token of the kube-system ServiceAccount named as its client)")

    p.add_argument("-v", "--v", dest="v", type=_flag_type("--v", _int, "int"), default=0,
                   metavar="LEVEL", help="number for the log level verbosity (0: info, "
                   ">= 4: debug)")
    p.add_argument("--extra-controllers", action="append", default=[], metavar="MOD:FUNC",
                   help=argparse.SUPPRESS)
