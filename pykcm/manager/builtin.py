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
"""

from __future__ import annotations

from pykcm.manager.context import ControllerContext
from pykcm.manager.registry import ControllerDescriptor, ControllerRegistry, RunnableController

__all__ = ["register_builtin_controllers"]


async def _daemonset(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.daemon import DaemonSetsController

    f = ctx.informer_factory
    return DaemonSetsController(
        ds_informer=f.apps_v1.daemonsets, history_informer=f.apps_v1.controllerrevisions,
        pod_informer=f.core_v1.pods, node_informer=f.core_v1.nodes,
        client=ctx.client_builder.client("daemon-set-controller"),
        recorder=ctx.event_recorder("daemon-set-controller", "daemonset-controller"))


async def _namespace(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.namespace import NamespaceController

    return NamespaceController(
        client=ctx.client_builder.client("namespace-controller"),
        namespace_informer=ctx.informer_factory.core_v1.namespaces,
        resync_period=ctx.options.namespace_sync_period)


async def _garbage_collector(ctx: ControllerContext, name: str) -> RunnableController | None:
    if not ctx.options.enable_garbage_collector:
        return None
    from pykcm.controllers.garbagecollector import GarbageCollector

    return GarbageCollector(
        client=ctx.client_builder.client("generic-garbage-collector"),
        informer_factory=ctx.informer_factory,
        recorder=ctx.event_recorder("generic-garbage-collector",
                                    "garbage-collector-controller"))


async def _replicaset(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.replicaset import ReplicaSetController

    f = ctx.informer_factory
    return ReplicaSetController(
        pod_informer=f.core_v1.pods, rs_informer=f.apps_v1.replicasets,
        client=ctx.client_builder.client("replicaset-controller"),
        recorder=ctx.event_recorder("replicaset-controller"))


async def _deployment(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.deployment import DeploymentController

    f = ctx.informer_factory
    return DeploymentController(
        deployment_informer=f.apps_v1.deployments, rs_informer=f.apps_v1.replicasets,
        pod_informer=f.core_v1.pods,
        client=ctx.client_builder.client("deployment-controller"),
        recorder=ctx.event_recorder("deployment-controller"))


async def _job(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.job import JobController

    f = ctx.informer_factory
    return JobController(
        job_informer=f.batch_v1.jobs, pod_informer=f.core_v1.pods,
        client=ctx.client_builder.client("job-controller"),
        recorder=ctx.event_recorder("job-controller"))


async def _cronjob(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.cronjob import CronJobController

    f = ctx.informer_factory
    return CronJobController(
        cronjob_informer=f.batch_v1.cronjobs, job_informer=f.batch_v1.jobs,
        client=ctx.client_builder.client("cronjob-controller"),
        recorder=ctx.event_recorder("cronjob-controller"))


async def _ttl_after_finished(ctx: ControllerContext, name: str) -> RunnableController | None:
    from pykcm.controllers.ttlafterfinished import TTLAfterFinishedController

    return TTLAfterFinishedController(
        job_informer=ctx.informer_factory.batch_v1.jobs,
        client=ctx.client_builder.client("ttl-after-finished-controller"))


def register_builtin_controllers(registry: ControllerRegistry) -> None:
    """Register every built-in controller in ``registry``, in upstream's order."""
    for d in (
        ControllerDescriptor("namespace-controller", _namespace, aliases=("namespace",),
                             concurrency="concurrent_namespace_syncs"),
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
        ControllerDescriptor("cronjob-controller", _cronjob, aliases=("cronjob",),
                             concurrency="concurrent_cron_job_syncs"),
        ControllerDescriptor("ttl-after-finished-controller", _ttl_after_finished,
                             aliases=("ttl-after-finished",),
                             concurrency="concurrent_ttl_after_finished_syncs"),
    ):
        registry.register(d)
