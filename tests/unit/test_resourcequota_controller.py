"""Unit tests of the resourcequota-controller's event routing (no API server): which queue a
quota goes to, what an update or a replenishment enqueues, and the update filter of the
quota monitor. Its syncs run against both API servers in
tests/integration/test_resourcequota_controller.py."""

from __future__ import annotations

from typing import Any

from pykcm.controllers.resourcequota import ResourceQuotaController
from pykcm.controllers.resourcequota.resource_quota_monitor import parse_count_name, update_filter


class _Reg:
    def has_synced(self) -> bool:
        return True


class _Lister:
    def __init__(self, quotas: list[dict[str, Any]]) -> None:
        self.quotas = quotas

    def by_namespace(self, ns: str) -> _Lister:
        return _Lister([q for q in self.quotas if q["metadata"]["namespace"] == ns])

    def list(self) -> list[dict[str, Any]]:
        return self.quotas


class _Informer:
    def add_event_handler(self, handler: Any) -> _Reg:
        self.handler = handler
        return _Reg()


class _QuotaInformer:
    def __init__(self, quotas: list[dict[str, Any]]) -> None:
        self.informer = _Informer()
        self.lister = _Lister(quotas)


def _quota(name: str, spec_hard: dict[str, str], status: dict[str, Any] | None = None
           ) -> dict[str, Any]:
    q: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns"},
                         "spec": {"hard": spec_hard}}
    if status is not None:
        q["status"] = status
    return q


def _controller(quotas: list[dict[str, Any]]) -> ResourceQuotaController:
    return ResourceQuotaController(client=None, quota_informer=_QuotaInformer(quotas),  # type: ignore[arg-type]
                                   informer_factory=None)  # type: ignore[arg-type]


def _queued(ctl: ResourceQuotaController) -> tuple[int, int]:
    return len(ctl.primary.queue), len(ctl.priority.queue)


def test_a_quota_without_usage_goes_to_the_priority_queue() -> None:
    ctl = _controller([])
    ctl.add_quota(_quota("new", {"pods": "1"}))  # no status yet
    ctl.add_quota(_quota("missing", {"pods": "1", "secrets": "1"},
                         {"hard": {"pods": "1", "secrets": "1"}, "used": {"pods": "0"}}))
    ctl.add_quota(_quota("untracked", {"foo.example.com/x": "1"},
                         {"hard": {"foo.example.com/x": "1"}, "used": {}}))
    ctl.add_quota(_quota("known", {"pods": "1"}, {"hard": {"pods": "1"}, "used": {"pods": "0"}}))
    assert _queued(ctl) == (2, 2)


def test_updates_enqueue_only_a_changed_spec_hard() -> None:
    ctl = _controller([])
    old = _quota("q", {"pods": "1"}, {"hard": {"pods": "1"}, "used": {"pods": "0"}})
    same = _quota("q", {"pods": "1000m"}, {"hard": {"pods": "1"}, "used": {"pods": "5"}})
    ctl._update_quota(old, same)
    assert _queued(ctl) == (0, 0)
    ctl._update_quota(old, _quota("q", {"pods": "2"}, {"hard": {"pods": "1"}}))
    assert _queued(ctl) == (0, 1)


def test_replenishment_enqueues_the_quotas_tracking_the_resource() -> None:
    quotas = [_quota("pods", {"pods": "1"}, {"hard": {"pods": "1"}}),
              _quota("svcs", {"services": "1"}, {"hard": {"services": "1"}})]
    ctl = _controller(quotas)
    ctl.replenish("", "pods", "ns")
    assert _queued(ctl) == (1, 0)
    ctl.replenish("apps", "deployments", "ns")  # no evaluator: nothing tracks it
    assert _queued(ctl) == (1, 0)


def test_update_filter_and_count_names() -> None:
    running = {"spec": {}, "status": {"phase": "Running"}}
    assert update_filter("", "pods", running, {"spec": {}, "status": {"phase": "Failed"}})
    assert update_filter("", "pods", running, {"spec": {"activeDeadlineSeconds": 1},
                                               "status": {"phase": "Running"}})
    assert not update_filter("", "pods", running, {"spec": {}, "status": {"phase": "Running",
                                                                          "podIP": "1.2.3.4"}})
    assert update_filter("", "services", {"spec": {"type": "NodePort"}},
                         {"spec": {"type": "ClusterIP"}})
    assert not update_filter("", "configmaps", {}, {})
    assert parse_count_name("count/deployments.apps") == ("apps", "deployments")
    assert parse_count_name("count/pods") == ("", "pods")
    assert parse_count_name("pods") is None
