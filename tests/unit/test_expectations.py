"""Tests of pykcm.controller.expectations (kube-controller-manager's expectations)."""

from __future__ import annotations

import logging
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.controller import (
    EXPECTATIONS_TIMEOUT,
    ControllerExpectations,
    ControllerExpectationsInterface,
    UIDTrackingControllerExpectations,
)


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


KEY = "default/rs"


def test_timeout_is_five_minutes() -> None:
    assert EXPECTATIONS_TIMEOUT == 300.0


def test_missing_key_is_satisfied() -> None:
    e = ControllerExpectations(FakeClock())
    assert e.get_expectations(KEY) is None
    assert e.satisfied_expectations(KEY)


def test_expect_creations_then_observe() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations(KEY, 2)
    exp = e.get_expectations(KEY)
    assert exp is not None and exp.key == KEY
    assert exp.get_expectations() == (2, 0)
    assert not e.satisfied_expectations(KEY)
    e.creation_observed(KEY)
    assert not e.satisfied_expectations(KEY)
    e.creation_observed(KEY)
    assert e.satisfied_expectations(KEY)
    assert exp.fulfilled()


def test_expect_deletions_then_observe() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_deletions(KEY, 1)
    assert e.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    assert not e.satisfied_expectations(KEY)
    e.creation_observed(KEY)  # a creation does not cover a deletion
    assert not e.satisfied_expectations(KEY)
    e.deletion_observed(KEY)
    assert e.satisfied_expectations(KEY)


def test_set_expectations_needs_both_counts() -> None:
    e = ControllerExpectations(FakeClock())
    e.set_expectations(KEY, 1, 1)
    e.creation_observed(KEY)
    assert not e.satisfied_expectations(KEY)
    e.deletion_observed(KEY)
    assert e.satisfied_expectations(KEY)


def test_zero_expectations_are_satisfied() -> None:
    e = ControllerExpectations(FakeClock())
    e.set_expectations(KEY, 0, 0)
    assert e.get_expectations(KEY) is not None
    assert e.satisfied_expectations(KEY)


def test_negative_counts_satisfy() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations(KEY, 1)
    e.creation_observed(KEY)
    e.creation_observed(KEY)
    e.deletion_observed(KEY)
    assert e.get_expectations(KEY).get_expectations() == (-1, -1)  # type: ignore[union-attr]
    assert e.satisfied_expectations(KEY)
    e.set_expectations(KEY, -3, -1)
    assert e.satisfied_expectations(KEY)


def test_set_replaces_existing() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations(KEY, 5)
    e.expect_deletions(KEY, 1)  # forgets the 5 creations
    assert e.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    e.creation_observed(KEY)
    e.creation_observed(KEY)
    assert not e.satisfied_expectations(KEY)


def test_raise_and_lower() -> None:
    e = ControllerExpectations(FakeClock())
    e.set_expectations(KEY, 1, 0)
    e.raise_expectations(KEY, 2, 3)
    assert e.get_expectations(KEY).get_expectations() == (3, 3)  # type: ignore[union-attr]
    e.lower_expectations(KEY, 3, 2)
    assert e.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    assert not e.satisfied_expectations(KEY)
    e.lower_expectations(KEY, 0, 1)
    assert e.satisfied_expectations(KEY)


def test_adjusting_unknown_key_is_noop() -> None:
    e = ControllerExpectations(FakeClock())
    e.raise_expectations(KEY, 1, 1)
    e.lower_expectations(KEY, 1, 1)
    e.creation_observed(KEY)
    e.deletion_observed(KEY)
    assert e.get_expectations(KEY) is None
    assert e.satisfied_expectations(KEY)


def test_delete_expectations() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations(KEY, 3)
    assert not e.satisfied_expectations(KEY)
    e.delete_expectations(KEY)
    assert e.get_expectations(KEY) is None
    assert e.satisfied_expectations(KEY)
    e.delete_expectations(KEY)  # deleting a missing key is fine


def test_keys_are_independent() -> None:
    e = ControllerExpectations(FakeClock())
    e.expect_creations("ns/a", 1)
    e.expect_creations("ns/b", 1)
    e.creation_observed("ns/a")
    assert e.satisfied_expectations("ns/a")
    assert not e.satisfied_expectations("ns/b")


def test_expiry_after_five_minutes() -> None:
    clock = FakeClock()
    e = ControllerExpectations(clock)
    e.expect_creations(KEY, 1)
    clock.step(EXPECTATIONS_TIMEOUT)  # exactly 5 minutes: not yet (strictly greater)
    assert not e.satisfied_expectations(KEY)
    clock.step(0.001)
    assert e.satisfied_expectations(KEY)
    # the entry stays (not a TTL store) and still answers adjustments
    assert e.get_expectations(KEY) is not None


def test_raise_does_not_extend_timeout_but_set_does() -> None:
    clock = FakeClock()
    e = ControllerExpectations(clock)
    e.expect_creations(KEY, 1)
    clock.step(200)
    e.raise_expectations(KEY, 1, 0)
    clock.step(101)
    assert e.satisfied_expectations(KEY)  # 301 s after set
    e.expect_creations(KEY, 1)  # a new period starts
    clock.step(299)
    assert not e.satisfied_expectations(KEY)
    clock.step(2)
    assert e.satisfied_expectations(KEY)


def test_custom_timeout_and_timestamp() -> None:
    clock = FakeClock(50.0)
    e = ControllerExpectations(clock, timeout=10.0)
    e.expect_deletions(KEY, 1)
    assert e.get_expectations(KEY).timestamp == 50.0  # type: ignore[union-attr]
    clock.step(10.5)
    assert e.satisfied_expectations(KEY)


def test_default_clock_is_monotonic() -> None:
    e = ControllerExpectations()
    e.expect_creations(KEY, 1)
    assert not e.satisfied_expectations(KEY)


def test_satisfies_protocol() -> None:
    # ControllerExpectations implements the interface (checked by mypy); the UID-tracking
    # wrapper does not (its expect_deletions/deletion_observed take keys), as in Go.
    impl: ControllerExpectationsInterface = ControllerExpectations()
    assert impl.satisfied_expectations(KEY)


# --- UID tracking ---------------------------------------------------------------------


def test_uid_deletions_observed_once_per_uid() -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.expect_deletions(KEY, ["ns/p1", "ns/p2"])
    assert u.get_uids(KEY) == {"ns/p1", "ns/p2"}
    assert u.get_expectations(KEY).get_expectations() == (0, 2)  # type: ignore[union-attr]
    u.deletion_observed(KEY, "ns/p1")
    u.deletion_observed(KEY, "ns/p1")  # graceful delete seen twice: counted once
    assert u.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    assert not u.satisfied_expectations(KEY)
    assert u.get_uids(KEY) == {"ns/p2"}
    u.deletion_observed(KEY, "ns/p2")
    assert u.satisfied_expectations(KEY)
    assert u.get_uids(KEY) == frozenset()
    u.deletion_observed(KEY, "ns/p2")
    assert u.get_expectations(KEY).get_expectations() == (0, 0)  # type: ignore[union-attr]


def test_uid_unexpected_deletion_ignored() -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.deletion_observed(KEY, "ns/x")  # no expectations at all
    assert u.get_expectations(KEY) is None
    u.expect_deletions(KEY, ["ns/p1"])
    u.deletion_observed(KEY, "ns/other")
    assert not u.satisfied_expectations(KEY)
    assert u.get_uids("ns/unknown") == frozenset()


def test_uid_duplicate_keys_counted_once() -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.expect_deletions(KEY, ["ns/p1", "ns/p1"])
    assert u.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    u.deletion_observed(KEY, "ns/p1")
    assert u.satisfied_expectations(KEY)


def test_uid_expect_deletions_clobbers(caplog: pytest.LogCaptureFixture) -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.expect_deletions(KEY, ["ns/p1", "ns/p2"])
    with caplog.at_level(logging.ERROR, logger="pykcm.controller.expectations"):
        u.expect_deletions(KEY, ["ns/p3"])
    assert "clobbering existing delete keys" in caplog.text
    assert u.get_uids(KEY) == {"ns/p3"}
    assert u.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    u.deletion_observed(KEY, "ns/p1")  # forgotten: ignored
    assert not u.satisfied_expectations(KEY)


def test_uid_get_uids_is_a_copy() -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.expect_deletions(KEY, ["ns/p1"])
    uids = u.get_uids(KEY)
    u.deletion_observed(KEY, "ns/p1")
    assert uids == {"ns/p1"}


def test_uid_delete_expectations_clears_both() -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.expect_deletions(KEY, ["ns/p1"])
    u.delete_expectations(KEY)
    assert u.get_expectations(KEY) is None
    assert u.get_uids(KEY) == frozenset()
    assert u.satisfied_expectations(KEY)
    u.deletion_observed(KEY, "ns/p1")
    assert u.get_expectations(KEY) is None


def test_uid_delegates_creations_and_expiry() -> None:
    clock = FakeClock()
    u = UIDTrackingControllerExpectations(clock=clock)
    u.expect_creations(KEY, 1)
    assert not u.satisfied_expectations(KEY)
    u.creation_observed(KEY)
    assert u.satisfied_expectations(KEY)
    u.set_expectations(KEY, 1, 1)
    u.raise_expectations(KEY, 1, 0)
    u.lower_expectations(KEY, 1, 1)
    assert u.get_expectations(KEY).get_expectations() == (1, 0)  # type: ignore[union-attr]
    clock.step(EXPECTATIONS_TIMEOUT + 1)
    assert u.satisfied_expectations(KEY)


def test_uid_wraps_given_store() -> None:
    inner = ControllerExpectations(FakeClock())
    u = UIDTrackingControllerExpectations(inner)
    u.expect_deletions(KEY, ["ns/p1"])
    assert inner.get_expectations(KEY).get_expectations() == (0, 1)  # type: ignore[union-attr]
    assert u.expectations is inner


# --- properties -----------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=6)
key_plan = st.tuples(counts, counts, counts, counts, counts, counts)
# (adds, dels, raised adds, raised dels, extra creation observations, extra deletions)


@settings(max_examples=300, deadline=None)
@given(plans=st.dictionaries(st.sampled_from(["ns/a", "ns/b", "other/c"]), key_plan,
                             min_size=1),
       seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_any_interleaving_ends_satisfied(plans: dict[str, tuple[int, ...]], seed: int) -> None:
    clock = FakeClock()
    e = ControllerExpectations(clock)
    model: dict[str, list[int]] = {}
    events: list[tuple[str, str]] = []
    for key, (adds, dels, r_add, r_del, x_add, x_del) in plans.items():
        e.set_expectations(key, adds, dels)
        model[key] = [adds, dels]
        events += [(key, "raise_add")] * r_add + [(key, "raise_del")] * r_del
        events += [(key, "created")] * (adds + r_add + x_add)
        events += [(key, "deleted")] * (dels + r_del + x_del)
    random.Random(seed).shuffle(events)
    for key, ev in events:
        if ev == "raise_add":
            e.raise_expectations(key, 1, 0)
            model[key][0] += 1
        elif ev == "raise_del":
            e.raise_expectations(key, 0, 1)
            model[key][1] += 1
        elif ev == "created":
            e.creation_observed(key)
            model[key][0] -= 1
        else:
            e.deletion_observed(key)
            model[key][1] -= 1
        # at every step, satisfied exactly when the model's counts are covered
        a, d = model[key]
        assert e.get_expectations(key).get_expectations() == (a, d)  # type: ignore[union-attr]
        assert e.satisfied_expectations(key) == (a <= 0 and d <= 0)
    for key in plans:
        assert e.satisfied_expectations(key)


@settings(max_examples=200, deadline=None)
@given(uids=st.lists(st.sampled_from([f"ns/p{i}" for i in range(8)]), max_size=10),
       repeats=st.lists(st.integers(min_value=1, max_value=3), min_size=10, max_size=10),
       strangers=st.lists(st.sampled_from(["ns/x", "ns/y"]), max_size=4),
       seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_uid_any_interleaving_ends_satisfied(uids: list[str], repeats: list[int],
                                             strangers: list[str], seed: int) -> None:
    u = UIDTrackingControllerExpectations(clock=FakeClock())
    u.expect_deletions(KEY, uids)
    expected = set(uids)
    events = [uid for i, uid in enumerate(uids) for _ in range(repeats[i])] + strangers
    random.Random(seed).shuffle(events)
    seen: set[str] = set()
    for uid in events:
        u.deletion_observed(KEY, uid)
        if uid in expected:
            seen.add(uid)
        remaining = len(expected - seen)
        assert u.get_expectations(KEY).get_expectations() == (0, remaining)  # type: ignore[union-attr]
        assert u.get_uids(KEY) == expected - seen
        assert u.satisfied_expectations(KEY) == (remaining == 0)
    assert u.satisfied_expectations(KEY)
