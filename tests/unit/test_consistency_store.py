"""The controllers' consistency store (KEP-5647) and apimachinery's resourceVersion order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pykcm.api.resource_version import InvalidResourceVersion, compare_resource_version
from pykcm.controller.consistency import (
    ConsistencyError,
    ConsistencyStore,
    NoopConsistencyStore,
)


@pytest.mark.parametrize(("a", "b", "want"), [
    ("9", "10", -1), ("10", "9", 1), ("123", "123", 0), ("124", "123", 1),
    ("99999999999999999999", "100000000000000000000", -1),
])
def test_resource_versions_compare_as_integers(a: str, b: str, want: int) -> None:
    assert compare_resource_version(a, b) == want


@pytest.mark.parametrize("bad", ["", "0", "012", "1a", "-1", "١٢"])
def test_malformed_resource_versions_are_not_comparable(bad: str) -> None:
    with pytest.raises(InvalidResourceVersion, match="resource version is not well formed"):
        compare_resource_version(bad, "5")
    with pytest.raises(InvalidResourceVersion):
        compare_resource_version("5", bad)


class Caches:
    def __init__(self) -> None:
        self.rv = {"pods": "", "jobs.batch": ""}

    def getter(self, resource: str) -> Callable[[], str]:
        return lambda: self.rv[resource]

    def store(self) -> ConsistencyStore:
        return ConsistencyStore({r: self.getter(r) for r in self.rv})


def test_not_ready_until_every_cache_has_the_newest_write() -> None:
    c = Caches()
    s = c.store()
    s.ensure_ready("ns/j")  # nothing written: ready
    s.wrote_at("ns/j", "u1", "pods", "12")
    s.wrote_at("ns/j", "u1", "pods", "11")  # an older answer arriving later is ignored
    s.wrote_at("ns/j", "u1", "jobs.batch", "15")
    c.rv = {"pods": "11", "jobs.batch": "20"}
    with pytest.raises(ConsistencyError) as info:
        s.ensure_ready("ns/j")
    assert str(info.value) == ("read version: 11 is not as new as written version: 12 "
                               "for group resource pods")
    c.rv["pods"] = "12"
    s.ensure_ready("ns/j")
    # Ready once: the record is gone, later syncs do not check again.
    assert len(s) == 0
    c.rv = {"pods": "1", "jobs.batch": "1"}
    s.ensure_ready("ns/j")


def test_unknown_or_unsynced_caches_and_odd_versions_never_block() -> None:
    c = Caches()
    s = c.store()
    s.wrote_at("ns/a", "u", "pods", "50")  # the cache says "": cannot tell
    s.ensure_ready("ns/a")
    s.wrote_at("ns/b", "u", "leases.coordination.k8s.io", "50")  # no cache for it
    s.ensure_ready("ns/b")
    c.rv["pods"] = "7"
    s.wrote_at("ns/c", "u", "pods", "not-a-number")
    s.ensure_ready("ns/c")


def test_records_belong_to_one_owner_uid() -> None:
    c = Caches()
    s = c.store()
    c.rv["pods"] = "5"
    s.wrote_at("ns/j", "old", "pods", "9")
    # A new owner of the same name starts afresh.
    s.wrote_at("ns/j", "new", "pods", "6")
    with pytest.raises(ConsistencyError, match="written version: 6 "):
        s.ensure_ready("ns/j")
    # Clearing for the old owner (its delete event, late) leaves the new one's record.
    s.clear("ns/j", "old")
    with pytest.raises(ConsistencyError):
        s.ensure_ready("ns/j")
    s.clear("ns/j")  # no UID: whoever it is
    s.ensure_ready("ns/j")


def test_noop_store_is_always_ready() -> None:
    s = NoopConsistencyStore()
    s.wrote_at("ns/j", "u", "pods", "99")
    s.ensure_ready("ns/j")
