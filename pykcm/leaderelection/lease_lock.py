"""The resource lock of leader election: a coordination.k8s.io/v1 Lease.

client-go counterpart: ``tools/leaderelection/resourcelock`` (``Interface``,
``LeaderElectionRecord``, ``LeaseLock``).

Role: the :class:`~pykcm.leaderelection.leader_election.LeaderElector` reads
and writes the election state only through a :class:`ResourceLock`; this
module holds that protocol, the state itself (:class:`LeaderElectionRecord`)
and its Lease implementation (:class:`LeaseLock`).

Data flow::

    LeaderElector ──get()────► GET  leases/<name>  ──► (record, raw bytes)
                  ──create()─► POST leases           (when it does not exist)
                  ──update()─► PUT  leases/<name>    with the resourceVersion of the
                                                      last Lease read or written, so a
                                                      concurrent writer gets 409 Conflict

The Lease spec carries ``holderIdentity``, ``leaseDurationSeconds`` (whole
seconds), ``acquireTime`` and ``renewTime`` (MicroTime: RFC 3339 in UTC with
exactly six fractional digits) and ``leaseTransitions``, written in full on
every update, as client-go does. The raw bytes returned by ``get`` are a
canonical encoding of the record: the elector compares them to notice that
another candidate changed the record, and never interprets the timestamps.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import orjson

from pykcm.api.timestamps import format_micro_time, parse_datetime
from pykcm.client import Client, Object

__all__ = [
    "LEASE_RESOURCE",
    "EventRecorder",
    "LeaderElectionRecord",
    "LeaseLock",
    "ResourceLock",
    "format_micro_time",
    "lease_spec_to_record",
    "parse_micro_time",
    "record_to_lease_spec",
]

LEASE_RESOURCE = "leases.coordination.k8s.io"


def parse_micro_time(value: str) -> datetime:
    """An RFC 3339 timestamp (with or without fractional seconds) as an aware datetime.

    Raises ValueError for a malformed one, where :func:`parse_datetime` answers None:
    client-go fails to decode such a Lease, and an elector must not read it as "never
    renewed" and take the lock over."""
    t = parse_datetime(value)
    if t is None:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    return t


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The state of an election, as stored in the lock (client-go ``LeaderElectionRecord``).

    ``holder_identity`` empty means nobody holds the lock (e.g. after a release).
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0

    def replace(self, **changes: Any) -> LeaderElectionRecord:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> bytes:
        """A canonical encoding, used to detect a change of the record."""
        return orjson.dumps({
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": (format_micro_time(self.acquire_time)
                            if self.acquire_time is not None else None),
            "renewTime": (format_micro_time(self.renew_time)
                          if self.renew_time is not None else None),
            "leaderTransitions": self.leader_transitions,
        })


def lease_spec_to_record(spec: dict[str, Any] | None) -> LeaderElectionRecord:
    """The record held in a Lease spec (absent fields read as zero values)."""
    spec = spec or {}
    acquire = spec.get("acquireTime")
    renew = spec.get("renewTime")
    return LeaderElectionRecord(
        holder_identity=spec.get("holderIdentity") or "",
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=parse_micro_time(acquire) if acquire else None,
        renew_time=parse_micro_time(renew) if renew else None,
        leader_transitions=int(spec.get("leaseTransitions") or 0),
    )


def record_to_lease_spec(record: LeaderElectionRecord) -> dict[str, Any]:
    """The Lease spec of a record: every field set, as client-go writes it."""
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = format_micro_time(record.renew_time)
    spec["leaseTransitions"] = record.leader_transitions
    return spec


class EventRecorder(Protocol):
    """What the lock needs to record "became leader"/"stopped leading" events."""

    def event(self, obj: Object, event_type: str, reason: str, message: str) -> None: ...


@runtime_checkable
class ResourceLock(Protocol):
    """The lock the elector competes for (client-go ``resourcelock.Interface``).

    ``get`` raises the client's NotFound error when the lock does not exist;
    ``create``/``update`` raise the client's errors (``update`` a Conflict when
    the lock changed since it was last read or written).
    """

    async def get(self) -> tuple[LeaderElectionRecord, bytes]: ...

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None: ...

    def record_event(self, message: str) -> None: ...

    def identity(self) -> str: ...

    def describe(self) -> str: ...


class LeaseLock:
    """A :class:`ResourceLock` on the Lease ``namespace/name`` (client-go ``LeaseLock``)."""

    def __init__(self, client: Client, namespace: str, name: str, identity: str, *,
                 event_recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self.event_recorder = event_recorder
        self._lease: Object | None = None

    @property
    def lease(self) -> Object | None:
        """The Lease last read or written (None before the first get or create)."""
        return self._lease

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        self._lease = await self.client.get(LEASE_RESOURCE, self.name, self.namespace)
        record = lease_spec_to_record(self._lease.get("spec"))
        return record, record.to_json()

    async def create(self, record: LeaderElectionRecord) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record_to_lease_spec(record),
        }
        self._lease = await self.client.create(LEASE_RESOURCE, body, self.namespace)

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        body = copy.copy(self._lease)
        body["spec"] = record_to_lease_spec(record)
        self._lease = await self.client.update(LEASE_RESOURCE, body, self.namespace)

    def record_event(self, message: str) -> None:
        if self.event_recorder is None or self._lease is None:
            return
        subject: Object = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": self._lease.get("metadata", {})}
        self.event_recorder.event(subject, "Normal", "LeaderElection",
                                  f"{self._identity} {message}")

    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"
