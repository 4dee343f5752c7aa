"""Custom resources: serving the resources that CustomResourceDefinitions declare.

    CRD written (create/update, or loaded at start-up)
      → `CustomResources.sync_crd()` compiles each served version's schema,
        adds a `ResourceInfo` to the registry (so REST routing, discovery and
        OpenAPI see it at once) and remembers the version's behaviour
        (status/scale subresources, selectable fields, printer columns)
    CR request → rest_storage asks `get(info)` for that behaviour: prune
        unknown fields, apply schema defaults, validate against the schema
    CRD deleted → rest_storage's finalizer task deletes every custom resource,
        then `remove_crd()` takes the resource out of the registry.

Conversion between versions is `None` strategy only: every served version
reads the same stored objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pykcm.api.resources import ResourceInfo, ResourceRegistry
from pykcm.api.validation import Cause
from pykcm.apiserver.crd import schema as crd_schema
from pykcm.apiserver.registry import printers
from pykcm.apiserver.server_clock import CLOCK as SERVER_CLOCK

CRD_GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


@dataclass
class CustomResourceVersion:
    """One served version of one CRD and how its objects behave."""

    info: ResourceInfo
    crd_name: str
    schema: crd_schema.StructuralSchema | None
    raw_schema: dict[str, Any] | None
    status_subresource: bool
    scale: dict[str, Any] | None
    selectable_fields: list[dict[str, Any]] = field(default_factory=list)
    printer_columns: list[dict[str, Any]] = field(default_factory=list)
    # the Warning a request to a deprecated version gets (None: not deprecated)
    deprecation_warning: str | None = None

    # -- write pipeline -------------------------------------------------------

    def prune_and_default(self, obj: dict[str, Any]) -> None:
        if self.schema is None:
            return
        crd_schema.prune(obj, self.schema)
        crd_schema.apply_defaults(obj, self.schema)

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        if self.schema is None:
            return []
        return crd_schema.validate(obj, self.schema)

    # -- selectors ------------------------------------------------------------

    def selectable(self) -> frozenset[str]:
        return frozenset({"metadata.name", "metadata.namespace"} | {
            str(f.get("jsonPath", "")).lstrip(".") for f in self.selectable_fields})

    def field_set(self, obj: dict[str, Any]) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        out = {"metadata.name": str(meta.get("name", "")),
               "metadata.namespace": str(meta.get("namespace", ""))}
        if self.selectable_fields:
            values = crd_schema.selectable_field_values(obj, self.selectable_fields)
            out.update({k.lstrip("."): v for k, v in values.items()})
        return out

    # -- scale ------------------------------------------------------------------

    def scale_paths(self) -> tuple[str, str, str]:
        s = self.scale or {}
        return (str(s.get("specReplicasPath", ".spec.replicas")),
                str(s.get("statusReplicasPath", ".status.replicas")),
                str(s.get("labelSelectorPath", "")))

    # -- table ------------------------------------------------------------------

    def table(self, objects: list[dict[str, Any]], *, list_meta: dict[str, Any] | None,
              include_object: str, with_column_definitions: bool = True,
              now: float | None = None) -> dict[str, Any]:
        """kube-apiserver's CRD table: Name, the additionalPrinterColumns (Age by default)."""
        cols = self.printer_columns or [{"name": "Age", "type": "date",
                                         "jsonPath": ".metadata.creationTimestamp"}]
        defs = [{"name": "Name", "type": "string", "format": "name",
                 "description": printers.NAME_DESCRIPTION, "priority": 0}]
        for c in cols:
            # a column without description: the JSONPath, or (the default Age) metadata's
            desc = c.get("description") or (
                printers.CREATION_TIMESTAMP_DESCRIPTION if not self.printer_columns
                else f"Custom resource definition column (in JSONPath format): "
                     f"{c.get('jsonPath', '')}")
            defs.append({"name": c.get("name", ""), "type": c.get("type", "string"),
                         "format": c.get("format", ""), "description": desc,
                         "priority": int(c.get("priority", 0))})
        t = now if now is not None else SERVER_CLOCK.get().now()
        rows = []
        for obj in objects:
            cells: list[Any] = [obj.get("metadata", {}).get("name", "")]
            for c in cols:
                v = json_path(obj, str(c.get("jsonPath", "")))
                if c.get("type") == "date":
                    cells.append(printers.translate_timestamp_since(v, t) if v else "<unknown>")
                elif v is None:
                    cells.append(None)
                elif isinstance(v, (dict, list)):
                    import orjson

                    cells.append(orjson.dumps(v).decode())
                else:
                    cells.append(v)
            row: dict[str, Any] = {"cells": cells}
            if include_object == "Object":
                row["object"] = obj
            elif include_object == "Metadata":
                row["object"] = {"kind": "PartialObjectMetadata",
                                 "apiVersion": "meta.k8s.io/v1",
                                 "metadata": obj.get("metadata", {})}
            else:
                row["object"] = None  # includeObject=None: an explicit null, as upstream
            rows.append(row)
        meta: dict[str, Any] = dict(list_meta or {})
        if list_meta is None and len(objects) == 1:
            rv = objects[0].get("metadata", {}).get("resourceVersion")
            if rv:
                meta["resourceVersion"] = rv
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                "columnDefinitions": defs if with_column_definitions else [], "rows": rows}


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def json_path(obj: Any, path: str) -> Any:
    """The value at a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`)."""
    cur = obj
    p = path.strip()
    if p.startswith("{") and p.endswith("}"):
        p = p[1:-1]
    for name, index in _PATH_PART.findall(p.lstrip("$")):
        if name:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(name)
        else:
            if not isinstance(cur, list) or int(index) >= len(cur):
                return None
            cur = cur[int(index)]
        if cur is None:
            return None
    return cur


def set_json_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = [n for n, _ in _PATH_PART.findall(path.lstrip("$")) if n]
    cur = obj
    for name in parts[:-1]:
        nxt = cur.get(name)
        if not isinstance(nxt, dict):
            nxt = cur[name] = {}
        cur = nxt
    if parts:
        cur[parts[-1]] = value


class CustomResources:
    """The CRD-declared resources currently served."""

    def __init__(self, registry: ResourceRegistry) -> None:
        self.registry = registry
        self._versions: dict[tuple[str, str, str], CustomResourceVersion] = {}
        self._by_crd: dict[str, list[tuple[str, str, str]]] = {}
        self.listeners: list[Any] = []

    def get(self, info: ResourceInfo) -> CustomResourceVersion | None:
        return self._versions.get((info.group, info.version, info.plural))

    def all(self) -> list[CustomResourceVersion]:
        return list(self._versions.values())

    def versions_of(self, crd_name: str) -> list[CustomResourceVersion]:
        return [self._versions[k] for k in self._by_crd.get(crd_name, []) if k in self._versions]

    def sync_crd(self, crd: dict[str, Any]) -> None:
        """Serve exactly the versions this (established) CRD declares."""
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        group = spec.get("group", "")
        names = (crd.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
        plural = names.get("plural", "")
        kind = names.get("kind", "")
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        self.remove_crd(crd, notify=False)
        keys: list[tuple[str, str, str]] = []
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            subs = v.get("subresources") or {}
            sub_names: list[str] = []
            if "status" in subs:
                sub_names.append("status")
            if "scale" in subs:
                sub_names.append("scale")
            info = ResourceInfo(
                group=group, version=v["name"], kind=kind, plural=plural,
                singular=names.get("singular") or kind.lower(), namespaced=namespaced,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=tuple(sub_names), track_generation=True,
                status_subresource="status" in subs,
                require_resource_version_on_update=True,
                default_propagation="Background",
            )
            raw_schema = (v.get("schema") or {}).get("openAPIV3Schema")
            compiled = crd_schema.compile_schema(raw_schema) if raw_schema else None
            crv = CustomResourceVersion(
                info=info, crd_name=name, schema=compiled, raw_schema=raw_schema,
                status_subresource="status" in subs, scale=subs.get("scale"),
                selectable_fields=list(v.get("selectableFields") or []),
                printer_columns=list(v.get("additionalPrinterColumns") or []),
                deprecation_warning=(
                    (v.get("deprecationWarning") or f"{group}/{v['name']} {kind} is deprecated")
                    if v.get("deprecated") else None),
            )
            key = (group, v["name"], plural)
            self._versions[key] = crv
            self.registry.add(info)
            keys.append(key)
        self._by_crd[name] = keys
        for cb in self.listeners:
            cb("sync", crd)

    def remove_crd(self, crd: dict[str, Any], notify: bool = True) -> None:
        name = crd["metadata"]["name"]
        for key in self._by_crd.pop(name, []):
            crv = self._versions.pop(key, None)
            if crv is not None:
                self.registry.remove(crv.info)
        if notify:
            for cb in self.listeners:
                cb("remove", crd)
