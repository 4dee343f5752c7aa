"""Server-side Table output: Accept negotiation, includeObject, per-kind columns and cells.

Pod expectations are re-typed from upstream's printers_test.go (TestPrintPod,
TestPrintPodWithRestartableInitContainer, TestPrintPodwide); the other kinds
follow printers.go case by case. The clock is pinned with ``now=``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykcm.apiserver.endpoints import tables
from pykcm.apiserver.endpoints.tables import (
    negotiate_table,
    parse_include_object,
    parse_table_accept,
)
from pykcm.apiserver.registry.lookup import strategy_class
from pykcm.apiserver.registry.printers import human_duration, translate_timestamp_since

NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC).timestamp()
KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def table(kind: str, group: str, objects: list[Any], **kwargs: Any) -> dict[str, Any]:
    """The Table the server answers for objects of (group, kind): its strategy's printer."""
    return tables.table(kind, group, objects, printer=strategy_class(group, kind).printer,
                        **kwargs)


def column_definitions(kind: str, group: str) -> list[dict[str, Any]]:
    columns: list[dict[str, Any]] = table(kind, group, [], list_meta=None,
                                          include_object="None")["columnDefinitions"]
    return columns


def ago(seconds: float) -> str:
    t = dt.datetime.fromtimestamp(NOW - seconds, tz=dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def cells(kind: str, group: str, obj: dict[str, Any]) -> list[Any]:
    t = table(kind, group, [obj], list_meta=None, include_object="None", now=NOW)
    row: list[Any] = t["rows"][0]["cells"]
    assert len(row) == len(t["columnDefinitions"])
    return row


def names(kind: str, group: str) -> list[tuple[str, str, int]]:
    return [(c["name"], c["type"], c["priority"]) for c in column_definitions(kind, group)]


def short(cells_: list[Any], kind: str, group: str) -> list[Any]:
    """The priority-0 cells (what plain `kubectl get` shows)."""
    cols = column_definitions(kind, group)
    return [c for c, col in zip(cells_, cols, strict=True) if col["priority"] == 0]


# --- Accept negotiation ---------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "want"),
    [
        (KUBECTL_ACCEPT, "v1"),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", "v1beta1"),
        ("application/json;g=meta.k8s.io;v=v1;as=Table", "v1"),  # any parameter order
        (" application/json ; as=Table ; v=v1 ; g=meta.k8s.io ", "v1"),
        ("application/yaml;as=Table;v=v1;g=meta.k8s.io", "v1"),
        ("*/*;as=Table;v=v1;g=meta.k8s.io", "v1"),
        ("application/*;as=Table;v=v1beta1;g=meta.k8s.io", "v1beta1"),
        # q-values decide before order
        ("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", "v1"),
        ("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json", None),
        # an unacceptable Table clause is skipped, the next one is used
        (("application/json;as=Table;v=v2;g=meta.k8s.io,"
          "application/json;as=Table;v=v1beta1;g=meta.k8s.io"), "v1beta1"),
        ("application/json;as=Table;v=v1,application/json", None),  # no g: skipped
        ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", None),
        ("application/json;as=Table;v=v1;g=meta.k8s.io;stream=watch", "v1"),
        ("application/json;as=Table;v=v1;g=meta.k8s.io;stream=bogus,application/json", None),
        # plain JSON, PartialObjectMetadata or protobuf first: no Table
        ("application/json", None),
        ("application/json,application/json;as=Table;v=v1;g=meta.k8s.io", None),
        (("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,"
          "application/json;as=Table;v=v1;g=meta.k8s.io"), None),
        ("application/vnd.kubernetes.protobuf,application/json", None),
        ("text/html,application/json;as=Table;v=v1;g=meta.k8s.io", "v1"),  # unserved: skipped
        ("", None),
        (None, None),
    ],
)
def test_parse_table_accept(accept: str | None, want: str | None) -> None:
    assert parse_table_accept(accept) == want


def test_negotiate_table_media_type() -> None:
    assert negotiate_table(KUBECTL_ACCEPT) == ("v1", "application/json")
    assert negotiate_table("application/yaml;as=Table;v=v1;g=meta.k8s.io") == (
        "v1", "application/yaml")
    assert negotiate_table("*/*;as=Table;v=v1;g=meta.k8s.io") == ("v1", "application/json")


@pytest.mark.parametrize(
    ("value", "want"),
    [(None, "Metadata"), ("", "Metadata"), ("None", "None"), ("Metadata", "Metadata"),
     ("Object", "Object")],
)
def test_parse_include_object(value: str | None, want: str) -> None:
    assert parse_include_object(value) == want


def test_parse_include_object_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="Unable to convert to Table as requested: includeObject: "
                       "Invalid value: \"object\": must be 'Metadata', 'Object', 'None', or empty"):
        parse_include_object("object")


# --- HumanDuration and timestamps ---------------------------------------------------

MIN = 60
HOUR = 3600
DAY = 86400


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        # upstream duration_test.go
        (1, "1s"),
        (70, "70s"),
        (190, "3m10s"),
        (70 * MIN, "70m"),
        (47 * HOUR, "47h"),
        (49 * HOUR, "2d1h"),
        ((8 * 24 + 2) * HOUR, "8d"),
        (367 * DAY, "367d"),
        ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
        ((365 * 8 * 24 + 2) * HOUR, "8y"),
        # boundaries
        (0, "0s"),
        (-1.9, "0s"),  # up to 2s of clock skew reads as now
        (-2, "<invalid>"),
        (119.9, "119s"),
        (120, "2m"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * MIN + 59, "179m"),
        (3 * HOUR, "3h"),
        (5 * HOUR + 7 * MIN + 30, "5h7m"),
        (7 * HOUR + 59 * MIN, "7h59m"),
        (8 * HOUR + 59 * MIN, "8h"),
        (2 * DAY, "2d"),
        (2 * DAY + 5 * HOUR, "2d5h"),
        (8 * DAY - 1, "7d23h"),
        (729 * DAY, "729d"),
        (730 * DAY, "2y"),
        (3650 * DAY, "10y"),
    ],
)
def test_human_duration(seconds: float, want: str) -> None:
    assert human_duration(seconds) == want


def test_translate_timestamp_since() -> None:
    assert translate_timestamp_since(ago(200), now=NOW) == "3m20s"
    assert translate_timestamp_since("2026-03-01T11:59:55.123456Z", now=NOW) == "4s"
    assert translate_timestamp_since("2026-03-01T13:00:00+01:00", now=NOW) == "0s"
    assert translate_timestamp_since(None, now=NOW) == "<unknown>"
    assert translate_timestamp_since("", now=NOW) == "<unknown>"
    assert translate_timestamp_since("0001-01-01T00:00:00Z", now=NOW) == "<unknown>"
    assert translate_timestamp_since("garbage", now=NOW) == "<unknown>"


# --- the Table envelope -----------------------------------------------------------

POD_OBJ: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "web-0", "namespace": "default", "uid": "u1",
                 "resourceVersion": "42", "creationTimestamp": ago(300),
                 "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "node-1"},
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
               "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                      "state": {"running": {"startedAt": ago(290)}}}],
               "conditions": [{"type": "Ready", "status": "True"}]},
}


def test_table_envelope_list_with_metadata_objects() -> None:
    t = table("Pod", "", [POD_OBJ], include_object="Metadata", now=NOW,
              list_meta={"resourceVersion": "77", "continue": "tok", "remainingItemCount": 3})
    assert t["kind"] == "Table"
    assert t["apiVersion"] == "meta.k8s.io/v1"
    assert t["metadata"] == {"resourceVersion": "77", "continue": "tok", "remainingItemCount": 3}
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
        "Readiness Gates"]
    assert set(t["columnDefinitions"][0]) == {"name", "type", "format", "description",
                                             "priority"}
    assert t["columnDefinitions"][0]["format"] == "name"
    assert t["columnDefinitions"][0]["description"].startswith("Name must be unique")
    assert t["rows"] == [{
        "cells": ["web-0", "1/1", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>",
                  "<none>"],
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": POD_OBJ["metadata"]},
    }]
    assert list(t) == ["kind", "apiVersion", "metadata", "columnDefinitions", "rows"]


def test_table_include_object_none_and_object() -> None:
    t = table("Pod", "", [POD_OBJ], list_meta=None, include_object="None", now=NOW)
    assert t["rows"][0]["object"] is None  # kube-apiserver sends an explicit null
    t = table("Pod", "", [POD_OBJ], list_meta=None, include_object="Object", now=NOW)
    assert t["rows"][0]["object"] == POD_OBJ
    with pytest.raises(ValueError, match="unrecognized includeObject"):
        table("Pod", "", [POD_OBJ], list_meta=None, include_object="All", now=NOW)


def test_table_single_object_takes_its_resource_version() -> None:
    t = table("Pod", "", [POD_OBJ], list_meta=None, include_object="None", now=NOW)
    assert t["metadata"] == {"resourceVersion": "42"}


def test_table_empty_list_and_empty_list_meta() -> None:
    t = table("Pod", "", [], list_meta={"resourceVersion": "9", "continue": ""},
              include_object="Metadata", now=NOW)
    assert t["metadata"] == {"resourceVersion": "9"}
    assert t["rows"] == []
    assert len(t["columnDefinitions"]) == 9


def test_table_v1beta1_and_watch_events_without_headers() -> None:
    t = table("Pod", "", [POD_OBJ], list_meta=None, include_object="Metadata", now=NOW,
              api_version="meta.k8s.io/v1beta1", with_column_definitions=False)
    assert t["apiVersion"] == "meta.k8s.io/v1beta1"
    assert t["columnDefinitions"] == []
    assert t["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"


def test_column_definitions_are_fresh_copies() -> None:
    cols = column_definitions("Pod", "")
    cols[0]["name"] = "mutated"
    assert column_definitions("Pod", "")[0]["name"] == "Name"


def test_default_table_convertor_for_unknown_kinds() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w1", "creationTimestamp": "2026-02-28T10:30:15Z",
                           "resourceVersion": "5"}}
    t = table("Widget", "example.com", [widget], list_meta=None, include_object="None", now=NOW)
    assert [(c["name"], c["type"], c["format"]) for c in t["columnDefinitions"]] == [
        ("Name", "string", "name"), ("Created At", "date", "")]
    assert t["rows"][0]["cells"] == ["w1", "2026-02-28T10:30:15Z"]
    # normalized to UTC RFC3339 (seconds); the zero time when unset
    widget2 = {"metadata": {"name": "w2", "creationTimestamp": "2026-02-28T12:30:15.5+02:00"}}
    assert cells("Widget", "example.com", widget2) == ["w2", "2026-02-28T10:30:15Z"]
    assert cells("Widget", "example.com", {"metadata": {"name": "w3"}}) == [
        "w3", "0001-01-01T00:00:00Z"]
    # same kind name in another group is not the built-in printer
    assert names("Pod", "example.com") == [("Name", "string", 0), ("Created At", "date", 0)]


# --- Pod ------------------------------------------------------------------------


def pod(name: str, *, containers: int = 1, init: int = 0, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": f"c{i}"} for i in range(containers)],
                 **({"initContainers": [{"name": f"i{i}"} for i in range(init)]} if init else {})},
        "status": status,
    }


RUNNING: dict[str, Any] = {"running": {}}


def cs(ready: bool = False, restarts: int = 0, state: dict[str, Any] | None = None,
       finished_ago: float | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"ready": ready, "restartCount": restarts, "state": state or {}}
    if finished_ago is not None:
        out["lastState"] = {"terminated": {"finishedAt": ago(finished_ago), "exitCode": 1}}
    out.update(extra)
    return out


def pod_cells(p: dict[str, Any]) -> list[Any]:
    return short(cells("Pod", "", p), "Pod", "")


@pytest.mark.parametrize(
    ("p", "want"),
    [
        # name, number of containers, restarts, container ready status
        (pod("test1", containers=2, phase="podPhase",
             containerStatuses=[cs(True, 3, RUNNING), cs(restarts=3)]),
         ["test1", "1/2", "podPhase", "6", "<unknown>"]),
        # container error overwrites pod phase
        (pod("test2", containers=2, phase="podPhase",
             containerStatuses=[cs(True, 3, RUNNING),
                                cs(restarts=3, state={"waiting": {"reason": "ContainerWaitingReason"}})]),
         ["test2", "1/2", "ContainerWaitingReason", "6", "<unknown>"]),
        # the first container overwrites the rest
        (pod("test3", containers=2, phase="podPhase",
             containerStatuses=[cs(restarts=3, state={"waiting": {"reason": "ContainerWaitingReason"}}),
                                cs(restarts=3, state={"terminated": {"reason": "ContainerTerminatedReason"}})]),
         ["test3", "0/2", "ContainerWaitingReason", "6", "<unknown>"]),
        # ready is not enough for reporting running
        (pod("test4", containers=2, phase="podPhase",
             containerStatuses=[cs(True, 3, RUNNING), cs(True, 3)]),
         ["test4", "1/2", "podPhase", "6", "<unknown>"]),
        (pod("test5", containers=2, phase="podPhase", reason="podReason",
             containerStatuses=[cs(True, 3, RUNNING), cs(True, 3)]),
         ["test5", "1/2", "podReason", "6", "<unknown>"]),
        # one running and one completed, without a Ready condition
        (pod("test6", containers=2, phase="Running",
             containerStatuses=[cs(True, 3, {"terminated": {"reason": "Completed", "exitCode": 0}}),
                                cs(True, 3, RUNNING)]),
         ["test6", "1/2", "NotReady", "6", "<unknown>"]),
        # ... and with it
        (pod("test6", containers=2, phase="Running",
             containerStatuses=[cs(True, 3, {"terminated": {"reason": "Completed", "exitCode": 0}}),
                                cs(True, 3, RUNNING)],
             conditions=[{"type": "Ready", "status": "True"}]),
         ["test6", "1/2", "Running", "6", "<unknown>"]),
        # one init container restarting, one container not running
        (pod("test7", init=1, phase="podPhase",
             initContainerStatuses=[cs(restarts=3, state=RUNNING, finished_ago=10)],
             containerStatuses=[cs(state={"waiting": {}})]),
         ["test7", "0/1", "Init:0/1", "3 (10s ago)", "<unknown>"]),
        # two init containers, one restarting and the other not running
        (pod("test8", init=2, phase="podPhase",
             initContainerStatuses=[cs(restarts=3, state=RUNNING, finished_ago=10),
                                    cs(state={"waiting": {}})],
             containerStatuses=[cs(state={"waiting": {}})]),
         ["test8", "0/1", "Init:0/2", "3 (10s ago)", "<unknown>"]),
        # one init completed without restarts, the other restarting
        (pod("test9", init=2, phase="podPhase",
             initContainerStatuses=[cs(state={"terminated": {}}),
                                    cs(restarts=3, state=RUNNING, finished_ago=10)],
             containerStatuses=[cs(state={"waiting": {}})]),
         ["test9", "0/1", "Init:1/2", "3 (10s ago)", "<unknown>"]),
        # one init completed with restarts, the other restarting
        (pod("test10", init=2, phase="podPhase",
             initContainerStatuses=[cs(restarts=2, state={"terminated": {}}, finished_ago=120),
                                    cs(restarts=3, state=RUNNING, finished_ago=10)],
             containerStatuses=[cs(state={"waiting": {}})]),
         ["test10", "0/1", "Init:1/2", "5 (10s ago)", "<unknown>"]),
        # init completed with restarts, container restarting: only container restarts count
        (pod("test11", init=1, phase="Running",
             initContainerStatuses=[cs(restarts=2, state={"terminated": {}}, finished_ago=120)],
             containerStatuses=[cs(restarts=4, state=RUNNING, finished_ago=20)]),
         ["test11", "0/1", "Running", "4 (20s ago)", "<unknown>"]),
        (pod("test12", phase="Running",
             containerStatuses=[cs(True, 3, RUNNING, finished_ago=5 * DAY)]),
         ["test12", "1/1", "Running", "3 (5d ago)", "<unknown>"]),
        (pod("test13", containers=2, phase="Running",
             containerStatuses=[cs(True, 0, RUNNING),
                                cs(True, 3, RUNNING, finished_ago=10 * DAY)]),
         ["test13", "2/2", "Running", "3 (10d ago)", "<unknown>"]),
        # the most recent restart of any container
        (pod("test14", containers=2, phase="Running",
             containerStatuses=[cs(True, 6, RUNNING, finished_ago=5 * DAY),
                                cs(True, 3, RUNNING, finished_ago=20 * DAY)]),
         ["test14", "2/2", "Running", "9 (5d ago)", "<unknown>"]),
        (pod("test15", containers=2, phase="podPhase",
             conditions=[{"type": "PodScheduled", "status": "False",
                          "reason": "SchedulingGated"}]),
         ["test15", "0/2", "SchedulingGated", "0", "<unknown>"]),
        (pod("test16", phase="Succeeded",
             containerStatuses=[cs(state={"terminated": {"reason": "Completed", "exitCode": 0}})]),
         ["test16", "0/1", "Completed", "0", "<unknown>"]),
        (pod("test17", phase="Failed",
             containerStatuses=[cs(state={"terminated": {"reason": "Error", "exitCode": 1}})]),
         ["test17", "0/1", "Error", "0", "<unknown>"]),
        # terminated without a reason: signal, else exit code
        (pod("sig", phase="Running",
             containerStatuses=[cs(state={"terminated": {"exitCode": 137, "signal": 9}})]),
         ["sig", "0/1", "Signal:9", "0", "<unknown>"]),
        (pod("exit", phase="Running",
             containerStatuses=[cs(state={"terminated": {"exitCode": 2}})]),
         ["exit", "0/1", "ExitCode:2", "0", "<unknown>"]),
        # failing init containers
        (pod("initerr", init=1, phase="Pending",
             initContainerStatuses=[cs(state={"terminated": {"exitCode": 1, "reason": "Error"}})]),
         ["initerr", "0/1", "Init:Error", "0", "<unknown>"]),
        (pod("initsig", init=1, phase="Pending",
             initContainerStatuses=[cs(state={"terminated": {"exitCode": 1, "signal": 15}})]),
         ["initsig", "0/1", "Init:Signal:15", "0", "<unknown>"]),
        (pod("initexit", init=1, phase="Pending",
             initContainerStatuses=[cs(state={"terminated": {"exitCode": 3}})]),
         ["initexit", "0/1", "Init:ExitCode:3", "0", "<unknown>"]),
        (pod("initwait", init=1, phase="Pending",
             initContainerStatuses=[cs(state={"waiting": {"reason": "ImagePullBackOff"}})]),
         ["initwait", "0/1", "Init:ImagePullBackOff", "0", "<unknown>"]),
        (pod("initpod", init=1, phase="Pending",
             initContainerStatuses=[cs(state={"waiting": {"reason": "PodInitializing"}})]),
         ["initpod", "0/1", "Init:0/1", "0", "<unknown>"]),
        (pod("crash", phase="Running",
             containerStatuses=[cs(restarts=7, state={"waiting": {"reason": "CrashLoopBackOff"}},
                                   finished_ago=45)]),
         ["crash", "0/1", "CrashLoopBackOff", "7 (45s ago)", "<unknown>"]),
        # restarts without a known last termination time: the bare count
        (pod("norestarttime", phase="Running", containerStatuses=[cs(True, 2, RUNNING)]),
         ["norestarttime", "1/1", "Running", "2", "<unknown>"]),
    ],
)
def test_pod_status_cells(p: dict[str, Any], want: list[Any]) -> None:
    assert pod_cells(p) == want


DELETED = ago(10)


@pytest.mark.parametrize(
    ("phase", "reason", "statuses", "want"),
    [
        ("Succeeded", "", [cs(state={"terminated": {"reason": "Completed", "exitCode": 0}})],
         "Completed"),
        ("Running", "", [cs(state=RUNNING)], "Terminating"),
        ("Pending", "", [], "Terminating"),
        ("Failed", "", [cs(state={"terminated": {"reason": "Error", "exitCode": 1}})], "Error"),
        ("Running", "NodeLost", [cs(True, 0, RUNNING)], "Unknown"),
    ],
)
def test_pod_deleting(phase: str, reason: str, statuses: list[Any], want: str) -> None:
    extra: dict[str, Any] = {"reason": reason} if reason else {}
    p = pod("d", phase=phase, containerStatuses=statuses, **extra)
    p["metadata"]["deletionTimestamp"] = DELETED
    assert pod_cells(p)[2] == want


def test_pod_row_conditions() -> None:
    def row(phase: str) -> dict[str, Any]:
        p = pod("t", containers=2, phase=phase,
                containerStatuses=[cs(True, 3, RUNNING), cs(restarts=3)])
        r: dict[str, Any] = table("Pod", "", [p], list_meta=None, include_object="None",
                                  now=NOW)["rows"][0]
        return r

    assert "conditions" not in row("Running")
    assert row("Running")["cells"][:5] == ["t", "1/2", "Running", "6", "<unknown>"]
    assert row("Succeeded")["cells"][2] == "Succeeded"
    assert row("Succeeded")["conditions"] == [
        {"type": "Completed", "status": "True", "reason": "Succeeded",
         "message": "The pod has completed successfully."}]
    assert row("Failed")["conditions"] == [
        {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def sidecar_pod(name: str, phase: str, init_statuses: list[dict[str, Any]],
                statuses: list[dict[str, Any]], initialized: bool) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"initContainers": [{"name": "restartable-init-1", "restartPolicy": "Always"},
                                    {"name": "restartable-init-2", "restartPolicy": "Always"}],
                 "containers": [{"name": "c"}]},
        "status": {"phase": phase, "initContainerStatuses": init_statuses,
                   "containerStatuses": statuses,
                   "conditions": [{"type": "Initialized",
                                   "status": "True" if initialized else "False"}]},
    }


@pytest.mark.parametrize(
    ("p", "want"),
    [
        # two sidecars, the first running but not started
        (sidecar_pod("test1", "Pending",
                     [cs(restarts=3, state=RUNNING, finished_ago=10, started=False,
                         name="restartable-init-1"),
                      cs(state={"waiting": {}}, started=False, name="restartable-init-2")],
                     [cs(state={"waiting": {}})], False),
         ["test1", "0/3", "Init:0/2", "3 (10s ago)", "<unknown>"]),
        # the first started, the second running but not started
        (sidecar_pod("test1", "Pending",
                     [cs(restarts=3, state=RUNNING, finished_ago=10, started=True,
                         name="restartable-init-1"),
                      cs(state=RUNNING, started=False, name="restartable-init-2")],
                     [cs(state={"waiting": {}})], False),
         ["test1", "0/3", "Init:1/2", "3 (10s ago)", "<unknown>"]),
        # both started, the container running
        (sidecar_pod("test2", "Running",
                     [cs(restarts=3, state=RUNNING, finished_ago=10, started=True,
                         name="restartable-init-1"),
                      cs(state=RUNNING, started=True, name="restartable-init-2")],
                     [cs(True, 4, RUNNING, finished_ago=20)], True),
         ["test2", "1/3", "Running", "7 (10s ago)", "<unknown>"]),
        # sidecars failed, the container completed
        (sidecar_pod("test3", "Succeeded",
                     [cs(restarts=3, state={"terminated": {"reason": "Error", "exitCode": 137}},
                         finished_ago=10, started=False, name="restartable-init-1"),
                      cs(state={"terminated": {"reason": "Error", "exitCode": 137}},
                         started=False, name="restartable-init-2")],
                     [cs(restarts=4, state={"terminated": {"reason": "Completed", "exitCode": 0}},
                         finished_ago=20)], True),
         ["test3", "0/3", "Completed", "7 (10s ago)", "<unknown>"]),
    ],
)
def test_pod_with_restartable_init_containers(p: dict[str, Any], want: list[Any]) -> None:
    assert pod_cells(p) == want


def test_pod_statuses_for_unknown_containers() -> None:
    p = {
        "metadata": {"name": "test4"},
        "spec": {"initContainers": [{"name": "init1", "image": "initimage"},
                                    {"name": "sidecar1", "image": "sidecarimage",
                                     "restartPolicy": "Always"}],
                 "containers": [{"name": "container1", "image": "containerimage"}]},
        "status": {"phase": "Running",
                   "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"},
                                             {"name": "sidecar1"}],
                   "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}]},
    }
    assert pod_cells(p) == ["test4", "0/2", "Init:0/2", "0", "<unknown>"]


def test_pod_wide_cells() -> None:
    p = pod("test1", containers=2, phase="podPhase",
            podIPs=[{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}], nominatedNodeName="node1",
            conditions=[{"type": "condition1", "status": "False"},
                        {"type": "condition2", "status": "True"}],
            containerStatuses=[cs(True, 3, RUNNING), cs(restarts=3)])
    p["spec"]["nodeName"] = "test1"
    p["spec"]["readinessGates"] = [{"conditionType": "condition1"},
                                   {"conditionType": "condition2"},
                                   {"conditionType": "condition3"}]
    assert cells("Pod", "", p) == ["test1", "1/2", "podPhase", "6", "<unknown>", "1.1.1.1",
                                   "test1", "node1", "1/3"]
    bare = pod("test2", containers=2, phase="podPhase",
               containerStatuses=[cs(True, 3, RUNNING),
                                  cs(restarts=3, state={"waiting": {"reason": "ContainerWaitingReason"}})])
    assert cells("Pod", "", bare) == ["test2", "1/2", "ContainerWaitingReason", "6",
                                      "<unknown>", "<none>", "<none>", "<none>", "<none>"]


def test_pod_ip_prefers_status_pod_ip() -> None:
    p = pod("ip", phase="Running", podIP="10.1.1.1",
            podIPs=[{"ip": "10.1.1.1"}, {"ip": "fd00::1"}])
    assert cells("Pod", "", p)[5] == "10.1.1.1"
    p["status"] = {"phase": "Running", "podIP": "10.2.2.2"}  # an old kubelet's status
    assert cells("Pod", "", p)[5] == "10.2.2.2"
    p["status"] = {"phase": "Running", "podIPs": [{"ip": "fd00::1"}]}
    assert cells("Pod", "", p)[5] == "fd00::1"


def test_pod_columns() -> None:
    assert names("Pod", "") == [
        ("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0),
        ("Restarts", "string", 0), ("Age", "string", 0), ("IP", "string", 1),
        ("Node", "string", 1), ("Nominated Node", "string", 1), ("Readiness Gates", "string", 1)]


# --- workloads ---------------------------------------------------------------------

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web", "tier": "fe"}},
    "spec": {"containers": [{"name": "fake-container1", "image": "fake-image1"},
                            {"name": "fake-container2", "image": "fake-image2"}]},
}


def test_deployment() -> None:
    d: dict[str, Any] = {"metadata": {"name": "test1", "creationTimestamp": ago(10 * 365 * DAY)},
         "spec": {"replicas": 5, "template": TEMPLATE,
                  "selector": {"matchLabels": {"foo": "bar"}}},
         "status": {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1,
                    "unavailableReplicas": 4}}
    assert cells("Deployment", "apps", d) == [
        "test1", "0/5", 2, 1, "10y", "fake-container1,fake-container2",
        "fake-image1,fake-image2", "foo=bar"]
    assert names("Deployment", "apps") == [
        ("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0),
        ("Available", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
        ("Images", "string", 1), ("Selector", "string", 1)]
    # set-based selector, sorted by key; empty selector prints empty; invalid is <invalid>
    d["spec"]["selector"] = {"matchLabels": {"b": "1"},
                             "matchExpressions": [{"key": "a", "operator": "In",
                                                   "values": ["y", "x"]},
                                                  {"key": "c", "operator": "DoesNotExist"}]}
    assert cells("Deployment", "apps", d)[-1] == "a in (x,y),b=1,!c"
    d["spec"]["selector"] = {}
    assert cells("Deployment", "apps", d)[-1] == ""
    d["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}
    assert cells("Deployment", "apps", d)[-1] == "<invalid>"


def test_replica_set() -> None:
    rs: dict[str, Any] = {"metadata": {"name": "web-5d4f", "creationTimestamp": ago(2 * HOUR + 5 * MIN)},
          "spec": {"replicas": 3, "template": TEMPLATE,
                   "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f"}}},
          "status": {"replicas": 3, "readyReplicas": 2}}
    assert cells("ReplicaSet", "apps", rs) == [
        "web-5d4f", 3, 3, 2, "125m", "fake-container1,fake-container2",
        "fake-image1,fake-image2", "app=web,pod-template-hash=5d4f"]
    assert [c[1] for c in names("ReplicaSet", "apps")][:4] == [
        "string", "integer", "integer", "integer"]
    rs["spec"]["selector"] = None
    assert cells("ReplicaSet", "apps", rs)[-1] == "<none>"
    rs["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}
    assert cells("ReplicaSet", "apps", rs)[-1] == "<error>"


def test_stateful_set() -> None:
    sts = {"metadata": {"name": "db", "creationTimestamp": ago(40 * DAY)},
           "spec": {"replicas": 3, "template": TEMPLATE},
           "status": {"replicas": 3, "readyReplicas": 1}}
    assert cells("StatefulSet", "apps", sts) == [
        "db", "1/3", "40d", "fake-container1,fake-container2", "fake-image1,fake-image2"]
    assert [c[0] for c in names("StatefulSet", "apps")] == [
        "Name", "Ready", "Age", "Containers", "Images"]


def test_daemon_set() -> None:
    template = {"metadata": {}, "spec": {**TEMPLATE["spec"],
                                         "nodeSelector": {"kubernetes.io/os": "linux",
                                                          "disk": "ssd"}}}
    ds: dict[str, Any] = {"metadata": {"name": "agent", "creationTimestamp": ago(3 * DAY + 4 * HOUR)},
          "spec": {"template": template, "selector": {"matchLabels": {"app": "agent"}}},
          "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 2,
                     "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 0}}
    assert cells("DaemonSet", "apps", ds) == [
        "agent", 3, 2, 1, 2, 0, "disk=ssd,kubernetes.io/os=linux", "3d4h",
        "fake-container1,fake-container2", "fake-image1,fake-image2", "app=agent"]
    ds["spec"]["template"] = TEMPLATE
    assert cells("DaemonSet", "apps", ds)[6] == "<none>"
    assert [c[0] for c in names("DaemonSet", "apps")] == [
        "Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age",
        "Containers", "Images", "Selector"]


def job(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job1", "creationTimestamp": ago(10 * MIN)},
            "spec": {"completions": 1, "parallelism": 1, "template": TEMPLATE,
                     "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}},
            "status": status}


def test_job_complete() -> None:
    j = job(succeeded=1, startTime=ago(10 * MIN), completionTime=ago(7 * MIN),
            conditions=[{"type": "SuccessCriteriaMet", "status": "True"},
                        {"type": "Complete", "status": "True"}])
    assert cells("Job", "batch", j) == [
        "job1", "Complete", "1/1", "3m", "10m", "fake-container1,fake-container2",
        "fake-image1,fake-image2", "batch.kubernetes.io/controller-uid=u"]
    assert [c[0] for c in names("Job", "batch")] == [
        "Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]


@pytest.mark.parametrize(
    ("conditions", "deleting", "want"),
    [
        ([], False, "Running"),
        ([{"type": "Failed", "status": "True"}], False, "Failed"),
        ([{"type": "Failed", "status": "True"}], True, "Failed"),
        ([], True, "Terminating"),
        ([{"type": "Suspended", "status": "True"}], False, "Suspended"),
        ([{"type": "Suspended", "status": "False"}], False, "Running"),
        ([{"type": "FailureTarget", "status": "True"}], False, "FailureTarget"),
        ([{"type": "Complete", "status": "False"}, {"type": "Complete", "status": "True"}],
         False, "Running"),  # the first condition of a type decides
    ],
)
def test_job_status(conditions: list[dict[str, str]], deleting: bool, want: str) -> None:
    j = job(conditions=conditions, startTime=ago(95))
    if deleting:
        j["metadata"]["deletionTimestamp"] = ago(1)
    row = cells("Job", "batch", j)
    assert row[1] == want
    assert row[3] == "95s"  # running: time since start


def test_job_completions_formats() -> None:
    j = job(succeeded=2)
    j["spec"] = {"completions": 5, "parallelism": 2, "template": TEMPLATE}
    row = cells("Job", "batch", j)
    assert row[2] == "2/5"
    assert row[3] == ""  # not started
    assert row[-1] == "<none>"
    j["spec"] = {"parallelism": 3, "template": TEMPLATE}
    assert cells("Job", "batch", j)[2] == "2/1 of 3"
    j["spec"] = {"parallelism": 1, "template": TEMPLATE}
    assert cells("Job", "batch", j)[2] == "2/1"


def test_cron_job() -> None:
    cj: dict[str, Any] = {"metadata": {"name": "nightly", "creationTimestamp": ago(20 * DAY)},
          "spec": {"schedule": "0 3 * * *", "suspend": False,
                   "jobTemplate": {"spec": {"template": TEMPLATE,
                                            "selector": {"matchLabels": {"a": "b"}}}}},
          "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(9 * HOUR)}}
    assert cells("CronJob", "batch", cj) == [
        "nightly", "0 3 * * *", "<none>", "False", 1, "9h", "20d",
        "fake-container1,fake-container2", "fake-image1,fake-image2", "a=b"]
    cj["spec"]["timeZone"] = "Europe/Paris"
    cj["spec"]["suspend"] = True
    cj["status"] = {}
    row = cells("CronJob", "batch", cj)
    assert row[2:6] == ["Europe/Paris", "True", 0, "<none>"]
    del cj["spec"]["suspend"]
    assert cells("CronJob", "batch", cj)[3] == "<unset>"
    assert names("CronJob", "batch")[:7] == [
        ("Name", "string", 0), ("Schedule", "string", 0), ("Timezone", "string", 0),
        ("Suspend", "boolean", 0), ("Active", "integer", 0), ("Last Schedule", "string", 0),
        ("Age", "string", 0)]


def test_controller_revision() -> None:
    cr: dict[str, Any] = {"metadata": {"name": "web-7c9d", "creationTimestamp": ago(30),
                       "ownerReferences": [
                           {"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": "1"},
                           {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                            "uid": "2", "controller": True}]},
          "revision": 2, "data": {}}
    assert cells("ControllerRevision", "apps", cr) == ["web-7c9d", "statefulset.apps/web", 2,
                                                      "30s"]
    cr["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "n",
                                          "controller": True}]
    assert cells("ControllerRevision", "apps", cr)[1] == "node/n"
    cr["metadata"]["ownerReferences"] = []
    assert cells("ControllerRevision", "apps", cr)[1] == "<none>"


def test_pod_template() -> None:
    pt = {"metadata": {"name": "tmpl", "creationTimestamp": ago(5)}, "template": TEMPLATE}
    assert cells("PodTemplate", "", pt) == [
        "tmpl", "fake-container1,fake-container2", "fake-image1,fake-image2",
        "app=web,tier=fe"]
    assert [c[0] for c in names("PodTemplate", "")] == [
        "Name", "Containers", "Images", "Pod Labels"]
    assert cells("PodTemplate", "", {"metadata": {"name": "e"}, "template": {}}) == [
        "e", "", "", "<none>"]


# --- cluster objects -------------------------------------------------------------------


def test_node() -> None:
    node = {"metadata": {"name": "node-1", "creationTimestamp": ago(100 * DAY),
                         "labels": {"node-role.kubernetes.io/control-plane": "",
                                    "node-role.kubernetes.io/": "x",
                                    "kubernetes.io/role": "worker", "other": "y"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "Hostname", "address": "node-1"},
                                     {"type": "InternalIP", "address": "10.0.0.1"},
                                     {"type": "InternalIP", "address": "10.0.0.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Debian 13",
                                    "kernelVersion": "6.12.0",
                                    "containerRuntimeVersion": "containerd://2.1.0"}}}
    assert cells("Node", "", node) == [
        "node-1", "Ready,SchedulingDisabled", "control-plane,worker", "100d", "v1.36.0",
        "10.0.0.1", "<none>", "Debian 13", "6.12.0", "containerd://2.1.0"]
    bare = {"metadata": {"name": "node-2"}, "status": {
        "conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert cells("Node", "", bare) == [
        "node-2", "NotReady", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>",
        "<unknown>", "<unknown>"]
    assert cells("Node", "", {"metadata": {"name": "n3"}})[1] == "Unknown"
    assert [c[0] for c in names("Node", "") if c[2] == 1] == [
        "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"]


def test_namespace() -> None:
    ns: dict[str, Any] = {"metadata": {"name": "kube-system", "creationTimestamp": ago(50)},
          "status": {"phase": "Active"}}
    assert cells("Namespace", "", ns) == ["kube-system", "Active", "50s"]
    ns["status"]["phase"] = "Terminating"
    assert cells("Namespace", "", ns)[1] == "Terminating"


def test_event() -> None:
    ev = {"metadata": {"name": "web-0.17f", "namespace": "default"},
          "involvedObject": {"kind": "Pod", "name": "web-0",
                             "fieldPath": "spec.containers{nginx}"},
          "reason": "Pulled", "type": "Normal", "message": "  Container image pulled\n",
          "source": {"component": "kubelet", "host": "node-1"},
          "firstTimestamp": ago(10 * MIN), "lastTimestamp": ago(30), "count": 4}
    assert cells("Event", "", ev) == [
        "30s", "Normal", "Pulled", "pod/web-0", "spec.containers{nginx}", "kubelet, node-1",
        "Container image pulled", "10m", 4, "web-0.17f"]
    assert names("Event", "") == [
        ("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
        ("Object", "string", 0), ("Subobject", "string", 1), ("Source", "string", 1),
        ("Message", "string", 0), ("First Seen", "string", 1), ("Count", "string", 1),
        ("Name", "string", 1)]
    assert column_definitions("Event", "")[-1]["format"] == "name"


def test_event_new_api_shape() -> None:
    # eventTime instead of first/last timestamps, no count, reporting controller, no name
    ev: dict[str, Any] = {"metadata": {"name": "e2"}, "involvedObject": {"kind": "Node"},
          "reason": "Starting", "type": "Normal", "message": "x",
          "eventTime": "2026-03-01T11:58:00.000000Z", "reportingComponent": "kube-proxy",
          "reportingInstance": "kube-proxy-node-1"}
    assert cells("Event", "", ev) == [
        "2m", "Normal", "Starting", "node", "", "kube-proxy, kube-proxy-node-1", "x", "2m", 1,
        "e2"]
    ev["series"] = {"count": 9, "lastObservedTime": "2026-03-01T11:59:30.500000Z"}
    row = cells("Event", "", ev)
    assert (row[0], row[8]) == ("29s", 9)
    assert cells("Event", "", {"metadata": {"name": "e3"}})[0] == "<unknown>"


def test_events_k8s_io_event() -> None:
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e4"},
          "regarding": {"kind": "Deployment", "name": "web"}, "note": "Scaled up",
          "reason": "ScalingReplicaSet", "type": "Normal",
          "reportingController": "deployment-controller", "reportingInstance": "",
          "eventTime": ago(5), "deprecatedCount": 2, "deprecatedFirstTimestamp": ago(600),
          "deprecatedLastTimestamp": ago(5)}
    assert cells("Event", "events.k8s.io", ev) == [
        "5s", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller",
        "Scaled up", "10m", 2, "e4"]


def test_service() -> None:
    svc = {"metadata": {"name": "web", "creationTimestamp": ago(3 * MIN)},
           "spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
                    "clusterIPs": ["10.96.0.10", "fd00::10"],
                    "ports": [{"port": 80, "protocol": "TCP"},
                              {"port": 443, "protocol": "TCP", "nodePort": 30001}],
                    "selector": {"app": "web"}}}
    assert cells("Service", "", svc) == [
        "web", "NodePort", "10.96.0.10", "<none>", "80/TCP,443:30001/TCP", "3m",
        "app=web"]
    assert [c[0] for c in names("Service", "")] == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]


@pytest.mark.parametrize(
    ("spec", "status", "external"),
    [
        ({"type": "ClusterIP"}, {}, "<none>"),
        ({"type": "ClusterIP", "externalIPs": ["1.2.3.4", "5.6.7.8"]}, {}, "1.2.3.4,5.6.7.8"),
        ({"type": "LoadBalancer"}, {}, "<pending>"),
        ({"type": "LoadBalancer"},
         {"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}, {"hostname": "lb.example.com"},
                                       {"ip": "2.2.2.2"}, {"ip": "9.9.9.9"}]}},
         "2.2.2.2,9.9.9.9,lb.example.com"),
        ({"type": "LoadBalancer", "externalIPs": ["1.1.1.1"]},
         {"loadBalancer": {"ingress": [{"ip": "3.3.3.3"}]}}, "3.3.3.3,1.1.1.1"),
        ({"type": "LoadBalancer", "externalIPs": ["1.1.1.1"]}, {}, "1.1.1.1"),
        ({"type": "ExternalName", "externalName": "db.example.com"}, {}, "db.example.com"),
        ({}, {}, "<unknown>"),
    ],
)
def test_service_external_ip(spec: dict[str, Any], status: dict[str, Any],
                             external: str) -> None:
    svc = {"metadata": {"name": "s"}, "spec": spec, "status": status}
    row = cells("Service", "", svc)
    assert row[3] == external
    assert row[2] == "<none>"
    assert row[4] == "<none>"
    assert row[6] == "<none>"


def test_service_headless() -> None:
    svc = {"metadata": {"name": "h"},
           "spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"],
                    "ports": [{"port": 5432, "protocol": "TCP"}]}}
    assert cells("Service", "", svc)[1:5] == ["ClusterIP", "None", "<none>", "5432/TCP"]


def test_endpoints() -> None:
    ep: dict[str, Any] = {"metadata": {"name": "web", "creationTimestamp": ago(61)},
          "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::2"}],
                       "ports": [{"port": 8080, "protocol": "TCP"}]}]}
    assert cells("Endpoints", "", ep) == ["web", "10.0.0.1:8080,[fd00::2]:8080", "61s"]
    ep["subsets"] = [{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)],
                      "ports": [{"port": 80}, {"port": 443}]}]
    assert cells("Endpoints", "", ep)[1] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more..."
    ep["subsets"] = [{"addresses": [{"ip": "10.0.0.9"}]}]  # headless, no ports
    assert cells("Endpoints", "", ep)[1] == "10.0.0.9"
    ep["subsets"] = []
    assert cells("Endpoints", "", ep)[1] == "<none>"


def test_config_map_secret_service_account_lease() -> None:
    cm = {"metadata": {"name": "cfg", "creationTimestamp": ago(2)},
          "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert cells("ConfigMap", "", cm) == ["cfg", 3, "2s"]
    assert cells("ConfigMap", "", {"metadata": {"name": "empty"}}) == ["empty", 0, "<unknown>"]

    sec = {"metadata": {"name": "tok", "creationTimestamp": ago(2)},
           "type": "kubernetes.io/service-account-token", "data": {"token": "eA=="}}
    assert cells("Secret", "", sec) == ["tok", "kubernetes.io/service-account-token", 1, "2s"]
    assert [c[0] for c in names("Secret", "")] == ["Name", "Type", "Data", "Age"]

    sa = {"metadata": {"name": "default", "creationTimestamp": ago(2)},
          "secrets": [{"name": "s1"}, {"name": "s2"}]}
    assert cells("ServiceAccount", "", sa) == ["default", "2s"]
    assert [c[0] for c in names("ServiceAccount", "")] == ["Name", "Age"]

    lease = {"metadata": {"name": "kube-controller-manager", "creationTimestamp": ago(2)},
             "spec": {"holderIdentity": "host_1234", "leaseDurationSeconds": 15}}
    assert cells("Lease", "coordination.k8s.io", lease) == [
        "kube-controller-manager", "host_1234", "2s"]
    assert cells("Lease", "coordination.k8s.io", {"metadata": {"name": "l"}, "spec": {}}) == [
        "l", "", "<unknown>"]


def test_scale() -> None:
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
             "metadata": {"name": "web", "creationTimestamp": ago(4)},
             "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}}
    assert cells("Scale", "autoscaling", scale) == ["web", 3, 2, "4s"]
    assert column_definitions("Scale", "autoscaling")[0]["format"] == ""


def test_list_of_many_kinds_has_one_row_each() -> None:
    objs = [{"metadata": {"name": f"cm{i}", "creationTimestamp": ago(i)}, "data": {}}
            for i in range(5)]
    t = table("ConfigMap", "", objs, list_meta={"resourceVersion": "1"},
              include_object="Object", now=NOW)
    assert [r["cells"] for r in t["rows"]] == [[f"cm{i}", 0, f"{i}s"] for i in range(5)]
    assert [r["object"] for r in t["rows"]] == objs


def test_daemon_set_rows_hide_the_template_generation_annotation() -> None:
    # a spec field of the internal DaemonSet: PartialObjectMetadata rows do not show it
    ds = {"metadata": {"name": "d", "annotations": {
        "deprecated.daemonset.template.generation": "2", "a": "b"}}}
    t = table("DaemonSet", "apps", [ds], list_meta=None, include_object="Metadata", now=NOW)
    assert t["rows"][0]["object"]["metadata"] == {"name": "d", "annotations": {"a": "b"}}
    only = {"metadata": {"name": "d", "annotations": {
        "deprecated.daemonset.template.generation": "1"}}}
    t = table("DaemonSet", "apps", [only], list_meta=None, include_object="Metadata", now=NOW)
    assert t["rows"][0]["object"]["metadata"] == {"name": "d"}
    # the stored object keeps it (includeObject=Object)
    t = table("DaemonSet", "apps", [only], list_meta=None, include_object="Object", now=NOW)
    assert t["rows"][0]["object"] is only
