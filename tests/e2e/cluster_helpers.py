"""Helpers of the end-to-end tests that drive the real kubectl against ``pykcm up``.

Shared by test_kubectl_deployments.py and test_kubectl_cascade_and_jobs.py;
their fixtures (``kubectl_up``, ``ns``, ``watches``) are in conftest.py.
Nothing here asserts how long anything takes: times are only upper bounds
on waits.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.e2e.conftest import Kubectl

READY_AFTER = "sim.pykcm.io/ready-after-seconds"
WAIT = 90.0
"""Upper bound of every wait (a loaded 2-core machine runs other tests at the same time)."""


# -- waiting ---------------------------------------------------------------------------------

class NotYet:
    """A falsy answer of a :func:`wait_until` predicate, carrying what it saw (for the message)."""

    def __init__(self, seen: Any) -> None:
        self.seen = seen

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"NotYet({self.seen!r})"


def wait_until(pred: Callable[[], Any], what: str, timeout: float = WAIT,
               interval: float = 0.3) -> Any:
    """Poll ``pred`` until it returns something truthy (returned); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


# -- reading objects -------------------------------------------------------------------------

def get_json(k: Kubectl, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(k.ok("get", *args, "-o", "json"))
    return out


def items(k: Kubectl, ns: str, resource: str, *selector: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = get_json(k, resource, "-n", ns, *selector)["items"]
    return got


def rollout_status(k: Kubectl, ns: str, name: str, timeout: float = WAIT
                   ) -> subprocess.CompletedProcess[str]:
    return k.run("rollout", "status", f"deployment/{name}", "-n", ns, f"--timeout={int(timeout)}s",
                 timeout=timeout + 30)


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def is_active(pod: dict[str, Any]) -> bool:
    """Not being deleted and not terminal.

    What the ReplicaSet controller (FilterActivePods) and the Job controller count as active.
    """
    return not pod["metadata"].get("deletionTimestamp") and phase(pod) not in ("Succeeded",
                                                                               "Failed")


# -- watching --------------------------------------------------------------------------------

class Watch:
    """``kubectl get <resource> -w -o json --output-watch-events``: a real watch in a subprocess.

    A thread decodes the stream of watch events (one JSON object a line) and
    keeps the current objects by name (``store``), every event in order
    (``events``) and every name ever seen (``seen``); ``on_event(store,
    type, obj)`` runs after each event is applied, so it sees every state of
    the store in resourceVersion order (one watch stream, no interleaving).
    An AssertionError of ``on_event`` is kept and raised by :meth:`check`.
    """

    def __init__(self, k: Kubectl, ns: str, resource: str, *selector: str,
                 on_event: Callable[[dict[str, dict[str, Any]], str, dict[str, Any]], None]
                 | None = None) -> None:
        self.resource = resource
        self.store: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.seen: set[str] = set()
        self.on_event = on_event
        self.errors: list[BaseException] = []
        self._cond = threading.Condition()
        # No request timeout: the watch lasts as long as the test needs it.
        self.proc = subprocess.Popen(
            [k.binary, "get", resource, "-n", ns, *selector, "-w", "-o", "json",
             "--output-watch-events", "--request-timeout=0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=k.env)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        dec = json.JSONDecoder()
        lines: list[str] = []
        for line in self.proc.stdout:
            lines.append(line)
            # With --output-watch-events kubectl writes one event per line; an
            # indented object would end with a "}" line: try to decode then.
            if not line.rstrip().endswith("}"):
                continue
            text = "".join(lines).strip()
            try:
                ev, end = dec.raw_decode(text)
            except json.JSONDecodeError:
                continue
            lines = [text[end:]] if text[end:].strip() else []
            self._apply(ev)
        with self._cond:
            self._cond.notify_all()

    def _apply(self, ev: dict[str, Any]) -> None:
        etype, obj = ev.get("type", ""), ev.get("object") or {}
        name = obj.get("metadata", {}).get("name", "")
        with self._cond:
            if etype == "DELETED":
                self.store.pop(name, None)
            elif etype in ("ADDED", "MODIFIED"):
                self.store[name] = obj
                self.seen.add(name)
            self.events.append((etype, obj))
            if self.on_event is not None:
                try:
                    self.on_event(self.store, etype, obj)
                except AssertionError as exc:  # reported by check()
                    self.errors.append(exc)
            self._cond.notify_all()

    def wait_for(self, pred: Callable[[dict[str, dict[str, Any]]], bool], what: str,
                 timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred(self.store):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._thread.is_alive():
                    stderr = ""
                    if self.proc.poll() is not None and self.proc.stderr is not None:
                        stderr = self.proc.stderr.read()
                    raise AssertionError(f"watch: timed out waiting for {what}; "
                                         f"store: {sorted(self.store)} {stderr}")
                self._cond.wait(min(left, 0.5))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._thread.join(10)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()

    def check(self) -> None:
        if self.errors:
            raise self.errors[0]
