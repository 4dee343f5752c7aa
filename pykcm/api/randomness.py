"""Randomness: the one source of pykcm's non-cryptographic random draws (issue 21).

Role. Everything in the controllers, the client-side machinery, the API server and
the simulator that draws a random number draws it from a :class:`RandomSource`,
never from the ``random`` module, ``uuid.uuid4``, ``secrets`` or ``os.urandom``
directly (``tests/unit/test_randomness_seams.py`` keeps it so): jittered backoffs
and resync periods, the reflector's and the API server's watch timeouts, the
leader elector's retry jitter, the event recorder's spread of retries,
``generateName`` suffixes, object UIDs, holder identities, the scheduler's
tie-breaks, container IDs.

Two kinds of source:

* :data:`REAL_RANDOM`, the default everywhere: not seeded (the OS seeds it), so
  behaviour is what it always was; its UIDs come from ``os.urandom``, as
  kube-apiserver's ``uuid.NewUUID`` reads ``crypto/rand``.
* :func:`seeded` ``(seed, component)``: a deterministic source. Two runs of the same
  scenario with the same seed draw the same numbers, which virtual time needs to
  reproduce the same objects and events ("Determinism" in issue 21).

Data flow. A process holds one source per component (``seeded(seed,
"kube-apiserver")``, ``seeded(seed, "kube-controller-manager")``, ``seeded(seed,
"simulator")``) and hands it down with its clock: ``APIServer(rng=)`` → REST
storage (names, UIDs), admission, eviction, watch handlers, the identity lease;
``ControllerManager(rng=)`` → ``ControllerContext.rng`` → informer factory →
informers → reflectors, event recorders, the leader elector, each controller;
``Simulator(rng=)`` → scheduler, kubelets. Each user takes its own named
sub-stream with :meth:`RandomSource.stream` (``rng.stream("generateName")``): a
seeded sub-stream's seed is a hash of the root seed and the whole path, so adding
a draw in one place never shifts the numbers another place sees. On the unseeded
source ``stream`` returns the source itself (no derivation is needed where
nothing is reproducible). The API server goes one step further for UIDs and
generated names: one stream per requesting user, so how two components' creates
interleave changes neither's draws; a server resuming a data dir draws from a
stream of its stored revision, never its first run's UIDs again.

Not here, on purpose: cryptographic material (TLS and service-account signing keys,
certificate serial numbers, bearer tokens, bootstrap tokens) stays on ``secrets``
and the OS generator whatever the seed; a seeded run reproduces the cluster's
objects and events, not its secrets.

Deviation: upstream has no process-wide seed; Go's ``math/rand`` (``wait.Jitter``,
``utilrand.String`` of generateName) is seeded at start, ``uuid.New`` reads
``crypto/rand``.
"""

from __future__ import annotations

import hashlib
import os
import random
import uuid
from typing import Final

__all__ = [
    "GENERATE_NAME_ALPHABET",
    "REAL_RANDOM",
    "RandomSource",
    "random_of",
    "seeded",
]

#: Kubernetes' ``utilrand.String`` alphabet: no vowels (no words), no 0/1/3 (look like
#: letters), as generateName suffixes are drawn.
GENERATE_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def _derive(seed: int, path: str) -> int:
    # A stable hash (not hash(): salted per process) of the root seed and the path.
    digest = hashlib.sha256(f"{seed}\x00{path}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


class RandomSource(random.Random):
    """A ``random.Random`` with the draws pykcm needs and named sub-streams.

    ``RandomSource()`` is unseeded (the OS seeds it); ``RandomSource(seed, path)``
    is deterministic, its generator seeded by a hash of ``seed`` and ``path``.
    """

    def __init__(self, seed: int | None = None, path: str = "") -> None:
        self._root_seed = seed
        self._path = path
        self._streams: dict[str, RandomSource] = {}
        super().__init__(None if seed is None else _derive(seed, path))

    @property
    def is_seeded(self) -> bool:
        """True for a deterministic source."""
        return self._root_seed is not None

    @property
    def path(self) -> str:
        """The component and purposes this stream was derived for ("" unseeded)."""
        return self._path

    def stream(self, purpose: str) -> RandomSource:
        """The sub-stream for ``purpose`` (the same object on every call with it).

        Seeded: independent of every other purpose's stream and of how many draws
        this one made. Unseeded: this source itself.
        """
        if self._root_seed is None:
            return self
        s = self._streams.get(purpose)
        if s is None:
            s = RandomSource(self._root_seed, f"{self._path}/{purpose}")
            self._streams[purpose] = s
        return s

    def jitter(self, duration: float, max_factor: float) -> float:
        """``duration`` plus up to ``max_factor`` times it (``wait.Jitter``: a factor
        ``<= 0`` means 1.0)."""
        if max_factor <= 0.0:
            max_factor = 1.0
        return duration + self.random() * max_factor * duration

    def name_suffix(self, n: int = 5) -> str:
        """``n`` characters of :data:`GENERATE_NAME_ALPHABET` (a generateName suffix)."""
        return "".join(self.choices(GENERATE_NAME_ALPHABET, k=n))

    def uuid4(self) -> str:
        """A version 4 UUID string: from this stream when seeded, else from the OS."""
        if self._root_seed is None:
            return _os_uuid4()
        return str(uuid.UUID(int=self.getrandbits(128), version=4))

    def hex(self, nbytes: int) -> str:
        """``2*nbytes`` hex digits (identifiers such as container IDs; not secrets)."""
        return self.randbytes(nbytes).hex()


_uuid_pool: list[str] = []


def _os_uuid4() -> str:
    # From the OS in batches, one syscall per 256 (object creation is a hot path).
    if not _uuid_pool:
        raw = os.urandom(16 * 256)
        _uuid_pool.extend(str(uuid.UUID(bytes=raw[i:i + 16], version=4))
                          for i in range(0, len(raw), 16))
    return _uuid_pool.pop()


#: The default source of every component: unseeded, behaviour as without a seed.
REAL_RANDOM: Final = RandomSource()


def seeded(seed: int, component: str) -> RandomSource:
    """The deterministic source of ``component`` (e.g. "kube-apiserver") for ``seed``."""
    return RandomSource(int(seed), component)


def random_of(rng: RandomSource | None) -> RandomSource:
    """``rng``, or :data:`REAL_RANDOM` for None."""
    return REAL_RANDOM if rng is None else rng
