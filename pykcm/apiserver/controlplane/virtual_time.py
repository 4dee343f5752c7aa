"""The cluster's virtual clock, hosted by the API server (issue 21, step 3).

Role. ``pykcm apiserver --virtual-time`` runs the server on a
:class:`~pykcm.api.virtual_clock.VirtualClock` and serves it under
``/pykcm/v1/clock`` (pykcm's own path, not a Kubernetes API):

- ``GET /pykcm/v1/clock``: ``{now, epoch, generation, autojump, nextDeadline,
  followers: [{name, ready, idle, nextDeadline}], lastDecision}``;
- ``POST /pykcm/v1/clock/advance`` with ``{"seconds": s}`` or ``{"to": RFC3339}``:
  moves the time forward (400 Status for a step back or a bad body), answers as GET;
- ``GET /pykcm/v1/clock/follow`` (a websocket, ``?name=``): a follower's channel.
  The host sends ``{"type": "time", "epoch", "monotonic", "generation"}`` on
  connecting (with ``wallOffset``: the follower takes the host's two lines, so
  deadlines compare exactly) and after every move, and ``{"type": "probe",
  "probe": k}``; the follower answers a probe with ``{"type": "state", "probe",
  "generation", "ready", "idle", "nextDeadline" (epoch), "nextMonotonic"}`` once
  its own loop is idle (pykcm.client.clock_follower).

Authorization (pykcm's own rule, kept simple): any authenticated user may read
and follow the clock; advancing is RBAC's ``post`` on the non-resource URL
``/pykcm/v1/clock/advance`` (system:masters' cluster-admin has it).

Autojump. A task probes the followers every ``quiet`` seconds of real time
(1 ms; doubling up to 20 ms while the probes find the server busy); when :func:`~pykcm.api.virtual_clock.autojump_target` finds every
follower idle on this probe and time generation, no request in flight and none
served, nothing committed since the probe, no watch event unsent and this loop
idle, the clock jumps to the earliest pending timer of anyone. The probe-answer
order closes the race of a watch event on its way to a follower: a probe is
sent only while no request is being served, no watch event is queued or being
written and the loop is idle, so every event committed so far is on the
follower's socket before the probe, and the follower's loop sees it before it
can answer idle; events the host commits later move the store's revision,
which is part of the activity compared.

Deviation: no upstream counterpart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from pykcm.api.timestamps import format_rfc3339_nano, parse_time
from pykcm.api.virtual_clock import (
    Decision,
    HostState,
    ParticipantState,
    VirtualClock,
    autojump_target,
    loop_is_idle,
)
from pykcm.apiserver import errors

__all__ = ["CLOCK_PATH", "ClockHost"]

log = logging.getLogger(__name__)

CLOCK_PATH = "/pykcm/v1/clock"

# The longest real pause between two probes of a busy cluster.
_MAX_PAUSE = 0.02


@dataclass
class _Follower:
    name: str
    ws: web.WebSocketResponse
    state: ParticipantState
    next_timer: str = ""
    outbox: list[bytes] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class ClockHost:
    """Serves a VirtualClock to clients and followers, and autojumps it (module doc).

    ``activity``: a number that moves with every request served and every write
    committed; ``in_flight``: requests being served (watches and the clock's own
    excluded); ``unsent``: watch events queued or being written.
    """

    def __init__(self, clock: VirtualClock, *, autojump: bool = True,
                 followers_expected: int = 0,
                 activity: Callable[[], int] = lambda: 0,
                 in_flight: Callable[[], int] = lambda: 0,
                 unsent: Callable[[], int] = lambda: 0,
                 quiet: float = 0.001) -> None:
        self.clock = clock
        self.autojump = autojump
        self.followers_expected = followers_expected
        self._activity = activity
        self._in_flight = in_flight
        self._unsent = unsent
        self.quiet = quiet
        self.followers: dict[int, _Follower] = {}
        self._next_id = 0
        self.probe = 0
        self.jumps = 0
        self.last_decision = Decision(None, "not started")
        self._answered = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._remove_listener = clock.on_change(self._pushed)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self.autojump and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._autojump(),
                                                                name="clock-autojump")

    async def stop(self) -> None:
        self._remove_listener()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for f in list(self.followers.values()):
            await f.ws.close()

    # -- HTTP ----------------------------------------------------------------------------

    def needs_authorization(self, method: str, path: str) -> bool:
        """Only advancing goes through RBAC; reading and following need a user."""
        return not (method in ("GET", "HEAD") and path in (CLOCK_PATH, CLOCK_PATH + "/follow"))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == CLOCK_PATH and request.method in ("GET", "HEAD"):
            return self._state_response()
        if path == CLOCK_PATH + "/advance" and request.method == "POST":
            return await self._advance(request)
        if path == CLOCK_PATH + "/follow" and request.method == "GET":
            return await self._follow(request)
        if path in (CLOCK_PATH, CLOCK_PATH + "/advance", CLOCK_PATH + "/follow"):
            return _status(errors.method_not_allowed())
        return _status(errors.StatusError(404, "NotFound", "the server could not find the "
                                          "requested resource"))

    def state(self) -> dict[str, Any]:
        c = self.clock
        return {
            "now": format_rfc3339_nano(c.utcnow()),
            "epoch": c.now(),
            "generation": c.generation,
            "autojump": self.autojump,
            "jumps": self.jumps,
            "nextDeadline": c.next_deadline_epoch(),
            "nextTimer": c.next_timer(),
            "followers": [{"name": f.name, "ready": f.state.ready, "idle": f.state.idle,
                           "nextDeadline": None if f.state.next_deadline is None
                           else c.wall_of(f.state.next_deadline), "nextTimer": f.next_timer}
                          for f in self.followers.values()],
            "followersExpected": self.followers_expected,
            "lastDecision": self.last_decision.reason,
        }

    def _state_response(self) -> web.Response:
        return web.Response(body=orjson.dumps(self.state()), content_type="application/json")

    async def _advance(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read() or b"{}")
        except orjson.JSONDecodeError as exc:
            return _status(errors.bad_request(f"the body is not JSON: {exc}"))
        if not isinstance(body, dict) or len({"seconds", "to"} & body.keys()) != 1:
            return _status(errors.bad_request(
                'want {"seconds": S} or {"to": "RFC3339 time"}'))
        now = self.clock.now()
        if "seconds" in body:
            s = body["seconds"]
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0:
                return _status(errors.bad_request(
                    f"seconds must be a number >= 0 (time does not go back), got {s!r}"))
            target = now + float(s)
        else:
            to = parse_time(body["to"]) if isinstance(body["to"], str) else None
            if to is None:
                return _status(errors.bad_request(f"to is not an RFC 3339 time: {body['to']!r}"))
            if to < now:
                return _status(errors.bad_request(
                    f"{body['to']} is before now ({format_rfc3339_nano(self.clock.utcnow())}): "
                    "time does not go back"))
            target = to
        self.clock.advance_to(target)
        return self._state_response()

    # -- followers -----------------------------------------------------------------------

    async def _follow(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(heartbeat=None, autoping=True)
        if not ws.can_prepare(request).ok:
            return _status(errors.bad_request("the clock channel is a websocket"))
        await ws.prepare(request)
        name = request.query.get("name") or f"follower-{self._next_id}"
        fid = self._next_id
        self._next_id += 1
        f = _Follower(name, ws, ParticipantState(name, False, 0, -1, False, None))
        self.followers[fid] = f
        log.info("clock follower %s connected", name)
        sender = asyncio.get_running_loop().create_task(self._send_loop(f))
        self._queue(f, self._time_message(join=True))
        try:
            async for msg in ws:
                if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                    continue
                try:
                    m = orjson.loads(msg.data)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(m, dict) and m.get("type") == "state":
                    nd = m.get("nextMonotonic")
                    f.state = ParticipantState(
                        name, bool(m.get("ready")), int(m.get("probe") or 0),
                        int(m.get("generation", -1)), bool(m.get("idle")),
                        float(nd) if isinstance(nd, (int, float)) else None)
                    f.next_timer = str(m.get("nextTimer") or "")
                    self._answered.set()
        finally:
            self.followers.pop(fid, None)
            sender.cancel()
            self._answered.set()
            log.info("clock follower %s left", name)
        return ws

    def _queue(self, f: _Follower, msg: dict[str, Any]) -> None:
        f.outbox.append(orjson.dumps(msg))
        f.wake.set()

    async def _send_loop(self, f: _Follower) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            while True:
                await f.wake.wait()
                f.wake.clear()
                batch, f.outbox = f.outbox, []
                for raw in batch:
                    await f.ws.send_bytes(raw)

    def _time_message(self, join: bool = False) -> dict[str, Any]:
        c = self.clock
        msg: dict[str, Any] = {"type": "time", "epoch": c.now(), "monotonic": c.monotonic(),
                               "generation": c.generation}
        if join:
            # the follower takes the host's lines: deadlines then compare exactly
            msg["wallOffset"] = c.wall_offset
        return msg

    def _pushed(self, epoch: float) -> None:
        msg = self._time_message()
        for f in self.followers.values():
            self._queue(f, msg)

    # -- autojump ------------------------------------------------------------------------

    async def _autojump(self) -> None:
        loop = asyncio.get_running_loop()
        pause = self.quiet
        while True:
            # a real pause: the quiescence threshold, and what lets I/O in between probes;
            # doubled (up to 20 ms) while probes find the server busy, so that a long
            # request in flight is not met by a thousand probes a second
            await asyncio.sleep(pause)
            if self._in_flight() or self._unsent() or not loop_is_idle(loop):
                # Probe only a quiet server: every watch event committed so far is then
                # on its socket before the probe is on the follower's, so the follower
                # sees it before it can answer idle.
                self.last_decision = Decision(None, "the API server is busy")
                pause = min(pause * 2, max(self.quiet, _MAX_PAUSE))
                continue
            self.probe += 1
            k = self.probe
            gen = self.clock.generation
            act = self._activity()
            for f in self.followers.values():
                self._queue(f, {"type": "probe", "probe": k})
            # every follower's answer to this probe (a busy one answers when idle)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    while any(f.state.probe < k for f in self.followers.values()):
                        self._answered.clear()
                        await self._answered.wait()
            host = HostState(
                now=self.clock.monotonic(), generation=gen, probe=k, activity_at_probe=act,
                activity_now=self._activity(), requests_in_flight=self._in_flight(),
                unsent_watch_events=self._unsent(), loop_idle=loop_is_idle(loop),
                next_deadline=self.clock.next_deadline(),
                followers_expected=self.followers_expected)
            if self.clock.generation != gen:
                continue  # advanced meanwhile (a client's POST): probe again
            d = autojump_target(host, {str(i): f.state for i, f in self.followers.items()})
            self.last_decision = d
            if d.target is None:
                if d.reason.startswith(("waiting", "no timer")):
                    await asyncio.sleep(0.05)  # nothing will change soon: probe less often
                if host.requests_in_flight or host.unsent_watch_events or not host.loop_idle:
                    pause = min(pause * 2, max(self.quiet, _MAX_PAUSE))  # the server is busy
                else:
                    pause = self.quiet
                continue
            self.jumps += 1
            pause = self.quiet
            self.clock.set_time(d.target)


def _status(err: errors.StatusError) -> web.Response:
    return web.Response(body=err.body(), status=err.code,
                        content_type="application/json")
