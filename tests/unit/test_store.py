"""The store and its durable log: revisions, history, snapshots, watchers, reload."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.apiserver import errors
from pykcm.apiserver.storage import Entry, SqliteLog, Store, Watcher
from pykcm.apiserver.storage import store as store_mod


def pod(name: str, ns: str = "default", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}


async def put(s: Store, rid: str, key: str, obj: dict[str, Any] | None) -> Entry:
    rs = s.resource(rid)
    return await s.write(rs, key, obj, rs.current(key))


async def test_revisions_increase_and_reads_see_committed() -> None:
    s = Store()
    await s.start()
    a = await put(s, "core/pods", "default/a", pod("a"))
    b = await put(s, "core/pods", "default/b", pod("b"))
    assert (a.rv, b.rv) == (1, 2)
    assert s.rv == 2
    assert a.obj["metadata"]["resourceVersion"] == "1"
    rs = s.resource("core/pods")
    assert rs.sorted_keys() == ["default/a", "default/b"]
    await put(s, "core/pods", "default/a", None)
    assert rs.get("default/a") is None and s.rv == 3
    await s.close()


async def test_snapshot_rebuilds_past_state_and_expires() -> None:
    s = Store()
    await s.start()
    await put(s, "core/pods", "default/a", pod("a"))  # 1
    await put(s, "core/pods", "default/b", pod("b"))  # 2
    await put(s, "core/pods", "default/a", pod("a", labels={"x": "1"}))  # 3
    await put(s, "core/pods", "default/b", None)  # 4
    rs = s.resource("core/pods")
    items, keys = rs.snapshot(2)
    assert keys == ["default/a", "default/b"]
    assert items["default/a"].rv == 1
    items, keys = rs.snapshot(1)
    assert keys == ["default/a"]
    rs.trim(now=1e12, max_events=1, max_age=0)
    assert rs.oldest_rv == 3
    with pytest.raises(errors.StatusError) as exc:
        rs.snapshot(2)
    assert exc.value.code == 410
    await s.close()


async def test_watcher_selector_transitions() -> None:
    s = Store()
    await s.start()
    rs = s.resource("core/pods")

    def only_x(key: str, e: Entry) -> bool:
        return (e.obj["metadata"].get("labels") or {}).get("x") == "1"

    w = Watcher(rs, s.rv, only_x)
    w.register()
    await put(s, "core/pods", "default/a", pod("a"))  # not matching: nothing
    await put(s, "core/pods", "default/a", pod("a", labels={"x": "1"}))  # starts matching
    await put(s, "core/pods", "default/a", pod("a", labels={"x": "1", "y": "2"}))
    await put(s, "core/pods", "default/a", pod("a", labels={}))  # stops matching
    lines = w.drain()
    import orjson

    evs = [orjson.loads(x) for x in lines]
    assert [e["type"] for e in evs] == ["ADDED", "MODIFIED", "DELETED"]
    # The DELETED for "stopped matching" carries the old state with the new revision.
    assert evs[2]["object"]["metadata"]["labels"] == {"x": "1", "y": "2"}
    assert evs[2]["object"]["metadata"]["resourceVersion"] == "4"
    w.close()
    await s.close()


async def test_durable_reload_keeps_state_history_and_counter(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "state.db")
    s = Store(SqliteLog(path))
    await s.start()
    for i in range(20):
        await put(s, "core/configmaps", f"default/c{i}", {"metadata": {"name": f"c{i}"}})
    await put(s, "core/configmaps", "default/c3", None)
    await put(s, "apps/deployments", "default/d", {"metadata": {"name": "d"}})
    last = s.rv
    await s.close()

    s2 = Store(SqliteLog(path))
    await s2.start()
    assert s2.rv == last
    cms = s2.resource("core/configmaps")
    assert len(cms.items) == 19 and "default/c3" not in cms.items
    # History survives: a watch from an old revision can resume.
    evs = cms.events_after(10)
    assert [e.rv for e in evs] == list(range(11, 22))
    assert evs[-1].type == "DELETED"
    nxt = await put(s2, "core/configmaps", "default/new", {"metadata": {"name": "new"}})
    assert nxt.rv == last + 1
    await s2.close()


async def test_compaction_deletes_superseded_rows_and_reload_agrees(tmp_path: Any) -> None:
    path = os.path.join(tmp_path, "state.db")
    s = Store(SqliteLog(path))
    await s.start()
    for i in range(50):
        await put(s, "core/configmaps", "default/a", {"metadata": {"name": "a"}, "data": {
            "i": str(i)}})
    await put(s, "core/configmaps", "default/b", {"metadata": {"name": "b"}})
    await put(s, "core/configmaps", "default/b", None)
    rs = s.resource("core/configmaps")
    rs.trim(now=1e12, max_events=5, max_age=0)
    await s.compact(now=1e12)
    await s.close()
    db = SqliteLog(path)
    rows = list(db.load())
    db.close()
    assert len(rows) <= 7  # the window plus the base version
    s2 = Store(SqliteLog(path))
    await s2.start()
    rs2 = s2.resource("core/configmaps")
    assert rs2.get("default/a") is not None
    assert rs2.get("default/a").obj["data"] == {"i": "49"}
    assert rs2.get("default/b") is None
    assert s2.rv == 52
    with pytest.raises(errors.StatusError):
        rs2.snapshot(10)
    await s2.close()


async def test_concurrent_writers_get_distinct_ordered_revisions(tmp_path: Any) -> None:
    import asyncio

    s = Store(SqliteLog(os.path.join(tmp_path, "state.db")))
    await s.start()
    rs = s.resource("core/configmaps")
    entries = await asyncio.gather(*(
        s.write(rs, f"default/c{i}", {"metadata": {"name": f"c{i}"}}, None) for i in range(300)))
    rvs = sorted(e.rv for e in entries)
    assert rvs == list(range(1, 301))
    assert [e.rv for e in rs.history] == rvs
    await s.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.booleans()), min_size=1,
                max_size=30), st.data())
def test_snapshot_matches_replayed_state(ops: list[tuple[str, bool]], data: Any) -> None:
    """A snapshot at any revision equals replaying the writes up to it (independent model)."""
    import asyncio

    async def run() -> None:
        s = Store()
        await s.start()
        model: list[dict[str, int]] = [{}]  # model[rv] = {name: rv of its version}
        rs = s.resource("core/configmaps")
        for name, delete in ops:
            cur = rs.current(name)
            if delete and cur is None:
                continue
            state = dict(model[-1])
            if delete:
                await s.write(rs, name, None, cur)
                del state[name]
            else:
                await s.write(rs, name, {"metadata": {"name": name}}, cur)
                state[name] = s.rv
            model.append(state)
            assert len(model) == s.rv + 1
        at = data.draw(st.integers(min_value=0, max_value=s.rv))
        items, keys = rs.snapshot(at)
        expect = model[at]
        assert {k: e.rv for k, e in items.items()} == expect
        assert keys == sorted(expect)
        await s.close()

    asyncio.run(run())


def test_history_window_constants_meet_the_contract() -> None:
    assert store_mod.HISTORY_EVENTS >= 10_000
    assert store_mod.HISTORY_SECONDS >= 300


@pytest.mark.parametrize(("fsync", "level"), [(True, 2), (False, 1)])
def test_the_log_fsyncs_every_commit_unless_told_not_to(tmp_path: Path, fsync: bool,
                                                        level: int) -> None:
    """synchronous=FULL (2) by default, as etcd fsyncs each commit; NORMAL (1) opted out."""
    log = SqliteLog(str(tmp_path / "state.db"), fsync=fsync)
    assert log._db.execute("PRAGMA synchronous").fetchone()[0] == level
    assert os.stat(tmp_path / "state.db").st_mode & 0o777 == 0o600
