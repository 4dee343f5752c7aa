"""WATCH semantics: synthetic state, resume, selectors, 410, bookmarks, watch-list."""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.conftest import Api, pod


def _rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_watch_from_zero_sends_state_then_live(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    api.post(path, {"metadata": {"name": "a"}})
    api.post(path, {"metadata": {"name": "b"}})

    def later() -> None:
        time.sleep(0.3)
        api.post(path, {"metadata": {"name": "c"}})

    threading.Thread(target=later).start()
    evs = api.watch(path, {"resourceVersion": "0"}, max_events=3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
        ("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


def test_watch_resumes_exactly_after_a_revision(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, a = api.post(path, {"metadata": {"name": "a"}})
    assert code == 201, a
    start = _rv(a)
    api.patch(f"{path}/a", {"data": {"x": "1"}})
    api.post(path, {"metadata": {"name": "b"}})
    code, gone = api.delete(f"{path}/a")
    assert code == 200, gone
    evs = api.watch(path, {"resourceVersion": str(start)}, max_events=3)
    assert [e["type"] for e in evs] == ["MODIFIED", "ADDED", "DELETED"]
    rvs = [_rv(e["object"]) for e in evs]
    assert rvs == sorted(rvs) and rvs[0] > start
    # DELETED carries the last state with the delete's resourceVersion
    assert evs[2]["object"]["data"] == {"x": "1"}
    assert rvs[2] > rvs[1]


def test_watch_selector_transitions(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/pods"
    code, p = api.post(path, pod("p", {"app": "x"}))
    assert code == 201, p
    start = _rv(p)
    api.patch(f"{path}/p", {"metadata": {"labels": {"app": "y"}}})  # starts matching app=y
    api.patch(f"{path}/p", {"metadata": {"labels": {"tier": "1"}}})  # still matching
    api.patch(f"{path}/p", {"metadata": {"labels": {"app": "z"}}})  # stops matching
    evs = api.watch(path, {"resourceVersion": str(start), "labelSelector": "app=y"},
                    max_events=3)
    assert [e["type"] for e in evs] == ["ADDED", "MODIFIED", "DELETED"]
    assert evs[2]["object"]["metadata"]["labels"]["app"] == "y"


def test_watch_single_object_and_legacy_path(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, a = api.post(path, {"metadata": {"name": "a"}})
    assert code == 201, a
    api.post(path, {"metadata": {"name": "b"}})
    api.patch(f"{path}/a", {"data": {"k": "v"}})
    evs = api.watch(f"/api/v1/watch/namespaces/{ns}/configmaps/a",
                    {"resourceVersion": str(_rv(a) - 1)}, max_events=2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
        ("ADDED", "a"), ("MODIFIED", "a")]


def test_watch_too_old_gets_in_stream_410(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/secrets"
    code, first = api.post(path, {"metadata": {"name": "s0"}})
    for i in range(1, 4):
        api.post(path, {"metadata": {"name": f"s{i}"}})
    store = api.st.server.store
    assert store is not None

    async def compact() -> None:
        rs = store.resource("core/secrets")
        rs.trim(now=1e12, max_events=1, max_age=0)

    api.st.call(compact())
    evs = api.watch(path, {"resourceVersion": str(_rv(first))}, max_events=1)
    assert evs[0]["type"] == "ERROR"
    status = evs[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    # a list at that revision is gone too
    code, err = api.get(path, params={"resourceVersion": str(_rv(first)),
                                      "resourceVersionMatch": "Exact"})
    assert code == 410, err


def test_bookmark_two_seconds_before_timeout_once_the_revision_moved(api: Api) -> None:
    """kube-apiserver's cacher: a bookmark 2 s before the deadline (none for a shorter watch),
    only if the store's revision moved past the one the watch started from."""
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, lst = api.get(path)
    assert code == 200, lst
    start = lst["metadata"]["resourceVersion"]
    other = api.ns()
    code, moved = api.post(f"/api/v1/namespaces/{other}/configmaps", {"metadata": {"name": "m"}})
    assert code == 201, moved
    evs = api.watch(path, {"resourceVersion": start, "allowWatchBookmarks": "true",
                           "timeoutSeconds": "3"})
    assert [e["type"] for e in evs] == ["BOOKMARK"]  # no event of its own, then the end
    assert int(evs[0]["object"]["metadata"]["resourceVersion"]) >= _rv(moved)
    assert evs[0]["object"]["kind"] == "ConfigMap"
    assert "annotations" not in evs[0]["object"]["metadata"]
    # under 2 s there is no time for one: the stream just ends
    assert api.watch(path, {"resourceVersion": start, "allowWatchBookmarks": "true",
                            "timeoutSeconds": "1"}) == []


def test_watch_list_initial_events_end_bookmark(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    api.post(path, {"metadata": {"name": "a"}})
    api.post(path, {"metadata": {"name": "b"}})

    def later() -> None:
        time.sleep(0.3)
        api.post(path, {"metadata": {"name": "live"}})

    threading.Thread(target=later).start()
    evs = api.watch(path, {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                           "allowWatchBookmarks": "true"}, max_events=4)
    assert [e["type"] for e in evs] == ["ADDED", "ADDED", "BOOKMARK", "ADDED"]
    bm = evs[2]["object"]["metadata"]
    assert bm["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert evs[3]["object"]["metadata"]["name"] == "live"
    assert int(evs[3]["object"]["metadata"]["resourceVersion"]) > int(bm["resourceVersion"])


def test_watch_options_validation(api: Api) -> None:
    code, err = api.get("/api/v1/configmaps", params={"watch": "1",
                                                      "sendInitialEvents": "true"})
    assert code == 422 and err["reason"] == "Invalid"
    code, err = api.get("/api/v1/configmaps", params={"sendInitialEvents": "true"})
    assert code == 422
