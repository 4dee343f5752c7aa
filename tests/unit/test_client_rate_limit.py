"""The token bucket: client-go flowcontrol semantics, checked with a fake clock."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.client.rate_limit import TokenBucketRateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def assert_within_bound(grants: list[float], qps: float, burst: int) -> None:
    """Over any window [g_i, g_j], at most burst + qps * (g_j - g_i) requests."""
    g = sorted(grants)
    for i in range(len(g)):
        for j in range(i, len(g)):
            count = j - i + 1
            assert count <= burst + qps * (g[j] - g[i]) + 1e-6, (i, j, g[i], g[j])


@settings(max_examples=200, deadline=None)
@given(qps=st.floats(0.5, 50), burst=st.integers(1, 10),
       gaps=st.lists(st.floats(0, 2), min_size=1, max_size=60))
def test_never_exceeds_burst_plus_qps_t(qps: float, burst: int, gaps: list[float]) -> None:
    clock = FakeClock()
    rl = TokenBucketRateLimiter(qps, burst, clock=clock)
    grants = []
    for gap in gaps:
        clock.now += gap
        delay, act = rl.reserve()
        assert delay >= 0 and act == clock.now + delay
        grants.append(act)
    assert_within_bound(grants, qps, burst)


@settings(max_examples=200, deadline=None)
@given(qps=st.floats(0.5, 20), burst=st.integers(1, 5),
       ops=st.lists(st.tuples(st.floats(0, 1), st.booleans(), st.floats(0, 1)),
                    min_size=1, max_size=40))
def test_bound_holds_with_cancelled_waiters(qps: float, burst: int,
                                            ops: list[tuple[float, bool, float]]) -> None:
    """Requests arrive; some are cancelled before their turn and give their token back."""
    clock = FakeClock()
    rl = TokenBucketRateLimiter(qps, burst, clock=clock)
    # (time, kind, index): arrivals and cancellations, processed in time order.
    arrivals: list[float] = []
    t = clock.now
    for gap, _, _ in ops:
        t += gap
        arrivals.append(t)
    acts: dict[int, float] = {}
    cancelled: set[int] = set()
    pending = [(at, 0, i) for i, at in enumerate(arrivals)]
    while pending:
        pending.sort()
        at, kind, i = pending.pop(0)
        clock.now = max(clock.now, at)
        if kind == 0:
            _, act = rl.reserve()
            acts[i] = act
            _, cancel, frac = ops[i]
            if cancel and act > clock.now:
                pending.append((clock.now + frac * (act - clock.now) * 0.999, 1, i))
        else:
            rl.cancel(acts[i])
            cancelled.add(i)
    grants = [a for i, a in acts.items() if i not in cancelled]
    assert_within_bound(grants, qps, burst)


def test_starts_full_then_paces() -> None:
    clock = FakeClock()
    rl = TokenBucketRateLimiter(5, 3, clock=clock)
    delays = [rl.reserve()[0] for _ in range(5)]
    assert delays[:3] == [0, 0, 0]
    assert abs(delays[3] - 0.2) < 1e-9 and abs(delays[4] - 0.4) < 1e-9
    assert not rl.try_accept()
    clock.now += 10
    assert rl.try_accept() and rl.try_accept() and rl.try_accept()
    assert not rl.try_accept()


def test_unlimited_when_qps_not_positive() -> None:
    for qps in (0, -1):
        rl = TokenBucketRateLimiter(qps, 1)
        assert rl.unlimited and rl.qps == 0
        assert all(rl.reserve()[0] == 0 for _ in range(1000))
        assert all(rl.try_accept() for _ in range(1000))


async def test_wait_sleeps_the_reserved_delay() -> None:
    clock = FakeClock()
    slept: list[float] = []

    async def sleep(d: float) -> None:
        slept.append(d)
        clock.now += d

    rl = TokenBucketRateLimiter(10, 2, clock=clock, sleep=sleep)
    for _ in range(6):
        await rl.wait()
    assert [round(s, 6) for s in slept] == [0.1, 0.1, 0.1, 0.1]


async def test_cancelled_wait_gives_the_token_back() -> None:
    clock = FakeClock()
    rl = TokenBucketRateLimiter(1, 1, clock=clock)
    assert rl.reserve()[0] == 0
    task = asyncio.create_task(rl.wait())  # would wait 1 s
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    # the next one waits 1 s, not 2 s
    assert abs(rl.reserve()[0] - 1.0) < 1e-9


async def test_concurrent_waiters_are_spread() -> None:
    clock = FakeClock()
    delays: list[float] = []

    async def sleep(d: float) -> None:
        delays.append(d)

    rl = TokenBucketRateLimiter(4, 2, clock=clock, sleep=sleep)
    await asyncio.gather(*(rl.wait() for _ in range(10)))
    assert sorted(round(d, 6) for d in delays) == [0.25 * k for k in range(1, 9)]
