"""pykcm.api.randomness: seeded sources repeat, streams are independent, the unseeded one
is the default; the reflector's backoff and watch-timeout jitter drawn from a seeded
source repeat run after run (issue 21, "Determinism")."""

from __future__ import annotations

import re
import uuid
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.randomness import (
    GENERATE_NAME_ALPHABET,
    REAL_RANDOM,
    RandomSource,
    random_of,
    seeded,
)
from pykcm.cache.backoff import ExponentialBackoffManager
from pykcm.cache.reflector import Reflector
from pykcm.controller.event_recorder import EventBroadcaster


def _draws(rng: RandomSource) -> list[Any]:
    return [rng.random(), rng.randint(1800, 3600), rng.choice("abcdef"), rng.name_suffix(),
            rng.uuid4(), rng.jitter(10.0, 1.0), rng.hex(4)]


@given(st.integers(min_value=0, max_value=2**64), st.text(max_size=20))
def test_a_seeded_source_repeats_its_draws(seed: int, component: str) -> None:
    assert _draws(seeded(seed, component)) == _draws(seeded(seed, component))


def test_seeds_components_and_purposes_each_give_their_own_numbers() -> None:
    base = _draws(seeded(1, "kube-apiserver").stream("uid"))
    assert _draws(seeded(2, "kube-apiserver").stream("uid")) != base
    assert _draws(seeded(1, "kube-controller-manager").stream("uid")) != base
    assert _draws(seeded(1, "kube-apiserver").stream("generateName")) != base


def test_a_draw_in_one_stream_does_not_shift_another() -> None:
    a, b = seeded(3, "sim"), seeded(3, "sim")
    for _ in range(10):
        a.stream("kubelet").random()  # only a's kubelet draws
    a.random()
    assert _draws(a.stream("scheduler")) == _draws(b.stream("scheduler"))


def test_a_stream_is_one_object_per_purpose() -> None:
    root = seeded(4, "c")
    assert root.stream("x") is root.stream("x")
    assert root.stream("x").stream("y").path == "c/x/y"
    # two users of one purpose share its sequence: no repeated suffixes between them
    suffixes = {root.stream("names").name_suffix() for _ in range(200)}
    assert len(suffixes) == 200


def test_the_unseeded_source_is_the_default_and_its_own_stream() -> None:
    assert not REAL_RANDOM.is_seeded and seeded(0, "c").is_seeded
    assert REAL_RANDOM.stream("anything") is REAL_RANDOM
    assert random_of(None) is REAL_RANDOM
    s = seeded(5, "c")
    assert random_of(s) is s
    assert REAL_RANDOM.uuid4() != REAL_RANDOM.uuid4()


def test_the_kubernetes_shapes() -> None:
    for rng in (REAL_RANDOM, seeded(6, "kube-apiserver")):
        suffix = rng.name_suffix()
        assert len(suffix) == 5 and set(suffix) <= set(GENERATE_NAME_ALPHABET)
        u = rng.uuid4()
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                            u)
        assert uuid.UUID(u).version == 4
        assert all(10.0 <= rng.jitter(10.0, 0.5) < 15.0 for _ in range(100))
        assert all(10.0 <= rng.jitter(10.0, 0) < 20.0 for _ in range(100))  # <= 0: 1.0


def _backoffs(seed: int) -> list[float]:
    rng = seeded(seed, "kube-controller-manager").stream("informers")
    b = ExponentialBackoffManager(clock=lambda: 0.0, rand=rng.stream("reflector/x").random)
    return [b.backoff() for _ in range(8)]


def test_the_reflector_backoff_jitter_repeats_under_a_seed() -> None:
    first = _backoffs(11)
    assert first == _backoffs(11)
    assert first != _backoffs(12)
    # the jitter is still there: [d, 2d) around 0.8 s doubling to the 30 s cap
    steps = [0.8 * 2**n if 0.8 * 2**n < 30 else 30.0 for n in range(8)]
    assert all(d <= x < 2 * d for x, d in zip(first, steps, strict=True))


def _reflector(rng: RandomSource | None, name: str = "pods") -> Reflector:
    return Reflector(cast(Any, object()), cast(Any, object()), name=name, rng=rng)


def test_the_reflector_watch_timeouts_and_backoff_repeat_under_a_seed() -> None:
    def run(seed: int, name: str = "pods") -> tuple[list[int], list[float]]:
        r = _reflector(seeded(seed, "kube-controller-manager"), name)
        backoff = cast(ExponentialBackoffManager, r._backoff)
        return ([r._watch_timeout() for _ in range(5)], [backoff.backoff() for _ in range(5)])

    timeouts, delays = run(21)
    assert run(21) == (timeouts, delays)
    assert run(22) != (timeouts, delays)
    assert run(21, "configmaps") != (timeouts, delays)  # each reflector its own stream
    assert all(300 <= t < 600 for t in timeouts)
    unseeded = _reflector(None)
    assert all(300 <= unseeded._watch_timeout() < 600 for _ in range(20))


def test_an_event_broadcaster_takes_the_source_it_is_given() -> None:
    rng = seeded(8, "c").stream("events")
    b = EventBroadcaster(cast(Any, object()), rng=rng)
    assert b._rng is rng
    assert EventBroadcaster(cast(Any, object()))._rng is REAL_RANDOM


class _Anonymous:
    """A ListerWatcher stand-in with the default repr (a memory address)."""


def test_a_reflector_named_by_a_default_repr_still_repeats() -> None:
    def timeouts() -> list[int]:
        r = Reflector(cast(Any, _Anonymous()), cast(Any, object()),
                      rng=seeded(31, "kube-controller-manager"))
        assert " at 0x" in r.name
        return [r._watch_timeout() for _ in range(5)]

    assert timeouts() == timeouts()
