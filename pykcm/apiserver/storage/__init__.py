"""Storage of the embedded API server: the durable SQLite log and the in-memory store."""

from pykcm.apiserver.storage.log import LogRow, SqliteLog
from pykcm.apiserver.storage.store import (
    ADDED,
    DELETED,
    MODIFIED,
    Entry,
    Event,
    ResourceStore,
    Store,
    object_key,
    resource_id,
)
from pykcm.apiserver.storage.watcher import Watcher, bookmark_line

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "Entry",
    "Event",
    "LogRow",
    "ResourceStore",
    "SqliteLog",
    "Store",
    "Watcher",
    "bookmark_line",
    "object_key",
    "resource_id",
]
