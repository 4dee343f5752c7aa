"""The kubelet's CrashLoopBackOff: how long a crashed container waits before its restart.

Role: one back-off entry per simulated pod (the kubelet keeps one per
container; the simulator's containers of one pod crash together, so one
entry serves them all), with the semantics of client-go's
``flowcontrol.Backoff`` as the kubelet uses it (10 s initial, 5 min cap, no
jitter):

- a container that exits is restarted at once when it is not "in back-off
  since" its finish time; the restart then calls ``next`` (the first restart
  arms 10 s, each later one doubles, up to 5 min);
- it is in back-off while less than the current delay has passed since it
  finished; meanwhile its state is ``waiting`` with reason
  ``CrashLoopBackOff`` and the message ``back-off 10s restarting failed
  container=C pod=NAME_NS(UID)``;
- an entry whose last update is more than twice the cap (10 min) before the
  event is stale: the container ran long enough, the delay starts over.

So a container that crashes every time is restarted after 0, 10, 20, 40, 80,
160, 300, 300 ... seconds.

Data flow: :func:`pykcm.sim.kubelet.advance` asks ``in_backoff_since`` at
each exit and calls ``next`` at each restart, passing simulated times (the
exit's and the restart's), so a kubelet that syncs late still replays the
same schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["INITIAL_BACKOFF", "MAX_BACKOFF", "CrashBackoff", "backoff_message",
           "format_backoff", "pod_description"]

INITIAL_BACKOFF: Final = 10.0
"""kubelet's backOffPeriod."""
MAX_BACKOFF: Final = 300.0
"""kubelet's MaxContainerBackOff."""


@dataclass(slots=True)
class CrashBackoff:
    """One flowcontrol.Backoff entry (``delay`` 0: no entry yet)."""

    delay: float = 0.0
    last_update: float = 0.0
    initial: float = INITIAL_BACKOFF
    cap: float = MAX_BACKOFF

    def _expired(self, event_time: float) -> bool:
        # "consider stable if it's ok for twice the maxDuration"
        return event_time - self.last_update > 2 * self.cap

    def in_backoff_since(self, event_time: float, now: float) -> bool:
        """Whether a container that finished at ``event_time`` must still wait at ``now``."""
        if self.delay == 0 or self._expired(event_time):
            return False
        return now - event_time < self.delay

    def next(self, event_time: float, now: float) -> None:
        """A restart at ``now`` of a container that finished at ``event_time``."""
        if self.delay == 0 or self._expired(event_time):
            self.delay = self.initial
        else:
            self.delay = min(self.delay * 2, self.cap)
        self.last_update = now


def format_backoff(seconds: float) -> str:
    """The delay as Go prints a time.Duration of whole seconds (``10s``, ``1m20s``, ``5m0s``)."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s}s"
    h, m = divmod(m, 60)
    return f"{h}h{m}m{s}s"


def pod_description(name: str, namespace: str, uid: str) -> str:
    """The kubelet's format.Pod: ``name_namespace(uid)``."""
    return f"{name}_{namespace}({uid})"


def backoff_message(delay: float, container: str, pod: str) -> str:
    """The waiting state's message while a container is in CrashLoopBackOff."""
    return f"back-off {format_backoff(delay)} restarting failed container={container} pod={pod}"
