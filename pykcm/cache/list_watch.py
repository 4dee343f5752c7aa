"""ListWatch: how a Reflector lists and watches one resource (client-go listwatch.go).

Role: binds a :class:`~pykcm.client.Client` to one resource, an optional
namespace and label/field selectors, and exposes the two calls a Reflector
makes: ``list`` (one LIST request: one page when ``limit`` is set) and
``watch`` (a WATCH stream). It does not page by itself; the Reflector's
pager does (client-go: "ListWatch is used in Reflector, which already
supports pagination").

Data flow::

    Reflector ── list(rv, limit, continue) ──► ListWatch ── Client.list ──► API server
              ◄─ the list object (dict) ──────
    Reflector ── watch(rv, timeout, ...) ───► ListWatch ── Client.watch ─► API server
              ◄─ WatchStream of (type, object)

Every request's options go through ``tweak_list_options`` (client-go's
``NewFilteredListWatchFromClient`` options modifier) as a dict keyed by the
``metav1.ListOptions`` JSON names (``labelSelector``, ``fieldSelector``,
``resourceVersion``, ``resourceVersionMatch``, ``limit``, ``continue``,
``timeoutSeconds``, ``allowWatchBookmarks``, ``sendInitialEvents``), after the
selectors are set, so it may narrow or replace them.

``compact=True`` (or a ``CompactDecoder``) is the opt-in compact cache
(:mod:`pykcm.cache.frozen_object`, needs msgspec): lists and watch events
are decoded from the server's bytes straight into read-only
``FrozenObject`` mappings (metadata decoded, the rest kept as raw JSON),
never as dict trees. Off by default: objects are plain dicts.

List items get the list's ``kind`` (minus ``List``) and ``apiVersion`` when
they lack them, as client-go's unstructured decoding does: the API server
leaves them out of list items, but watch events carry them, and a cache fed
by both must hold objects of one shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pykcm.api.resources import ResourceInfo, ResourceRegistry, builtin_registry
from pykcm.client import Client, WatchStream
from pykcm.client._discovery import find, parse_resource_name

if TYPE_CHECKING:
    from pykcm.cache.frozen_object import CompactDecoder

__all__ = ["ListWatch", "ListerWatcher", "TweakListOptionsFunc"]

TweakListOptionsFunc = Callable[[dict[str, Any]], None]
"""Edits the options of every list and watch request in place."""

_BUILTINS: ResourceRegistry | None = None


def _builtin_lookup(name: str) -> ResourceInfo | None:
    """A built-in resource by name, without I/O (CRDs need discovery: resolve())."""
    global _BUILTINS
    if _BUILTINS is None:
        _BUILTINS = builtin_registry()
    try:
        return find(_BUILTINS.all(), parse_resource_name(name))
    except ValueError:
        return None


@runtime_checkable
class ListerWatcher(Protocol):
    """What a Reflector needs of its source (client-go ``ListerWatcher``)."""

    async def list(self, *, resource_version: str = "", resource_version_match: str = "",
                   limit: int = 0, continue_: str = "") -> dict[str, Any]:
        """One LIST request: the list object."""

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_watch_bookmarks: bool = True, send_initial_events: bool | None = None,
              resource_version_match: str = "") -> WatchStream:
        """A WATCH stream; the request is sent by ``start()`` or the first read."""


class ListWatch:
    """Lists and watches one resource of one client, optionally in one namespace."""

    def __init__(
        self,
        client: Client,
        resource: ResourceInfo | str,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        tweak_list_options: TweakListOptionsFunc | None = None,
        compact: bool | CompactDecoder = False,
    ) -> None:
        """``compact``: True (or the decoder to use) for FrozenObject items (see above)."""
        self.client = client
        self._resource = resource
        # True once the client resolved the name (or it came resolved).
        self._resolved = isinstance(resource, ResourceInfo)
        self._info: ResourceInfo | None = resource if isinstance(resource, ResourceInfo) \
            else _builtin_lookup(resource)
        # "" and None both mean every namespace (metav1.NamespaceAll).
        self.namespace = namespace or None
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.tweak_list_options = tweak_list_options
        self.compact_decoder: CompactDecoder | None = None
        if compact:
            # Imported only when asked for: it needs msgspec.
            from pykcm.cache.frozen_object import CompactDecoder
            self.compact_decoder = compact if isinstance(compact, CompactDecoder) \
                else CompactDecoder()

    @property
    def resource(self) -> ResourceInfo:
        """The resolved resource. A CRD named by a string needs ``await resolve()`` first."""
        if self._info is None:
            raise RuntimeError(f"resource {self._resource!r} is not resolved yet: "
                               "await ListWatch.resolve() first")
        return self._info

    async def resolve(self) -> ResourceInfo:
        """Resolve the resource through the client (its registry, else discovery)."""
        if not self._resolved or self._info is None:
            # The client's answer wins over the built-in guess: it may have
            # its own registry, and it is what its requests use.
            self._info = await self.client.resolve(self._resource)
            self._resolved = True
        return self._info

    def _target(self) -> ResourceInfo | str:
        # Before resolve(), the name: the client resolves it (and caches that).
        return self._info if self._resolved and self._info is not None else self._resource

    def _options(self, opts: dict[str, Any]) -> dict[str, Any]:
        if self.label_selector:
            opts["labelSelector"] = self.label_selector
        if self.field_selector:
            opts["fieldSelector"] = self.field_selector
        if self.tweak_list_options is not None:
            self.tweak_list_options(opts)
        return opts

    async def list(self, *, resource_version: str = "", resource_version_match: str = "",
                   limit: int = 0, continue_: str = "") -> dict[str, Any]:
        """One LIST request (one page when ``limit`` is set): the parsed list object."""
        o = self._options({"resourceVersion": resource_version,
                           "resourceVersionMatch": resource_version_match,
                           "limit": limit, "continue": continue_})
        kw: dict[str, Any] = {
            "label_selector": o.get("labelSelector") or None,
            "field_selector": o.get("fieldSelector") or None,
            "limit": int(o.get("limit") or 0) or None,
            "continue_": o.get("continue") or None,
            # "" is "absent" (a consistent read), not an empty parameter.
            "resource_version": o.get("resourceVersion") or None,
            "resource_version_match": o.get("resourceVersionMatch") or None,
            "timeout_seconds": o.get("timeoutSeconds")}
        decoder = self.compact_decoder
        if decoder is not None:
            # Items get the list's kind and apiVersion as they are built.
            return decoder.list(await self.client.list_raw(self._target(), self.namespace,
                                                           **kw))
        out = await self.client.list(self._target(), self.namespace, **kw)
        _set_item_kinds(out)
        return out

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_watch_bookmarks: bool = True, send_initial_events: bool | None = None,
              resource_version_match: str = "") -> WatchStream:
        """A WATCH from ``resource_version`` (sent on ``start()`` or the first read)."""
        o = self._options({"resourceVersion": resource_version,
                           "resourceVersionMatch": resource_version_match,
                           "timeoutSeconds": timeout_seconds,
                           "allowWatchBookmarks": allow_watch_bookmarks,
                           "sendInitialEvents": send_initial_events})
        kw: dict[str, Any] = {
            "resource_version": o.get("resourceVersion") or None,
            "allow_watch_bookmarks": bool(o.get("allowWatchBookmarks")),
            "send_initial_events": o.get("sendInitialEvents"),
            "resource_version_match": o.get("resourceVersionMatch") or None,
            "label_selector": o.get("labelSelector") or None,
            "field_selector": o.get("fieldSelector") or None,
            "timeout_seconds": o.get("timeoutSeconds")}
        decoder = self.compact_decoder
        if decoder is not None:
            return WatchStream.decoding(
                self.client.watch_raw(self._target(), self.namespace, **kw), decoder.event,
                decoder.events)
        return self.client.watch(self._target(), self.namespace, **kw)

    def __str__(self) -> str:
        what = self._info.group_resource if self._info is not None else str(self._resource)
        return f"{what} in {self.namespace}" if self.namespace else what

    def __repr__(self) -> str:
        return f"ListWatch({self})"


def _set_item_kinds(lst: dict[str, Any]) -> None:
    """Give list items the list's item kind and apiVersion where they lack them."""
    items = lst.get("items")
    if not items:
        return
    list_kind = lst.get("kind")
    api_version = lst.get("apiVersion")
    if not isinstance(list_kind, str) or not list_kind.endswith("List") or not api_version:
        return
    kind = list_kind[:-4]
    for item in items:
        # The items are freshly decoded and not shared yet: filling them in
        # place is safe, and cheaper than copying.
        if "kind" not in item:
            item["kind"] = kind
        if "apiVersion" not in item:
            item["apiVersion"] = api_version
