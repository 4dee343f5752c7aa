"""The pod-template-hash: the name suffix and label of a Deployment's ReplicaSets.

Upstream ``controller.ComputeHash`` feeds the PodTemplateSpec through a deep
hash printer into FNV-32a, appends ``collisionCount`` (when set) as eight
little-endian bytes, and renders the 32-bit sum's decimal digits with
``rand.SafeEncodeString`` (each digit byte mapped into an alphabet without
vowels, so a hash never spells a word and is a valid DNS label).

Data flow::

    deployment.spec.template (wire dict) ──canonical JSON (sorted keys)──► FNV-32a
                              collisionCount ──uint32 LE + 4 zero bytes──┘   │
                                                       decimal digits of the sum
                                                                 │ SafeEncodeString
                                                                 ▼
                                         "5d8c7b9f6" ── RS name <deployment>-<hash>,
                                                        label pod-template-hash

The printed form here is canonical JSON rather than Go's deep printer, so a
hash differs from the one kube-controller-manager computes for the same
template; what matters (and holds) is that it is the same in every process
and across restarts (no Python ``hash()``, no dict ordering), that it changes
when the template changes, and that a collision can be escaped by bumping
``collisionCount``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

__all__ = ["SAFE_ALPHANUMS", "compute_hash", "fnv32a", "safe_encode_string"]

SAFE_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
"""apimachinery ``util/rand`` alphabet: no vowels (no words), no 0/1/3 (no look-alikes)."""

_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193


def fnv32a(data: bytes, h: int = _FNV32_OFFSET) -> int:
    """FNV-1a, 32 bits (Go ``hash/fnv.New32a``); ``h`` continues a running sum."""
    for b in data:
        h = ((h ^ b) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    """Map each byte of ``s`` into :data:`SAFE_ALPHANUMS` (``rand.SafeEncodeString``)."""
    n = len(SAFE_ALPHANUMS)
    return "".join(SAFE_ALPHANUMS[b % n] for b in s.encode())


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The pod-template-hash of ``template`` with ``collision_count`` mixed in (when not None)."""
    # Sorted keys make the printed form independent of how the dict was built
    # (server response order, a copy, a patch), so equal templates hash equal.
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        # binary.LittleEndian.PutUint32 into an 8-byte slice: 4 bytes, then 4 zeros.
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\0\0\0\0", h)
    return safe_encode_string(str(h))
