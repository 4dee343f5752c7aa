"""Compact, immutable cached objects for informers (opt-in).

An informer's cache of plain JSON dicts costs about 10.7 KiB per pod (about
52 GC-tracked dicts and lists each), and decoding them is what the cyclic GC
spends its time on (bench/RESULTS.md, Informer). A :class:`FrozenObject`
holds the same pod in 2.2-3.4 KiB (tracemalloc), with no GC-tracked object:

- ``apiVersion`` and ``kind`` decoded (strings shared between objects);
- ``metadata`` decoded into :class:`FrozenMeta`, a msgspec ``Struct``
  (``gc=False``) with one slot per ``ObjectMeta`` field; labels and
  annotations are plain ``dict[str, str]`` inside (GC-untracked), owner
  references are :class:`OwnerReference` structs in a tuple; these three
  are decoded once per distinct JSON and shared by the objects that have
  the same (the pods of a ReplicaSet): 2.2 KiB a pod when shared, 3.4 KiB
  when every pod has its own;
- every other top-level value (``spec``, ``status``, ``data`` ...) kept as
  its raw JSON bytes, decoded on each access.

It is built straight from the API server's bytes by :class:`CompactDecoder`
(a LIST body, a watch line, or a received chunk's watch lines in one call:
``events``), without ever building the dict tree: msgspec
scans each object once, decodes the metadata and copies out the raw bytes
of the rest (3.4 µs for the benchmark's 2.3 KB pod, against 6.5 µs for
``orjson.loads``).

Turned on per :class:`~pykcm.cache.list_watch.ListWatch` (``compact=True``)
or per factory (``SharedInformerFactory(compact_objects=True)``); off by
default there, on by default in the controller manager
(``--compact-informer-objects``). The key functions, indexers, DeltaFIFO, listers, label selectors
and the mutation detector work on it unchanged, as on a dict.

Reading (a read-only ``Mapping[str, Any]``, as a dict reads)::

    obj["metadata"]["name"], obj.get("spec"), "status" in obj, len(obj),
    list(obj), obj.items(), obj == a_dict, isinstance(obj, Mapping)

(``isinstance(obj, dict)`` is False. Iteration order: the server's, except
for objects of the common shape, decoded in one pass, which iterate as
``apiVersion, kind, metadata, spec, status``; ``FrozenMeta`` iterates in
its field order.)

What reads hand out:

- ``obj["metadata"]`` is the cached :class:`FrozenMeta` itself (a read-only
  Mapping); its strings and numbers are immutable; ``labels`` and
  ``annotations`` are handed out as :class:`FrozenDict` (a read-only
  ``dict`` subclass: JSON-serializable, equal to dicts), ``finalizers`` and
  ``ownerReferences`` as :class:`FrozenList` (a read-only ``list``
  subclass) whose owner references are read-only :class:`OwnerReference`
  Mappings. Those containers are built per access (a copy of a few
  entries, about 0.1 µs); changing them raises ``TypeError``.
- every other top-level value (``obj["spec"]``, ``obj["status"]``, and
  ``metadata.managedFields`` when kept) is **a fresh, mutable copy**,
  decoded from the raw bytes on each access (a pod's spec: about 3 µs):
  changing it changes nothing in the cache, and nobody else sees it. Bind
  it once (``spec = obj["spec"]``) rather than reading it in a loop. Not
  caching the decoded value keeps the memory per object constant however
  much the controllers read (measured: caching it would grow a read pod
  from about 3 KiB to about 12 KiB). The few small facts a controller reads
  on every sync (a pod's phase and Ready condition) are kept instead, once
  computed: ``obj.memo(name, compute)`` (a tuple of a few strings a pod).

Writing: the object is immutable, cheaply, as the issue asks of cached
objects. ``obj["x"] = ...``, ``del obj["x"]``, ``obj.pop``/``update``/
``setdefault``/``clear``/``popitem`` and attribute assignment raise
``TypeError`` (``AttributeError`` for attributes) naming the object. To
change an object, take a mutable deep copy first, as a controller does
before a write: ``obj.thaw()`` (alias ``to_dict()``) or ``copy.deepcopy(obj)``
(both give plain dicts and lists). ``copy.copy(obj)`` returns ``obj`` itself
(it is immutable). Pickling works.

Serializing: ``orjson.dumps(obj, default=frozen_default)`` or
:func:`to_json`; the raw parts are written back as they came
(``orjson.Fragment``), without decoding them. ``json.dumps`` needs
``obj.thaw()``. The client's write calls take plain dicts: pass
``obj.thaw()`` (which a write needs anyway).

Needs msgspec (imported here; the ``compact`` knobs import this module only
when turned on, so the default path does not need it).
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, ClassVar, Final, NoReturn

import orjson

from pykcm.api.accessors import meta_of, register_labels_of
from pykcm.api.owner_refs import generic_controller_of, register_controller_of

try:
    import msgspec
    from msgspec import UNSET, Raw, Struct, UnsetType
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "compact informer objects (pykcm.cache.frozen_object, ListWatch(compact=True), "
        "SharedInformerFactory(compact_objects=True)) need the msgspec package, which is "
        "not installed: pip install 'msgspec>=0.18'") from _exc

__all__ = [
    "CompactDecoder",
    "FrozenDict",
    "FrozenList",
    "FrozenMeta",
    "FrozenObject",
    "OwnerReference",
    "freeze",
    "frozen_default",
    "thaw",
    "to_json",
]

_NO: Final[Any] = object()  # "no such field" (distinct from UNSET: "field not set")
# Strings repeated in every object (apiVersion, kind) are shared, up to this many.
_SHARED_MAX: Final = 4096
_shared_strings: dict[str, str] = {}
_key_tuples: dict[tuple[str, ...], tuple[str, ...]] = {}


def _shared(s: str) -> str:
    got = _shared_strings.get(s)
    if got is not None:
        return got
    if len(_shared_strings) < _SHARED_MAX:
        _shared_strings[s] = s
    return s


def _read_only(what: str) -> TypeError:
    return TypeError(
        f"{what} is read-only: it belongs to an informer's cache, shared by every reader. "
        "Take a mutable copy first: obj.thaw() or copy.deepcopy(obj) "
        "(pykcm.cache.frozen_object)")


# --- read-only containers handed out ------------------------------------------------


class FrozenDict(dict[str, Any]):
    """A read-only ``dict`` (labels, annotations ...): reads as a dict, writes raise TypeError.

    A real ``dict`` subclass, so ``isinstance(x, dict)``, ``==`` with dicts,
    ``orjson``/``json`` serialization and C-speed reads work as on a dict.
    ``copy.copy`` gives a plain dict, ``copy.deepcopy`` a plain deep copy.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _read_only(f"this mapping ({dict.__repr__(self):.60})")

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        self._refuse()

    def __delitem__(self, key: str) -> NoReturn:
        self._refuse()

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        self._refuse()

    pop = _refuse
    popitem = _refuse
    clear = _refuse
    update = _refuse
    setdefault = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        out: dict[str, Any] = thaw(self)
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(list[Any]):
    """A read-only ``list`` (finalizers, ownerReferences ...): reads as a list, writes raise."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _read_only(f"this list ({list.__repr__(self):.60})")

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        self._refuse()

    def __delitem__(self, index: Any) -> NoReturn:
        self._refuse()

    def __iadd__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        self._refuse()

    def __imul__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        self._refuse()

    append = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    clear = _refuse
    sort = _refuse
    reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: Any) -> list[Any]:
        out: list[Any] = thaw(self)
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"


def freeze(value: Any) -> Any:
    """``value`` with every dict and list (deeply) made a FrozenDict / FrozenList."""
    t = type(value)
    if t is dict or t is FrozenDict:
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if t is list or t is FrozenList or t is tuple:
        return FrozenList([freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of ``value`` (frozen objects, mappings, lists ...)."""
    if isinstance(value, FrozenObject | _FrozenStruct):
        return value.thaw()
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    if isinstance(value, Raw):
        return orjson.loads(bytes(value))
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    return value


# --- typed metadata -------------------------------------------------------------------


class _ReadOnlyMapping(Struct, gc=False, frozen=True):
    """The base of the Structs that read as Mappings (never instantiated itself).

    It is what is registered as a ``Mapping``, not each class: CPython's ABC machinery
    never caches a *directly* registered class, so ``isinstance(x, Mapping)`` of one
    runs ``Mapping.__subclasscheck__`` (and a Python ``__subclasshook__``) on every
    call, about 1 µs; a subclass of a registered class is found once and cached (the
    controllers' accessors ask it of every cached object's metadata they read)."""


class _FrozenStruct(_ReadOnlyMapping, gc=False, frozen=True, forbid_unknown_fields=True):
    """A read-only Mapping over a Struct's fields (UNSET = absent). Subclasses list
    in ``_OUT`` the fields handed out through a function (the others as stored)."""

    _OUT: ClassVar[dict[str, Any]] = {}
    # Every field -> its _OUT function or None (one lookup on the hot path).
    _FIELDS: ClassVar[dict[str, Any]] = {}
    __hash__ = None  # type: ignore[assignment]  # a Mapping, as a dict: unhashable

    def __getitem__(self, key: str) -> Any:
        out = self._FIELDS.get(key, _NO)
        if out is _NO:
            raise KeyError(key)
        v = getattr(self, key)
        if v is UNSET:
            raise KeyError(key)
        return v if out is None else out(v)

    def get(self, key: str, default: Any = None) -> Any:
        out = self._FIELDS.get(key, _NO)
        if out is _NO:
            return default
        v = getattr(self, key)
        if v is UNSET:
            return default
        return v if out is None else out(v)

    def _set_fields(self) -> Iterator[tuple[str, Any]]:
        for k in self.__struct_fields__:
            v = getattr(self, k)
            if v is not UNSET:
                yield k, v

    def __contains__(self, key: object) -> bool:
        return key in self.__struct_fields__ and \
            getattr(self, key) is not UNSET

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._set_fields())

    def __len__(self) -> int:
        return sum(1 for _ in self._set_fields())

    def __bool__(self) -> bool:
        # ``pod.get("metadata") or {}`` is on every controller's per-pod path; without
        # __bool__ the truth test is __len__, a walk over every field (it was most of a
        # ReplicaSet sync's time on compact pods): stop at the first set field instead
        # (``name``, FrozenMeta's first, is nearly always set)
        for k in self.__struct_fields__:
            if getattr(self, k) is not UNSET:
                return True
        return False

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, Any]:
        return ItemsView(self)

    def values(self) -> ValuesView[Any]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping | _FrozenStruct):
            return NotImplemented
        n = 0
        for k in self:
            n += 1
            if k not in other or other[k] != self[k]:
                return False
        return n == len(other)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def thaw(self) -> dict[str, Any]:
        """A plain, mutable deep copy (a dict)."""
        return {k: thaw(v) for k, v in self._set_fields()}

    to_dict = thaw

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _read_only(f"{type(self).__name__} {self._describe()}")

    def _describe(self) -> str:
        return repr(self.get("name"))

    __setitem__ = _refuse
    __delitem__ = _refuse
    pop = _refuse
    popitem = _refuse
    clear = _refuse
    update = _refuse
    setdefault = _refuse

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return self.thaw()

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v!r}" for k, v in self.items())
        return f"{type(self).__name__}({{{inner}}})"

    def _json(self) -> dict[str, Any]:
        return {k: orjson.Fragment(bytes(v)) if isinstance(v, Raw) else v
                for k, v in self._set_fields()}


class OwnerReference(_FrozenStruct, gc=False, frozen=True, forbid_unknown_fields=True):
    """metav1.OwnerReference, read-only (a Mapping of its JSON fields)."""

    apiVersion: str | None | UnsetType = UNSET
    kind: str | None | UnsetType = UNSET
    name: str | None | UnsetType = UNSET
    uid: str | None | UnsetType = UNSET
    controller: bool | None | UnsetType = UNSET
    blockOwnerDeletion: bool | None | UnsetType = UNSET


def _frozen_dict_or_none(v: dict[str, str] | None) -> FrozenDict | None:
    return None if v is None else FrozenDict(v)


def _frozen_list_or_none(v: tuple[Any, ...] | None) -> FrozenList | None:
    return None if v is None else FrozenList(v)


def _decoded(v: Raw) -> Any:
    return orjson.loads(bytes(v))


class FrozenMeta(_FrozenStruct, gc=False, frozen=True, forbid_unknown_fields=True):
    """metav1.ObjectMeta, read-only (a Mapping of its JSON fields); see the module doc.

    Objects whose metadata has a field not listed here, or a value of an
    unexpected type, get their metadata as a :class:`FrozenDict` tree instead
    (same reads, same results).
    """

    name: str | None | UnsetType = UNSET
    generateName: str | None | UnsetType = UNSET
    namespace: str | None | UnsetType = UNSET
    selfLink: str | None | UnsetType = UNSET
    uid: str | None | UnsetType = UNSET
    resourceVersion: str | None | UnsetType = UNSET
    generation: int | None | UnsetType = UNSET
    creationTimestamp: str | None | UnsetType = UNSET
    deletionTimestamp: str | None | UnsetType = UNSET
    deletionGracePeriodSeconds: int | None | UnsetType = UNSET
    # Decoded as raw JSON, then replaced by CompactDecoder with the decoded value
    # (``dict[str, str] | None``, ``tuple[OwnerReference, ...] | None``), one
    # value shared by every object whose JSON for it is the same (the pods of a
    # ReplicaSet share their labels and owner references).
    labels: Raw | UnsetType = UNSET
    annotations: Raw | UnsetType = UNSET
    ownerReferences: Raw | UnsetType = UNSET
    finalizers: tuple[str, ...] | None | UnsetType = UNSET
    managedFields: Raw | UnsetType = UNSET

    _OUT: ClassVar[dict[str, Any]] = {
        "labels": _frozen_dict_or_none, "annotations": _frozen_dict_or_none,
        "ownerReferences": _frozen_list_or_none, "finalizers": _frozen_list_or_none,
        "managedFields": _decoded,
    }

    def _describe(self) -> str:
        ns, name = self.namespace, self.name
        return f"{ns}/{name}" if isinstance(ns, str) and ns else repr(name)


for _struct in (OwnerReference, FrozenMeta):
    _struct._FIELDS = {f: _struct._OUT.get(f) for f in _struct.__struct_fields__}

# Set fields of a frozen FrozenMeta while it is being built (nobody holds it yet).
_set_managed_fields = FrozenMeta.__dict__["managedFields"].__set__
_set_labels = FrozenMeta.__dict__["labels"].__set__
_set_annotations = FrozenMeta.__dict__["annotations"].__set__
_set_owner_references = FrozenMeta.__dict__["ownerReferences"].__set__


# --- the object -----------------------------------------------------------------------


class FrozenObject(_ReadOnlyMapping, gc=False, frozen=True):
    """A cached Kubernetes object, read-only and compact; see the module docstring.

    ``_keys``: the top-level keys in order (one tuple shared by all objects
    with the same keys); ``_vals``: their values, decoded (``apiVersion``,
    ``kind``: str; ``metadata``: :class:`FrozenMeta` or :class:`FrozenDict`)
    or raw JSON ``bytes``, decoded on each access; ``_meta``: the metadata
    again, for the hot path (None when not a mapping); ``_meta_namespace_key``:
    the object's ``namespace/name`` key, computed once when it is decoded (the
    DeltaFIFO, the store and the namespace index ask for it on every event,
    see :func:`pykcm.cache.keys.meta_namespace_key`), or None where the
    general key function must decide. Build them with :class:`CompactDecoder`,
    or :meth:`from_dict`.
    """

    _keys: tuple[str, ...]
    _vals: tuple[Any, ...]
    _meta: Any = None
    _meta_namespace_key: str | None = None
    # (name, value, name, value ...) of :meth:`memo`'s derived values
    _memo: tuple[Any, ...] = ()

    __hash__ = None  # type: ignore[assignment]  # a Mapping, as a dict: unhashable

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *,
                  strip_managed_fields: bool = False) -> FrozenObject:
        """The compact form of a decoded object (tests, tools; informers decode bytes)."""
        return _default_decoder(strip_managed_fields).object(orjson.dumps(
            obj, default=frozen_default))

    # -- Mapping ---------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        if key == "metadata":
            m = self._meta
            if m is not None:
                return m
        try:
            i = self._keys.index(key)
        except ValueError:
            raise KeyError(key) from None
        v = self._vals[i]
        return orjson.loads(v) if type(v) is bytes else v

    def get(self, key: str, default: Any = None) -> Any:
        if key == "metadata":
            m = self._meta
            if m is not None:
                return m
        try:
            i = self._keys.index(key)
        except ValueError:
            return default
        v = self._vals[i]
        return orjson.loads(v) if type(v) is bytes else v

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, Any]:
        return ItemsView(self)

    def values(self) -> ValuesView[Any]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenObject):
            if self._keys == other._keys and self._vals == other._vals:
                return True
        elif not isinstance(other, Mapping):
            return NotImplemented
        if len(other) != len(self._keys):
            return False
        for k, v in zip(self._keys, self._vals, strict=True):
            if k not in other:
                return False
            if type(v) is bytes:
                v = orjson.loads(v)
            if v != other[k]:
                return False
        return True

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def raw_part(self, key: str) -> bytes | None:
        """The raw JSON of the top-level value ``key`` when it is kept raw (``spec``,
        ``status`` ...), else None (absent, or decoded: ``metadata``, ``kind``).

        For a reader that wants a few fields of a big part: decoding only those from the
        bytes (a typed msgspec decoder skips the rest without building it) is several
        times cheaper than ``obj[key]``, which decodes the whole part.
        """
        try:
            v = self._vals[self._keys.index(key)]
        except ValueError:
            return None
        return v if type(v) is bytes else None

    # -- derived values ----------------------------------------------------------

    def memo(self, name: str, compute: Callable[[FrozenObject], Any]) -> Any:
        """``compute(self)``, computed on the first call for ``name`` and kept with the
        object (it never changes: a changed object is a new FrozenObject).

        For the few small facts a controller reads from a raw part on every sync (a
        pod's phase and Ready condition: each read decodes the pod's status again, 2 µs):
        ``compute`` must return an immutable value (strings, numbers, tuples of them) and
        depend only on the object; the value costs memory for as long as the object is
        cached, so keep it to a few words (whole decoded parts belong in a local).
        """
        m = self._memo
        for i in range(0, len(m), 2):
            if m[i] == name:
                return m[i + 1]
        value = compute(self)
        _set_memo(self, (*m, name, value))  # a cached value of a frozen object
        return value

    # -- copies -------------------------------------------------------------------

    def thaw(self) -> dict[str, Any]:
        """A plain, mutable deep copy (dicts and lists): what to change and write back."""
        out: dict[str, Any] = {}
        for k, v in zip(self._keys, self._vals, strict=True):
            out[k] = orjson.loads(v) if type(v) is bytes else thaw(v)
        return out

    to_dict = thaw

    def __copy__(self) -> FrozenObject:
        return self

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return self.thaw()

    def without_managed_fields(self) -> FrozenObject:
        """This object without ``metadata.managedFields`` (itself when it has none)."""
        m = self._meta
        if isinstance(m, FrozenMeta):
            if m.managedFields is UNSET:
                return self
            new_meta: Any = msgspec.structs.replace(m, managedFields=UNSET)
        elif isinstance(m, FrozenDict) and "managedFields" in m:
            new_meta = FrozenDict({k: v for k, v in m.items() if k != "managedFields"})
        else:
            return self
        i = self._keys.index("metadata")
        return FrozenObject(self._keys, (*self._vals[:i], new_meta, *self._vals[i + 1:]),
                            new_meta, self._meta_namespace_key)

    def to_json(self) -> bytes:
        """The object's JSON (raw parts written back as they came)."""
        return orjson.dumps(self, default=frozen_default)

    # -- refusals and repr -----------------------------------------------------------

    def _describe(self) -> str:
        kind = self.get("kind")
        m = self._meta
        name = m.get("name") if m is not None else None
        ns = m.get("namespace") if m is not None else None
        key = f"{ns}/{name}" if ns else f"{name}"
        return f"{kind if isinstance(kind, str) else 'object'} {key}"

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _read_only(f"cached {self._describe()} (FrozenObject)")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    pop = _refuse
    popitem = _refuse
    clear = _refuse
    update = _refuse
    setdefault = _refuse

    def __repr__(self) -> str:
        rv = self._meta.get("resourceVersion") if self._meta is not None else None
        return (f"<FrozenObject {self._describe()} resourceVersion={rv!r} "
                f"keys={list(self._keys)}>")


# The base, not each class: see _ReadOnlyMapping.
Mapping.register(_ReadOnlyMapping)

_set_memo = FrozenObject.__dict__["_memo"].__set__


def _controller_of(obj: FrozenObject) -> Any:
    """``get_controller_of(obj)`` read from the struct's fields (the same OwnerReference
    the Mapping reading finds, without building the FrozenList of references or calling
    ``get`` per field): every workload controller's pod handler asks it per event."""
    m = obj._meta
    if type(m) is FrozenMeta:
        refs: Any = m.ownerReferences  # decoded by CompactDecoder._finish: a tuple or None
        if type(refs) is tuple:
            for ref in refs:
                if type(ref) is OwnerReference:
                    if ref.controller:
                        return ref
                elif ref.get("controller"):
                    return ref
            return None
    whole: Any = obj  # a Mapping (registered), which mypy does not know
    return generic_controller_of(whole)


register_controller_of(FrozenObject, _controller_of)


def _labels_of(obj: FrozenObject) -> Any:
    """``labels_of(obj)``: the labels dict CompactDecoder decoded once and shares between
    the objects with the same labels (a read-only view for a selector, not the FrozenDict
    copy a Mapping read builds): a claim and an orphan's handlers read the labels of
    every orphan of the namespace for every owner."""
    m = obj._meta
    if type(m) is FrozenMeta:
        labels: Any = m.labels  # decoded by CompactDecoder._finish: a dict, None or UNSET
        if type(labels) is dict:
            return labels
        if labels is None or labels is UNSET:
            return None
    whole: Any = obj  # a Mapping (registered), which mypy does not know
    return meta_of(whole).get("labels")


register_labels_of(FrozenObject, _labels_of)


def frozen_default(obj: Any) -> Any:
    """orjson ``default=`` hook: ``orjson.dumps(x, default=frozen_default)`` for any
    value holding frozen objects (raw parts are written as they came)."""
    if isinstance(obj, FrozenObject):
        return {k: orjson.Fragment(v) if type(v) is bytes else v
                for k, v in zip(obj._keys, obj._vals, strict=True)}
    if isinstance(obj, _FrozenStruct):
        return obj._json()
    if isinstance(obj, Raw):
        return orjson.Fragment(bytes(obj))
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def to_json(obj: Any) -> bytes:
    """``orjson.dumps(obj, default=frozen_default)``."""
    return orjson.dumps(obj, default=frozen_default)


# --- building them from bytes -----------------------------------------------------------


class _WatchEvent(Struct, gc=False):
    type: str
    object: dict[str, Raw]


class _List(Struct, gc=False):
    apiVersion: Any = None
    kind: Any = None
    metadata: Any = None
    items: list[dict[str, Raw]] | None = None


class _Object(Struct, gc=False, forbid_unknown_fields=True):
    """The common shape (pods, workloads, nodes ...): decoded in one pass."""

    apiVersion: str | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    metadata: FrozenMeta | UnsetType = UNSET
    spec: Raw | UnsetType = UNSET
    status: Raw | UnsetType = UNSET


class _TypedEvent(Struct, gc=False):
    type: str
    object: _Object


class _TypedList(Struct, gc=False):
    apiVersion: Any = None
    kind: Any = None
    metadata: Any = None
    items: list[_Object] | None = None


_TYPED_KEYS: Final = ("apiVersion", "kind", "metadata", "spec", "status")
# After the typed path fails (another shape: a ConfigMap's "data" ...), this
# many objects take the generic path before the typed one is tried again.
_TYPED_BACKOFF: Final = 256


def _shared_keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    shared = _key_tuples.get(keys)
    if shared is not None:
        return shared
    if len(_key_tuples) < _SHARED_MAX:
        _key_tuples[keys] = keys
    return keys


class _Decoders:
    """The msgspec decoders, built once (building them costs more than using them)."""

    def __init__(self) -> None:
        self.fields = msgspec.json.Decoder(dict[str, Raw])
        self.event = msgspec.json.Decoder(_WatchEvent)
        self.list = msgspec.json.Decoder(_List)
        self.object = msgspec.json.Decoder(_Object)
        self.typed_event = msgspec.json.Decoder(_TypedEvent)
        self.typed_list = msgspec.json.Decoder(_TypedList)
        self.meta = msgspec.json.Decoder(FrozenMeta)
        self.any = msgspec.json.Decoder()
        self.string_map = msgspec.json.Decoder(dict[str, str] | None)
        self.owner_refs = msgspec.json.Decoder(tuple[OwnerReference, ...] | None)


_decoders: _Decoders | None = None


class CompactDecoder:
    """Decodes API server JSON into :class:`FrozenObject` (LIST bodies, watch lines, objects).

    ``strip_managed_fields``: drop ``metadata.managedFields`` while decoding
    (what the usual informer transform does, without ever copying them).
    Decode errors raise ``ValueError`` (msgspec's ``DecodeError``).

    Objects of the common shape (only ``apiVersion``, ``kind``, ``metadata``,
    ``spec``, ``status``, with ObjectMeta fields) are decoded in one pass and
    iterate in that order; any other object is decoded field by field and
    keeps its order. One decoder per resource (as ListWatch makes them)
    learns which of the two to try first.
    """

    def __init__(self, *, strip_managed_fields: bool = False) -> None:
        global _decoders
        self.strip_managed_fields = strip_managed_fields
        if _decoders is None:
            _decoders = _Decoders()
        self._d = _decoders
        # Decoded labels/annotations and ownerReferences by their JSON, shared.
        self._maps: dict[bytes, Any] = {}
        self._refs: dict[bytes, Any] = {}
        self._skip_typed = 0

    def __repr__(self) -> str:
        return f"CompactDecoder(strip_managed_fields={self.strip_managed_fields})"

    def object(self, data: bytes | Raw) -> FrozenObject:
        """One object's JSON."""
        if self._skip_typed:
            self._skip_typed -= 1
        else:
            try:
                return self._typed(self._d.object.decode(data))
            except msgspec.ValidationError:
                self._skip_typed = _TYPED_BACKOFF
        return self.build(self._d.fields.decode(data))

    def event(self, line: bytes) -> tuple[str, Any]:
        """One watch event line: ``(type, object)``; an ERROR's Status stays a plain dict."""
        if self._skip_typed:
            self._skip_typed -= 1
        else:
            try:
                tev = self._d.typed_event.decode(line)
                if tev.type != "ERROR":
                    return tev.type, self._typed(tev.object)
            except msgspec.ValidationError:
                self._skip_typed = _TYPED_BACKOFF
        ev = self._d.event.decode(line)
        typ = ev.type
        if typ == "ERROR":
            plain: dict[str, Any] = orjson.loads(line)
            return typ, plain["object"]
        return typ, self.build(ev.object)

    def events(self, block: bytes | memoryview) -> list[tuple[str, Any]]:
        """The events of a block of watch lines (newline-separated; blank lines skipped),
        as ``event`` gives them, decoded in one call when every line has the common
        shape (the typed decoding), else line by line. Raises ValueError (msgspec's
        ``DecodeError``) when a line is not JSON: the caller decodes the block again
        line by line to find it (``WatchStream``'s ``batch_decoder``)."""
        if not self._skip_typed:
            typed = self._typed
            out: list[tuple[str, Any]] = []
            append = out.append
            try:
                for tev in self._d.typed_event.decode_lines(block):
                    typ = tev.type
                    if typ == "ERROR":
                        break  # its Status stays a plain dict: line by line
                    append((typ, typed(tev.object)))
                else:
                    return out
            except msgspec.ValidationError:
                self._skip_typed = _TYPED_BACKOFF
        event = self.event
        return [event(line) for line in bytes(block).split(b"\n") if line.strip()]

    def list(self, body: bytes | bytearray) -> dict[str, Any]:
        """A LIST response: ``{"apiVersion", "kind", "metadata", "items": [FrozenObject]}``.

        Items get the list's kind (minus ``List``) and apiVersion when they
        lack them, as ``ListWatch`` does for dict items.
        """
        lst: _TypedList | _List
        try:
            lst = self._d.typed_list.decode(body)
        except msgspec.ValidationError:
            lst = self._d.list.decode(body)
        else:
            try:
                return self._list_out(lst, self._typed)
            except msgspec.ValidationError:  # metadata labels of another type ...
                lst = self._d.list.decode(body)
        return self._list_out(lst, self.build)

    @staticmethod
    def _list_out(lst: _TypedList | _List, build: Any) -> dict[str, Any]:
        kind: str | None = None
        api_version: str | None = None
        list_kind, list_api = lst.kind, lst.apiVersion
        if isinstance(list_kind, str) and list_kind.endswith("List") and list_api and \
                isinstance(list_api, str):
            kind, api_version = _shared(list_kind[:-4]), _shared(list_api)
        items = [build(it, kind, api_version) for it in lst.items or ()]
        out: dict[str, Any] = {"apiVersion": list_api, "kind": list_kind,
                               "metadata": lst.metadata if lst.metadata is not None else {},
                               "items": items}
        return out

    def _typed(self, o: _Object, kind: str | None = None,
               api_version: str | None = None) -> FrozenObject:
        """A FrozenObject from the one-pass decoding (raises ValidationError as build)."""
        a = o.apiVersion
        k = o.kind
        m = o.metadata
        spec = o.spec
        status = o.status
        if m is not UNSET:
            self._finish(m)
        if a is UNSET and api_version is not None:
            a = api_version
        if k is UNSET and kind is not None:
            k = kind
        if a is not UNSET and k is not UNSET and m is not UNSET and spec is not UNSET \
                and status is not UNSET:
            return FrozenObject(_TYPED_KEYS, (_shared(a), _shared(k), m, bytes(spec),
                                              bytes(status)), m, _meta_key(m.namespace, m.name))
        keys: list[str] = []
        vals: list[Any] = []
        for key, v in zip(_TYPED_KEYS, (a, k, m, spec, status), strict=True):
            if v is UNSET:
                continue
            keys.append(key)
            vals.append(bytes(v) if isinstance(v, Raw) else
                        _shared(v) if type(v) is str else v)
        if m is UNSET:
            return FrozenObject(_shared_keys(tuple(keys)), tuple(vals))
        return FrozenObject(_shared_keys(tuple(keys)), tuple(vals), m,
                            _meta_key(m.namespace, m.name))

    def build(self, fields: dict[str, Raw], kind: str | None = None,
              api_version: str | None = None) -> FrozenObject:
        """A FrozenObject from an object's top-level fields as raw JSON (views are copied).

        ``kind`` / ``api_version``: set first when the object lacks them (list items).
        """
        keys: list[str] = []
        vals: list[Any] = []
        if api_version is not None and "apiVersion" not in fields:
            keys.append("apiVersion")
            vals.append(api_version)
        if kind is not None and "kind" not in fields:
            keys.append("kind")
            vals.append(kind)
        meta: Any = None
        any_decode = self._d.any.decode
        for k, raw in fields.items():
            if k == "metadata":
                v = meta = self._metadata(raw)
            elif k == "apiVersion" or k == "kind":
                v = any_decode(raw)
                v = _shared(v) if type(v) is str else bytes(raw)
            else:
                v = bytes(raw)
            keys.append(k)
            vals.append(v)
        if isinstance(meta, FrozenMeta):
            return FrozenObject(_shared_keys(tuple(keys)), tuple(vals), meta,
                                _meta_key(meta.namespace, meta.name))
        if isinstance(meta, FrozenDict):
            return FrozenObject(_shared_keys(tuple(keys)), tuple(vals), meta,
                                _meta_key(meta.get("namespace", UNSET), meta.get("name", UNSET)))
        return FrozenObject(_shared_keys(tuple(keys)), tuple(vals))

    def _metadata(self, raw: Raw) -> Any:
        try:
            return self._finish(self._d.meta.decode(raw))
        except msgspec.ValidationError:
            # A field FrozenMeta does not know, or an unexpected type: keep it all.
            v = self._d.any.decode(raw)
            if self.strip_managed_fields and type(v) is dict:
                v.pop("managedFields", None)
            return freeze(v)

    def _finish(self, m: FrozenMeta) -> FrozenMeta:
        """Replace the Raw views of a just decoded FrozenMeta (raises ValidationError)."""
        v = m.labels
        if v is not UNSET:
            _set_labels(m, self._shared(self._maps, self._d.string_map, v))
        v = m.annotations
        if v is not UNSET:
            _set_annotations(m, self._shared(self._maps, self._d.string_map, v))
        v = m.ownerReferences
        if v is not UNSET:
            _set_owner_references(m, self._shared(self._refs, self._d.owner_refs, v))
        mf = m.managedFields
        if mf is not UNSET:
            # A view into the whole message: never keep that.
            _set_managed_fields(m, UNSET if self.strip_managed_fields else mf.copy())
        return m

    @staticmethod
    def _shared(cache: dict[bytes, Any], decoder: msgspec.json.Decoder[Any], raw: Raw) -> Any:
        key = bytes(raw)
        v = cache.get(key, _NO)
        if v is _NO:
            v = decoder.decode(key)
            if len(cache) >= _SHARED_MAX:
                cache.clear()  # bounded: values already shared stay shared
            cache[key] = v
        return v


def _meta_key(namespace: Any, name: Any) -> str | None:
    """``meta_namespace_key``'s answer for metadata with this namespace and name (UNSET:
    absent), or None when it is not a plain one: the general key function then decides
    (a value of another type; a ``/`` inside, which the namespace index, reading the
    namespace back from the key, could not tell apart)."""
    if name is UNSET or name is None:
        name = ""
    elif type(name) is not str or "/" in name:
        return None
    if namespace is UNSET or namespace is None or namespace == "":
        return str(name)
    if type(namespace) is not str or "/" in namespace:
        return None
    return f"{namespace}/{name}"


def _default_decoder(strip: bool) -> CompactDecoder:
    # A new one each time: cheap (the msgspec decoders are shared), and
    # FrozenObject.from_dict is for tests and tools.
    return CompactDecoder(strip_managed_fields=strip)
