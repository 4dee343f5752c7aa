"""The schema view server-side apply merges by: which maps and lists are atomic, which lists
are sets or maps with keys.

Role: structured-merge-diff's ``schema.Schema`` as kube-openapi's ``schemaconv``
builds it from the OpenAPI definitions (built-in kinds) or a CRD's structural
schema (custom resources). Each OpenAPI node resolves to one :class:`Atom`:

- ``scalar``: strings, numbers, booleans, and the string-encoded types
  (IntOrString, Quantity, Time);
- ``map``: a struct (``properties``, a *named* field each) and/or a map
  (``additionalProperties``: the element type of any other key); atomic when
  ``x-kubernetes-map-type: atomic``, else granular (SMD's "separable");
- ``list``: ``x-kubernetes-list-type`` ``atomic``, ``set`` or ``map`` with
  ``x-kubernetes-list-map-keys``; without it a ``patchStrategy: merge`` with a
  ``patchMergeKey`` makes a map keyed by it, a merge strategy without a key a
  set, anything else atomic (schemaconv's rule for definitions that predate the
  list-type markers);
- ``deduced``: no schema (``x-kubernetes-preserve-unknown-fields``, a field the
  schema does not know): the value decides: a JSON object is a granular map of
  deduced values, a list is atomic, anything else a scalar;
- an ``object`` with no schema of its own (RawExtension) is one atomic value.

Data flow: :func:`for_builtin` (group, version, kind) and :func:`for_crd`
(a CRD version's ``openAPIV3Schema``) give a :class:`TypeSchema`; the typed walks
ask it :meth:`TypeSchema.resolve` for each node as they descend. Atoms are
built on first use and cached per node.

Deliberate deviation: scalar types are not checked (SMD rejects a string where
a number is declared); pykcm validates objects before they reach apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pykcm.apiserver.endpoints.openapi import REF_PREFIX, builtin_schemas

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean"})
_DEDUCED_NODE: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}

# The defaults of associative-list key fields in kube-apiserver v1.36's OpenAPI (pykcm's
# shipped definitions leave ``default`` out). An applied item without such a key field
# is keyed by its default (a port without ``protocol`` is the TCP one), as SMD does.
BUILTIN_KEY_DEFAULTS: dict[str, dict[str, Any]] = {
    "io.k8s.api.core.v1.ContainerPort": {"containerPort": 0, "protocol": "TCP"},
    "io.k8s.api.core.v1.ServicePort": {"port": 0, "protocol": "TCP"},
    **{d: {"type": ""} for d in (
        "io.k8s.api.apps.v1.DaemonSetCondition", "io.k8s.api.apps.v1.DeploymentCondition",
        "io.k8s.api.apps.v1.ReplicaSetCondition", "io.k8s.api.apps.v1.StatefulSetCondition",
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition",
        "io.k8s.api.certificates.v1.CertificateSigningRequestCondition",
        "io.k8s.api.core.v1.ComponentCondition", "io.k8s.api.core.v1.NamespaceCondition",
        "io.k8s.api.core.v1.NodeAddress", "io.k8s.api.core.v1.NodeCondition",
        "io.k8s.api.core.v1.PersistentVolumeClaimCondition", "io.k8s.api.core.v1.PodCondition",
        "io.k8s.api.core.v1.ReplicationControllerCondition",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
         "CustomResourceDefinitionCondition"),
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceCondition")},
    **{d: {"name": ""} for d in (
        "io.k8s.api.core.v1.Container", "io.k8s.api.core.v1.EnvVar",
        "io.k8s.api.core.v1.EphemeralContainer", "io.k8s.api.core.v1.LocalObjectReference",
        "io.k8s.api.core.v1.PodResourceClaim", "io.k8s.api.core.v1.PodResourceClaimStatus",
        "io.k8s.api.core.v1.PodSchedulingGate", "io.k8s.api.core.v1.ResourceClaim",
        "io.k8s.api.core.v1.ResourceStatus", "io.k8s.api.core.v1.Volume",
        "io.k8s.api.storage.v1.CSINodeDriver",
        "io.k8s.api.admissionregistration.v1.MatchCondition",
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "io.k8s.api.admissionregistration.v1.Variable")},
    "io.k8s.api.core.v1.HostAlias": {"ip": ""},
    "io.k8s.api.core.v1.PodIP": {"ip": ""},
    "io.k8s.api.core.v1.TopologySpreadConstraint": {"topologyKey": "", "whenUnsatisfiable": ""},
    "io.k8s.api.core.v1.VolumeDevice": {"devicePath": ""},
    "io.k8s.api.core.v1.VolumeMount": {"mountPath": ""},
    "io.k8s.api.core.v1.VolumeMountStatus": {"mountPath": ""},
    "io.k8s.api.core.v1.ResourceHealth": {"resourceID": ""},
    "io.k8s.api.resource.v1.AllocatedDeviceStatus": {"device": "", "driver": "", "pool": ""},
    "io.k8s.api.resource.v1.ResourceClaimConsumerReference": {"uid": ""},
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ValidationRule": {"rule": ""},
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {"uid": ""},
}


@dataclass(eq=False)
class Atom:
    kind: str                                  # "scalar" | "map" | "list" | "deduced"
    atomic: bool = False                       # maps and lists: replaced as a whole
    fields: dict[str, Any] = field(default_factory=dict)   # map: named field -> node
    element: Any = None                        # map: other keys' node; list: item node
    list_type: str = ""                        # "atomic" | "set" | "map"
    keys: tuple[str, ...] = ()                 # list_type "map": the key fields
    key_defaults: dict[str, Any] = field(default_factory=dict)  # of key fields, by name
    scalar: str = ""                           # "string" | "numeric" | "boolean"; "": untyped

    def field_node(self, name: str) -> Any:
        """The node of a map key: its named field, else the element type (None: unknown)."""
        node = self.fields.get(name)
        return node if node is not None else self.element


SCALAR = Atom("scalar")
STRING = Atom("scalar", scalar="string")
NUMERIC = Atom("scalar", scalar="numeric")
BOOLEAN = Atom("scalar", scalar="boolean")
DEDUCED = Atom("deduced")
UNTYPED_ATOMIC = Atom("scalar")      # any JSON value, owned and replaced whole


class TypeSchema:
    """The atoms of one kind's schema, resolved lazily from OpenAPI nodes."""

    def __init__(self, root: Mapping[str, Any], definitions: Mapping[str, Any]) -> None:
        self.root = root
        self.definitions = definitions
        self._cache: dict[int, tuple[Any, Atom]] = {}

    def resolve(self, node: Any) -> Atom:
        if node is None:
            return DEDUCED
        hit = self._cache.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        atom = self._build(node)
        self._cache[id(node)] = (node, atom)
        return atom

    def _deref(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """The definition a node refers to (``$ref`` or a one-item ``allOf``), with the
        node's own extensions taking precedence."""
        ref = node.get("$ref")
        if ref is None:
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                ref = all_of[0].get("$ref")
        if not isinstance(ref, str):
            return node
        target = self.definitions.get(ref.removeprefix(REF_PREFIX))
        if target is None:
            return _DEDUCED_NODE
        target = self._deref(target)
        own = {k: v for k, v in node.items() if k.startswith("x-kubernetes-")}
        return {**target, **own} if own else target

    def _build(self, node: Mapping[str, Any]) -> Atom:
        node = self._deref(node)
        if node.get("x-kubernetes-int-or-string") or node.get("format") == "int-or-string":
            return SCALAR
        typ = node.get("type")
        props = node.get("properties")
        add = node.get("additionalProperties")
        if typ == "array" or "items" in node:
            return self._list(node)
        if props or isinstance(add, dict):
            element = add if isinstance(add, dict) else (
                _DEDUCED_NODE if node.get("x-kubernetes-preserve-unknown-fields") else None)
            return Atom("map", atomic=node.get("x-kubernetes-map-type") == "atomic",
                        fields=dict(props or {}), element=element)
        if typ == "object":
            if node.get("x-kubernetes-preserve-unknown-fields"):
                return DEDUCED      # the value decides
            # an object without a schema of its own (RawExtension: a ControllerRevision's
            # data) is one atomic value, as schemaconv makes it
            return UNTYPED_ATOMIC
        if typ in _SCALAR_TYPES:
            # as kube-openapi's schemaconv: a string with a format (date-time...) is untyped
            if typ == "string":
                return STRING if node.get("format", "") in ("", "byte") else SCALAR
            return BOOLEAN if typ == "boolean" else NUMERIC
        return DEDUCED

    def _list(self, node: Mapping[str, Any]) -> Atom:
        items = node.get("items")
        element = items if isinstance(items, dict) else _DEDUCED_NODE
        list_type = node.get("x-kubernetes-list-type")
        keys: tuple[str, ...] = ()
        if list_type == "map":
            keys = tuple(node.get("x-kubernetes-list-map-keys") or ())
        elif list_type not in ("atomic", "set"):
            strategy = node.get("x-kubernetes-patch-strategy") or ""
            merge_key = node.get("x-kubernetes-patch-merge-key")
            if "merge" in strategy.split(","):
                list_type, keys = ("map", (merge_key,)) if merge_key else ("set", ())
            else:
                list_type = "atomic"
        return Atom("list", atomic=list_type == "atomic", element=element,
                    list_type=list_type, keys=keys, key_defaults=self._key_defaults(element, keys))

    def _key_defaults(self, element: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        if not keys:
            return {}
        ref = _ref_name(element)
        if ref is not None and ref in BUILTIN_KEY_DEFAULTS:
            return {k: v for k, v in BUILTIN_KEY_DEFAULTS[ref].items() if k in keys}
        props = self._deref(element).get("properties") or {}
        return {k: props[k]["default"] for k in keys
                if isinstance(props.get(k), dict) and "default" in props[k]}


def _ref_name(node: Mapping[str, Any]) -> str | None:
    ref = node.get("$ref")
    if ref is None:
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            ref = all_of[0].get("$ref")
    return ref[len(REF_PREFIX):] if isinstance(ref, str) and ref.startswith(REF_PREFIX) else None


@lru_cache(maxsize=1)
def _gvk_index() -> Mapping[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in builtin_schemas().items():
        for e in schema.get("x-kubernetes-group-version-kind") or ():
            out.setdefault((e.get("group", ""), e["version"], e["kind"]), name)
    return out


@lru_cache(maxsize=256)
def for_builtin(group: str, version: str, kind: str) -> TypeSchema | None:
    """The schema of a built-in kind (None when pykcm ships no definition for it)."""
    name = _gvk_index().get((group, version, kind))
    if name is None:
        return None
    defs = builtin_schemas()
    return TypeSchema(defs[name], defs)


def for_crd(open_api_v3_schema: Mapping[str, Any] | None) -> TypeSchema:
    """The schema of a custom resource version: its structural schema with the standard
    ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) at the root, as the CRD
    OpenAPI builder adds them."""
    root = dict(open_api_v3_schema or {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True})
    props = dict(root.get("properties") or {})
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"$ref": REF_PREFIX + OBJECT_META}
    root["properties"] = props
    root.setdefault("type", "object")
    return TypeSchema(root, builtin_schemas())
