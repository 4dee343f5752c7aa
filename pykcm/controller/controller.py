"""Controller: the runtime every pykcm controller runs on, built-in or your own.

The loop kube-controller-manager's controllers each write by hand (a
rate-limited workqueue of keys, informer handlers that enqueue, N workers
calling a sync function), written once.

Data flow::

    informer events ──handlers (watch / watch_owned)──► enqueue(key)
                                                           │
                                          RateLimitingQueue[str]  (one key held by
                                                           │       one worker at a time)
                                   workers × N: get ─► reconcile(key) ─► done
                                                           │
          returns None             → forget(key)                      (success)
          returns Result(requeue_after=s) → forget(key), add_after(key, s)
          returns Result(requeue=True) or raises → add_rate_limited(key)  (retry, backoff)
          raises: logged at ERROR, the traceback once per failure burst (handle_error.py)

Stopping: :meth:`Controller.shutdown` (or cancelling the task running
:meth:`Controller.run`) stops taking keys; each worker finishes the key it
holds, and what is still queued is left (a restarted controller relists
everything anyway). :meth:`Controller.shutdown_with_drain` processes every
queued key first.

A reconcile function reads the listers (the shared cache) and writes to the
API server; it gets the key ``namespace/name`` (``name`` for cluster-scoped
objects) and must cope with the object being gone (the key of a deleted
object is enqueued too). It may be ``async def`` or a plain function.

Example (runs against ``pykcm apiserver``; see examples/configmap_controller.py)::

    factory = SharedInformerFactory(client)
    pods = factory.core_v1.pods
    ctl = Controller("pod-printer", lambda key: print("sync", key))
    ctl.watch(pods)
    factory.start()
    await ctl.run(workers=2)        # until ctl.shutdown() or cancellation
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.owner_refs import api_group, get_controller_of
from pykcm.cache.event_handlers import ResourceEventHandler
from pykcm.cache.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.cache.synced import InformerSynced, wait_for_named_cache_sync
from pykcm.controller import handle_error
from pykcm.workqueue import RateLimiter, RateLimitingQueue

__all__ = ["Controller", "ControllerHost", "Reconciler", "Result"]

log = logging.getLogger("pykcm.controller")


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for besides success.

    ``requeue_after``: sync the key again after that many seconds (a
    periodic check, a deadline); ``requeue``: retry through the rate limiter
    as if the sync had failed, without logging an error. With both set,
    ``requeue_after`` wins (controller-runtime's precedence): a delay asked
    for is not a failure to back off from.
    """

    requeue: bool = False
    requeue_after: float | None = None


Reconciler = Callable[[str], Awaitable[Result | None] | Result | None]
"""``reconcile(key)``: make the world match the object named by ``key``."""


class _HasInformer(Protocol):
    @property
    def informer(self) -> SharedIndexInformer: ...


InformerLike = SharedIndexInformer | _HasInformer


def _informer_of(source: InformerLike) -> SharedIndexInformer:
    if isinstance(source, SharedIndexInformer):
        return source
    return source.informer


def _object_of(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class Controller:
    """A named work loop: a rate-limited queue of keys, handlers that fill it, workers.

    ``max_retries``: after that many failed syncs in a row a key is dropped
    (forgotten) with an error log, as some upstream controllers do; None
    (the default) retries forever with the rate limiter's backoff.
    ``clock``: the time of the queue, of its default rate limiter and of the pause
    after a failed sync (default :data:`~pykcm.api.clock.REAL_CLOCK`).
    """

    def __init__(self, name: str, reconcile: Reconciler, *,
                 rate_limiter: RateLimiter[str] | None = None,
                 max_retries: int | None = None, clock: Clock | None = None) -> None:
        self.name = name
        self._reconcile = reconcile
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(rate_limiter, name=name,
                                                               clock=self.clock)
        self._max_retries = max_retries
        self._synced: list[InformerSynced] = []
        self._workers: list[asyncio.Task[None]] = []
        self._running = False
        # Set by shutdown() and by cancellation of run(): workers stop taking
        # keys (the queue alone would hand out what is queued until empty).
        self._stopping = False
        self._stopped = asyncio.Event()
        self._last_error: str | None = None
        self._dead: str | None = None

    # -- enqueueing ----------------------------------------------------------------------

    def enqueue(self, obj: Any) -> None:
        """Queue the key of ``obj`` (a tombstone's key too)."""
        self.queue.add(deletion_handling_meta_namespace_key(obj))

    def enqueue_key(self, key: str) -> None:
        """Queue ``key`` (``namespace/name`` or ``name``)."""
        self.queue.add(key)

    def enqueue_after(self, obj: Any, delay: float) -> None:
        """Queue the key of ``obj`` after ``delay`` seconds."""
        self.queue.add_after(deletion_handling_meta_namespace_key(obj), delay)

    def enqueue_rate_limited(self, obj: Any) -> None:
        """Queue the key of ``obj`` after the rate limiter's delay for it."""
        self.queue.add_rate_limited(deletion_handling_meta_namespace_key(obj))

    def enqueue_owner(self, obj: Any, owner_api_version: str, owner_kind: str,
                      resolve: Callable[[str, Mapping[str, Any]], bool] | None = None) -> bool:
        """Queue the controlling owner of ``obj`` if it is of the given kind and group.

        ``resolve(key, owner_ref)``, when given, confirms that the owner the
        reference names is the one cached (upstream's resolveControllerRef
        compares UIDs); a reference to a different object of the same name
        is then ignored. Returns whether a key was queued.
        """
        o = _object_of(obj)
        ref = get_controller_of(o)
        if ref is None or ref.get("kind") != owner_kind:
            return False
        if api_group(str(ref.get("apiVersion", ""))) != api_group(owner_api_version):
            return False
        ns = (o.get("metadata") or {}).get("namespace")
        key = f"{ns}/{ref.get('name')}" if ns else str(ref.get("name"))
        if resolve is not None and not resolve(key, ref):
            return False
        self.queue.add(key)
        return True

    # -- wiring to informers -------------------------------------------------------------

    def add_synced(self, *synced: InformerSynced) -> None:
        """Also wait for these ``has_synced`` functions before starting workers."""
        self._synced.extend(synced)

    def watch(self, source: InformerLike, handler: ResourceEventHandler | None = None,
              resync_period: float | None = None) -> Any:
        """Register ``handler`` (default: enqueue the object's own key) on an informer.

        The registration's ``has_synced`` joins what :meth:`run` waits for.
        Updates whose resourceVersion did not change (resyncs) are passed on:
        filter them in your handler if you do not want them.
        """
        informer = _informer_of(source)
        h = handler if handler is not None else _EnqueueSelf(self)
        reg = informer.add_event_handler(h, resync_period)
        self._synced.append(reg.has_synced)
        return reg

    def watch_owned(self, source: InformerLike, owner_api_version: str,
                    owner_kind: str) -> Any:
        """Register a handler that enqueues the controlling owner of each changed object.

        An update whose controller reference changed enqueues the old owner
        as well, so it notices the loss.
        """
        return self.watch(source, _EnqueueOwner(self, owner_api_version, owner_kind))

    # -- running -------------------------------------------------------------------------

    async def run(self, workers: int = 1, *, sync_timeout: float | None = None) -> None:
        """Wait for the caches, then run ``workers`` workers until :meth:`shutdown`.

        Cancelling the task running this stops taking keys and waits for
        the workers to finish the keys they hold (a second cancellation stops
        waiting). If a worker dies (an exception escaped the sync's error
        handling), the others are stopped the same way and its exception is
        raised; :meth:`health_check` reports it. Raises RuntimeError if the
        caches do not sync within ``sync_timeout`` seconds.
        """
        if self._running:
            raise RuntimeError(f"controller {self.name!r} is already running")
        self._running = True
        self._stopping = False
        log.info("Starting %s controller", self.name)
        try:
            if not await wait_for_named_cache_sync(self.name, *self._synced,
                                                   timeout=sync_timeout):
                self._dead = "caches did not sync"
                raise RuntimeError(f"{self.name}: caches did not sync within {sync_timeout} s")
            self._workers = [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                             for i in range(max(1, workers))]
            # asyncio.wait, not gather: cancelling run() must not cancel a
            # reconcile half-way (gather would cancel its children).
            done, _ = await asyncio.wait(self._workers, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                exc = None if t.cancelled() else t.exception()
                if exc is not None:
                    raise exc
        finally:
            self.shutdown()
            pending = [t for t in self._workers if not t.done()]
            try:
                if pending:
                    # Shielded: the workers finish the keys they hold even
                    # though run() itself is being cancelled.
                    await asyncio.shield(asyncio.wait(pending))
            except asyncio.CancelledError:
                for t in pending:
                    t.cancel()
                raise
            finally:
                self._running = False
                self._stopped.set()
                log.info("Shutting down %s controller", self.name)

    def shutdown(self) -> None:
        """Stop taking work: workers finish what they hold, then :meth:`run` returns."""
        self._stopping = True
        self.queue.shut_down()

    async def shutdown_with_drain(self) -> None:
        """Stop taking new keys and wait until every queued key has been processed."""
        await self.queue.shut_down_with_drain()

    @property
    def running(self) -> bool:
        return self._running

    def health_check(self) -> str | None:
        """None while healthy; the reason otherwise (a worker died, caches never synced)."""
        if self._dead is not None:
            return self._dead
        for t in self._workers:
            if t.done() and not t.cancelled() and t.exception() is not None:
                return f"worker died: {t.exception()!r}"
        return None

    async def _worker(self) -> None:
        while not self._stopping and await self.process_next_work_item():
            pass

    async def process_next_work_item(self) -> bool:
        """Take one key, reconcile it, and file the outcome. False once shut down."""
        key, shutdown = await self.queue.get()
        if shutdown or key is None:
            return False
        try:
            await self._sync(key)
        finally:
            self.queue.done(key)
        return True

    async def _sync(self, key: str) -> None:
        start = time.perf_counter()  # a log of real work, not control-loop time
        try:
            res = self._reconcile(key)
            # None and Result are the plain function's answers: no awaitable test for them.
            if res is not None and type(res) is not Result and inspect.isawaitable(res):
                res = await res
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any reconcile failure: reported, retried
            self._last_error = f"{key}: {exc}"
            if self._max_retries is not None and self.queue.num_requeues(key) >= self._max_retries:
                log.error("%s: dropping %s out of the queue after %d retries: %s",
                          self.name, key, self._max_retries, exc)
                self.queue.forget(key)
                return
            # At ERROR with the traceback once per failure burst (handle_error.py), and
            # paced as client-go's HandleError paces the worker.
            pause = handle_error.reporter.report(self.name, key, exc,
                                                 self.queue.num_requeues(key))
            self.queue.add_rate_limited(key)
            if pause > 0:
                await self.clock.sleep(pause)
            return
        finally:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s: finished syncing %s (%.1f ms)", self.name, key,
                          (time.perf_counter() - start) * 1000,
                          extra={"controller": self.name, "key": key})
        if isinstance(res, Result):
            if res.requeue_after is not None and res.requeue_after > 0:
                self.queue.forget(key)
                self.queue.add_after(key, res.requeue_after)
                return
            if res.requeue:
                self.queue.add_rate_limited(key)
                return
            self.queue.forget(key)
            if res.requeue_after is not None:
                # requeue_after <= 0: at once, as add_after does.
                self.queue.add_after(key, res.requeue_after)
            return
        self.queue.forget(key)

    def __repr__(self) -> str:
        return f"<Controller {self.name} queue={len(self.queue)}>"


class ControllerHost:
    """Base of a controller class that holds its work loop in ``self.controller``.

    Gives it the manager's protocol (``run``, ``health_check``, ``shutdown``)
    by delegation, so a built-in controller only writes its handlers and its
    sync function. ``default_workers`` is what ``run()`` uses without an
    argument (upstream's ``--concurrent-*-syncs`` default).
    """

    name: str
    controller: Controller
    default_workers: int = 1

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run ``workers`` workers until :meth:`shutdown`."""
        await self.controller.run(self.default_workers if workers is None else workers)

    def health_check(self) -> str | None:
        """None while healthy; the reason otherwise."""
        return self.controller.health_check()

    def shutdown(self) -> None:
        """Stop taking keys; :meth:`run` returns once the workers are done."""
        self.controller.shutdown()


class _EnqueueSelf:
    __slots__ = ("_c",)

    def __init__(self, c: Controller) -> None:
        self._c = c

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._c.enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._c.enqueue(new)

    def on_delete(self, obj: Any) -> None:
        self._c.enqueue(obj)


class _EnqueueOwner:
    __slots__ = ("_api_version", "_c", "_kind")

    def __init__(self, c: Controller, api_version: str, kind: str) -> None:
        self._c = c
        self._api_version = api_version
        self._kind = kind

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._c.enqueue_owner(obj, self._api_version, self._kind)

    def on_update(self, old: Any, new: Any) -> None:
        old_ref = get_controller_of(old)
        new_ref = get_controller_of(new)
        if old_ref is not None and (new_ref is None or old_ref.get("uid") != new_ref.get("uid")):
            self._c.enqueue_owner(old, self._api_version, self._kind)
        self._c.enqueue_owner(new, self._api_version, self._kind)

    def on_delete(self, obj: Any) -> None:
        self._c.enqueue_owner(obj, self._api_version, self._kind)
