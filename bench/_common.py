"""Helpers every benchmark shares: machine load, waiting for quiet, appending results.

The machines are shared and noisy: benchmarks measure how busy the whole
machine was during each phase, can wait for it to go quiet first, and append
their section to bench/RESULTS.md with one O_APPEND write so that concurrent
benchmarks never interleave.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "RESULTS.md")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown CPU" elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def busy_cpu_seconds() -> float:
    """CPU time used by the whole machine so far (all processes, all cores)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0.0
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_idle(limit: float) -> None:
    """Wait up to `limit` s for 3 s in a row in which the machine uses < 15% of a core."""
    deadline = time.monotonic() + limit
    quiet = 0
    while time.monotonic() < deadline:
        b0 = busy_cpu_seconds()
        time.sleep(1.0)
        quiet = quiet + 1 if busy_cpu_seconds() - b0 < 0.15 else 0
        if quiet >= 3:
            return
    log(f"bench: the machine is still busy after {limit:.0f} s; running anyway")


def print_and_record(lines: list[str], record: bool) -> None:
    """Print a benchmark's Markdown section and, when ``record``, append it to RESULTS.md."""
    section = "\n".join(lines)
    print(section)
    if record:
        append_results(section)


def append_results(section: str, path: str = RESULTS) -> None:
    """Append one section with a single O_APPEND write (others append too)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        with open(path, "rb") as f:  # re-read right before writing
            existing = f.read()
        prefix = b"" if size else b"# Benchmark results\n\n"
        if existing and not existing.endswith(b"\n\n"):
            prefix = b"\n" if existing.endswith(b"\n") else b"\n\n"
        os.write(fd, prefix + section.encode() + b"\n")
    finally:
        os.close(fd)


def proc_cpu(pid: int | None) -> float:
    """User + system CPU seconds a process has used so far (0 if it is gone)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_mib(pid: int | None) -> float:
    """A process's resident set size in MiB (0 if it is gone)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def machine_load() -> str:
    """The load average and how many cores the rest of the machine was using, for the header."""
    la = os.getloadavg()
    b0 = busy_cpu_seconds()
    time.sleep(1.0)
    busy = busy_cpu_seconds() - b0
    return (f"load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}, {busy:.2f} of "
            f"{os.cpu_count()} cores busy in the second before the start")


_T = TypeVar("_T")


def run_async(main: Coroutine[Any, Any, _T]) -> _T:
    """Run a benchmark's top coroutine on uvloop when installed (the event loop pykcm's
    processes use), else on asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
