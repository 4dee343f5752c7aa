"""Runs a pykcm command under cProfile, switched on and off by signals (bench --cprofile).

    python bench/_cprofile_main.py OUT_PREFIX controller-manager --kubeconfig ...

Role: per-phase profiles of the controller manager without restarting it.
SIGUSR1 clears and starts the profiler; SIGUSR2 stops it and writes the
statistics to ``OUT_PREFIX.<n>.prof`` (n counts from 0), which
bench/controllers.py renames after the phase. The manager runs its asyncio
loop on the main thread, where the handlers run, so enabling the profiler
there profiles the loop and every callback (not the default executor's
threads, which pykcm's controllers do not use for their work).

The profiler's timer is the process's CPU time (``time.process_time``), not
the wall clock: the issue's figure is CPU seconds, and on a loaded machine a
wall-clock profile charges the time the process waited for a core to
whatever call it was in (a TLS socket write that woke the API server showed
as 2 ms a call).
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from types import FrameType


def main() -> int:
    prefix, argv = sys.argv[1], sys.argv[2:]
    prof = cProfile.Profile(time.process_time)
    count = [0]

    def start(_sig: int, _frame: FrameType | None) -> None:
        prof.disable()
        prof.clear()
        prof.enable()

    def stop(_sig: int, _frame: FrameType | None) -> None:
        prof.disable()
        prof.dump_stats(f"{prefix}.{count[0]}.prof")
        count[0] += 1

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from pykcm.cli.main import main as pykcm_main

    return pykcm_main(argv)


if __name__ == "__main__":
    sys.exit(main())
