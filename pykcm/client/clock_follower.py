"""Following the cluster's virtual clock (issue 21, step 3): a process's FollowerClock.

Role. ``pykcm sim --virtual-time`` and ``pykcm controller-manager
--virtual-time`` run on the clock the API server hosts
(pykcm.apiserver.controlplane.virtual_time). :func:`follow_clock` connects to
its channel (``/pykcm/v1/clock/follow``, a websocket) with the process's own
kubeconfig credentials before anything else starts, takes the host's time
lines, and returns a :class:`FollowerClock`: a
:class:`~pykcm.api.virtual_clock.VirtualClock` whose time moves when the host
says so (its due timers then fire on this loop).

Data flow. host → ``time`` {monotonic, generation} → ``set_time`` fires due
timers; host → ``probe`` k → this process waits until it is idle: its loop
has nothing ready to run (:func:`~pykcm.api.virtual_clock.loop_is_idle`,
two checks in a row, a loop iteration apart, so that I/O already on its
sockets is seen) and none of its requests is on the wire
(``rest_client.IN_FLIGHT``) and no progress poll sleeps on real time with its
condition met (``pykcm.api.progress_poll``: such a sleeper is woken instead)
→ ``state`` {probe, generation, ready, idle, nextDeadline} → the host's
autojump rule. :meth:`FollowerClock.set_ready`
(the process started its controllers or nodes) is reported, not waited for: a
starting process waits on the clock too (its client's token bucket), so
holding time until it has started would deadlock.

Deviation from the plan of issue 21: a work queue holding items is not "busy"
here. A worker can hold an item while it waits on this clock (the client's
token bucket, a retry's backoff): counting it would hold the jump that would
release it. A worker that runs shows as a ready callback, one that waits on
the API server as a request in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aiohttp
import orjson

from pykcm.api.progress_poll import PROGRESS_POLLS
from pykcm.api.virtual_clock import VirtualClock, loop_is_idle
from pykcm.client._auth import Authenticator
from pykcm.client._tls import build_ssl_context
from pykcm.client.config import Config
from pykcm.client.rest_client import IN_FLIGHT

__all__ = ["CLOCK_FOLLOW_PATH", "FollowerClock", "NoVirtualTime", "follow_clock"]

log = logging.getLogger(__name__)

CLOCK_FOLLOW_PATH = "/pykcm/v1/clock/follow"

# Between two idle checks while busy: real time, short (an answer's latency).
_BUSY_PAUSE = 0.001


class NoVirtualTime(RuntimeError):
    """The API server hosts no virtual clock."""


class FollowerClock(VirtualClock):
    """A VirtualClock moved by the host's channel (see the module doc)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.ready = False
        self.host_generation = -1
        self.lost = asyncio.Event()
        """Set when the channel to the host is gone: time then stands still."""
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._session: aiohttp.ClientSession | None = None
        self._reader: asyncio.Task[None] | None = None
        self._answerer: asyncio.Task[None] | None = None
        self._probe = 0

    def set_ready(self) -> None:
        """The process has started (shown in the host's state)."""
        self.ready = True

    def _apply(self, msg: dict[str, Any]) -> None:
        mono = float(msg["monotonic"])
        if "wallOffset" in msg:
            self.rebase(max(mono, self.monotonic()), float(msg["wallOffset"]))
        self.host_generation = int(msg["generation"])
        self.set_time(mono)

    async def _read(self) -> None:
        ws = self._ws
        assert ws is not None
        try:
            async for m in ws:
                if m.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    continue
                msg = orjson.loads(m.data)
                kind = msg.get("type")
                if kind == "time":
                    self._apply(msg)
                elif kind == "probe":
                    self._probe = int(msg["probe"])
                    if self._answerer is None or self._answerer.done():
                        self._answerer = asyncio.get_running_loop().create_task(
                            self._answer(), name="clock-probe")
        finally:
            if not self.lost.is_set():
                log.error("lost the cluster's virtual clock (%s): time stands still",
                          ws.exception() or "closed")
            self.lost.set()

    async def _answer(self) -> None:
        """Answer the latest probe once this process is idle."""
        loop = asyncio.get_running_loop()
        quiet = 0
        while True:
            await asyncio.sleep(0)  # one loop iteration: I/O on the sockets is polled
            # A progress poll sleeping on real time whose condition now holds (caches
            # synced) is work about to run, not idleness: woken, it runs next iteration.
            if loop_is_idle(loop) and IN_FLIGHT.requests == 0 and \
                    not PROGRESS_POLLS.wake_satisfied():
                quiet += 1
                if quiet >= 2:
                    break
            else:
                quiet = 0
                await asyncio.sleep(_BUSY_PAUSE)
        nd = self.next_deadline()
        await self._send({"type": "state", "probe": self._probe,
                          "generation": self.host_generation, "ready": self.ready,
                          "idle": True,
                          "nextDeadline": None if nd is None else self.wall_of(nd),
                          "nextMonotonic": nd, "nextTimer": self.next_timer()})

    async def _send(self, msg: dict[str, Any]) -> None:
        ws = self._ws
        if ws is None or ws.closed:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.send_bytes(orjson.dumps(msg))

    async def close(self) -> None:
        """Leave the channel (the host then stops waiting for this follower)."""
        self.lost.set()
        for t in (self._answerer, self._reader):
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        if self._ws is not None:
            await self._ws.close()
        if self._session is not None:
            await self._session.close()


async def follow_clock(config: Config, *, name: str, timeout: float = 30.0) -> FollowerClock:
    """Join the host's clock with ``config``'s credentials; the clock reads the host's time
    when this returns. Raises :class:`NoVirtualTime` if the server hosts none."""
    clock = FollowerClock(name)
    ssl_ctx = build_ssl_context(config)
    auth, _ = await Authenticator(config).credential()
    headers = {"Authorization": auth} if auth else {}
    session = aiohttp.ClientSession(trust_env=False)
    try:
        ws = await session.ws_connect(
            config.host + CLOCK_FOLLOW_PATH, params={"name": name}, headers=headers,
            ssl=ssl_ctx if ssl_ctx is not None else False,
            server_hostname=config.tls_server_name or None, heartbeat=None,
            timeout=aiohttp.ClientWSTimeout(ws_close=5.0), max_msg_size=1 << 20)
        first = await ws.receive(timeout=timeout)
        if first.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
            raise NoVirtualTime(f"{config.host}: the clock channel closed at once")
        clock._apply(orjson.loads(first.data))
    except aiohttp.WSServerHandshakeError as exc:
        await session.close()
        if exc.status in (404, 405):
            raise NoVirtualTime(f"the API server at {config.host} hosts no virtual time "
                                "(start it with --virtual-time)") from None
        raise
    except BaseException:
        await session.close()
        raise
    clock._session = session
    clock._ws = ws
    clock._reader = asyncio.get_running_loop().create_task(clock._read(), name="clock-follow")
    return clock
