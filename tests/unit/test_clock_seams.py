"""The clock seams: the API server, the simulator, the client, the client-side machinery and
the controllers read time only through :mod:`pykcm.api.clock` (issue 21).

In the migrated packages nothing reads the process clocks or waits on them directly:
no ``time.time``/``time.monotonic`` (called or passed as a default), no
``datetime.now``/``utcnow``, no ``time.gmtime()``/``localtime()``/``strftime(fmt)`` of
the current time, no ``asyncio.sleep`` of a real duration (``sleep(0)``, a
yield, is fine), no event-loop timers or loop time, no ``asyncio.wait_for`` /
``asyncio.timeout`` deadlines. A component gets a :class:`~pykcm.api.clock.Clock`
(default ``REAL_CLOCK``) and uses it, so a fake or virtual clock drives all of it.
``time.perf_counter`` stays allowed: it measures real work for logs and metrics and
never decides behaviour.

The allowlist below is small and each entry says why it stays on the process clock;
explicit ``REAL_CLOCK`` uses (waiting for an informer's list, I/O progress rather
than control-loop time) are visible in the code itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pykcm
from tests.unit.seam_check import dotted, unneeded_allowances, violations

ROOT = Path(pykcm.__file__).parent

#: The packages whose time reads go through a Clock. Not yet: cli (a later step of
#: issue 21).
MIGRATED = ("cache", "workqueue", "leaderelection", "controller", "controllers",
            "manager", "informers", "apiserver", "sim", "client")

#: (file relative to pykcm/, what) -> why it stays on the process clock.
ALLOWED: dict[tuple[str, str], str] = {
    ("leaderelection/leader_election.py", "asyncio.timeout"):
        "bounds a hung API call (I/O), as client-go's context deadline; the lease "
        "arithmetic itself is on the clock",
    ("controller/event_recorder.py", "asyncio.wait_for"):
        "shutdown: deliver what is queued within a real-time budget",
    ("manager/serving.py", "datetime.now"):
        "the self-signed serving certificate: TLS clients check it against real time",
    ("manager/delegated_auth.py", "time.monotonic"):
        "TTL cache of TokenReview/SubjectAccessReview answers for the HTTPS endpoints: "
        "serving, not control-loop time",
    ("manager/ui/live_view.py", "time.time"):
        "the live view (a human watching): real timestamps and rates",
    ("manager/ui/live_view.py", "time.monotonic"):
        "the live view's rate window (a human watching)",
    ("manager/ui/live_view.py", "asyncio.sleep"):
        "the live view's refresh period (a human watching)",
    # -- the API server: I/O bounds and serving, not the cluster's time
    ("apiserver/auth/certs.py", "datetime.now"):
        "the serving and client certificates' validity: TLS peers check it against real time",
    ("apiserver/controlplane/kubernetes_service.py", "asyncio.wait_for"):
        "shutdown: remove this server's endpoints within a real-time budget",
    ("apiserver/endpoints/flow_control.py", "time.time"):
        "APF's Retry-After statistics of dropped requests: serving load, per real second",
    ("apiserver/endpoints/flow_control.py", "asyncio.wait_for"):
        "APF: how long a request waits in the queue for a seat (request latency, I/O)",
    ("apiserver/endpoints/handlers.py", "asyncio.timeout"):
        "a watch's write to a client that does not read, and its periodic check of a closed "
        "transport: bounds on I/O (timeoutSeconds and bookmarks are clock timers)",
    ("apiserver/endpoints/openapi.py", "time.time"):
        "the Expires header of an immutable OpenAPI document: for HTTP caches, real time",
    ("apiserver/storage/store.py", "asyncio.wait_for"):
        "waiting for a write's own commit to the log (disk I/O progress), bounded",
    # -- virtual time's machinery: what moves the clock cannot wait on it
    ("apiserver/controlplane/virtual_time.py", "asyncio.sleep"):
        "autojump's quiescence pause between probes: real time, by definition",
    ("apiserver/controlplane/virtual_time.py", "asyncio.timeout"):
        "autojump's bound on waiting for followers' answers (I/O)",
    ("client/clock_follower.py", "asyncio.sleep"):
        "the idle check's pause while busy: real time (what moves the clock cannot wait "
        "on it)",
}


def _findings(tree: ast.AST) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = dotted(node)
            if name in ("time.time", "time.monotonic", "time.time_ns", "time.monotonic_ns",
                        "time.sleep"):
                out.append((node.lineno, name))
            elif node.attr in ("now", "utcnow", "today") and \
                    dotted(node.value).split(".")[-1] in ("datetime", "date"):
                out.append((node.lineno, "datetime.now"))
            elif node.attr in ("call_later", "call_at", "time") and \
                    "loop" in dotted(node.value).lower():
                out.append((node.lineno, f"loop.{node.attr}"))
            elif name in ("asyncio.wait_for", "asyncio.timeout", "asyncio.timeout_at"):
                out.append((node.lineno, name))
        elif isinstance(node, ast.Call) and dotted(node.func) == "asyncio.sleep":
            arg = node.args[0] if node.args else None
            if not (isinstance(arg, ast.Constant) and arg.value == 0):
                out.append((node.lineno, "asyncio.sleep"))
        elif isinstance(node, ast.Call) and (
                (dotted(node.func) in ("time.gmtime", "time.localtime") and not node.args)
                or (dotted(node.func) == "time.strftime" and len(node.args) == 1)):
            out.append((node.lineno, "time.gmtime()"))  # the current time, formatted
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            for a in node.names:
                if a.name in ("time", "monotonic", "time_ns", "monotonic_ns", "sleep"):
                    out.append((node.lineno, f"time.{a.name}"))
    return out


def _violations() -> list[str]:
    files = [f for pkg in MIGRATED for f in sorted((ROOT / pkg).rglob("*.py"))]
    return violations(ROOT, files, _findings, ALLOWED)


def test_migrated_packages_read_time_only_through_a_clock() -> None:
    assert _violations() == []


def test_every_allowlist_entry_is_still_needed() -> None:
    assert unneeded_allowances(ROOT, _findings, ALLOWED) == set()


def test_the_checker_sees_each_kind_of_direct_time_read() -> None:
    src = """
import asyncio, time
from datetime import datetime
from time import monotonic
def f(clock=time.time):
    loop = asyncio.get_running_loop()
    loop.call_later(1, f)
    x = loop.time()
    time.strftime("%Y", time.gmtime())
    time.strftime("%Y")
    time.strftime("%Y", time.gmtime(x))
    datetime.now()
    asyncio.sleep(5)
    asyncio.sleep(0)
    asyncio.wait_for(f(), 3)
"""
    kinds = sorted({what for _, what in _findings(ast.parse(src))})
    assert kinds == ["asyncio.sleep", "asyncio.wait_for", "datetime.now", "loop.call_later",
                     "loop.time", "time.gmtime()", "time.monotonic", "time.time"]
    assert len([w for _, w in _findings(ast.parse(src)) if w == "time.gmtime()"]) == 2
