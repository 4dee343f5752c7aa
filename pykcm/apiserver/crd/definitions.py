"""The CustomResourceDefinition kind's strategy: defaulting, validation, status.

Role: apiextensions-apiserver's ``apis/apiextensions/v1`` defaulting,
``apis/apiextensions/validation`` and ``registry/customresourcedefinition``
strategy, plus the part of the naming and establishing controllers the
embedded server does at once (it has no controllers running beside it).

Data flow, for a CRD write: :func:`default_crd` fills the v1 defaults in
place; :func:`validate_crd_create` / :func:`validate_crd_update` return
:class:`~pykcm.api.validation.Cause` values with upstream's field paths (the
server turns them into a 422 ``CustomResourceDefinition.apiextensions.k8s.io
"x" is invalid``); each version's ``openAPIV3Schema`` goes through
:func:`pykcm.apiserver.crd.schema.validate_structural`. The server then sets
the status with :func:`crd_status_on_accept` (``NamesAccepted`` and
``Established`` conditions, ``acceptedNames``, ``storedVersions``), using
:func:`names_conflict_reason` against the other CRDs of the group.

Paths follow upstream's internal version: per-version ``schema``,
``subresources``, ``additionalPrinterColumns`` and ``selectableFields`` that
are identical in every version are reported at the spec level
(``spec.validation.openAPIV3Schema``, ``spec.subresources``, ...), as the v1
to internal conversion moves them there.

Left out: the protected-group approval annotation (``*.k8s.io``), CEL rule
compilation and cost checks, the root-field restriction when the status
subresource is enabled, relaxations upstream grants to updates of already
non-conforming schemas, and ``deprecationWarning`` checks.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    NameValidator,
    duplicate,
    forbidden,
    go_quote,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    name_is_dns_subdomain,
    not_supported,
    required,
    too_many,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.crd.schema import (
    StructuralSchema,
    compile_schema,
    go_json,
    parse_field_path,
    render_bad_value,
    validate_structural,
)
from pykcm.apiserver.server_clock import now_rfc3339

__all__ = [
    "MAX_SELECTABLE_FIELDS",
    "compiled_schemas",
    "crd_status_on_accept",
    "default_crd",
    "names_conflict",
    "names_conflict_reason",
    "storage_version",
    "validate_crd_create",
    "validate_crd_update",
    "version_schema",
]

MAX_SELECTABLE_FIELDS: Final = 8
_SCOPES: Final = ("Cluster", "Namespaced")
_CONVERSION_STRATEGIES: Final = ("None", "Webhook")
_CONVERSION_REVIEW_VERSIONS: Final = ("v1", "v1beta1")
_PRINTER_TYPES: Final = ("boolean", "date", "integer", "number", "string")
_PRINTER_FORMATS: Final = ("byte", "date", "date-time", "double", "float", "int32", "int64",
                           "password")

Obj = dict[str, Any]


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _now() -> str:
    return now_rfc3339()  # the clock of the server running this request


# --- defaulting ---------------------------------------------------------------------

def default_crd(obj: Obj) -> None:
    """v1 defaulting (SetDefaults_CustomResourceDefinition), in place.

    ``names.singular`` = lowercase kind, ``names.listKind`` = kind + "List",
    ``conversion`` = ``{"strategy": "None"}``, a webhook service port of 443,
    absent ``served``/``storage`` as ``false``, and ``status.storedVersions``
    = [the storage version] when empty. ``scope`` has no default in v1
    (leaving it out is a ``spec.scope: Required value`` error, as upstream).
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = _str(names.get("kind"))
        if not names.get("singular"):
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    conv = spec.get("conversion")
    if conv is None:
        spec["conversion"] = {"strategy": "None"}
    elif isinstance(conv, dict):
        service = _map(_map(_map(conv.get("webhook")).get("clientConfig")).get("service"))
        if isinstance(service, dict) and service and service.get("port") is None:
            service["port"] = 443
    for v in _list(spec.get("versions")):
        if isinstance(v, dict):
            v.setdefault("served", False)
            v.setdefault("storage", False)
    sv = storage_version(obj)
    status = obj.get("status")
    if sv is not None and isinstance(status, dict) and not status.get("storedVersions"):
        status["storedVersions"] = [sv]


def storage_version(obj: Mapping[str, Any]) -> str | None:
    """The name of the first version marked ``storage: true``."""
    for v in _list(_map(obj.get("spec")).get("versions")):
        if isinstance(v, Mapping) and v.get("storage") is True:
            return _str(v.get("name"))
    return None


def version_schema(obj: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    """The ``openAPIV3Schema`` of one version (None when it has none)."""
    for v in _list(_map(obj.get("spec")).get("versions")):
        if isinstance(v, Mapping) and v.get("name") == version:
            s = _map(v.get("schema")).get("openAPIV3Schema")
            return s if isinstance(s, Mapping) else None
    return None


# --- validation helpers -------------------------------------------------------------

def _dns1035(path: str, value: str, errs: list[Cause]) -> None:
    msgs = is_dns1035_label(value)
    if msgs:
        errs.append(invalid(path, value, ",".join(msgs)))


def _validate_names(names: Mapping[str, Any], path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionNames."""
    errs: list[Cause] = []
    plural, singular = _str(names.get("plural")), _str(names.get("singular"))
    kind, list_kind = _str(names.get("kind")), _str(names.get("listKind"))
    if plural:
        _dns1035(f"{path}.plural", plural, errs)
    if singular:
        _dns1035(f"{path}.singular", singular, errs)
    for key, val in (("kind", kind), ("listKind", list_kind)):
        if val:
            msgs = is_dns1035_label(val.lower())
            if msgs:
                errs.append(invalid(f"{path}.{key}", val,
                                    "may have mixed case, but should otherwise match: "
                                    + ",".join(msgs)))
    for i, sn in enumerate(_list(names.get("shortNames"))):
        _dns1035(f"{path}.shortNames[{i}]", _str(sn), errs)
    if kind and kind == list_kind:
        errs.append(invalid(f"{path}.listKind", list_kind, "kind and listKind may not be the same"))
    for i, cat in enumerate(_list(names.get("categories"))):
        _dns1035(f"{path}.categories[{i}]", _str(cat), errs)
    return errs


def _validate_simple_json_path(s: str, path: str) -> list[Cause]:
    if not s:
        return [invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [invalid(path, s, "must be a simple json path starting with .")]
    return []


def _validate_subresources(sub: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionSubresources."""
    errs: list[Cause] = []
    if not isinstance(sub, Mapping):
        return errs
    scale = sub.get("scale")
    if not isinstance(scale, Mapping):
        return errs
    spec_path = _str(scale.get("specReplicasPath"))
    if not spec_path:
        errs.append(required(f"{path}.scale.specReplicasPath"))
    else:
        e = _validate_simple_json_path(spec_path, f"{path}.scale.specReplicasPath")
        if e:
            errs.extend(e)
        elif not spec_path.startswith(".spec."):
            errs.append(invalid(f"{path}.scale.specReplicasPath", spec_path,
                                "should be a json path under .spec"))
    status_path = _str(scale.get("statusReplicasPath"))
    if not status_path:
        errs.append(required(f"{path}.scale.statusReplicasPath"))
    else:
        e = _validate_simple_json_path(status_path, f"{path}.scale.statusReplicasPath")
        if e:
            errs.extend(e)
        elif not status_path.startswith(".status."):
            errs.append(invalid(f"{path}.scale.statusReplicasPath", status_path,
                                "should be a json path under .status"))
    sel = _str(scale.get("labelSelectorPath"))
    if sel:
        e = _validate_simple_json_path(sel, f"{path}.scale.labelSelectorPath")
        if e:
            errs.extend(e)
        elif not sel.startswith((".spec.", ".status.")):
            errs.append(invalid(f"{path}.scale.labelSelectorPath", sel,
                                "should be a json path under either .spec or .status"))
    return errs


def _validate_columns(cols: Any, path: str) -> list[Cause]:
    """ValidateCustomResourceColumnDefinition for each printer column."""
    errs: list[Cause] = []
    for i, col in enumerate(_list(cols)):
        col = _map(col)
        p = f"{path}[{i}]"
        if not col.get("name"):
            errs.append(required(f"{p}.name"))
        t = _str(col.get("type"))
        types = "must be one of " + ",".join(_PRINTER_TYPES)
        if not t:
            errs.append(required(f"{p}.type", types))
        elif t not in _PRINTER_TYPES:
            errs.append(invalid(f"{p}.type", t, types))
        fmt = _str(col.get("format"))
        if fmt and fmt not in _PRINTER_FORMATS:
            errs.append(invalid(f"{p}.format", fmt, "must be one of " + ",".join(_PRINTER_FORMATS)))
        jp = _str(col.get("jsonPath"))
        if not jp:
            errs.append(required(f"{p}.JSONPath"))
        else:
            errs.extend(_validate_simple_json_path(jp, f"{p}.JSONPath"))
    return errs


def _schema_at(schema: Mapping[str, Any] | None, keys: Sequence[str]) -> Mapping[str, Any] | None:
    """The schema node a field path points to (properties, then additionalProperties)."""
    cur = schema
    for k in keys:
        if cur is None:
            return None
        props = cur.get("properties")
        if isinstance(props, Mapping) and props:
            nxt = props.get(k)
            cur = nxt if isinstance(nxt, Mapping) else None
            continue
        ap = cur.get("additionalProperties")
        cur = ap if isinstance(ap, Mapping) else None
    return cur


def _validate_selectable_fields(fields: Any, path: str,
                                schema: Mapping[str, Any] | None) -> list[Cause]:
    """validateSelectableFields."""
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, sf in enumerate(_list(fields)):
        p = f"{path}[{i}].jsonPath"
        jp = _str(_map(sf).get("jsonPath"))
        if not jp:
            errs.append(required(p))
            continue
        keys = parse_field_path(jp)
        if isinstance(keys, str):
            errs.append(invalid(p, jp, f"is an invalid path: {keys}"))
            continue
        node = _schema_at(schema, keys) if keys else schema
        if keys and node is None:
            errs.append(invalid(p, jp, "is an invalid path: does not refer to a valid field"))
            continue
        if keys and keys[0] == "metadata":
            errs.append(invalid(p, jp, "must not point to fields in metadata"))
        if node is None or node.get("type") not in ("string", "integer", "boolean"):
            errs.append(invalid(p, jp, "must point to a field of type string, boolean or "
                                       "integer. Enum string fields and strings with formats "
                                       "are allowed."))
        canon = ".".join(keys)
        if canon in seen:
            errs.append(duplicate(p, jp))
        seen.add(canon)
    if len(seen) > MAX_SELECTABLE_FIELDS:
        errs.append(too_many(path, len(seen), MAX_SELECTABLE_FIELDS))
    return errs


def _validate_webhook_url(url: str, path: str) -> list[Cause]:
    try:
        u = urllib.parse.urlsplit(url)
    except ValueError as e:
        return [invalid(path, url, f"url must be a valid URL: {e}")]
    errs: list[Cause] = []
    if u.scheme != "https":
        errs.append(invalid(path, u.scheme, "'https' is the only allowed URL scheme"))
    if not u.hostname:
        errs.append(invalid(path, u.netloc, "host must be specified"))
    if u.username is not None or u.password is not None:
        errs.append(invalid(path, u.username or "", "user information is not permitted in the URL"))
    if u.fragment:
        errs.append(invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(invalid(path, u.query, "query parameters are not permitted in the URL"))
    return errs


def _validate_conversion(conv: Any, path: str) -> list[Cause]:
    """validateCustomResourceConversion (internal paths: webhookClientConfig, ...)."""
    errs: list[Cause] = []
    if not isinstance(conv, Mapping):
        return errs
    strategy = _str(conv.get("strategy"))
    if not strategy:
        errs.append(required(f"{path}.strategy"))
    elif strategy not in _CONVERSION_STRATEGIES:
        errs.append(not_supported(f"{path}.strategy", strategy, _CONVERSION_STRATEGIES))
    webhook = conv.get("webhook")
    cc = _map(webhook).get("clientConfig")
    review = _map(webhook).get("conversionReviewVersions")
    if strategy == "Webhook":
        ccp = f"{path}.webhookClientConfig"
        if not isinstance(cc, Mapping):
            errs.append(required(ccp, "required when strategy is set to Webhook"))
        else:
            url, service = cc.get("url"), cc.get("service")
            if (url is None) == (service is None):
                errs.append(required(ccp, "exactly one of url or service is required"))
            elif url is not None:
                errs.extend(_validate_webhook_url(_str(url), f"{ccp}.url"))
            else:
                svc = _map(service)
                sp = f"{ccp}.service"
                if not svc.get("name"):
                    errs.append(required(f"{sp}.name", "service name is required"))
                if not svc.get("namespace"):
                    errs.append(required(f"{sp}.namespace", "service namespace is required"))
                port = svc.get("port")
                if isinstance(port, int) and not 1 <= port <= 65535:
                    errs.append(invalid(f"{sp}.port", port,
                                        "port is not valid: must be between 1 and 65535, "
                                        "inclusive"))
                spath = svc.get("path")
                if isinstance(spath, str) and spath and not spath.startswith("/"):
                    errs.append(invalid(f"{sp}.path", spath, "must start with a '/'"))
        rp = f"{path}.conversionReviewVersions"
        versions = [_str(v) for v in _list(review)]
        if not versions:
            errs.append(required(rp))
        else:
            seen: set[str] = set()
            accepted = False
            for i, v in enumerate(versions):
                if v in seen:
                    errs.append(invalid(f"{rp}[{i}]", v, "duplicate version"))
                    continue
                seen.add(v)
                for msg in is_dns1035_label(v):
                    errs.append(invalid(f"{rp}[{i}]", v, msg))
                accepted = accepted or v in _CONVERSION_REVIEW_VERSIONS
            if not accepted:
                errs.append(Cause("FieldValueInvalid", rp,
                                  "must include at least one of "
                                  + ", ".join(_CONVERSION_REVIEW_VERSIONS), render_bad_value(versions)))
    else:
        if cc is not None:
            errs.append(forbidden(f"{path}.webhookClientConfig",
                                  "should not be set when strategy is not set to Webhook"))
        if review:
            errs.append(forbidden(f"{path}.conversionReviewVersions",
                                  "should not be set when strategy is not set to Webhook"))
    return errs


def _identical(versions: Sequence[Mapping[str, Any]], key: str) -> bool:
    if not versions:
        return False
    first = versions[0].get(key)
    return all(v.get(key) == first for v in versions)


def _schema_of(v: Mapping[str, Any]) -> Mapping[str, Any] | None:
    s = _map(v.get("schema")).get("openAPIV3Schema")
    return s if isinstance(s, Mapping) else None


def _validate_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """ValidateCustomResourceDefinitionSpec (v1 options: schemas required, structural)."""
    errs: list[Cause] = []
    group = _str(spec.get("group"))
    if not group:
        errs.append(required(f"{path}.group"))
    else:
        msgs = is_dns1123_subdomain(group)
        if msgs:
            errs.append(invalid(f"{path}.group", group, ",".join(msgs)))
        elif len(group.split(".")) < 2:
            errs.append(invalid(f"{path}.group", group, "should be a domain with at least one dot"))
    scope = _str(spec.get("scope"))
    if not scope:
        errs.append(required(f"{path}.scope"))
    elif scope not in _SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _SCOPES))

    versions = [_map(v) for v in _list(spec.get("versions"))]
    schema_hoisted = _identical(versions, "schema")
    sub_hoisted = _identical(versions, "subresources")
    cols_hoisted = _identical(versions, "additionalPrinterColumns")
    sel_hoisted = _identical(versions, "selectableFields")
    storage_count = 0
    seen: set[str] = set()
    unique = True
    for i, v in enumerate(versions):
        vp = f"{path}.versions[{i}]"
        name = _str(v.get("name"))
        if v.get("storage") is True:
            storage_count += 1
        if name in seen:
            unique = False
        seen.add(name)
        _dns1035(f"{vp}.name", name, errs)
        if _schema_of(v) is None:
            errs.append(required(f"{vp}.schema.openAPIV3Schema"))
        if not schema_hoisted and _schema_of(v) is not None:
            errs.extend(validate_structural(_schema_of(v), f"{vp}.schema.openAPIV3Schema"))
        if not sub_hoisted:
            errs.extend(_validate_subresources(_map(v.get("subresources")) or None,
                                               f"{vp}.subresources"))
        if not cols_hoisted:
            errs.extend(_validate_columns(v.get("additionalPrinterColumns"),
                                          f"{vp}.additionalPrinterColumns"))
        if not sel_hoisted:
            errs.extend(_validate_selectable_fields(v.get("selectableFields"),
                                                    f"{vp}.selectableFields", _schema_of(v)))
    rendered = _internal_versions_json(versions) if versions else "null"
    if not unique:
        errs.append(Cause("FieldValueInvalid", f"{path}.versions",
                          "must contain unique version names", rendered))
    if storage_count != 1:
        errs.append(Cause("FieldValueInvalid", f"{path}.versions",
                          "must have exactly one version marked as storage version", rendered))

    names = _map(spec.get("names"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(required(f"{path}.names.{key}"))
    errs.extend(_validate_names(names, f"{path}.names"))

    first = versions[0] if versions else {}
    if schema_hoisted and _schema_of(first) is not None:
        errs.extend(validate_structural(_schema_of(first), f"{path}.validation.openAPIV3Schema"))
    if sub_hoisted:
        errs.extend(_validate_subresources(_map(first.get("subresources")) or None,
                                           f"{path}.subresources"))
    if cols_hoisted:
        errs.extend(_validate_columns(first.get("additionalPrinterColumns"),
                                      f"{path}.additionalPrinterColumns"))
    if sel_hoisted:
        errs.extend(_validate_selectable_fields(first.get("selectableFields"),
                                                f"{path}.selectableFields", _schema_of(first)))
    errs.extend(_validate_conversion(spec.get("conversion"), f"{path}.conversion"))
    return errs


def _internal_versions_json(versions: Sequence[Mapping[str, Any]]) -> str:
    """The versions as a field error shows them: the internal type's JSON (Go field names;
    nested values as given)."""
    out = []
    for v in versions:
        schema = v.get("schema")
        out.append({
            "Name": v.get("name", ""), "Served": bool(v.get("served")),
            "Storage": bool(v.get("storage")), "Deprecated": bool(v.get("deprecated")),
            "DeprecationWarning": v.get("deprecationWarning"),
            "Schema": ({"OpenAPIV3Schema": schema.get("openAPIV3Schema")}
                       if isinstance(schema, Mapping) else None),
            "Subresources": v.get("subresources"),
            "AdditionalPrinterColumns": v.get("additionalPrinterColumns"),
            "SelectableFields": v.get("selectableFields")})
    return json.dumps(out, separators=(",", ":"))


def _validate_stored_versions(stored: Sequence[str], spec: Mapping[str, Any],
                              path: str = "status.storedVersions") -> list[Cause]:
    """ValidateCustomResourceDefinitionStoredVersions."""
    if not stored:
        return [Cause("FieldValueInvalid", path, "must have at least one stored version", "null")]
    errs: list[Cause] = []
    index = {v: i for i, v in enumerate(stored)}
    for v in _list(spec.get("versions")):
        v = _map(v)
        name = _str(v.get("name"))
        found = name in index
        if v.get("storage") is True and not found:
            errs.append(Cause("FieldValueInvalid", path, "must have the storage version " + name,
                              go_json(v)))
        index.pop(name, None)
    for name, i in index.items():
        errs.append(invalid(f"{path}[{i}]", name, "must appear in spec.versions"))
    return errs


def _merged_stored_versions(obj: Mapping[str, Any], status: Mapping[str, Any]) -> list[str]:
    stored = [_str(v) for v in _list(status.get("storedVersions"))]
    sv = storage_version(obj)
    if sv is not None and sv not in stored:
        stored.append(sv)
    return stored


def _name_validator(spec: Mapping[str, Any]) -> NameValidator:
    want = f"{_str(_map(spec.get('names')).get('plural'))}.{_str(spec.get('group'))}"

    def check(name: str, prefix: bool = False) -> list[str]:
        msgs = name_is_dns_subdomain(name, prefix)
        if name != want:
            msgs = [*msgs, 'must be spec.names.plural+"."+spec.group']
        return msgs

    return check


def validate_crd_create(obj: Mapping[str, Any]) -> list[Cause]:
    """ValidateCustomResourceDefinition for a new CRD (defaulted first).

    metadata (``metadata.name: Invalid value: "x": must be
    spec.names.plural+"."+spec.group``), spec (group with a dot, scope,
    exactly one storage version, version/name formats, schemas required and
    structural, subresources, printer columns, selectable fields,
    conversion), ``status.acceptedNames`` and the stored versions the server
    will record (the storage version; the request's status is ignored, as
    PrepareForCreate clears it).
    """
    spec = _map(obj.get("spec"))
    errs = validate_object_meta(_map(obj.get("metadata")), namespaced=False,
                                name_validator=_name_validator(spec))
    errs.extend(_validate_spec(spec))
    sv = storage_version(obj)
    errs.extend(_validate_stored_versions([sv] if sv is not None else [], spec))
    return errs


def _is_established(obj: Mapping[str, Any]) -> bool:
    for c in _list(_map(obj.get("status")).get("conditions")):
        c = _map(c)
        if c.get("type") == "Established" and c.get("status") == "True":
            return True
    return False


def validate_crd_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """ValidateCustomResourceDefinitionUpdate.

    The spec checks of create, plus: ``spec.group`` and
    ``spec.names.plural`` immutable; ``spec.scope`` and ``spec.names.kind``
    immutable once the CRD is established; ``spec.preserveUnknownFields:
    true`` only if it already was; the stored versions (the old status's plus
    the new storage version) must all still be in ``spec.versions``.
    """
    spec, old_spec = _map(new.get("spec")), _map(old.get("spec"))
    errs = validate_object_meta_update(_map(new.get("metadata")), _map(old.get("metadata")))
    errs.extend(_validate_spec(spec))
    if _is_established(old):
        errs.extend(validate_immutable(spec.get("scope"), old_spec.get("scope"), "spec.scope",
                                       rendered=_str(spec.get("scope"))))
        errs.extend(validate_immutable(_map(spec.get("names")).get("kind"),
                                       _map(old_spec.get("names")).get("kind"),
                                       "spec.names.kind",
                                       rendered=_str(_map(spec.get("names")).get("kind"))))
    errs.extend(validate_immutable(spec.get("group"), old_spec.get("group"), "spec.group",
                                   rendered=_str(spec.get("group"))))
    errs.extend(validate_immutable(_map(spec.get("names")).get("plural"),
                                   _map(old_spec.get("names")).get("plural"),
                                   "spec.names.plural",
                                   rendered=_str(_map(spec.get("names")).get("plural"))))
    if spec.get("preserveUnknownFields") is True and old_spec.get("preserveUnknownFields") is not True:
        errs.append(invalid("spec.preserveUnknownFields", True,
                            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true "
                            "in spec.versions[*].schema instead"))
    status = _map(old.get("status"))
    errs.extend(_validate_names(_map(status.get("acceptedNames")), "status.acceptedNames"))
    errs.extend(_validate_stored_versions(_merged_stored_versions(new, status), spec))
    return errs


# --- status: naming and establishing --------------------------------------------------

_NAME_ORDER: Final = ("plural", "singular", "shortNames", "kind", "listKind", "categories")


def _requested_names(obj: Mapping[str, Any]) -> dict[str, Any]:
    names = dict(_map(_map(obj.get("spec")).get("names")))
    kind = _str(names.get("kind"))
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    return names


def _accepted_of(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    acc = _map(_map(crd.get("status")).get("acceptedNames"))
    return acc if acc.get("plural") or acc.get("kind") else _requested_names(crd)


def _used_names(obj: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
                ) -> tuple[set[str], set[str]]:
    group = _map(obj.get("spec")).get("group")
    me = _map(obj.get("metadata")).get("name")
    resources: set[str] = set()
    kinds: set[str] = set()
    for crd in others:
        if _map(crd.get("spec")).get("group") != group:
            continue
        if me and _map(crd.get("metadata")).get("name") == me:
            continue
        acc = _accepted_of(crd)
        resources.add(_str(acc.get("plural")))
        resources.add(_str(acc.get("singular")))
        resources.update(_str(s) for s in _list(acc.get("shortNames")))
        kinds.add(_str(acc.get("kind")))
        kinds.add(_str(acc.get("listKind")))
    return resources, kinds


def _fresh(requested: str, accepted: str, used: set[str]) -> str | None:
    """equalToAcceptedOrFresh: None, or the conflict message."""
    if requested == accepted or requested not in used:
        return None
    return f"{go_quote(requested)} is already in use"


def _calculate_names(obj: Mapping[str, Any], others: Sequence[Mapping[str, Any]],
                     previous: Mapping[str, Any]
                     ) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """The naming controller's calculateNamesAndConditions: accepted names and
    the last conflict (reason, message), if any."""
    requested = _requested_names(obj)
    accepted = dict(_map(previous.get("acceptedNames")))
    resources, kinds = _used_names(obj, others)
    new = dict(accepted)
    conflict: tuple[str, str] | None = None
    for key, reason, used in (("plural", "PluralConflict", resources),
                              ("singular", "SingularConflict", resources)):
        msg = _fresh(_str(requested.get(key)), _str(accepted.get(key)), used)
        if msg:
            conflict = (reason, msg)
        else:
            new[key] = requested.get(key, "")
    req_short = [_str(s) for s in _list(requested.get("shortNames"))]
    acc_short = [_str(s) for s in _list(accepted.get("shortNames"))]
    if req_short != acc_short:
        msgs = [m for s in req_short if s not in acc_short
                for m in [_fresh(s, "", resources)] if m]
        if msgs:
            conflict = ("ShortNamesConflict", msgs[0] if len(msgs) == 1
                        else "[" + ", ".join(msgs) + "]")
        else:
            new["shortNames"] = req_short
    for key, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        msg = _fresh(_str(requested.get(key)), _str(accepted.get(key)), kinds)
        if msg:
            conflict = (reason, msg)
        else:
            new[key] = requested.get(key, "")
    if "categories" in requested:
        new["categories"] = requested["categories"]
    else:
        new.pop("categories", None)
    new.setdefault("plural", "")
    new.setdefault("kind", "")
    # plural and kind have no omitempty in CustomResourceDefinitionNames.
    ordered: dict[str, Any] = {k: new[k] for k in _NAME_ORDER
                               if k in new and (new[k] or k in ("plural", "kind"))}
    return ordered, conflict


def names_conflict_reason(obj: Mapping[str, Any], other_crds: Sequence[Mapping[str, Any]]
                          ) -> tuple[str, str] | None:
    """(reason, message) of NamesAccepted=False, or None when the names are free.

    Reasons as upstream's naming controller: ``PluralConflict``,
    ``SingularConflict``, ``ShortNamesConflict``, ``KindConflict``,
    ``ListKindConflict`` (the last conflict found wins); messages like
    ``"foos" is already in use``. Only CRDs of the same group count; the CRD
    itself (same metadata.name) is skipped.
    """
    return _calculate_names(obj, other_crds, _map(obj.get("status")))[1]


def names_conflict(obj: Mapping[str, Any], other_crds: Sequence[Mapping[str, Any]]) -> str | None:
    """The conflict message (``"foos" is already in use``), or None."""
    r = names_conflict_reason(obj, other_crds)
    return r[1] if r else None


def _condition(ctype: str, status: str, reason: str, message: str,
               previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
    ltt = now
    if previous is not None and previous.get("status") == status and previous.get(
            "lastTransitionTime"):
        ltt = previous["lastTransitionTime"]
    return {"type": ctype, "status": status, "lastTransitionTime": ltt, "reason": reason,
            "message": message}


def crd_status_on_accept(obj: Mapping[str, Any], *,
                         other_crds: Sequence[Mapping[str, Any]] = (),
                         previous_status: Mapping[str, Any] | None = None,
                         now: str | None = None) -> dict[str, Any]:
    """The status the server sets right away (naming + establishing controllers).

    ``previous_status`` defaults to ``obj["status"]`` (pass ``{}`` on create:
    PrepareForCreate clears the status). Without conflicts: ``NamesAccepted``
    True ``NoConflicts`` "no conflicts found" and ``Established`` True
    ``InitialNamesAccepted`` "the initial names have been accepted", each with
    ``lastTransitionTime`` (kept when the condition's status is unchanged);
    ``acceptedNames`` = the defaulted ``spec.names``; ``storedVersions`` = the
    previous ones plus the storage version. With a conflict: ``NamesAccepted``
    False with upstream's reason, ``Established`` unchanged if it was True,
    else False ``NotAccepted`` "not all names are accepted", and only the
    free names accepted. Other conditions are kept.
    """
    prev = _map(obj.get("status") if previous_status is None else previous_status)
    ts = now or _now()
    accepted, conflict = _calculate_names(obj, other_crds, prev)
    old_conds = [dict(_map(c)) for c in _list(prev.get("conditions"))]
    by_type = {c.get("type"): c for c in old_conds}
    if conflict is None:
        names_cond = _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found",
                                by_type.get("NamesAccepted"), ts)
    else:
        names_cond = _condition("NamesAccepted", "False", conflict[0], conflict[1],
                                by_type.get("NamesAccepted"), ts)
    old_est = by_type.get("Established")
    if old_est is not None and old_est.get("status") == "True":
        est_cond = dict(old_est)
    elif conflict is None:
        est_cond = _condition("Established", "True", "InitialNamesAccepted",
                              "the initial names have been accepted", old_est, ts)
    else:
        est_cond = _condition("Established", "False", "NotAccepted",
                              "not all names are accepted", old_est, ts)
    conds: list[dict[str, Any]] = []
    placed: set[str] = set()
    for c in old_conds:
        t = c.get("type")
        if t == "NamesAccepted":
            conds.append(names_cond)
            placed.add("NamesAccepted")
        elif t == "Established":
            conds.append(est_cond)
            placed.add("Established")
        else:
            conds.append(c)
    for c in (names_cond, est_cond):
        if c["type"] not in placed:
            conds.append(c)
    out: dict[str, Any] = {"conditions": conds, "acceptedNames": accepted}
    stored = [_str(v) for v in _list(prev.get("storedVersions"))]
    sv = storage_version(obj)
    if sv is not None and sv not in stored:
        stored.append(sv)
    out["storedVersions"] = stored
    return out


def compiled_schemas(obj: Mapping[str, Any]) -> dict[str, StructuralSchema]:
    """version name -> compiled :class:`~pykcm.apiserver.crd.schema.StructuralSchema`."""
    out: dict[str, StructuralSchema] = {}
    for v in _list(_map(obj.get("spec")).get("versions")):
        v = _map(v)
        out[_str(v.get("name"))] = compile_schema(_schema_of(v))
    return out
