"""ConsistencyStore: a controller waits until its caches have seen its own writes
(upstream ``pkg/controller/util/consistency``, KEP-5647, on by default in v1.36 for
the ReplicaSet and Job controllers: StaleControllerConsistencyReplicaSet/Job).

Why: a controller that syncs an owner right after writing (a status update, a pod
created or patched) would otherwise read a cache that lacks the write: the owner's
old resourceVersion (the next status PUT fails with 409 Conflict and is retried),
pods it already created missing (expectations cover creates, not patches). The
store remembers, per owner, the newest resourceVersion written per resource;
a sync first asks :meth:`ConsistencyStore.ensure_ready`, which raises
:class:`ConsistencyError` while a cache's resourceVersion is older, and the
controller's queue retries the key with its rate limiter.

Data flow::

    controller write ─► wrote_at(owner, uid, resource, rv)    newest rv kept per resource
    sync(owner) ─► ensure_ready(owner)
        │ every recorded resource: its cache's last_store_sync_resource_version >= rv?
        ├─ yes: the owner's record is dropped, the sync goes on
        └─ no:  ConsistencyError("read version: R is not as new as written version: W
                for group resource pods"), retried
    owner deleted / finished ─► clear(owner, uid)

A record belongs to one owner UID: a write for a new owner of the same name starts a
fresh record, and ``clear`` with a UID leaves a newer owner's record alone. Caches
whose resourceVersion is "" (not synced yet) and resourceVersions that are not
comparable are skipped, as upstream: the check must never block a sync for good.

:class:`NoopConsistencyStore` is the store with the feature off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from pykcm.api.resource_version import InvalidResourceVersion, compare_resource_version

__all__ = [
    "ConsistencyError",
    "ConsistencyStore",
    "ConsistencyStoreLike",
    "LastSyncRVGetter",
    "NoopConsistencyStore",
]

log = logging.getLogger("pykcm.controller.consistency")

#: What the store reads per resource: the informer's ``last_store_sync_resource_version``.
LastSyncRVGetter = Callable[[], str]


class ConsistencyError(Exception):
    """The cache of ``resource`` (e.g. "pods", "replicasets.apps") is older than the write."""

    def __init__(self, read_rv: str, wrote_rv: str, resource: str) -> None:
        super().__init__(f"read version: {read_rv} is not as new as written version: "
                         f"{wrote_rv} for group resource {resource}")
        self.read_rv = read_rv
        self.wrote_rv = wrote_rv
        self.resource = resource


class ConsistencyStoreLike(Protocol):
    """The store's interface (upstream's ConsistencyStore interface)."""

    def wrote_at(self, owner: str, owner_uid: str, resource: str, rv: str) -> None: ...

    def clear(self, owner: str, owner_uid: str = "") -> None: ...

    def ensure_ready(self, owner: str) -> None: ...


class _OwnerRecord:
    __slots__ = ("uid", "versions")

    def __init__(self, uid: str) -> None:
        self.uid = uid
        self.versions: dict[str, str] = {}

    def wrote_at(self, resource: str, rv: str) -> None:
        current = self.versions.get(resource)
        if current is not None:
            try:
                if compare_resource_version(current, rv) >= 0:
                    return
            except InvalidResourceVersion:
                pass  # not comparable: the latest write wins, as upstream
        self.versions[resource] = rv


class ConsistencyStore:
    """Per owner key ("namespace/name"), the newest resourceVersion written per resource.

    ``stores`` maps a resource name ("pods", "jobs.batch": it names the resource in
    the error) to the getter of its cache's resourceVersion. Owners are keyed by
    namespace/name, as the controllers' queues. Single-threaded (asyncio), so no locks.
    """

    def __init__(self, stores: Mapping[str, LastSyncRVGetter]) -> None:
        self._stores = dict(stores)
        self._writes: dict[str, _OwnerRecord] = {}

    def wrote_at(self, owner: str, owner_uid: str, resource: str, rv: str) -> None:
        """Remember that this controller wrote ``resource`` at ``rv`` for ``owner``."""
        record = self._writes.get(owner)
        if record is None or record.uid != owner_uid:
            record = self._writes[owner] = _OwnerRecord(owner_uid)
        record.wrote_at(resource, rv)

    def clear(self, owner: str, owner_uid: str = "") -> None:
        """Forget ``owner``'s writes (only if its record is ``owner_uid``'s, when given)."""
        record = self._writes.get(owner)
        if record is not None and (not owner_uid or record.uid == owner_uid):
            del self._writes[owner]

    def ensure_ready(self, owner: str) -> None:
        """Return if every cache has seen ``owner``'s writes (the record is then
        dropped); raise ConsistencyError otherwise."""
        record = self._writes.get(owner)
        if record is None:
            return
        for resource, wrote in record.versions.items():
            getter = self._stores.get(resource)
            if getter is None:
                continue
            read = getter()
            if not read:
                continue  # the cache cannot tell: never block on it
            try:
                newer = compare_resource_version(wrote, read) > 0
            except InvalidResourceVersion:
                continue
            if newer:
                raise ConsistencyError(read, wrote, resource)
        self.clear(owner, record.uid)

    def __len__(self) -> int:
        """How many owners have writes not yet confirmed by a sync."""
        return len(self._writes)


class NoopConsistencyStore:
    """The store with the feature gate off: remembers nothing, always ready."""

    def wrote_at(self, owner: str, owner_uid: str, resource: str, rv: str) -> None:
        return None

    def clear(self, owner: str, owner_uid: str = "") -> None:
        return None

    def ensure_ready(self, owner: str) -> None:
        return None
