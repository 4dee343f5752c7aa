"""pykcm.cache: client-go tools/cache (see DESIGN.md for the data flow).

Re-exports the names of the data-structure modules: keys, index, the
ThreadSafeStore, Store/Indexer and the DeltaFIFO.
"""

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
from pykcm.cache.store import Cache, Indexer, Store, new_indexer, new_store
from pykcm.cache.thread_safe_store import ThreadSafeStore

__all__ = [
    "ADDED",
    "DELETED",
    "NAMESPACE_INDEX",
    "REPLACED",
    "SYNC",
    "UPDATED",
    "Cache",
    "CacheError",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "ExplicitKey",
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
    "NoMetaError",
    "PopProcessFunc",
    "RequeueError",
    "Store",
    "ThreadSafeStore",
    "TransformFunc",
    "deletion_handling_meta_namespace_key",
    "meta_namespace_index_func",
    "meta_namespace_key",
    "new_indexer",
    "new_store",
    "split_meta_namespace_key",
]
