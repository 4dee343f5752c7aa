"""pykcm.informers: the SharedInformerFactory (client-go informers, dynamicinformer).

Data flow (DESIGN.md): the controller manager owns one factory; controllers
take their informers and listers from it while they are built
(``factory.core_v1.pods.informer.add_event_handler(...)``,
``factory.apps_v1.deployments.lister``, ``factory.for_resource(g, v, r)``
for anything else, CRDs included); ``factory.start()`` then runs each
requested resource's one SharedIndexInformer (pykcm.cache) as an asyncio
task, ``await factory.wait_for_cache_sync()`` waits for their initial lists,
and ``await factory.shutdown()`` stops them.

Modules: ``factory`` (SharedInformerFactory), ``generic`` (GenericInformer,
GroupVersionResource), ``typed`` (the per-group-version accessors),
``transforms`` (strip_managed_fields).

Deferred: metadata-only informers (PartialObjectMetadata).

    async with SharedInformerFactory(client, transform=strip_managed_fields) as factory:
        pods = factory.core_v1.pods
        pods.informer.add_event_handler(handler)
        factory.start()
        await factory.wait_for_cache_sync()
        pods.lister.by_namespace("default").list()
"""

from pykcm.informers.factory import (
    DEFAULT_FACTORY_NAME,
    NewInformerFunc,
    SharedInformerFactory,
    default_new_informer,
)
from pykcm.informers.generic import GenericInformer, GroupVersionResource
from pykcm.informers.metadata_factory import MetadataSharedInformerFactory
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory
from pykcm.informers.transforms import strip_managed_fields
from pykcm.informers.typed import (
    AdmissionregistrationV1Informers,
    ApiextensionsV1Informers,
    ApiregistrationV1Informers,
    AppsV1Informers,
    AutoscalingV1Informers,
    AutoscalingV2Informers,
    BatchV1Informers,
    CertificatesV1Informers,
    CoordinationV1Informers,
    CoreV1Informers,
    DiscoveryV1Informers,
    EventsV1Informers,
    FlowcontrolV1Informers,
    GroupVersionInformers,
    NetworkingV1Informers,
    NodeV1Informers,
    PolicyV1Informers,
    RbacV1Informers,
    ResourceV1Informers,
    SchedulingV1Informers,
    StorageV1Informers,
)

__all__ = [
    "DEFAULT_FACTORY_NAME",
    "AdmissionregistrationV1Informers",
    "ApiextensionsV1Informers",
    "ApiregistrationV1Informers",
    "AppsV1Informers",
    "AutoscalingV1Informers",
    "AutoscalingV2Informers",
    "BatchV1Informers",
    "CertificatesV1Informers",
    "CoordinationV1Informers",
    "CoreV1Informers",
    "DiscoveryV1Informers",
    "EventsV1Informers",
    "FlowcontrolV1Informers",
    "GenericInformer",
    "GroupVersionInformers",
    "GroupVersionResource",
    "MetadataSharedInformerFactory",
    "NetworkingV1Informers",
    "NewInformerFunc",
    "NodeV1Informers",
    "ObjectOrMetadataInformerFactory",
    "PolicyV1Informers",
    "RbacV1Informers",
    "ResourceV1Informers",
    "SchedulingV1Informers",
    "SharedInformerFactory",
    "StorageV1Informers",
    "default_new_informer",
    "strip_managed_fields",
]
