#!/usr/bin/env python3
"""Generate ``pykcm/apiserver/_data/go_types.json.gz``: the Go types kube-apiserver decodes into.

A development tool, run by hand when the Kubernetes version pykcm mirrors
changes; the runtime only reads the table (:mod:`pykcm.apiserver.serializer.go_types`).

Why: kube-apiserver decodes a JSON body into the Go struct of its kind, and
Go's decoder decides what a client sees for a value of the wrong JSON type
(``json: cannot unmarshal number into Go struct field
ObjectMeta.metadata.name of type string``: the innermost struct's name, the
JSON path, the Go type with its package), and what the object looks like
once encoded again (``omitempty`` fields at their zero value disappear). The
OpenAPI documents lose both the named Go types (``v1.PullPolicy``) and the
``omitempty`` options; the Go declarations have them.

Inputs: the ``types.go`` files of the packages in
``tools/gen_proto_schema.py``'s ``PACKAGES`` (plus events.k8s.io/v1), parsed
with its struct parser; the read-only source tree at ``/tmp/kube-src`` (or
``--src``), where kube-aggregator's apiregistration types must be saved by hand
(see that module's docstring: the source tarball lacks them).

Output::

    {"structs": {"core/v1.Container": [[jsonName, type, flags], ...], ...},
     "named":   {"core/v1.PullPolicy": "string", ...},
     "kinds":   {"v1/ConfigMap": "core/v1.ConfigMap", "apps/v1/Deployment": ...}}

Types are Go type expressions with package-qualified names (``*core/v1.Probe``,
``[]core/v1.Container``, ``map[string]string``, ``meta/v1.Time``,
``resource.Quantity``). ``flags``: 1 omitempty, 2 inline (an embedded struct
whose fields are the parent's; its Go name is the type's), 4 omitzero. Fields
not in JSON (``json:"-"``) are left out.

Usage: ``python tools/gen_go_types.py [--src DIR] [--output PATH]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_proto_schema import PACKAGES, Universe, parse_file

from pykcm.api.go_spew import split_map_type

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "pykcm" / "apiserver" / "_data" / "go_types.json.gz"
DEFAULT_SRC = Path("/tmp/kube-src/k8s.io")

EXTRA_PACKAGES = [
    ("events/v1", "api/events/v1/types.go", "events.k8s.io/v1",
     {"metav1": "meta/v1", "corev1": "core/v1"}),
]
# Types whose Go code decodes them by hand (UnmarshalJSON); the runtime knows each.
SPECIAL = {"resource.Quantity", "intstr.IntOrString", "meta/v1.Time", "meta/v1.MicroTime",
           "meta/v1.Duration", "meta/v1.FieldsV1", "runtime.RawExtension"}
SPECIAL_PACKAGES = {"resource", "intstr", "runtime", "types"}
NAMED_SPECIAL = {"types.UID": "string"}
BASIC = {"string", "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16",
         "uint32", "uint64", "float32", "float64", "byte", "interface{}"}
F_OMITEMPTY, F_INLINE, F_OMITZERO = 1, 2, 4


def qualify(uni: Universe, pkg: str, expr: str) -> str:
    """The Go type expression ``expr`` seen in ``pkg`` with every name package-qualified."""
    if expr.startswith("*"):
        return "*" + qualify(uni, pkg, expr[1:])
    if expr.startswith("[]"):
        return "[]" + qualify(uni, pkg, expr[2:])
    if expr.startswith("map["):
        k, v = split_map_type(expr)
        return f"map[{qualify(uni, pkg, k)}]{qualify(uni, pkg, v)}"
    if expr in BASIC:
        return "uint8" if expr == "byte" else expr
    if "." in expr:
        alias, _, base = expr.partition(".")
        if alias in SPECIAL_PACKAGES:
            return expr
        target = uni.aliases[pkg].get(alias)
        if target is None:
            raise SystemExit(f"{pkg}: unknown import alias in {expr!r}")
        return f"{target}.{base}"
    return f"{pkg}.{expr}"


def build(src: Path) -> dict[str, object]:
    uni = Universe()
    packages = [*PACKAGES, *EXTRA_PACKAGES]
    for pkg, rel, _gv, aliases in packages:
        uni.aliases[pkg] = aliases
        text = (src / rel).read_text(encoding="utf-8")
        # Whole-line comments first: a commented-out field keeps its struct tag
        # through the parser's comment stripping.
        text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))
        parse_file(text, pkg, uni)

    kinds: dict[str, str] = {}
    for pkg, _rel, gv, _aliases in packages:
        for fq, st in uni.structs.items():
            if st.pkg == pkg and any(f.embedded and f.gotype in ("TypeMeta", "metav1.TypeMeta")
                                     for f in st.fields):
                kinds[f"{gv}/{st.name}"] = fq

    structs: dict[str, list[list[object]]] = {}
    named: dict[str, str] = dict(NAMED_SPECIAL)
    pending = list(kinds.values())

    def visit(expr: str) -> None:
        while expr.startswith(("*", "[]")):
            expr = expr[1:] if expr.startswith("*") else expr[2:]
        if expr.startswith("map["):
            k, v = split_map_type(expr)
            visit(k)
            visit(v)
            return
        if expr in BASIC or expr in SPECIAL or expr in NAMED_SPECIAL:
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
            if f.json_name is None:
                continue
            t = qualify(uni, st.pkg, f.gotype)
            flags = 0
            if "omitempty" in f.json_opts:
                flags |= F_OMITEMPTY
            if "omitzero" in f.json_opts:
                flags |= F_OMITZERO
            if f.embedded and f.json_name == "":
                flags |= F_INLINE
            fields.append([f.json_name, t, flags])
            visit(t)
    return {
        "_comment": "Generated by tools/gen_go_types.py; do not edit.",
        "structs": dict(sorted(structs.items())),
        "named": dict(sorted(named.items())),
        "kinds": dict(sorted(kinds.items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = ap.parse_args(argv)
    data = build(args.src)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    # mtime 0: the same input gives the same bytes
    args.output.write_bytes(gzip.compress((text + "\n").encode(), mtime=0))
    structs = data["structs"]
    assert isinstance(structs, dict)
    print(f"wrote {args.output} ({len(text)} bytes, {len(structs)} structs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
