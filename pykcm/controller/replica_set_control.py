"""RSControl: how the Deployment controller patches ReplicaSets (upstream RSControlInterface).

The Deployment controller adopts and releases ReplicaSets through the
:class:`~pykcm.controller.controller_ref_manager.ReplicaSetControllerRefManager`,
which sends its ownerReference patches through an ``RSControl``: the real one
sends a strategic merge patch to the API server, the fake one records it so a
unit test can assert what would have been written.

Data flow::

    ReplicaSetControllerRefManager.claim_replica_sets
        │ adopt / release patch
        ▼
    RSControl.patch_replica_set ──► PATCH apps/v1 replicasets (strategic merge)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykcm.client import Client

__all__ = ["FakeRSControl", "RSControl", "RealRSControl"]


class RSControl(Protocol):
    """What the Deployment controller may do to ReplicaSets besides its own writes."""

    async def patch_replica_set(self, namespace: str, name: str,
                                patch: Mapping[str, Any]) -> None:
        """Apply a strategic merge patch to the ReplicaSet ``namespace/name``."""
        ...


class RealRSControl:
    """The :class:`RSControl` that patches through the API server."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def patch_replica_set(self, namespace: str, name: str,
                                patch: Mapping[str, Any]) -> None:
        await self.client.patch("replicasets.apps", name, dict(patch), "strategic", namespace)


@dataclass
class FakeRSControl:
    """Records patches (as ``(namespace, name, patch)``); raises ``err`` after recording when set."""

    patches: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    err: BaseException | None = None

    async def patch_replica_set(self, namespace: str, name: str,
                                patch: Mapping[str, Any]) -> None:
        self.patches.append((namespace, name, patch))
        if self.err is not None:
            raise self.err
