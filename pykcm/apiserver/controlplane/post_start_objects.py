"""The objects kube-apiserver creates for itself when it starts, beside the system
namespaces and the RBAC bootstrap policy (rbac/bootstrap.py):

- the system PriorityClasses ``system-node-critical`` and ``system-cluster-critical``
  (its ``scheduling/bootstrap-system-priority-classes`` post-start hook), created when
  missing (an existing one is left as it is, as upstream does);
- the default ServiceCIDR ``kubernetes`` for the service cluster IP range (its default
  ServiceCIDR controller), with its Ready condition written through /status;
- the APF bootstrap FlowSchemas and PriorityLevelConfigurations (registry/flowcontrol/
  bootstrap.py), each FlowSchema with its Dangling condition;
- the local APIServices of the group-versions it serves (its aggregator's autoregistration:
  registry/apiregistration/apiservice.py), Available through /status.

Data flow: server.py calls :func:`ensure_post_start_objects` once the store is loaded;
the objects are written through rest_storage, as any client's would be.
"""

from __future__ import annotations

from pykcm.api.resources import ResourceRegistry
from pykcm.apiserver.controlplane.service_allocator import DEFAULT_SERVICE_CIDR
from pykcm.apiserver.registry.apiregistration.apiservice import (
    LOCAL_PRIORITIES,
    local_apiservice,
)
from pykcm.apiserver.registry.flowcontrol.bootstrap import bootstrap_objects, dangling_condition
from pykcm.apiserver.registry.networking.servicecidr import (
    DEFAULT_SERVICE_CIDR_NAME,
    default_service_cidr,
)
from pykcm.apiserver.registry.rest_storage import RESTStorage
from pykcm.apiserver.registry.scheduling.priorityclass import system_priority_classes
from pykcm.apiserver.registry.strategy import rfc3339

__all__ = ["ensure_post_start_objects"]


async def ensure_post_start_objects(rest: RESTStorage, registry: ResourceRegistry,
                                    service_cidrs: tuple[str, ...] = (DEFAULT_SERVICE_CIDR,)
                                    ) -> None:
    pc = registry.get("scheduling.k8s.io", "v1", "priorityclasses")
    if pc is not None:
        for obj in system_priority_classes():
            if rest.rs(pc).current(obj["metadata"]["name"]) is None:
                await rest.create(pc, "", obj)
    await _ensure_local_apiservices(rest, registry)
    await _ensure_flowcontrol_bootstrap(rest, registry)
    sc = registry.get("networking.k8s.io", "v1", "servicecidrs")
    if sc is not None and rest.rs(sc).current(DEFAULT_SERVICE_CIDR_NAME) is None:
        obj = default_service_cidr(list(service_cidrs), rfc3339(rest.clock.now()))
        status = obj["status"]  # (the create drops it: the server writes it through /status)
        entry = await rest.create(sc, "", obj)
        await rest.update(sc, "", DEFAULT_SERVICE_CIDR_NAME, {**entry.obj, "status": status},
                          "status")


async def _ensure_local_apiservices(rest: RESTStorage, registry: ResourceRegistry) -> None:
    """kube-apiserver's autoregistration: an APIService for each group-version it serves
    itself (the ones of LOCAL_PRIORITIES that pykcm serves), Available through /status."""
    api = registry.get("apiregistration.k8s.io", "v1", "apiservices")
    if api is None:
        return
    served = {(r.group, r.version) for r in registry.all()}
    for group, version in sorted(LOCAL_PRIORITIES):
        name = f"{version}.{group}"
        if (group, version) not in served or rest.rs(api).current(name) is not None:
            continue
        obj = local_apiservice(group, version, rfc3339(rest.clock.now()))
        status = obj["status"]  # (the create drops it: written through /status)
        entry = await rest.create(api, "", obj)
        await rest.update(api, "", name, {**entry.obj, "status": status}, "status")


async def _ensure_flowcontrol_bootstrap(rest: RESTStorage, registry: ResourceRegistry) -> None:
    """kube-apiserver's APF bootstrap configuration: the missing priority levels, then the
    missing FlowSchemas with their Dangling condition (written through /status)."""
    pl = registry.get("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations")
    fs = registry.get("flowcontrol.apiserver.k8s.io", "v1", "flowschemas")
    if pl is None or fs is None:
        return
    for obj in bootstrap_objects("prioritylevelconfigurations"):
        if rest.rs(pl).current(obj["metadata"]["name"]) is None:
            await rest.create(pl, "", obj)
    for obj in bootstrap_objects("flowschemas"):
        name = obj["metadata"]["name"]
        if rest.rs(fs).current(name) is not None:
            continue
        entry = await rest.create(fs, "", obj)
        level = obj["spec"]["priorityLevelConfiguration"]["name"]
        cond = dangling_condition(level, rest.rs(pl).current(level) is not None, rfc3339(rest.clock.now()))
        await rest.update(fs, "", name, {**entry.obj, "status": {"conditions": [cond]}},
                          "status")
