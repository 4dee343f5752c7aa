"""The API server's /metrics: request counts, stored objects and watchers, in Prometheus text.

Counting costs one dict increment per request; everything else is read
from the store when scraped, so an unscraped server pays nothing. The
names are kube-apiserver's: ``apiserver_request_total{verb,code,resource,
group,version,subresource,scope}``, ``apiserver_storage_objects{resource}``,
``apiserver_registered_watchers{resource}`` (upstream labels it by group,
version and kind; pykcm's store knows the resource), and
``apiserver_current_inflight_requests{request_kind}``; and the embedded
store's revision under etcd's name, ``etcd_debugging_mvcc_current_revision``
(its rate is the cluster's event rate).

Data flow: ``APIServer._entry`` → :meth:`APIMetrics.observe` after each
request; ``GET /metrics`` → :meth:`APIMetrics.render` walks the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from pykcm.apiserver.endpoints.request_info import resolve
from pykcm.apiserver.storage.store import Store

__all__ = ["APIMetrics"]

_Key = tuple[str, str, str, str, str, str, str]


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _resource(rid: str) -> str:
    """The store's ``group/plural`` as kube-apiserver names it: ``plural`` or ``plural.group``."""
    group, _, plural = rid.partition("/")
    return plural if group == "core" else f"{plural}.{group}"


def _labels(names: Iterable[str], values: Iterable[str]) -> str:
    return ",".join(f'{n}="{_esc(v)}"' for n, v in zip(names, values, strict=True))


class APIMetrics:
    """Counters kept by the server and rendered on scrape."""

    _REQ_LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "code")

    def __init__(self, store: Callable[[], Store | None],
                 inflight: Callable[[], tuple[int, int]]) -> None:
        self._store = store
        self._inflight = inflight
        self.requests: Counter[_Key] = Counter()

    def observe(self, method: str, path: str, watch: bool, code: int) -> None:
        """Count one request (non-resource requests as their HTTP verb)."""
        info = resolve(method, path, watch)
        if not info.is_resource_request:
            key: _Key = (method, "", "", "", "", "", str(code))
        else:
            scope = ("namespace" if info.namespace else "cluster") if info.name == "" \
                else "resource"
            # kube-apiserver's CleanVerb: the HTTP method, GET split into LIST and WATCH.
            verb = info.verb.upper() if info.verb in ("list", "watch") else method.upper()
            key = (verb, info.group, info.version, info.resource,
                   info.subresource, scope, str(code))
        self.requests[key] += 1

    def render(self) -> bytes:
        out = [
            ("# HELP apiserver_request_total Counter of apiserver requests broken out for each "
            "verb, group, version, resource, scope, subresource and HTTP response code."),
            "# TYPE apiserver_request_total counter",
        ]
        for key, n in sorted(self.requests.items()):
            out.append(f"apiserver_request_total{{{_labels(self._REQ_LABELS, key)}}} {n}")
        store = self._store()
        objects: list[str] = []
        watchers: list[str] = []
        if store is not None:
            for rs in store.resources():
                objects.append(f'apiserver_storage_objects{{resource="{_esc(_resource(rs.rid))}"}} '
                               f"{len(rs.items)}")
                watchers.append(f'apiserver_registered_watchers{{resource="{_esc(_resource(rs.rid))}"}} '
                                f"{len(rs.watchers)}")
        out += [("# HELP apiserver_storage_objects Number of stored objects at the time of last "
                "check split by kind."), "# TYPE apiserver_storage_objects gauge", *objects,
                ("# HELP apiserver_registered_watchers Number of currently registered watchers "
                "for a given resource"), "# TYPE apiserver_registered_watchers gauge", *watchers]
        if store is not None:
            # The embedded store stands in for etcd: its revision under etcd's name; its
            # rate is the cluster's write (watch event) rate.
            out += ["# HELP etcd_debugging_mvcc_current_revision The current revision of store.",
                    "# TYPE etcd_debugging_mvcc_current_revision gauge",
                    f"etcd_debugging_mvcc_current_revision {store.rv}"]
        readonly, mutating = self._inflight()
        out += [("# HELP apiserver_current_inflight_requests Maximal number of currently used "
                "inflight request limit of this apiserver per request kind in last second."),
                "# TYPE apiserver_current_inflight_requests gauge",
                f'apiserver_current_inflight_requests{{request_kind="readOnly"}} {readonly}',
                f'apiserver_current_inflight_requests{{request_kind="mutating"}} {mutating}']
        return ("\n".join(out) + "\n").encode()
