"""The workqueue's clock names, kept importable from here: the clock itself is
:mod:`pykcm.api.clock` (one clock for every layer; ``now`` there is wall time, the
queues read ``monotonic``)."""

from pykcm.api.clock import REAL_CLOCK, Clock, FakeClock, RealClock, TimerHandle

__all__ = ["REAL_CLOCK", "Clock", "FakeClock", "RealClock", "TimerHandle"]
