#!/usr/bin/env python3
"""Generate ``pykcm/api/_data/deep_hash_types.json``: the Go layout of ``v1.PodTemplateSpec``.

A development tool, run by hand when the Kubernetes version pykcm mirrors
changes; the runtime only reads the table (:mod:`pykcm.api.deep_hash`).

Why: kube-controller-manager names a DaemonSet's ControllerRevisions and
labels its pods with ``controller.ComputeHash(template)``: an FNV-32a sum of
the text the ``go-spew`` printer writes for the Go struct (``%#v``: every
field in declaration order with its Go type, zero values included). To give
the same hash from the JSON wire form, pykcm needs, for every struct
reachable from ``PodTemplateSpec``, its fields in declaration order, their
Go names, JSON names and Go types. That is what this tool extracts from the
Go declarations.

Inputs: the ``types.go`` files of ``k8s.io/api/core/v1`` and
``k8s.io/apimachinery/pkg/apis/meta/v1`` (the read-only source tree at
``/tmp/kube-src``, or ``--src``), parsed with the struct parser of
``tools/gen_proto_schema.py``. The handful of types with hand-written Go
code (``resource.Quantity``, ``intstr.IntOrString``, ``metav1.Time``,
``metav1.FieldsV1``) are printed by pykcm.api.deep_hash itself.

Output::

    {"structs": {"core/v1.PodSpec": [[GoName, jsonName or null, type], ...], ...},
     "named":   {"core/v1.RestartPolicy": "string", "core/v1.ResourceList":
                 "map[core/v1.ResourceName]resource.Quantity", ...}}

Types are Go type expressions with package-qualified names (``*core/v1.Probe``,
``[]core/v1.Container``, ``map[string]string``); the printer turns
``core/v1.`` and ``meta/v1.`` into ``v1.`` as Go's reflect does. An embedded
field has the type's name as its Go name and ``""`` as JSON name when its
fields are inlined.

Usage: ``python tools/gen_deep_hash_schema.py [--src DIR] [--output PATH]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_proto_schema import Universe, parse_file

from pykcm.api.go_spew import split_map_type

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "pykcm" / "api" / "_data" / "deep_hash_types.json"
DEFAULT_SRC = Path("/tmp/kube-src/k8s.io")

PACKAGES = [
    ("meta/v1", "apimachinery/pkg/apis/meta/v1/types.go", {}),
    ("core/v1", "api/core/v1/types.go", {"metav1": "meta/v1"}),
]
SPECIAL = {"resource.Quantity", "intstr.IntOrString", "meta/v1.Time", "meta/v1.FieldsV1",
           "meta/v1.MicroTime", "meta/v1.Duration"}
NAMED_SPECIAL = {"types.UID": "string"}
BASIC = {"string", "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16",
         "uint32", "uint64", "float32", "float64", "byte"}
ROOT_TYPE = "core/v1.PodTemplateSpec"


def qualify(uni: Universe, pkg: str, expr: str) -> str:
    """The Go type expression ``expr`` seen in ``pkg`` with every name package-qualified."""
    if expr.startswith("*"):
        return "*" + qualify(uni, pkg, expr[1:])
    if expr.startswith("[]"):
        return "[]" + qualify(uni, pkg, expr[2:])
    if expr.startswith("map["):
        key, value = split_map_type(expr)
        return f"map[{qualify(uni, pkg, key)}]{qualify(uni, pkg, value)}"
    if expr in BASIC:
        return "uint8" if expr == "byte" else expr
    if "." in expr:
        alias, _, base = expr.partition(".")
        target = uni.aliases[pkg].get(alias, alias)
        return f"{target}.{base}"
    return f"{pkg}.{expr}"


def build(src: Path) -> dict[str, object]:
    uni = Universe()
    for pkg, rel, aliases in PACKAGES:
        uni.aliases[pkg] = aliases
        text = (src / rel).read_text(encoding="utf-8")
        # Whole-line comments first: a commented-out field keeps its struct tag
        # through the parser's comment stripping.
        text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))
        parse_file(text, pkg, uni)

    structs: dict[str, list[list[object]]] = {}
    named: dict[str, str] = dict(NAMED_SPECIAL)
    pending = [ROOT_TYPE]

    def visit(expr: str) -> None:
        while expr.startswith(("*", "[]")):
            expr = expr[1:] if expr.startswith("*") else expr[2:]
        if expr.startswith("map["):
            key, value = split_map_type(expr)
            visit(key)
            visit(value)
            return
        if expr in BASIC or expr in SPECIAL or expr in named and expr in NAMED_SPECIAL:
            return
        if expr in uni.structs:
            if expr not in structs:
                pending.append(expr)
            return
        if expr in uni.named:
            npkg, target = uni.named[expr]
            q = qualify(uni, npkg, target.lstrip("= ").strip())
            if expr not in named:
                named[expr] = q
                visit(q)
            return
        raise SystemExit(f"unknown type {expr!r}")

    while pending:
        fq = pending.pop()
        if fq in structs:
            continue
        st = uni.structs[fq]
        fields: list[list[object]] = []
        structs[fq] = fields
        for f in st.fields:
            t = qualify(uni, st.pkg, f.gotype)
            go_name = f.name or t.lstrip("*").rsplit(".", 1)[-1]
            fields.append([go_name, f.json_name, t])
            visit(t)
    return {
        "_comment": "Generated by tools/gen_deep_hash_schema.py; do not edit.",
        "root": ROOT_TYPE,
        "structs": dict(sorted(structs.items())),
        "named": dict(sorted(named.items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = ap.parse_args(argv)
    data = build(args.src)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    args.output.write_text(text + "\n", encoding="utf-8")
    structs = data["structs"]
    assert isinstance(structs, dict)
    print(f"wrote {args.output} ({len(text)} bytes, {len(structs)} structs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
