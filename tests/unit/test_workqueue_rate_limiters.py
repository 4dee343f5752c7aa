"""Rate limiters: exact delays, caps, forget, token bucket reservations."""

from __future__ import annotations

import math

import pytest

from pykcm.workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_defaults_and_doubling() -> None:
    r: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    assert (r.base_delay, r.max_delay) == (0.005, 1000.0)
    assert [r.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert r.num_requeues("a") == 5
    assert r.when("b") == 0.005  # per item
    r.forget("a")
    assert r.num_requeues("a") == 0
    assert r.when("a") == 0.005


def test_exponential_cap_and_overflow() -> None:
    r: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.001, 1.0)
    delays = [r.when("x") for _ in range(12)]
    assert delays[:4] == [0.001, 0.002, 0.004, 0.008]
    assert delays[10] == 1.0 and delays[11] == 1.0  # 1.024 capped
    # client-go's own test: base 1 ms, max 1 s, 10 failures then 1 s
    for _ in range(5000):  # 2**5000 overflows a float: still the cap
        r.when("y")
    assert r.when("y") == 1.0


def test_exponential_default_reaches_1000s() -> None:
    r: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    delays = [r.when("a") for _ in range(20)]
    assert delays[17] == 0.005 * 2**17  # 655.36 s
    assert delays[18] == 1000.0


def test_fast_slow() -> None:
    r: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [r.when("a") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert r.num_requeues("a") == 5
    r.forget("a")
    assert r.num_requeues("a") == 0
    assert r.when("a") == 0.005


def test_token_bucket_reserves_future_tokens() -> None:
    clock = FakeClock()
    b = TokenBucket(10.0, 100, clock)
    assert [b.reserve() for _ in range(100)] == [0.0] * 100
    assert b.reserve() == pytest.approx(0.1)
    assert b.reserve() == pytest.approx(0.2)
    clock.step(0.2)  # two tokens refilled, both already reserved
    assert b.reserve() == pytest.approx(0.1)
    clock.step(100)  # refill is capped at the burst
    assert [b.reserve() for _ in range(100)] == [0.0] * 100
    assert b.reserve() == pytest.approx(0.1)


def test_token_bucket_edge_limits() -> None:
    clock = FakeClock()
    assert TokenBucket(math.inf, 0, clock).reserve() == 0.0
    assert TokenBucket(10.0, 0, clock).reserve() == math.inf
    zero = TokenBucket(0.0, 2, clock)
    assert [zero.reserve() for _ in range(3)] == [0.0, 0.0, math.inf]


def test_bucket_rate_limiter_defaults() -> None:
    clock = FakeClock()
    r = BucketRateLimiter(clock=clock)
    delays = [r.when(i) for i in range(101)]
    assert delays[:100] == [0.0] * 100
    assert delays[100] == pytest.approx(0.1)
    assert r.num_requeues(1) == 0
    r.forget(1)
    assert r.when("one") == pytest.approx(0.2)


def test_max_of_and_default_controller_rate_limiter() -> None:
    clock = FakeClock()
    r = default_controller_rate_limiter(clock=clock)
    # Exponential wins while the bucket has tokens.
    assert [r.when("a") for _ in range(3)] == [0.005, 0.01, 0.02]
    assert r.num_requeues("a") == 3
    for i in range(97):
        assert r.when(i) == 0.005
    # Bucket empty: its 0.1 s beats a fresh item's 5 ms.
    assert r.when("fresh") == pytest.approx(0.1)
    r.forget("a")
    assert r.num_requeues("a") == 0


def test_max_of_calls_every_limiter() -> None:
    fast: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(1.0, 5.0, 1)
    exp: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.5, 100.0)
    r = MaxOfRateLimiter(fast, exp)
    assert r.when("a") == 1.0  # max(1, 0.5)
    assert r.when("a") == 5.0  # max(5, 1)
    assert r.when("a") == 5.0  # max(5, 2)
    assert fast.num_requeues("a") == exp.num_requeues("a") == r.num_requeues("a") == 3
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_with_max_wait() -> None:
    r = WithMaxWaitRateLimiter(ItemExponentialFailureRateLimiter[str](1.0, 100.0), 3.0)
    assert [r.when("a") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert r.num_requeues("a") == 4
    r.forget("a")
    assert r.when("a") == 1.0
