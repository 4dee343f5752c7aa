"""ControllerRevision history: the recorded states of a DaemonSet or StatefulSet template.

kube-controller-manager v1.36 ``pkg/controller/history/controller_history.go``,
shared by the DaemonSet and StatefulSet controllers (``kubectl rollout
history/undo`` read and apply what they record).

A revision's ``data`` is a strategic merge patch that restores the owner's
template (``{"spec":{"template":{"$patch":"replace", ...}}}``), serialized as
Go's ``encoding/json`` serializes a ``map[string]interface{}``: keys sorted,
``<``, ``>`` and ``&`` escaped, no spaces. Those bytes are what upstream
hashes and compares, so pykcm rebuilds them from the wire form
(:func:`marshal_go_json`) to give the same names and to tell equal revisions.

Data flow::

    owner (DaemonSet/StatefulSet) ──template──► patch data (Go JSON bytes)
        │ new_controller_revision: labels = template labels + controller.kubernetes.io/hash,
        │ controller ownerReference, revision number
        │ name <owner>-<hash>: FNV-1 32 of the bytes (+ collisionCount's decimal digits),
        ▼ SafeEncodeString'd (hash_controller_revision)
    History.create_controller_revision ──POST──► exists with other data: collisionCount + 1,
        │                                          new name, again; same data: it is ours
    History.list_controller_revisions: from the informer's index (owned by the parent or
        orphans) filtered by the selector
    sort_controller_revisions (revision, then creation time, then name),
    find_equal_revisions (same bytes), update/delete/adopt/release

The DaemonSet controller names its revisions with ``controller.ComputeHash``
of the pod template instead (:mod:`pykcm.api.deep_hash`) but stores the same
patch bytes; it uses the serializer and the claim here.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.deep_hash import safe_encode_string
from pykcm.api.labels import LabelSelector
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.cache.store import Indexer
from pykcm.client import Client
from pykcm.client.errors import is_already_exists, is_conflict, is_invalid, is_not_found
from pykcm.controller.controller_ref_manager import (
    BaseControllerRefManager,
    CanAdopt,
    delete_owner_ref_strategic_merge_patch,
    owner_ref_controller_patch,
)

__all__ = [
    "CONTROLLER_REVISION_CONTROLLER_INDEX",
    "CONTROLLER_REVISION_HASH_LABEL",
    "ControllerRevisionControllerRefManager",
    "History",
    "add_controller_revision_controller_indexer",
    "controller_revision_controller_index_key",
    "controller_revision_name",
    "equal_revision",
    "find_equal_revisions",
    "fnv32",
    "hash_controller_revision",
    "marshal_go_json",
    "new_controller_revision",
    "revision_data_bytes",
    "sort_controller_revisions",
    "template_patch",
]

log = logging.getLogger("pykcm.controller.history")

CONTROLLER_REVISION_HASH_LABEL: Final = "controller.kubernetes.io/hash"
"""The label holding the hash of a ControllerRevision's data (upstream ControllerRevisionHashLabel)."""

CONTROLLER_REVISION_CONTROLLER_INDEX: Final = "controllerRevisionController"
"""Index of ControllerRevisions by ``namespace/kind/name/uid`` of their controller (or
``namespace`` for orphans)."""

_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193

# -- Go's encoding/json -------------------------------------------------------------------

_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                   "\b": "\\b", "\f": "\\f", "<": "\\u003c", ">": "\\u003e",
                   "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _go_string(s: str) -> str:
    out = ['"']
    for ch in s:
        e = _ESCAPES.get(ch)
        if e is not None:
            out.append(e)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")  # not UTF-8: Go writes the replacement character
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_float(f: float) -> str:
    # encoding/json's float64: 'f' format unless the exponent is < -6 or >= 21,
    # then 'e' with a two-digit exponent at least (1e+21, 1e-07).
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"json: unsupported value: {f}")
    if f == int(f) and abs(f) < 1e21:
        return str(int(f))
    a = abs(f)
    if a < 1e-6 or a >= 1e21:
        r = repr(f)
        mant, _, exp = r.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").lstrip("0")
        return f"{mant}e{sign}{digits.zfill(2)}"
    return repr(f)


def _encode(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(_go_string(v))
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, float):
        out.append(_go_float(v))
    elif isinstance(v, Mapping):
        out.append("{")
        for i, k in enumerate(sorted(v)):
            if i:
                out.append(",")
            out.append(_go_string(str(k)))
            out.append(":")
            _encode(v[k], out)
        out.append("}")
    elif isinstance(v, list | tuple):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot marshal {type(v).__name__} as JSON")


def marshal_go_json(v: Any) -> bytes:
    """``json.Marshal`` of ``v`` as Go marshals a ``map[string]interface{}`` tree."""
    out: list[str] = []
    _encode(v, out)
    return "".join(out).encode()


def template_patch(owner: Mapping[str, Any]) -> dict[str, Any]:
    """The patch that restores ``owner``'s pod template (upstream getPatch of the
    DaemonSet and StatefulSet controllers), as a dict."""
    template = dict((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_data_bytes(revision: Mapping[str, Any]) -> bytes:
    """The ``data`` of a ControllerRevision as upstream's ``Data.Raw`` bytes."""
    data = revision.get("data")
    return b"" if data is None else marshal_go_json(data)


# -- hashing and naming ---------------------------------------------------------------------

def fnv32(data: bytes, h: int = _FNV32_OFFSET) -> int:
    """FNV-1, 32 bits (Go ``hash/fnv.New32``: multiply, then xor)."""
    for b in data:
        h = ((h * _FNV32_PRIME) & 0xFFFFFFFF) ^ b
    return h


def hash_controller_revision(revision: Mapping[str, Any], probe: int | None) -> str:
    """The hash of a revision's data with ``probe`` (the collision count) mixed in
    as its decimal digits (upstream HashControllerRevision)."""
    h = fnv32(revision_data_bytes(revision))
    if probe is not None:
        h = fnv32(str(probe).encode(), h)
    return safe_encode_string(str(h))


def controller_revision_name(prefix: str, hash_: str) -> str:
    """``<prefix>-<hash>``, the prefix cut to 223 bytes so the name fits in 253."""
    b = prefix.encode()
    if len(b) > 223:
        prefix = b[:223].decode(errors="ignore")
    return f"{prefix}-{hash_}"


def new_controller_revision(parent: Mapping[str, Any], api_version: str, kind: str,
                            template_labels: Mapping[str, str] | None, data: Mapping[str, Any],
                            revision: int, collision_count: int | None) -> dict[str, Any]:
    """A ControllerRevision of ``parent`` holding ``data`` (upstream NewControllerRevision):
    the template's labels plus the hash label, a controller reference, and the name
    ``<parent>-<hash>``."""
    labels = dict(template_labels or {})
    meta = parent.get("metadata") or {}
    cr: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"labels": labels, "namespace": meta.get("namespace"),
                     "ownerReferences": [new_controller_ref(parent, api_version, kind)]},
        "data": data,
        "revision": revision,
    }
    h = hash_controller_revision(cr, collision_count)
    cr["metadata"]["name"] = controller_revision_name(str(meta.get("name") or ""), h)
    labels[CONTROLLER_REVISION_HASH_LABEL] = h
    return cr


def _timestamp(obj: Mapping[str, Any]) -> float:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return 0.0
    try:
        return _dt.datetime.fromisoformat(str(ts)).timestamp()
    except ValueError:
        return 0.0


def sort_controller_revisions(revisions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Sorted by ``revision``, then creation time, then name (upstream byRevision)."""
    return sorted(revisions, key=lambda r: (int(r.get("revision") or 0), _timestamp(r),
                                            str((r.get("metadata") or {}).get("name") or "")))


def equal_revision(lhs: Mapping[str, Any] | None, rhs: Mapping[str, Any] | None) -> bool:
    """Both None, or both with the same data bytes (upstream EqualRevision)."""
    if lhs is None or rhs is None:
        return lhs is rhs
    return revision_data_bytes(lhs) == revision_data_bytes(rhs)


def find_equal_revisions(revisions: Sequence[Mapping[str, Any]], needle: Mapping[str, Any]
                         ) -> list[Mapping[str, Any]]:
    """The revisions equal to ``needle``, in their order."""
    want = revision_data_bytes(needle)
    return [r for r in revisions if revision_data_bytes(r) == want]


# -- the index ------------------------------------------------------------------------------

def controller_revision_controller_index_key(namespace: str,
                                             owner_ref: Mapping[str, Any] | None) -> str:
    """``namespace/kind/name/uid`` of a controller reference, or ``namespace`` for orphans."""
    if owner_ref is None:
        return namespace
    return (f"{namespace}/{owner_ref.get('kind', '')}/{owner_ref.get('name', '')}/"
            f"{owner_ref.get('uid', '')}")


def _controller_revision_index(cr: Any) -> list[str]:
    meta = cr.get("metadata") or {}
    return [controller_revision_controller_index_key(str(meta.get("namespace") or ""),
                                                     get_controller_of(cr))]


def add_controller_revision_controller_indexer(target: SharedIndexInformer | Indexer) -> None:
    """Add the controller index to a ControllerRevision informer or Indexer (once, whoever
    asks first)."""
    indexer = target.get_indexer() if isinstance(target, SharedIndexInformer) else target
    if CONTROLLER_REVISION_CONTROLLER_INDEX in indexer.get_indexers():
        return
    target.add_indexers({CONTROLLER_REVISION_CONTROLLER_INDEX: _controller_revision_index})


# -- the claim ------------------------------------------------------------------------------

class ControllerRevisionControllerRefManager(BaseControllerRefManager):
    """Claims ControllerRevisions for a DaemonSet or StatefulSet (upstream
    ControllerRevisionControllerRefManager): adopts matching orphans, releases its
    revisions that no longer match."""

    def __init__(self, client: Client, controller: Mapping[str, Any], selector: LabelSelector,
                 controller_api_version: str, controller_kind: str,
                 can_adopt: CanAdopt) -> None:
        super().__init__(controller, selector, can_adopt)
        self.client = client
        self.controller_api_version = controller_api_version
        self.controller_kind = controller_kind

    async def claim_controller_revisions(self, histories: Sequence[Mapping[str, Any]]
                                         ) -> list[Mapping[str, Any]]:
        return await self._claim_all(histories, self.labels_match, self.adopt, self.release)

    async def adopt(self, cr: Mapping[str, Any]) -> None:
        await self.adopt_object("ControllerRevision", cr, self._patch)

    async def release(self, cr: Mapping[str, Any]) -> None:
        await self.release_object(cr, self._patch)

    async def _patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        await self.client.patch("controllerrevisions", name, patch, "strategic", namespace)


# -- realHistory ----------------------------------------------------------------------------

class History:
    """Reads revisions from the informer's indexer, writes through ``client`` (upstream
    realHistory). ``indexer`` must carry the controller index
    (:func:`add_controller_revision_controller_indexer`)."""

    def __init__(self, client: Client, indexer: Indexer, *, clock: Clock | None = None) -> None:
        self.client = client
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        self.indexer = indexer

    def list_controller_revisions(self, parent: Mapping[str, Any], parent_kind: str,
                                  selector: LabelSelector) -> list[Mapping[str, Any]]:
        """The revisions ``selector`` matches that ``parent`` controls or nobody does."""
        meta = parent.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        uid = meta.get("uid")
        keys = [controller_revision_controller_index_key(
                    ns, {"kind": parent_kind, "name": meta.get("name"), "uid": uid}),
                controller_revision_controller_index_key(ns, None)]
        out: list[Mapping[str, Any]] = []
        for key in keys:
            for cr in self.indexer.by_index(CONTROLLER_REVISION_CONTROLLER_INDEX, key):
                if not selector.matches((cr.get("metadata") or {}).get("labels") or {}):
                    continue
                ref = get_controller_of(cr)
                if ref is None or ref.get("uid") == uid:
                    out.append(cr)
        return out

    async def create_controller_revision(self, parent: Mapping[str, Any],
                                         revision: Mapping[str, Any], collision_count: int
                                         ) -> tuple[dict[str, Any], int]:
        """Create ``revision`` named ``<parent>-<hash>``; on a name taken by other data,
        bump the collision count and try the next name. Returns (the revision, the
        collision count after the attempts)."""
        pmeta = parent.get("metadata") or {}
        ns = str(pmeta.get("namespace") or "")
        want = revision_data_bytes(revision)
        while True:
            h = hash_controller_revision(revision, collision_count)
            clone: dict[str, Any] = dict(revision)
            clone["metadata"] = dict(revision.get("metadata") or {})
            clone["metadata"]["name"] = controller_revision_name(str(pmeta.get("name") or ""), h)
            try:
                created = await self.client.create("controllerrevisions", clone, ns)
                return created, collision_count
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not is_already_exists(exc):
                    raise
            exists = await self.client.get("controllerrevisions", clone["metadata"]["name"], ns)
            if revision_data_bytes(exists) == want:
                return exists, collision_count
            collision_count += 1

    async def update_controller_revision(self, revision: Mapping[str, Any], new_revision: int
                                         ) -> Mapping[str, Any]:
        """Set ``revision.revision`` to ``new_revision``, retrying conflicts with the
        cached (then fresh) object, as upstream's RetryOnConflict (5 tries)."""
        clone: dict[str, Any] = dict(revision)
        meta = revision.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        delay = 0.01
        for attempt in range(5):
            if int(clone.get("revision") or 0) == new_revision:
                return clone
            clone["revision"] = new_revision
            try:
                return await self.client.update("controllerrevisions", clone, ns)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not is_conflict(exc) or attempt == 4:
                    raise
            cached = self.indexer.get_by_key(f"{ns}/{name}")
            clone = dict(cached) if cached is not None else dict(
                await self.client.get("controllerrevisions", name, ns))
            await self.clock.sleep(delay)
            delay *= 5
        return clone

    async def delete_controller_revision(self, revision: Mapping[str, Any]) -> None:
        meta = revision.get("metadata") or {}
        await self.client.delete("controllerrevisions", str(meta.get("name")),
                                 str(meta.get("namespace") or ""))

    async def adopt_controller_revision(self, parent: Mapping[str, Any], api_version: str,
                                        kind: str, revision: Mapping[str, Any]
                                        ) -> Mapping[str, Any]:
        """Make ``parent`` the controller of an orphan revision (a strategic merge patch
        carrying the revision's UID); raises if another controller owns it."""
        owner = get_controller_of(revision)
        if owner is not None:
            raise RuntimeError(f"attempt to adopt revision owned by {dict(owner)}")
        meta = revision.get("metadata") or {}
        patch = owner_ref_controller_patch(parent, api_version, kind, str(meta.get("uid", "")))
        return await self.client.patch("controllerrevisions", str(meta.get("name")), patch,
                                       "strategic", str((parent.get("metadata") or {})
                                                        .get("namespace") or ""))

    async def release_controller_revision(self, parent: Mapping[str, Any],
                                          revision: Mapping[str, Any]
                                          ) -> Mapping[str, Any] | None:
        """Remove ``parent``'s reference from the revision; None if it is gone or no longer
        ``parent``'s."""
        meta = revision.get("metadata") or {}
        patch = delete_owner_ref_strategic_merge_patch(
            str(meta.get("uid", "")), [str((parent.get("metadata") or {}).get("uid"))])
        try:
            return await self.client.patch("controllerrevisions", str(meta.get("name")), patch,
                                           "strategic", str(meta.get("namespace") or ""))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_not_found(exc) or is_invalid(exc):
                return None
            raise
