"""pykcm.cache: client-go tools/cache (see DESIGN.md for the data flow).

Re-exports the names of the data-structure modules: keys, index, the
ThreadSafeStore, Store/Indexer and the DeltaFIFO; and of the producer side:
the ListWatch, the Reflector and its backoff manager.
"""

from pykcm.cache.backoff import BackoffManager, ExponentialBackoffManager
from pykcm.cache.delta_fifo import (
    ADDED,
    DELETED,
    REPLACED,
    SYNC,
    UPDATED,
    Delta,
    DeltaFIFO,
    Deltas,
    DeltaType,
    KeyListerGetter,
    PopProcessFunc,
    TransformFunc,
)
from pykcm.cache.errors import (
    CacheError,
    FIFOClosedError,
    IndexerConflictError,
    IndexNotFoundError,
    InvalidKeyError,
    KeyFuncError,
    NoMetaError,
    RequeueError,
)
from pykcm.cache.index import (
    NAMESPACE_INDEX,
    Index,
    Indexers,
    IndexFunc,
    Indices,
    meta_namespace_index_func,
)
from pykcm.cache.keys import (
    DeletedFinalStateUnknown,
    ExplicitKey,
    KeyFunc,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    split_meta_namespace_key,
)
from pykcm.cache.list_watch import ListerWatcher, ListWatch, TweakListOptionsFunc
from pykcm.cache.reflector import (
    Reflector,
    ReflectorStore,
    VeryShortWatchError,
    WatchErrorHandler,
    WatchListIncompleteError,
    default_watch_error_handler,
)
from pykcm.cache.store import Cache, Indexer, Store, new_indexer, new_store
from pykcm.cache.thread_safe_store import ThreadSafeStore

__all__ = [
    "ADDED",
    "DELETED",
    "NAMESPACE_INDEX",
    "REPLACED",
    "SYNC",
    "UPDATED",
    "BackoffManager",
    "Cache",
    "CacheError",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "ExplicitKey",
    "ExponentialBackoffManager",
    "FIFOClosedError",
    "Index",
    "IndexFunc",
    "IndexNotFoundError",
    "Indexer",
    "IndexerConflictError",
    "Indexers",
    "Indices",
    "InvalidKeyError",
    "KeyFunc",
    "KeyFuncError",
    "KeyListerGetter",
    "ListWatch",
    "ListerWatcher",
    "NoMetaError",
    "PopProcessFunc",
    "Reflector",
    "ReflectorStore",
    "RequeueError",
    "Store",
    "ThreadSafeStore",
    "TransformFunc",
    "TweakListOptionsFunc",
    "VeryShortWatchError",
    "WatchErrorHandler",
    "WatchListIncompleteError",
    "default_watch_error_handler",
    "deletion_handling_meta_namespace_key",
    "meta_namespace_index_func",
    "meta_namespace_key",
    "new_indexer",
    "new_store",
    "split_meta_namespace_key",
]

# The consumer side: the SharedIndexInformer, its processor and handlers,
# listers, cache-sync waiting, the mutation detector and the informer metrics.
from pykcm.cache.event_handlers import (
    FilterFunc,
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
)
from pykcm.cache.listers import (
    GenericLister,
    GenericNamespaceLister,
    Lister,
    NamespaceLister,
    list_all,
    list_all_by_namespace,
)
from pykcm.cache.metrics import InformerMetrics
from pykcm.cache.mutation_detector import (
    CacheMutationDetector,
    CacheMutationError,
    new_cache_mutation_detector,
)
from pykcm.cache.processor import ProcessorListener, SharedProcessor
from pykcm.cache.shared_informer import (
    MINIMUM_RESYNC_PERIOD,
    InformerAlreadyStartedError,
    InformerStoppedError,
    SharedIndexInformer,
)
from pykcm.cache.synced import (
    InformerSynced,
    wait_for_cache_sync,
    wait_for_named_cache_sync,
)

__all__ += [
    "MINIMUM_RESYNC_PERIOD",
    "CacheMutationDetector",
    "CacheMutationError",
    "FilterFunc",
    "FilteringResourceEventHandler",
    "GenericLister",
    "GenericNamespaceLister",
    "InformerAlreadyStartedError",
    "InformerMetrics",
    "InformerStoppedError",
    "InformerSynced",
    "Lister",
    "NamespaceLister",
    "ProcessorListener",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "SharedProcessor",
    "list_all",
    "list_all_by_namespace",
    "new_cache_mutation_detector",
    "wait_for_cache_sync",
    "wait_for_named_cache_sync",
]
