"""OpenAPI v3 documents (`/openapi/v3`) and server-side field validation.

kubectl downloads these documents before it writes anything (with its default
`--validate=strict`):

- `GET /openapi/v3` is an index, one entry per group-version with the URL of
  its document; the URL carries a hash of the document so clients cache it
  for good and refetch only when it changes (a custom resource added);
- a group-version document (`/openapi/v3/apis/apps/v1?hash=...`) lists every
  path the server serves with its operations. kubectl looks for the PATCH
  operation of a kind (found by `x-kubernetes-group-version-kind`) and its
  `fieldValidation` query parameter: present, kubectl sends
  `?fieldValidation=Strict` and leaves unknown fields to the server; the PATCH
  request body's content types tell it whether strategic merge patch works
  (built-in kinds) or only JSON merge patch (custom resources);
- `components.schemas` holds the definitions: `kubectl apply` computes its
  three-way strategic merge patch from their `x-kubernetes-patch-*`
  extensions, `kubectl explain` prints their descriptions.

The built-in definitions come from `_data/openapi_defs.json.gz`, generated
from Kubernetes v1.36's OpenAPI by `tools/gen_openapi.py`. Paths are built
from the `ResourceRegistry`, so a resource served is a resource documented;
custom resources add their schema with `OpenAPI.add_custom`.

Field validation: `OpenAPI.unknown_fields` walks an object against the
schema of its kind and returns the paths kube-apiserver's strict decoder
reports (`spec.template.spec.containers[0].foo`). Each definition is compiled
once into a small tree of known-field sets, so a check is one dict lookup per
field of the object.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Final

import orjson

from pykcm.api.resources import ALL_VERBS, ResourceInfo, ResourceRegistry
from pykcm.apiserver import errors
from pykcm.apiserver.errors import StatusError

DATA_PATH: Final = Path(__file__).resolve().parent.parent / "_data" / "openapi_defs.json.gz"
REF_PREFIX: Final = "#/components/schemas/"
OPENAPI_PREFIX: Final = "/openapi/v3"
PROTOBUF_OPENAPI: Final = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META: Final = META + "ObjectMeta"
LIST_META: Final = META + "ListMeta"
STATUS: Final = META + "Status"
DELETE_OPTIONS: Final = META + "DeleteOptions"
WATCH_EVENT: Final = META + "WatchEvent"
PATCH: Final = META + "Patch"
API_RESOURCE_LIST: Final = META + "APIResourceList"
SCALE: Final = "io.k8s.api.autoscaling.v1.Scale"
BINDING: Final = "io.k8s.api.core.v1.Binding"
EVICTION: Final = "io.k8s.api.policy.v1.Eviction"
TOKEN_REQUEST: Final = "io.k8s.api.authentication.v1.TokenRequest"
# The meta types every group-version document carries.
_DOC_META_TYPES: Final = (API_RESOURCE_LIST, DELETE_OPTIONS, PATCH, STATUS, WATCH_EVENT)

FIELD_VALIDATION_IGNORE: Final = "Ignore"
FIELD_VALIDATION_WARN: Final = "Warn"
FIELD_VALIDATION_STRICT: Final = "Strict"

_APIVERSION_DESC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#resources")
_KIND_DESC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds")
_METADATA_DESC = (
    "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#metadata")
_LIST_METADATA_DESC = (
    "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#types-kinds")


# -- the built-in definitions ---------------------------------------------------------------


@lru_cache(maxsize=1)
def builtin_schemas() -> Mapping[str, dict[str, Any]]:
    """The built-in OpenAPI v3 definitions by name (loaded once; treat as read-only)."""
    data = orjson.loads(gzip.decompress(DATA_PATH.read_bytes()))
    schemas: dict[str, dict[str, Any]] = data["schemas"]
    return schemas


@lru_cache(maxsize=1)
def _builtin_gvk_index() -> Mapping[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in builtin_schemas().items():
        for e in schema.get("x-kubernetes-group-version-kind") or ():
            out.setdefault((e.get("group", ""), e["version"], e["kind"]), name)
    return out


def _refs(schema: Any, out: set[str]) -> set[str]:
    """Names of the definitions a schema refers to directly."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            out.add(ref[len(REF_PREFIX):])
        for k, v in schema.items():
            if k in ("properties", "patternProperties", "definitions"):
                if isinstance(v, dict):
                    for sub in v.values():
                        _refs(sub, out)
            elif isinstance(v, (dict, list)) and not k.startswith("x-kubernetes-") and k not in (
                    "enum", "default", "example", "required"):
                _refs(v, out)
    elif isinstance(schema, list):
        for v in schema:
            _refs(v, out)
    return out


@cache
def _builtin_refs(name: str) -> frozenset[str]:
    schema = builtin_schemas().get(name)
    return frozenset(_refs(schema, set())) if schema is not None else frozenset()


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF_PREFIX + name}


def _ref_with(name: str, **siblings: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"allOf": [_ref(name)]}
    out.update(siblings)
    return out


def custom_schema_name(group: str, version: str, kind: str) -> str:
    """Upstream's definition name for a custom resource: the group's labels reversed."""
    return ".".join([*reversed(group.split(".")), version, kind])


# -- compiled field trees (unknown-field detection) -------------------------------------------

# `_Node.extra` when a struct admits no other keys than its properties.
_CLOSED: Final = object()


class _Node:
    """What a JSON value may contain: a struct's fields, a map's values, a list's items.

    `props[name]` is the node of that field, None when nothing inside it is
    checked (scalars, free-form JSON). `extra` is `_CLOSED` (unknown keys are
    reported), None (any key, unchecked: maps of scalars, preserved unknown
    fields) or the node of every other key's value (a map of structs). `items`
    is set for lists.
    """

    __slots__ = ("extra", "items", "props")

    def __init__(self) -> None:
        self.props: dict[str, _Node | None] = {}
        self.extra: object = _CLOSED
        self.items: _Node | None = None


def _walk(node: _Node, value: Any, path: str, out: list[str],
          doomed: list[tuple[dict[str, Any], str]] | None) -> None:
    """Append the unknown fields under `value` to `out` (and their places to `doomed`)."""
    items = node.items
    if items is not None:
        if type(value) is list:
            for i, v in enumerate(value):
                tv = type(v)
                if tv is dict or tv is list:
                    _walk(items, v, f"{path}[{i}]", out, doomed)
        return
    if type(value) is not dict:
        return
    props = node.props
    extra = node.extra
    for k, v in value.items():
        child = props.get(k, _CLOSED)
        if child is _CLOSED:
            if extra is _CLOSED:
                out.append(f"{path}.{k}" if path else k)
                if doomed is not None:
                    doomed.append((value, k))
                continue
            child = extra
        if child is not None:
            tv = type(v)
            if tv is dict or tv is list:
                _walk(child, v, f"{path}.{k}" if path else k, out,  # type: ignore[arg-type]
                      doomed)


class _Compiler:
    """Compiles OpenAPI v3 schemas into `_Node` trees; definitions are memoized.

    Built-in definitions (`structural=False`): an object schema without
    properties or additionalProperties is free-form JSON (RawExtension,
    FieldsV1). Custom resource schemas (`structural=True`) follow
    apiextensions' pruning instead: such an object keeps no field at all, only
    `x-kubernetes-preserve-unknown-fields` keeps unknown ones.
    """

    def __init__(self, lookup: Mapping[str, dict[str, Any]], structural: bool = False) -> None:
        self.lookup = lookup
        self.structural = structural
        self.memo: dict[str, _Node | None] = {}

    def definition(self, name: str) -> _Node | None:
        if name in self.memo:
            return self.memo[name]
        schema = self.lookup.get(name)
        if schema is None:
            self.memo[name] = None
            return None
        if not _checks_anything(schema, self.structural):
            self.memo[name] = None
            return None
        node = _Node()
        self.memo[name] = node  # before filling: definitions may be recursive
        self._fill(node, schema)
        return node

    def schema(self, schema: Any) -> _Node | None:
        if not isinstance(schema, dict):
            return None
        ref = _single_ref(schema)
        if ref is not None:
            return self.definition(ref)
        if not _checks_anything(schema, self.structural):
            return None
        node = _Node()
        self._fill(node, schema)
        if node.items is None and not node.props and node.extra is None:
            return None
        return node

    def _fill(self, node: _Node, schema: dict[str, Any]) -> None:
        ref = _single_ref(schema)
        if ref is not None:  # a definition that is an alias of another
            target = self.definition(ref)
            if target is not None:
                node.props, node.extra, node.items = target.props, target.extra, target.items
            else:
                node.extra = None
            return
        items = schema.get("items")
        if items is not None and "properties" not in schema:
            child = self.schema(items)
            if child is None:
                # A list of scalars: nothing to check; an empty struct that
                # admits anything stands for it.
                node.extra = None
            else:
                node.items = child
            return
        props = schema.get("properties")
        if isinstance(props, dict):
            for k, sub in props.items():
                node.props[k] = self.schema(sub)
        if schema.get("x-kubernetes-embedded-resource"):
            node.props.setdefault("apiVersion", None)
            node.props.setdefault("kind", None)
            node.props["metadata"] = self.definition(OBJECT_META)
        addl = schema.get("additionalProperties")
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            node.extra = None
        elif addl is True:
            # Structural: any key, but an object under it keeps no field (apiextensions
            # prunes with a nil schema there); built-in: free-form.
            node.extra = _Node() if self.structural else None
        elif isinstance(addl, dict):
            node.extra = self.schema(addl)
        elif (not self.structural and not isinstance(props, dict)
              and not schema.get("x-kubernetes-embedded-resource")):
            node.extra = None  # a built-in object without declared fields holds free-form JSON


def _single_ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None:
        all_of = schema.get("allOf")
        if (isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict)
                and "properties" not in schema and "items" not in schema):
            ref = all_of[0].get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        return ref[len(REF_PREFIX):]
    return None


def _checks_anything(schema: dict[str, Any], structural: bool = False) -> bool:
    """False for schemas under which no field can be unknown (scalars, free-form JSON)."""
    if _single_ref(schema) is not None:
        return True
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema and (
            "items" not in schema) and not isinstance(schema.get("additionalProperties"), dict):
        return False
    if structural:
        return True
    if "properties" in schema or "items" in schema or schema.get(
            "x-kubernetes-embedded-resource"):
        return True
    return isinstance(schema.get("additionalProperties"), dict)


@lru_cache(maxsize=1)
def _builtin_compiler() -> _Compiler:
    """Every built-in definition compiled up front: afterwards `memo` is only read."""
    compiler = _Compiler(builtin_schemas())
    for name in builtin_schemas():
        compiler.definition(name)
    return compiler


# -- paths and operations ------------------------------------------------------------------------


def _query(name: str, description: str, type_: str = "string") -> dict[str, Any]:
    p: dict[str, Any] = {"in": "query", "name": name,
                         "schema": {"type": type_, "uniqueItems": True}}
    if description:
        p["description"] = description
    return p


_P_PRETTY = _query("pretty", "If 'true', then the output is pretty printed. Defaults to 'false' "
                   "unless the user-agent indicates a browser or command-line HTTP tool (curl and "
                   "wget).")
_P_NAMESPACE = {"description": "object name and auth scope, such as for teams and projects",
                "in": "path", "name": "namespace", "required": True,
                "schema": {"type": "string", "uniqueItems": True}}
_P_DRY_RUN = _query("dryRun", "When present, indicates that modifications should not be "
                    "persisted. An invalid or unrecognized dryRun directive will result in an "
                    "error response and no further processing of the request. Valid values are: "
                    "- All: all dry run stages will be processed")
_FM = ("fieldManager is a name associated with the actor or entity that is making these "
       "changes. The value must be less than or 128 characters long, and only contain printable "
       "characters, as defined by https://golang.org/pkg/unicode/#IsPrint.")
_P_FIELD_MANAGER = _query("fieldManager", _FM)
_P_FIELD_MANAGER_PATCH = _query(
    "fieldManager", _FM + " This field is required for apply requests (application/apply-patch) "
    "but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).")
_P_FIELD_VALIDATION = _query(
    "fieldValidation", "fieldValidation instructs the server on how to handle objects in the "
    "request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - "
    "Ignore: This will ignore any unknown fields that are silently dropped from the object, and "
    "will ignore all but the last duplicate field that the decoder encounters. This is the "
    "default behavior prior to v1.23. - Warn: This will send a warning via the standard warning "
    "response header for each unknown field that is dropped from the object, and for each "
    "duplicate field that is encountered. The request will still succeed if there are no other "
    "errors, and will only persist the last of any duplicate fields. This is the default in "
    "v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields "
    "would be dropped from the object, or if any duplicate fields are present. The error "
    "returned from the server will contain all unknown and duplicate fields encountered.")
_P_FORCE = _query("force", "Force is going to \"force\" Apply requests. It means user will "
                  "re-acquire conflicting fields owned by other people. Force flag must be unset "
                  "for non-apply patch requests.", "boolean")
_P_GRACE = _query("gracePeriodSeconds", "The duration in seconds before the object should be "
                  "deleted. Value must be non-negative integer. The value zero indicates delete "
                  "immediately. If this value is nil, the default grace period for the specified "
                  "type will be used. Defaults to a per object value if not specified. zero means "
                  "delete immediately.", "integer")
_P_ORPHAN = _query("orphanDependents", "Deprecated: please use the PropagationPolicy, this field "
                   "will be deprecated in 1.7. Should the dependent objects be orphaned. If "
                   "true/false, the \"orphan\" finalizer will be added to/removed from the "
                   "object's finalizers list. Either this field or PropagationPolicy may be set, "
                   "but not both.", "boolean")
_P_PROPAGATION = _query("propagationPolicy", "Whether and how garbage collection will be "
                        "performed. Either this field or OrphanDependents may be set, but not "
                        "both. The default policy is decided by the existing finalizer set in the "
                        "metadata.finalizers and the resource-specific default policy. Acceptable "
                        "values are: 'Orphan' - orphan the dependents; 'Background' - allow the "
                        "garbage collector to delete the dependents in the background; "
                        "'Foreground' - a cascading policy that deletes all dependents in the "
                        "foreground.")
_RV_DESC = ("resourceVersion sets a constraint on what resource versions a request may be served "
            "from. See https://kubernetes.io/docs/reference/using-api/api-concepts/"
            "#resource-versions for details.\n\nDefaults to unset")
_LIST_PARAMS: tuple[dict[str, Any], ...] = (
    _query("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type "
           "\"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and "
           "bookmarks are sent at the server's discretion. Clients should not assume bookmarks "
           "are returned at any specific interval, nor may they assume the server will send any "
           "BOOKMARK event during a session. If this is not a watch, this field is ignored.",
           "boolean"),
    _query("continue", "The continue option should be set when retrieving more results from the "
           "server. Since this value is server defined, clients may only use the continue value "
           "from a previous query result with identical query parameters (except for the value "
           "of continue) and the server may reject a continue value it does not recognize. If "
           "the specified continue value is no longer valid whether due to expiration (generally "
           "five to fifteen minutes) or a configuration change on the server, the server will "
           "respond with a 410 ResourceExpired error together with a continue token."),
    _query("fieldSelector", "A selector to restrict the list of returned objects by their "
           "fields. Defaults to everything."),
    _query("labelSelector", "A selector to restrict the list of returned objects by their "
           "labels. Defaults to everything."),
    _query("limit", "limit is a maximum number of responses to return for a list call. If more "
           "items exist, the server will set the `continue` field on the list metadata to a "
           "value that can be used with the same initial query to retrieve the next set of "
           "results.", "integer"),
    _query("resourceVersion", _RV_DESC),
    _query("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is "
           "applied to list calls. It is highly recommended that resourceVersionMatch be set for "
           "list calls where resourceVersion is set See https://kubernetes.io/docs/reference/"
           "using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    _query("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`. "
           "In that case, the watch stream will begin with synthetic events to produce the "
           "current state of objects in the collection. Once all such events have been sent, a "
           "synthetic \"Bookmark\" event will be sent. The bookmark will report the "
           "ResourceVersion (RV) corresponding to the set of objects, and be marked with "
           "`\"k8s.io/initial-events-end\": \"true\"` annotation.", "boolean"),
    _query("timeoutSeconds", "Timeout for the list/watch call. This limits the duration of the "
           "call, regardless of any activity or inactivity.", "integer"),
    _query("watch", "Watch for changes to the described resources and return them as a stream of "
           "add, update, and remove notifications. Specify resourceVersion.", "boolean"),
)
_DELETE_COLLECTION_PARAMS: tuple[dict[str, Any], ...] = (
    _P_DRY_RUN, _P_GRACE, _P_ORPHAN, _P_PROPAGATION,
    *(p for p in _LIST_PARAMS if p["name"] not in ("allowWatchBookmarks", "watch")),
)
_WRITE_PARAMS = (_P_DRY_RUN, _P_FIELD_MANAGER, _P_FIELD_VALIDATION)
_PATCH_PARAMS = (_P_DRY_RUN, _P_FIELD_MANAGER_PATCH, _P_FIELD_VALIDATION, _P_FORCE)
_DELETE_PARAMS = (_P_DRY_RUN, _P_GRACE, _P_ORPHAN, _P_PROPAGATION)

_PATCH_TYPES_BUILTIN = ("application/apply-patch+yaml", "application/json-patch+json",
                        "application/merge-patch+json", "application/strategic-merge-patch+json")
# Custom resources take no strategic merge patch; kubectl then sends a JSON merge patch.
_PATCH_TYPES_CUSTOM = ("application/apply-patch+yaml", "application/json-patch+json",
                       "application/merge-patch+json")
_RESPONSE_TYPES = ("application/json", "application/yaml")
_STREAM_TYPES = ("application/json", "application/json;stream=watch", "application/yaml")


def _content(name: str, types: Iterable[str] = _RESPONSE_TYPES) -> dict[str, Any]:
    return {t: {"schema": _ref(name)} for t in types}


def _responses(name: str, *codes: tuple[str, str],
               types: Iterable[str] = _RESPONSE_TYPES) -> dict[str, Any]:
    return {code: {"content": _content(name, types), "description": text}
            for code, text in codes}


_OK = ("200", "OK")
_CREATED = ("201", "Created")
_ACCEPTED = ("202", "Accepted")


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.replace("-", ".").split(".") if p)


def _group_camel(group: str) -> str:
    """`apps` -> Apps, `coordination.k8s.io` -> Coordination, "" -> Core (operation ids)."""
    if not group:
        return "Core"
    group = group.removesuffix(".k8s.io")
    return _camel(group)


def _tag(group: str, version: str) -> str:
    camel = _group_camel(group)
    return f"{camel[:1].lower()}{camel[1:]}_{version}"


def gv_path(group: str, version: str) -> str:
    """The index key (and URL tail) of a group-version document: `api/v1`, `apis/apps/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


@dataclass(frozen=True, slots=True)
class _Res:
    """One resource as its document describes it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...]
    schema: str
    list_schema: str
    custom: bool


@dataclass(slots=True)
class _Custom:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...]
    schemas: dict[str, dict[str, Any]]  # the kind's and its list's definitions
    node: _Node | None


@dataclass(frozen=True, slots=True)
class OpenAPIResponse:
    """An HTTP answer for an `/openapi/v3...` request (framework independent)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


# -- the service ---------------------------------------------------------------------------------


class OpenAPI:
    """The `/openapi/v3` index and documents of a registry, and field validation.

    Documents are built on first request and cached until the resources of
    their group-version change (registry or `add_custom`/`remove_custom`).
    """

    def __init__(self, registry: ResourceRegistry, *, server_version: str = "v1.36.0") -> None:
        self.registry = registry
        self.server_version = server_version
        self._schemas = builtin_schemas()
        self._gvk = _builtin_gvk_index()
        self._custom: dict[tuple[str, str, str], _Custom] = {}  # (group, version, plural)
        self._custom_gen: dict[tuple[str, str], int] = {}
        # gv path -> (signature of its resources, document bytes, hash)
        self._docs: dict[str, tuple[Any, bytes, str]] = {}
        self._gz: dict[str, tuple[str, bytes]] = {}  # gv path -> (hash, gzipped document)
        self._lock = threading.RLock()

    # -- custom resources ------------------------------------------------------------------

    def add_custom(self, group: str, version: str, plural: str, kind: str, namespaced: bool,
                   schema: Mapping[str, Any] | None,
                   subresources: Iterable[str] | Mapping[str, Any] | None = None) -> None:
        """Publish a custom resource version with its CRD's `openAPIV3Schema`.

        `subresources` is the CRD version's `subresources` object (or just
        the names: "status", "scale"). Replaces an earlier schema of the same
        group/version/plural; the group-version document and hash change.
        """
        subs = tuple(sorted(subresources or ()))
        name = custom_schema_name(group, version, kind)
        published = _custom_published_schema(group, version, kind, schema)
        list_schema = {
            "description": f"{kind}List is a list of {kind}",
            "properties": {
                "apiVersion": {"description": _APIVERSION_DESC, "type": "string"},
                "items": {"description": "List of " + plural + ". More info: "
                          "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                          "api-conventions.md", "items": _ref(name), "type": "array"},
                "kind": {"description": _KIND_DESC, "type": "string"},
                "metadata": _ref_with(LIST_META, description=_LIST_METADATA_DESC),
            },
            "required": ["items"],
            "type": "object",
            "x-kubernetes-group-version-kind": [
                {"group": group, "kind": kind + "List", "version": version}],
        }
        # Validation compiles the schema as given (plus the implicit root
        # fields), with ObjectMeta resolved from the built-in definitions.
        lookup = dict(self._schemas)
        lookup[name] = published
        compiler = _Compiler(lookup, structural=True)
        compiler.memo.update(_builtin_compiler().memo)
        compiler.memo.pop(name, None)
        node = compiler.definition(name)
        with self._lock:
            self._custom[(group, version, plural)] = _Custom(
                group, version, plural, kind, namespaced, subs,
                {name: published, name + "List": list_schema}, node)
            self._bump(group, version)

    def remove_custom(self, group: str, version: str, plural: str) -> None:
        with self._lock:
            if self._custom.pop((group, version, plural), None) is not None:
                self._bump(group, version)

    def _bump(self, group: str, version: str) -> None:
        self._custom_gen[(group, version)] = self._custom_gen.get((group, version), 0) + 1

    # -- resources and documents -------------------------------------------------------------

    def group_versions(self) -> list[str]:
        """Index keys of every group-version served, sorted."""
        gvs = {gv_path(r.group, r.version) for r in self.registry.all()}
        with self._lock:
            gvs.update(gv_path(g, v) for (g, v, _) in self._custom)
        return sorted(gvs)

    def _resources(self, gv: str) -> list[_Res]:
        out: dict[str, _Res] = {}
        with self._lock:
            customs = [c for c in self._custom.values() if gv_path(c.group, c.version) == gv]
        for r in self.registry.all():
            if gv_path(r.group, r.version) != gv:
                continue
            name = self._gvk.get((r.group, r.version, r.kind))
            list_name = self._gvk.get((r.group, r.version, r.list_kind))
            if name is None or (list_name is None and r.stored):
                continue  # unknown to the definitions and not added as custom: placeholder below
            # the reviews are never listed: no List kind
            out[r.plural] = _Res(r.group, r.version, r.plural, r.kind, r.namespaced, r.verbs,
                                 r.subresources, name, list_name or name, False)
        for c in customs:
            name = custom_schema_name(c.group, c.version, c.kind)
            reg = self.registry.get(c.group, c.version, c.plural)
            out[c.plural] = _Res(c.group, c.version, c.plural, c.kind, c.namespaced,
                                 reg.verbs if reg is not None else ALL_VERBS, c.subresources,
                                 name, name + "List", True)
        for r in self.registry.all():
            if gv_path(r.group, r.version) == gv and r.plural not in out:
                # A registered kind without a definition: a permissive schema keeps the
                # document well-formed and validation silent.
                name = custom_schema_name(r.group, r.version, r.kind)
                out[r.plural] = _Res(r.group, r.version, r.plural, r.kind, r.namespaced,
                                     r.verbs, r.subresources, name, name + "List", True)
        return [out[k] for k in sorted(out)]

    def _signature(self, gv: str) -> Any:
        regs = tuple(sorted((r for r in self.registry.all()
                             if gv_path(r.group, r.version) == gv),
                            key=lambda r: r.plural))
        parts = gv.split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        with self._lock:
            gen = self._custom_gen.get((group, version), 0)
        return (regs, gen)

    def _entry(self, gv: str) -> tuple[bytes, str] | None:
        parts = gv.strip("/").split("/")
        if not ((len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and
                                                            parts[0] == "apis")):
            return None
        gv = "/".join(parts)
        sig = self._signature(gv)
        with self._lock:
            cached = self._docs.get(gv)
            if cached is not None and cached[0] == sig:
                return cached[1], cached[2]
        resources = self._resources(gv)
        if not resources:
            return None
        doc = self._build(gv, resources)
        body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha512(body).hexdigest().upper()
        with self._lock:
            self._docs[gv] = (sig, body, digest)
        return body, digest

    def document(self, group_version_path: str) -> bytes | None:
        """The JSON document of `api/v1`, `apis/apps/v1`, ...; None if nothing is served there."""
        entry = self._entry(group_version_path)
        return entry[0] if entry is not None else None

    def document_hash(self, group_version_path: str) -> str | None:
        """The document's hash: upper-case hex SHA-512 of its bytes (upstream's ETag)."""
        entry = self._entry(group_version_path)
        return entry[1] if entry is not None else None

    def document_gzip(self, group_version_path: str) -> bytes | None:
        """The document gzipped (cached with it), for clients sending Accept-Encoding: gzip."""
        entry = self._entry(group_version_path)
        if entry is None:
            return None
        body, digest = entry
        key = "/".join(p for p in group_version_path.split("/") if p)
        with self._lock:
            cached = self._gz.get(key)
            if cached is not None and cached[0] == digest:
                return cached[1]
        packed = gzip.compress(body, compresslevel=6, mtime=0)
        with self._lock:
            self._gz[key] = (digest, packed)
        return packed

    def index(self) -> dict[str, Any]:
        """`{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}`."""
        paths: dict[str, Any] = {}
        for gv in self.group_versions():
            entry = self._entry(gv)
            if entry is not None:
                paths[gv] = {"serverRelativeURL": f"{OPENAPI_PREFIX}/{gv}?hash={entry[1]}"}
        return {"paths": paths}

    def index_bytes(self) -> bytes:
        return orjson.dumps(self.index(), option=orjson.OPT_SORT_KEYS)

    # -- HTTP -------------------------------------------------------------------------------------

    def respond(self, path: str, query_hash: str | None = None, *, accept: str = "",
                accept_encoding: str = "", if_none_match: str = "") -> OpenAPIResponse:
        """Answer `GET /openapi/v3[/<gv path>]` as kube-apiserver does.

        - the index: 200 JSON, not cacheable;
        - a document with the current `?hash=`: 200 with `Cache-Control: public,
          immutable` and a one-year `Expires`; with a stale hash: 301 to the
          current URL; without a hash: 200, revalidated through its `ETag`;
        - `If-None-Match` with the current ETag: 304; only JSON is served (406
          for a protobuf-only Accept); gzip when the client accepts it;
        - unknown paths: 404 `404 page not found` (text/plain).
        """
        tail = path[len(OPENAPI_PREFIX):] if path.startswith(OPENAPI_PREFIX) else None
        if tail is None or (tail and not tail.startswith("/")):
            return _not_found()
        tail = tail.strip("/")
        if not _accepts_json(accept):
            return OpenAPIResponse(406, {"Content-Type": "text/plain; charset=utf-8"},
                                   b"406 Not Acceptable: only application/json is served\n")
        if not tail:
            return OpenAPIResponse(200, {"Content-Type": "application/json",
                                         "Cache-Control": "no-cache, private"},
                                   self.index_bytes())
        entry = self._entry(tail)
        if entry is None:
            return _not_found()
        body, digest = entry
        etag = f'"{digest}"'
        headers = {"Content-Type": "application/json", "Etag": etag,
                   "Vary": "Accept, Accept-Encoding"}
        if query_hash:
            if query_hash != digest:
                return OpenAPIResponse(301, {"Location": f"{OPENAPI_PREFIX}/{tail}?hash={digest}",
                                             "Content-Type": "text/plain; charset=utf-8"},
                                       b"")
            headers["Cache-Control"] = "public, immutable"
            headers["Expires"] = formatdate(time.time() + 365 * 86400, usegmt=True)
        else:
            headers["Cache-Control"] = "no-cache, private"
        if if_none_match and etag in [t.strip() for t in if_none_match.split(",")]:
            return OpenAPIResponse(304, {k: v for k, v in headers.items()
                                         if k != "Content-Type"}, b"")
        if "gzip" in accept_encoding.lower():
            packed = self.document_gzip(tail)
            if packed is not None:
                headers["Content-Encoding"] = "gzip"
                return OpenAPIResponse(200, headers, packed)
        return OpenAPIResponse(200, headers, body)

    # -- document construction ----------------------------------------------------------------

    def _build(self, gv: str, resources: list[_Res]) -> dict[str, Any]:
        group, version = resources[0].group, resources[0].version
        paths: dict[str, Any] = {}
        prefix = "/" + gv
        camel = _group_camel(group) + _camel(version)
        tag = _tag(group, version)
        paths[prefix + "/"] = {"get": {
            "description": "get available resources",
            "operationId": f"get{camel}APIResources",
            "responses": _responses(API_RESOURCE_LIST, _OK),
            "tags": [tag],
        }}
        roots: set[str] = set(_DOC_META_TYPES)
        extra_schemas: dict[str, dict[str, Any]] = {}
        with self._lock:
            customs = {(c.group, c.version, c.plural): c for c in self._custom.values()}
        for r in resources:
            roots.update((r.schema, r.list_schema))
            if r.custom:
                c = customs.get((r.group, r.version, r.plural))
                if c is not None:
                    extra_schemas.update(c.schemas)
                else:
                    extra_schemas.update(_placeholder_schemas(r))
            if "scale" in r.subresources:
                roots.add(SCALE)
            if "binding" in r.subresources:
                roots.add(BINDING)
            if "eviction" in r.subresources:
                roots.add(EVICTION)
            if "token" in r.subresources:
                roots.add(TOKEN_REQUEST)
            _resource_paths(paths, prefix, camel, tag, r)
        schemas = self._closure(roots, extra_schemas)
        return {
            "components": {
                "schemas": schemas,
                "securitySchemes": {"BearerToken": {
                    "description": "Bearer Token authentication", "in": "header",
                    "name": "authorization", "type": "apiKey"}},
            },
            "info": {"title": "Kubernetes", "version": self.server_version},
            "openapi": "3.0.0",
            "paths": paths,
            "security": [{"BearerToken": []}],
        }

    def _closure(self, roots: Iterable[str],
                 extra: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in out:
                continue
            schema = extra.get(name)
            if schema is not None:
                out[name] = schema
                todo.extend(_refs(schema, set()))
                continue
            builtin = self._schemas.get(name)
            if builtin is None:
                continue
            out[name] = builtin
            todo.extend(_builtin_refs(name))
        return out

    # -- field validation ------------------------------------------------------------------------

    def schema_name(self, group: str, version: str, kind: str) -> str | None:
        """The definition name of a kind (built-in or custom), or None."""
        with self._lock:
            for c in self._custom.values():
                if (c.group, c.version, c.kind) == (group, version, kind):
                    return custom_schema_name(group, version, kind)
        return self._gvk.get((group, version, kind))

    def _node(self, target: str | tuple[str, str, str]) -> _Node | None:
        if isinstance(target, tuple):
            group, version, kind = target
            with self._lock:
                for c in self._custom.values():
                    if (c.group, c.version, c.kind) == (group, version, kind):
                        return c.node
            name = self._gvk.get(target)
            if name is None:
                return None
        else:
            name = target.removeprefix(REF_PREFIX)
            with self._lock:
                for c in self._custom.values():
                    if name == custom_schema_name(c.group, c.version, c.kind):
                        return c.node
        return _builtin_compiler().memo.get(name)

    def unknown_fields(self, target: str | tuple[str, str, str], obj: Any) -> list[str]:
        """Paths of the fields of `obj` its schema does not declare, in document order.

        `target` is a definition name (`io.k8s.api.apps.v1.Deployment`, also
        as a `#/components/schemas/...` ref) or a (group, version, kind)
        tuple. Paths are as kube-apiserver's strict decoder reports them:
        `spec.foo`, `spec.template.spec.containers[0].foo`, `data.key.foo`
        for map values. Maps (`additionalProperties`),
        `x-kubernetes-preserve-unknown-fields`, free-form JSON (RawExtension,
        FieldsV1), embedded resources and `metadata` (ObjectMeta) are
        respected. An unknown target has no unknown fields.
        """
        node = self._node(target)
        if node is None:
            return []
        out: list[str] = []
        _walk(node, obj, "", out, None)
        return out

    def drop_unknown_fields(self, target: str | tuple[str, str, str], obj: Any) -> list[str]:
        """Remove the unknown fields from `obj` in place; their paths as `unknown_fields`.

        kube-apiserver never stores an unknown field: under Ignore and Warn
        the decoder drops them (Warn also reports them). Only dicts holding an
        unknown key are mutated; an object sharing subtrees with a stored one
        is safe as long as stored objects hold no unknown fields.
        """
        node = self._node(target)
        if node is None:
            return []
        out: list[str] = []
        doomed: list[tuple[dict[str, Any], str]] = []
        _walk(node, obj, "", out, doomed)
        for parent, key in doomed:
            parent.pop(key, None)
        return out

    def unknown_fields_for(self, res: ResourceInfo, obj: Any, subresource: str = "") -> list[str]:
        """`unknown_fields` of a request body for a resource (and subresource)."""
        return self.unknown_fields(_body_target(res, subresource), obj)

    def drop_unknown_fields_for(self, res: ResourceInfo, obj: Any,
                                subresource: str = "") -> list[str]:
        """`drop_unknown_fields` of a request body for a resource (and subresource)."""
        return self.drop_unknown_fields(_body_target(res, subresource), obj)


def _body_target(res: ResourceInfo, subresource: str) -> str | tuple[str, str, str]:
    if subresource == "scale":
        return SCALE
    if subresource == "binding":
        return BINDING
    if subresource == "eviction":
        return EVICTION
    if subresource == "token":
        return TOKEN_REQUEST
    return (res.group, res.version, res.kind)


def _not_found() -> OpenAPIResponse:
    return OpenAPIResponse(404, {"Content-Type": "text/plain; charset=utf-8",
                                 "X-Content-Type-Options": "nosniff"}, b"404 page not found\n")


def _accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    for part in accept.split(","):
        mt = part.split(";")[0].strip().lower()
        if mt in ("application/json", "application/*", "*/*", "*"):
            return True
    return False


def _custom_published_schema(group: str, version: str, kind: str,
                             schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A CRD's openAPIV3Schema as upstream publishes it: root and embedded resources get
    apiVersion, kind and an ObjectMeta metadata; the root gets its group-version-kind."""
    s: dict[str, Any] = copy.deepcopy(dict(schema)) if schema else {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    _add_embedded_fields(s, root=True)
    s.setdefault("type", "object")
    s["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return s


def _add_embedded_fields(s: Any, root: bool = False) -> None:
    if not isinstance(s, dict):
        return
    props = s.get("properties")
    if isinstance(props, dict):
        for sub in props.values():
            _add_embedded_fields(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(s.get(key), dict):
            _add_embedded_fields(s[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            for sub in s[key]:
                _add_embedded_fields(sub)
    if root or s.get("x-kubernetes-embedded-resource"):
        props = dict(props) if isinstance(props, dict) else {}
        props["apiVersion"] = {"description": _APIVERSION_DESC, "type": "string"}
        props["kind"] = {"description": _KIND_DESC, "type": "string"}
        props["metadata"] = _ref_with(OBJECT_META, description=_METADATA_DESC)
        s["properties"] = dict(sorted(props.items()))
        s.setdefault("type", "object")


def _placeholder_schemas(r: _Res) -> dict[str, dict[str, Any]]:
    kind = _custom_published_schema(r.group, r.version, r.kind, None)
    lst = {
        "properties": {
            "apiVersion": {"description": _APIVERSION_DESC, "type": "string"},
            "items": {"items": _ref(r.schema), "type": "array"},
            "kind": {"description": _KIND_DESC, "type": "string"},
            "metadata": _ref_with(LIST_META, description=_LIST_METADATA_DESC),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": r.group, "kind": r.kind + "List", "version": r.version}],
    }
    return {r.schema: kind, r.list_schema: lst}


def _gvk_ext(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _op(description: str, op_id: str, action: str, tag: str, gvk: dict[str, str],
        responses: dict[str, Any], params: Sequence[dict[str, Any]] = (),
        body: dict[str, Any] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"description": description, "operationId": op_id,
                          "responses": responses, "tags": [tag],
                          "x-kubernetes-action": action,
                          "x-kubernetes-group-version-kind": gvk}
    if params:
        op["parameters"] = list(params)
    if body is not None:
        op["requestBody"] = body
    return op


def _body(name: str, types: Iterable[str] = ("*/*",), required: bool = True) -> dict[str, Any]:
    b: dict[str, Any] = {"content": {t: {"schema": _ref(name)} for t in types}}
    if required:
        b["required"] = True
    return b


def _name_param(kind: str) -> dict[str, Any]:
    return {"description": f"name of the {kind}", "in": "path", "name": "name",
            "required": True, "schema": {"type": "string", "uniqueItems": True}}


def _resource_paths(paths: dict[str, Any], prefix: str, camel: str, tag: str, r: _Res) -> None:
    """Add the collection, object, subresource and watch paths of one resource."""
    verbs = set(r.verbs)
    kind = r.kind
    ns = "Namespaced" if r.namespaced else ""
    gvk = _gvk_ext(r.group, r.version, kind)
    coll = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else (
        f"{prefix}/{r.plural}")
    obj_path = coll + "/{name}"
    base_params: list[dict[str, Any]] = [_P_NAMESPACE] if r.namespaced else []
    patch_types = _PATCH_TYPES_CUSTOM if r.custom else _PATCH_TYPES_BUILTIN

    item: dict[str, Any] = {}
    if "list" in verbs:
        item["get"] = _op(f"list or watch objects of kind {kind}", f"list{camel}{ns}{kind}",
                          "list", tag, gvk, _responses(r.list_schema, _OK, types=_STREAM_TYPES),
                          _LIST_PARAMS)
    if "create" in verbs:
        item["post"] = _op(f"create {_article(kind)} {kind}", f"create{camel}{ns}{kind}", "post",
                           tag, gvk, _responses(r.schema, _OK, _CREATED, _ACCEPTED),
                           _WRITE_PARAMS, _body(r.schema))
    if "deletecollection" in verbs:
        item["delete"] = _op(f"delete collection of {kind}", f"delete{camel}Collection{ns}{kind}",
                             "deletecollection", tag, gvk, _responses(STATUS, _OK),
                             _DELETE_COLLECTION_PARAMS, _body(DELETE_OPTIONS, ("application/json",),
                                                              required=False))
    if item:
        item["parameters"] = [*base_params, _P_PRETTY]
        paths[coll] = item

    item = {}
    if "get" in verbs:
        item["get"] = _op(f"read the specified {kind}", f"read{camel}{ns}{kind}", "get", tag, gvk,
                          _responses(r.schema, _OK))
    if "update" in verbs:
        item["put"] = _op(f"replace the specified {kind}", f"replace{camel}{ns}{kind}", "put", tag,
                          gvk, _responses(r.schema, _OK, _CREATED), _WRITE_PARAMS,
                          _body(r.schema))
    if "patch" in verbs:
        item["patch"] = _op(f"partially update the specified {kind}", f"patch{camel}{ns}{kind}",
                            "patch", tag, gvk, _responses(r.schema, _OK, _CREATED),
                            _PATCH_PARAMS, _body(PATCH, patch_types))
    if "delete" in verbs:
        item["delete"] = _op(f"delete {_article(kind)} {kind}", f"delete{camel}{ns}{kind}",
                             "delete", tag, gvk, _responses(STATUS, _OK, _ACCEPTED),
                             _DELETE_PARAMS, _body(DELETE_OPTIONS, ("application/json",),
                                                   required=False))
    if item:
        item["parameters"] = [_name_param(kind), *base_params, _P_PRETTY]
        paths[obj_path] = item

    for sub in r.subresources:
        _subresource_path(paths, obj_path, camel, tag, r, sub, base_params, patch_types)

    if r.namespaced and "list" in verbs:
        paths[f"{prefix}/{r.plural}"] = {
            "get": _op(f"list or watch objects of kind {kind}",
                       f"list{camel}{kind}ForAllNamespaces", "list", tag, gvk,
                       _responses(r.list_schema, _OK, types=_STREAM_TYPES)),
            "parameters": [*_LIST_PARAMS, _P_PRETTY],
        }
    if "watch" in verbs:
        watch_coll = (f"{prefix}/watch/namespaces/{{namespace}}/{r.plural}" if r.namespaced
                      else f"{prefix}/watch/{r.plural}")
        paths[watch_coll] = {
            "get": _op(f"watch individual changes to a list of {kind}. deprecated: use the "
                       "'watch' parameter with a list operation instead.",
                       f"watch{camel}{ns}{kind}List", "watchlist", tag, gvk,
                       _responses(WATCH_EVENT, _OK, types=_STREAM_TYPES)),
            "parameters": [*_LIST_PARAMS, *base_params, _P_PRETTY],
        }
        paths[watch_coll + "/{name}"] = {
            "get": _op(f"watch changes to an object of kind {kind}. deprecated: use the 'watch' "
                       "parameter with a list operation instead, filtered to a single item with "
                       "the 'fieldSelector' parameter.", f"watch{camel}{ns}{kind}", "watch", tag,
                       gvk, _responses(WATCH_EVENT, _OK, types=_STREAM_TYPES)),
            "parameters": [*_LIST_PARAMS, _name_param(kind), *base_params, _P_PRETTY],
        }
        if r.namespaced:
            paths[f"{prefix}/watch/{r.plural}"] = {
                "get": _op(f"watch individual changes to a list of {kind}. deprecated: use the "
                           "'watch' parameter with a list operation instead.",
                           f"watch{camel}{kind}ListForAllNamespaces", "watchlist", tag, gvk,
                           _responses(WATCH_EVENT, _OK, types=_STREAM_TYPES)),
                "parameters": [*_LIST_PARAMS, _P_PRETTY],
            }


def _subresource_path(paths: dict[str, Any], obj_path: str, camel: str, tag: str, r: _Res,
                      sub: str, base_params: list[dict[str, Any]],
                      patch_types: Sequence[str]) -> None:
    kind = r.kind
    ns = "Namespaced" if r.namespaced else ""
    sub_camel = _camel(sub)
    item: dict[str, Any] = {}
    if sub in ("status", "scale", "approval"):  # (a CSR's approval reads and writes as status)
        if sub == "scale":
            schema, gvk = SCALE, _gvk_ext("autoscaling", "v1", "Scale")
        else:
            schema, gvk = r.schema, _gvk_ext(r.group, r.version, kind)
        item["get"] = _op(f"read {sub} of the specified {kind}",
                          f"read{camel}{ns}{kind}{sub_camel}", "get", tag, gvk,
                          _responses(schema, _OK))
        item["put"] = _op(f"replace {sub} of the specified {kind}",
                          f"replace{camel}{ns}{kind}{sub_camel}", "put", tag, gvk,
                          _responses(schema, _OK, _CREATED), _WRITE_PARAMS, _body(schema))
        item["patch"] = _op(f"partially update {sub} of the specified {kind}",
                            f"patch{camel}{ns}{kind}{sub_camel}", "patch", tag, gvk,
                            _responses(schema, _OK, _CREATED), _PATCH_PARAMS,
                            _body(PATCH, patch_types))
    elif sub == "binding":
        gvk = _gvk_ext("", "v1", "Binding")
        item["post"] = _op(f"create binding of {_article(kind)} {kind}",
                           f"create{camel}{ns}{kind}Binding", "post", tag, gvk,
                           _responses(BINDING, _OK, _CREATED, _ACCEPTED), _WRITE_PARAMS,
                           _body(BINDING))
    elif sub == "eviction":
        gvk = _gvk_ext("policy", "v1", "Eviction")
        item["post"] = _op(f"create eviction of {_article(kind)} {kind}",
                           f"create{camel}{ns}{kind}Eviction", "post", tag, gvk,
                           _responses(EVICTION, _OK, _CREATED, _ACCEPTED), _WRITE_PARAMS,
                           _body(EVICTION))
    elif sub == "token":
        gvk = _gvk_ext("authentication.k8s.io", "v1", "TokenRequest")
        item["post"] = _op(f"create token of {_article(kind)} {kind}",
                           f"create{camel}{ns}{kind}Token", "post", tag, gvk,
                           _responses(TOKEN_REQUEST, _OK, _CREATED, _ACCEPTED), _WRITE_PARAMS,
                           _body(TOKEN_REQUEST))
    elif sub == "finalize":
        gvk = _gvk_ext(r.group, r.version, kind)
        item["put"] = _op(f"replace finalize of the specified {kind}",
                          f"replace{camel}{ns}{kind}Finalize", "put", tag, gvk,
                          _responses(r.schema, _OK, _CREATED), _WRITE_PARAMS, _body(r.schema))
    else:
        return
    item["parameters"] = [_name_param(kind), *base_params, _P_PRETTY]
    paths[f"{obj_path}/{sub}"] = item


def _article(kind: str) -> str:
    return "an" if kind[:1] in "AEIOU" else "a"


# -- field validation messages and options -------------------------------------------------------


def parse_field_validation(value: str | None, options_kind: str = "CreateOptions") -> str:
    """The `fieldValidation` directive of a request: Ignore, Warn (the default) or Strict.

    An unsupported value raises upstream's 422 (`options_kind` is
    CreateOptions, UpdateOptions or PatchOptions).
    """
    if not value:
        return FIELD_VALIDATION_WARN
    if value in (FIELD_VALIDATION_IGNORE, FIELD_VALIDATION_WARN, FIELD_VALIDATION_STRICT):
        return value
    raise errors.invalid(options_kind, "meta.k8s.io", "", [{
        "reason": "FieldValueNotSupported", "field": "fieldValidation",
        "message": f'Unsupported value: "{value}": supported values: "", "Ignore", "Strict", '
                   '"Warn"'}])


def unknown_field_messages(unknown: Iterable[str]) -> list[str]:
    """`unknown field "spec.foo"` for each path: the Warn directive's warning texts."""
    return [f'unknown field "{_go_escape(p)}"' for p in unknown]


def strict_decoding_message(unknown: Iterable[str]) -> str:
    """`strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`."""
    return "strict decoding error: " + ", ".join(unknown_field_messages(unknown))


def field_validation_error(kind: str, unknown: Sequence[str], *,
                           version: str | None = None) -> str:
    """Upstream's message for unknown fields under the Strict directive.

    With `version` (the apiVersion's version of the body: create and update)
    the decoder's wrapping is included: `Deployment in version "v1" cannot
    be handled as a Deployment: strict decoding error: unknown field
    "spec.foo"`; without (patch) only the strict decoding error.
    """
    msg = strict_decoding_message(unknown)
    if version is None:
        return msg
    return f'{kind} in version "{version}" cannot be handled as {_a_kind(kind)}: {msg}'


def _a_kind(kind: str) -> str:
    # apimachinery's message is "cannot be handled as a %s" for every kind.
    return f"a {kind}"


def strict_error(kind: str, unknown: Sequence[str], *, version: str | None = None) -> StatusError:
    """The 400 BadRequest kube-apiserver answers for unknown fields under Strict."""
    return errors.bad_request(field_validation_error(kind, unknown, version=version))


def warning_header(text: str, code: int = 299, agent: str = "-") -> str:
    """A `Warning` header value: `299 - "unknown field \\"spec.foo\\""` (RFC 7234 quoting)."""
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'{code:03d} {agent} "{quoted}"'


def field_warning_headers(unknown: Iterable[str]) -> list[str]:
    """One `Warning` header value per unknown field (the Warn directive)."""
    return [warning_header(m) for m in unknown_field_messages(unknown)]


def _go_escape(s: str) -> str:
    # Go's %q of a field path; paths are plain text, so only quotes and backslashes matter.
    if '"' in s or "\\" in s:
        return s.replace("\\", "\\\\").replace('"', '\\"')
    return s


__all__ = [
    "FIELD_VALIDATION_IGNORE",
    "FIELD_VALIDATION_STRICT",
    "FIELD_VALIDATION_WARN",
    "OpenAPI",
    "OpenAPIResponse",
    "builtin_schemas",
    "custom_schema_name",
    "field_validation_error",
    "field_warning_headers",
    "gv_path",
    "parse_field_validation",
    "strict_decoding_message",
    "strict_error",
    "unknown_field_messages",
    "warning_header",
]
