"""The roles and bindings the RBAC authorizer reads: the server's committed objects.

kube-apiserver counterpart: the authorizer's informer listers (``RoleGetter``,
``RoleBindingLister``, ``ClusterRoleGetter``, ``ClusterRoleBindingLister``).

Data flow: :class:`StoredRBAC` looks the four resources up in the store on every call
(so a committed write applies to the next request) and keeps each object parsed while
its revision is current: the store holds bytes, and parsing some 120 bootstrap
objects on every request would cost more than the request. :meth:`StoredRBAC.generation`
(the four resources' newest revisions) tells the authorizer when its per-subject cache
is stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pykcm.apiserver.storage.store import ResourceStore, object_key

__all__ = ["StoredRBAC"]

_PLURALS = ("clusterroles", "clusterrolebindings", "roles", "rolebindings")


class StoredRBAC:
    def __init__(self, resource_store: Callable[[str], ResourceStore | None]) -> None:
        self._rs = resource_store
        # (plural, key) -> (revision, parsed object)
        self._parsed: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}

    def _get(self, plural: str, key: str) -> dict[str, Any] | None:
        rs = self._rs(plural)
        entry = rs.get(key) if rs is not None else None
        if entry is None:
            self._parsed.pop((plural, key), None)
            return None
        cached = self._parsed.get((plural, key))
        if cached is not None and cached[0] == entry.rv:
            return cached[1]
        obj = entry.obj
        self._parsed[(plural, key)] = (entry.rv, obj)
        return obj

    def _list(self, plural: str, namespace: str) -> Iterator[dict[str, Any]]:
        rs = self._rs(plural)
        if rs is None:
            return
        keys = rs.sorted_keys()
        for key in list(rs.keys_in(keys, namespace) if namespace else keys):
            obj = self._get(plural, key)
            if obj is not None:
                yield obj

    def cluster_role_bindings(self) -> Iterator[Mapping[str, Any]]:
        return self._list("clusterrolebindings", "")

    def role_bindings(self, namespace: str) -> Iterator[Mapping[str, Any]]:
        return self._list("rolebindings", namespace)

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        return self._get("clusterroles", object_key("", name))

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._get("roles", object_key(namespace, name))

    def cluster_roles(self) -> Iterator[Mapping[str, Any]]:
        return self._list("clusterroles", "")

    def generation(self) -> tuple[int, ...]:
        """Changes whenever a role or binding is written (the newest revisions applied)."""
        out = []
        for plural in _PLURALS:
            rs = self._rs(plural)
            out.append(rs.last_rv if rs is not None else 0)
        return tuple(out)
