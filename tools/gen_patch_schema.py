"""Generate ``pykcm/api/patch/_data/patch_schema.json`` from the v1.36 OpenAPI definitions.

This is a development tool, run by hand when the Kubernetes version the
project mirrors changes; the runtime never imports ``kubernetes_validate``.

Data flow: kubernetes-validate's ``_definitions.json`` (every OpenAPI
definition of kube-apiserver v1.36, top key ``$defs``) -> walk from every
definition that carries ``x-kubernetes-group-version-kind`` through ``$ref``
edges -> for each reachable struct keep only its object, array and map
properties, reduced to what strategic merge patch needs -> one compact JSON
document read by ``pykcm.api.patch._schema``.

Compact field descriptor (one per kept property)::

    {"t": "o", "r": REF}           struct field whose type is definition REF
    {"t": "a", "e": DESC}          array; "e" describes the items (absent: scalars)
    {"t": "m", "e": DESC}          map (additionalProperties); "e" describes values
    optional on any descriptor:
    "s": "merge" | "retainKeys" | "merge,retainKeys" | "replace"  (x-kubernetes-patch-strategy)
    "k": merge key                                   (x-kubernetes-patch-merge-key)
    "lt": "atomic" | "set" | "map"                   (x-kubernetes-list-type)
    "lk": [keys]                                     (x-kubernetes-list-map-keys)

Scalar properties, and references to definitions that are not structs
(IntOrString, Quantity, Time, RawExtension, JSON, ...), are left out: for
patching they behave exactly like an unknown field.

Usage: ``python tools/gen_patch_schema.py [--output PATH] [--definitions PATH]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _k8s_definitions import KUBE_VERSION_DIR, find_definitions, ref_name

DEFAULT_OUTPUT = (
    Path(__file__).resolve().parent.parent
    / "pykcm"
    / "api"
    / "patch"
    / "_data"
    / "patch_schema.json"
)


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if t is None:
        return set()
    if isinstance(t, str):
        return {t}
    return {x for x in t if x != "null"}


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return None
    return ref_name(ref)


class Generator:
    def __init__(self, defs: dict[str, dict[str, Any]]) -> None:
        self.defs = defs
        self.out_defs: dict[str, dict[str, Any]] = {}
        self.pending: list[str] = []

    def is_struct(self, name: str) -> bool:
        d = self.defs[name]
        # A struct is an object with declared properties; object-typed
        # definitions without properties (FieldsV1, RawExtension) hold
        # free-form JSON and patch like unknown fields.
        return "properties" in d and _types(d) <= {"object"}

    def want(self, name: str) -> None:
        if name not in self.out_defs and name not in self.pending:
            self.pending.append(name)

    def describe(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Compact descriptor for one property/item schema, or None if it is scalar-like."""
        desc: dict[str, Any]
        ref = _ref_name(schema)
        types = _types(schema)
        if ref is not None:
            if not self.is_struct(ref):
                desc = {}
            else:
                self.want(ref)
                desc = {"t": "o", "r": ref}
        elif "array" in types or "items" in schema:
            desc = {"t": "a"}
            items = schema.get("items")
            if isinstance(items, dict):
                e = self.describe(items)
                if e:
                    desc["e"] = e
        elif "object" in types and isinstance(schema.get("additionalProperties"), dict):
            desc = {"t": "m"}
            e = self.describe(schema["additionalProperties"])
            if e:
                desc["e"] = e
        else:
            desc = {}
        strategy = schema.get("x-kubernetes-patch-strategy")
        if strategy:
            desc["s"] = strategy
        merge_key = schema.get("x-kubernetes-patch-merge-key")
        if merge_key:
            desc["k"] = merge_key
        list_type = schema.get("x-kubernetes-list-type")
        if list_type:
            desc["lt"] = list_type
        list_keys = schema.get("x-kubernetes-list-map-keys")
        if list_keys:
            desc["lk"] = list(list_keys)
        if "t" not in desc:
            # A scalar with patch metadata would be a schema oddity; keep the
            # metadata only if present so nothing is silently lost.
            return desc or None
        return desc

    def run(self) -> dict[str, Any]:
        gvk: dict[str, str] = {}
        for name in sorted(self.defs):
            for entry in self.defs[name].get("x-kubernetes-group-version-kind", []) or []:
                key = f"{entry.get('group', '')}/{entry['version']}/{entry['kind']}"
                # The meta/v1 helper kinds (DeleteOptions, WatchEvent, ...)
                # are listed under every group; any definition is right.
                gvk.setdefault(key, name)
                self.want(name)
        while self.pending:
            name = self.pending.pop()
            if name in self.out_defs:
                continue
            fields: dict[str, Any] = {}
            self.out_defs[name] = fields
            for prop, schema in sorted(self.defs[name].get("properties", {}).items()):
                desc = self.describe(schema)
                if desc:
                    fields[prop] = desc
        return {
            "source": f"kubernetes-validate {KUBE_VERSION_DIR}/_definitions.json",
            "gvk": dict(sorted(gvk.items())),
            "defs": dict(sorted(self.out_defs.items())),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--definitions", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    src = args.definitions or find_definitions()
    data = json.loads(src.read_text())
    result = Generator(data["$defs"]).run()
    text = json.dumps(result, separators=(",", ":"), sort_keys=False)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")
    print(
        f"wrote {args.output} ({len(text)} bytes, {len(result['defs'])} definitions, "
        f"{len(result['gvk'])} kinds)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
