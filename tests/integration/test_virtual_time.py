"""Virtual time across processes (issue 21, step 3), in one test process: an API server
hosting a VirtualClock on its own loop (a thread, as another process would) and a
follower on the test's loop, joined over the clock channel.

- the follower reads the host's time as soon as it has joined; without autojump a
  follower's sleep ends when a client advances the host (POST
  /pykcm/v1/clock/advance), not before;
- autojump: with every participant idle the host jumps from timer to timer, up to the
  follower's own deadline, which fires at exactly its instant; a request held in flight
  on the server (its body not yet sent) holds the jump until it ends, and so does a
  follower whose loop is never idle (it does not answer the probes);
- a watch without timeoutSeconds (kubectl get -w) outlives virtual hours, one asking
  for 60 s ends when the clock passes them;
- advancing backwards or with a bad body is a 400 Status; reading needs a user,
  advancing RBAC (a user with no grant gets 403);
- a progress poll on real time (waiting for caches) whose condition holds runs before
  autojump moves on (pykcm.api.progress_poll).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from pykcm.api.progress_poll import poll_until
from pykcm.api.timestamps import format_time, parse_time
from pykcm.api.virtual_clock import VirtualClock
from pykcm.client import ApiError, Client, load_kube_config
from pykcm.client.clock_follower import FollowerClock, NoVirtualTime, follow_clock
from pykcm.testing.server_thread import ServerThread
from tests.polling import eventually

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture(params=[True])
def host(request: pytest.FixtureRequest,
         pykcm_apiserver_factory: Callable[..., ServerThread]) -> Iterator[ServerThread]:
    """A host; ``@pytest.mark.parametrize("host", [False], indirect=True)``: no autojump."""
    yield pykcm_apiserver_factory(clock=VirtualClock(START), clock_followers=1,
                                  autojump=request.param)


@pytest.fixture
async def follower(host: ServerThread) -> AsyncIterator[FollowerClock]:
    clock = await follow_clock(load_kube_config(host.kubeconfig_path), name="test")
    try:
        yield clock
    finally:
        await clock.close()


@pytest.fixture
async def admin(host: ServerThread) -> AsyncIterator[Client]:
    async with Client(load_kube_config(host.kubeconfig_path)) as c:
        yield c


async def _state(client: Client) -> dict[str, Any]:
    out: dict[str, Any] = await client.request("GET", "/pykcm/v1/clock")
    return out


@pytest.mark.parametrize("host", [False], indirect=True)
async def test_a_follower_sleeps_until_the_host_advances(
        host: ServerThread, follower: FollowerClock, admin: Client) -> None:
    assert follower.now() == pytest.approx(host.server.clock.now())
    assert follower.now() == pytest.approx(START, abs=5)
    t0 = follower.now()
    woke: list[float] = []

    async def sleeper() -> None:
        await follower.sleep(60)
        woke.append(follower.now())

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0.2)  # no autojump: time stands still
    assert not woke
    state = await _state(admin)
    assert state["followers"][0]["name"] == "test" and not state["autojump"]
    out = await admin.request("POST", "/pykcm/v1/clock/advance", body={"seconds": 60})
    assert out["epoch"] >= t0 + 60
    await eventually(lambda: woke, what="the follower's sleep ended")
    assert woke[0] >= t0 + 60
    await task
    later = float(int(host.server.clock.now()) + 3600)  # a whole second: RFC 3339 exact
    out = await admin.request("POST", "/pykcm/v1/clock/advance",
                              body={"to": format_time(later)})
    assert out["epoch"] == later
    assert parse_time(out["now"]) == later
    await eventually(lambda: follower.now() == later,
                     what="the follower took the new time")


async def test_advance_errors_and_authorization(host: ServerThread, admin: Client) -> None:
    for body in ({"seconds": -1}, {"to": "2000-01-01T00:00:00Z"}, {"to": "never"},
                 {"seconds": 1, "to": "2030-01-01T00:00:00Z"}, [1]):
        with pytest.raises(ApiError) as err:
            await admin.request("POST", "/pykcm/v1/clock/advance", body=body)
        assert err.value.code == 400, body
        assert err.value.status["reason"] == "BadRequest"
    # a user with no grant reads the clock but does not move it
    cfg = load_kube_config(host.kubeconfig_path)
    token = "nobody-token-1234"
    host.server.auth.add(token, _user("nobody"))
    cfg.token = token
    async with Client(cfg) as nobody:
        assert (await _state(nobody))["epoch"] >= START
        with pytest.raises(ApiError) as err:
            await nobody.request("POST", "/pykcm/v1/clock/advance", body={"seconds": 1})
        assert err.value.code == 403


def _user(name: str) -> Any:
    from pykcm.apiserver.auth.authentication import User

    return User(name, name, ("system:authenticated",))


async def test_a_server_on_the_real_clock_hosts_no_virtual_time(
        pykcm_apiserver_factory: Callable[..., ServerThread]) -> None:
    st = pykcm_apiserver_factory()
    with pytest.raises(NoVirtualTime):
        await follow_clock(load_kube_config(st.kubeconfig_path), name="x", timeout=5)


async def _hold_a_request(host: ServerThread) -> tuple[asyncio.StreamReader,
                                                         asyncio.StreamWriter]:
    """A POST whose body never comes: the server serves it (in flight) until we close."""
    u = urlsplit(host.url)
    ctx = ssl.create_default_context(cadata=(host.ca_pem or b"").decode())
    reader, writer = await asyncio.open_connection(u.hostname, u.port, ssl=ctx)
    writer.write((f"POST /api/v1/namespaces HTTP/1.1\r\nHost: {u.netloc}\r\n"
                  f"Authorization: Bearer {host.token}\r\nContent-Type: application/json\r\n"
                  "Content-Length: 100\r\n\r\n{").encode())
    await writer.drain()
    return reader, writer


async def test_autojump_to_the_follower_deadline_when_all_idle(
        host: ServerThread, follower: FollowerClock, admin: Client) -> None:
    start = follower.monotonic()
    fired: list[float] = []
    deadline = start + 3 * 3600.0  # beyond the host's own timers (leases, bookmarks)
    follower.call_at(deadline, lambda: fired.append(follower.monotonic()))
    # a request in flight holds the jump
    _reader, writer = await _hold_a_request(host)
    await eventually(lambda: _decision(admin, "the API server is busy"),
                     what="the held request holds the jump")
    assert not fired
    writer.close()
    await eventually(lambda: fired, timeout=60, what="the follower's timer fired")
    assert fired == [deadline]  # the jump landed on its instant
    assert host.server.clock.monotonic() >= deadline
    state = await _state(admin)
    assert state["autojump"] and state["jumps"] >= 1
    print(f"autojump: {deadline - start:.0f} virtual s, {state['jumps']} jumps")


async def _decision(admin: Client, text: str) -> bool:
    return text in (await _state(admin))["lastDecision"]


@pytest.mark.parametrize("host", [False], indirect=True)
async def test_a_watch_without_timeout_outlives_virtual_hours(
        host: ServerThread, admin: Client) -> None:
    """The server's default watch timeout (1800-3600 s, kubectl get -w) is real time on a
    virtual clock; a timeoutSeconds the client asks for is virtual."""
    list_rv = (await admin.list("namespaces"))["metadata"]["resourceVersion"]
    default = admin.watch("namespaces", resource_version=list_rv)
    asked = admin.watch("namespaces", resource_version=list_rv, timeout_seconds=60)
    ended: list[str] = []

    async def drain(name: str, stream: Any) -> None:
        async for _ in stream:
            pass
        ended.append(name)

    tasks = [asyncio.create_task(drain("default", default)),
             asyncio.create_task(drain("asked", asked))]
    try:
        await asyncio.sleep(0.5)  # both streams open
        await admin.request("POST", "/pykcm/v1/clock/advance", body={"seconds": 4 * 3600})
        await eventually(lambda: ended == ["asked"], what="the 60 s watch ended")
        await admin.create("namespaces", {"metadata": {"name": "after-hours"}})
        await asyncio.sleep(0.5)
        assert ended == ["asked"]  # the default one still runs
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_busy_follower_holds_the_jump(
        host: ServerThread, follower: FollowerClock, admin: Client) -> None:
    """A follower whose loop always has something ready to run never answers idle: time
    waits for it (its timer fires only once it is quiet)."""
    fired: list[float] = []
    deadline = follower.monotonic() + 3 * 3600.0
    follower.call_at(deadline, lambda: fired.append(follower.monotonic()))
    spinning = True

    async def spin() -> None:
        while spinning:
            await asyncio.sleep(0)

    spinner = asyncio.create_task(spin())
    try:
        await eventually(lambda: _decision(admin, "has not answered"),
                         what="the host waits for the busy follower")
        await asyncio.sleep(0.2)
        assert not fired
    finally:
        spinning = False
        await spinner
    await eventually(lambda: fired, timeout=60, what="the follower's timer fired")
    assert fired == [deadline]


async def test_a_satisfied_progress_poll_runs_before_the_clock_jumps(
        host: ServerThread, follower: FollowerClock) -> None:
    """A wait polling on real time for I/O progress (caches synced) whose condition holds
    is woken by the follower's idle check and runs before autojump moves on: it is not
    slept out while the cluster's clock races from timer to timer (a node's Ready turned
    Unknown at start-up in a loaded CI run: the simulator slept out its cache-sync poll
    while the node lifecycle's monitor passes went by without a Lease renewal)."""
    synced = False
    resumed = False
    fired: list[bool] = []

    async def wait_for_caches() -> None:
        nonlocal resumed
        await poll_until(lambda: synced, 30.0)  # a period far longer than the race
        resumed = True

    waiter = asyncio.create_task(wait_for_caches())
    try:
        await asyncio.sleep(0.05)
        synced = True  # the lists arrived and were handled; the poll still sleeps
        # then a timer far ahead: autojump goes there once the follower answers idle
        follower.call_at(follower.monotonic() + 3600.0, lambda: fired.append(resumed))
        await eventually(lambda: fired, timeout=60, what="the follower's timer fired")
        assert fired == [True]  # the poll ran before the jump
    finally:
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
