"""Hypothesis stateful test of Queue against a model, under random interleavings of
add / get (workers waiting on the loop) / done / shut_down / shut_down_with_drain.

The model is the specification in plain lists: a FIFO of queued items, the
set of held items, and the items re-added while held. After every step the
loop is run until idle and the queue is checked against it:

- every item a worker receives is the model's FIFO head (FIFO order) and is
  not held by another worker (exclusivity);
- no worker waits while items are queued (progress), and the queue length
  matches the model (dedup);
- a pending shut_down_with_drain finishes exactly when nothing is held (or
  shut_down released it), and stays finished;
- at the end, after done on everything, every item added is processed.
"""

from __future__ import annotations

import asyncio

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pykcm.workqueue import Queue

ITEMS = st.integers(min_value=0, max_value=4)


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.q: Queue[int] = Queue()
        self.queued: list[int] = []  # model FIFO
        self.held: set[int] = set()  # given to a worker, not done
        self.readded: set[int] = set()  # added while held
        self.shut = False
        self.drain_released = False
        self.waiting: list[asyncio.Task[tuple[int | None, bool]]] = []
        self.drain: asyncio.Task[None] | None = None
        self.drain_finished = False
        self.unprocessed: set[int] = set()  # added, not handed out since

    def settle(self) -> None:
        for _ in range(4):
            self.loop.run_until_complete(asyncio.sleep(0))
        still = []
        # Tasks finish in the order they popped the queue: earlier-woken first.
        for task in self.waiting:
            if not task.done():
                still.append(task)
                continue
            self.received(*task.result())
        self.waiting = still

    def received(self, item: int | None, shutdown: bool) -> None:
        if shutdown:
            assert item is None
            assert self.shut and not self.queued
            return
        assert item is not None
        assert self.queued and item == self.queued[0], (item, self.queued)
        assert item not in self.held, "two workers hold one item"
        self.queued.pop(0)
        self.held.add(item)
        self.unprocessed.discard(item)

    @rule(item=ITEMS)
    def add(self, item: int) -> None:
        self.q.add(item)
        if not self.shut:
            self.unprocessed.add(item)
            if item in self.held:
                self.readded.add(item)
            elif item not in self.queued:
                self.queued.append(item)
        self.settle()

    @rule()
    def get(self) -> None:
        self.waiting.append(self.loop.create_task(self.q.get()))
        self.settle()

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.held)))
        self.q.done(item)
        self.held.discard(item)
        if item in self.readded:
            self.readded.discard(item)
            self.queued.append(item)
        self.settle()

    @rule()
    def shut_down(self) -> None:
        self.q.shut_down()
        self.shut = True
        # Releases a pending shut_down_with_drain only, not a later one.
        self.drain_released = self.drain is not None
        self.settle()

    @precondition(lambda self: self.drain is None)
    @rule()
    def shut_down_with_drain(self) -> None:
        self.drain = self.loop.create_task(self.q.shut_down_with_drain())
        self.drain_released = False
        self.shut = True
        self.settle()

    @invariant()
    def matches_model(self) -> None:
        assert self.q.len() == len(self.queued)
        assert self.q.shutting_down() == self.shut
        if self.queued:
            assert not self.waiting, "a worker waits while items are queued"
        if self.shut:
            assert not self.waiting or self.queued, "shutdown left a worker waiting"
        if self.drain is not None:
            # It returns once nothing is held (items handed out after that
            # are not waited for, as in client-go) or shut_down released it.
            if not self.held or self.drain_released:
                self.drain_finished = True
            assert self.drain.done() == self.drain_finished

    def teardown(self) -> None:
        try:
            # Finish everything: done on held items, get the rest.
            for _ in range(100):
                for item in sorted(self.held):
                    self.q.done(item)
                    self.held.discard(item)
                    if item in self.readded:
                        self.readded.discard(item)
                        self.queued.append(item)
                self.settle()
                if not self.queued and not self.held:
                    break
                self.waiting.append(self.loop.create_task(self.q.get()))
                self.settle()
            assert not self.unprocessed, f"never processed: {self.unprocessed}"
        finally:
            self.q.shut_down()
            self.shut = True
            self.settle()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.run_until_complete(asyncio.sleep(0))
            self.loop.close()


QueueMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestQueueStateMachine = QueueMachine.TestCase
