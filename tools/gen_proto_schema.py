#!/usr/bin/env python3
"""Generate ``pykcm/api/_data/proto_schema.json.gz`` from Kubernetes Go type definitions.

This is a development tool, run by hand when the Kubernetes version the
project mirrors changes; the runtime only reads the JSON table it writes
(``pykcm.api.protobuf`` decodes, ``pykcm.api.protobuf_encode`` encodes).

Inputs
------
The Go ``types.go`` files of ``k8s.io/api`` and ``k8s.io/apimachinery`` as the
v1.36 source tree unpacks them (``--types-dir``, default ``/tmp/kube-src/k8s.io``,
see DESIGN.md; never in this repository), at the paths of ``PACKAGES``
(``api/core/v1/types.go``, ``apimachinery/pkg/apis/meta/v1/types.go``, ...).
Only the ``type X struct {...}`` / ``type X string`` declarations are read:
per field its name, Go type and the ``json``/``protobuf`` struct tags
(comments, constants and functions are skipped; whole-line comments first, so
a commented-out field is not read). kube-aggregator's
``kube-aggregator/pkg/apis/apiregistration/v1/types.go`` is not in the source
tarball: it was saved there by hand from ``staging/src/k8s.io/kube-aggregator``
(fetched with the ``search`` tool's ``read_file``).

The handful of apimachinery types with hand-written protobuf/JSON codecs are
built in here instead of parsed (their behaviour is described in
``meta/v1/time_proto.go``, ``micro_time_proto.go``, ``duration.go``,
``api/resource/quantity_proto.go``, ``util/intstr/intstr.go`` and
``runtime/types_proto.go``): ``Time``, ``MicroTime``, ``Duration``,
``FieldsV1``, ``resource.Quantity``, ``intstr.IntOrString``,
``runtime.RawExtension``; ``types.UID`` is a string.

Data flow: Go declarations -> one ``Struct`` per type (fields in declaration
order) -> field types resolved through named types (``type RestartPolicy
string``, ``type ResourceList map[ResourceName]resource.Quantity``, aliases)
-> compact table. The wire kind of a field comes from its Go type, not from
the tag (several tags say ``bytes`` for an ``*int32`` or ``rep`` for a plain
string; gogo-protobuf itself generates from the Go type).

Output
------
::

    {"messages": {"core/v1.Pod": {"1": [json name, kind, element, flags], ...}, ...},
     "kinds": {"v1/Pod": "core/v1.Pod", "apps/v1/Deployment": ..., ...},
     "anyVersionKinds": {"DeleteOptions": "meta/v1.DeleteOptions", ...}}

``kind`` is one of ``s`` string, ``b`` bool, ``i32``, ``i64``, ``u32``,
``u64``, ``f64``, ``y`` ([]byte, base64 in JSON), ``m`` message (``element`` names
it), ``time``, ``mtime``, ``dur``, ``qty``, ``ios``, ``raw``, ``fv1``;
``element`` is ``""`` unless ``kind`` is ``m``. ``flags`` is a bit set:
1 pointer, 2 omitempty, 4 repeated (slice), 8 map (string keys; kind/element
describe the values), 16 inline (embedded struct without a JSON name: its
fields appear in the parent JSON object), 32 omitzero.
``kinds`` maps ``apiVersion/kind`` of every type that embeds ``TypeMeta``;
``anyVersionKinds`` lists the meta/v1 kinds that client-go sends under any
group version (``DeleteOptions`` of a typed ``apps/v1`` client carries
``apiVersion: apps/v1``).

Usage: ``python tools/gen_proto_schema.py [--types-dir DIR] [--output PATH]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pykcm.api.go_spew import split_map_type

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "pykcm" / "api" / "_data" / "proto_schema.json.gz"
DEFAULT_TYPES_DIR = Path("/tmp/kube-src/k8s.io")

# (package id, path under the types dir, group/version of its root kinds,
#  import aliases used in the file -> package id)
PACKAGES: list[tuple[str, str, str, dict[str, str]]] = [
    ("meta/v1", "apimachinery/pkg/apis/meta/v1/types.go", "meta.k8s.io/v1", {}),
    ("core/v1", "api/core/v1/types.go", "v1", {"metav1": "meta/v1"}),
    ("apps/v1", "api/apps/v1/types.go", "apps/v1", {"metav1": "meta/v1", "v1": "core/v1"}),
    ("batch/v1", "api/batch/v1/types.go", "batch/v1", {"metav1": "meta/v1", "corev1": "core/v1"}),
    (
        "coordination/v1",
        "api/coordination/v1/types.go",
        "coordination.k8s.io/v1",
        {"metav1": "meta/v1"},
    ),
    (
        "autoscaling/v1",
        "api/autoscaling/v1/types.go",
        "autoscaling/v1",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    (
        "autoscaling/v2",
        "api/autoscaling/v2/types.go",
        "autoscaling/v2",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    ("policy/v1", "api/policy/v1/types.go", "policy/v1", {"metav1": "meta/v1"}),
    (
        "discovery/v1",
        "api/discovery/v1/types.go",
        "discovery.k8s.io/v1",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    (
        "authentication/v1",
        "api/authentication/v1/types.go",
        "authentication.k8s.io/v1",
        {"metav1": "meta/v1"},
    ),
    (
        "authorization/v1",
        "api/authorization/v1/types.go",
        "authorization.k8s.io/v1",
        {"metav1": "meta/v1"},
    ),
    (
        "storage/v1",
        "api/storage/v1/types.go",
        "storage.k8s.io/v1",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    ("rbac/v1", "api/rbac/v1/types.go", "rbac.authorization.k8s.io/v1", {"metav1": "meta/v1"}),
    (
        "certificates/v1",
        "api/certificates/v1/types.go",
        "certificates.k8s.io/v1",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    (
        "networking/v1",
        "api/networking/v1/types.go",
        "networking.k8s.io/v1",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    (
        "node/v1",
        "api/node/v1/types.go",
        "node.k8s.io/v1",
        {"metav1": "meta/v1", "corev1": "core/v1"},
    ),
    (
        "scheduling/v1",
        "api/scheduling/v1/types.go",
        "scheduling.k8s.io/v1",
        {"metav1": "meta/v1", "apiv1": "core/v1"},
    ),
    (
        "admissionregistration/v1",
        "api/admissionregistration/v1/types.go",
        "admissionregistration.k8s.io/v1",
        {"metav1": "meta/v1"},
    ),
    (
        "flowcontrol/v1",
        "api/flowcontrol/v1/types.go",
        "flowcontrol.apiserver.k8s.io/v1",
        {"metav1": "meta/v1"},
    ),
    (
        "resource/v1",
        "api/resource/v1/types.go",
        "resource.k8s.io/v1",
        {"metav1": "meta/v1", "v1": "core/v1"},
    ),
    # kube-aggregator's types (not in the v1.36 source tarball under shared/: saved by hand
    # from staging/src/k8s.io/kube-aggregator, whose v1 types have not changed since v1.10)
    (
        "apiregistration/v1",
        "kube-aggregator/pkg/apis/apiregistration/v1/types.go",
        "apiregistration.k8s.io/v1",
        {"metav1": "meta/v1"},
    ),
]

# Fields left out of the table (decoding skips them): map[string]ExtraValue (a map of
# string lists, which the table cannot describe) only appears in review answers and in a
# CSR's spec.extra (which the server sets from the requester itself).
SKIPPED_FIELDS = {"authentication/v1.UserInfo.Extra",
                  "authorization/v1.SubjectAccessReviewSpec.Extra",
                  "certificates/v1.CertificateSigningRequestSpec.Extra"}

# Extra apiVersions whose kinds share a struct with one generated above.
VERSION_ALIASES: dict[str, list[str]] = {"policy/v1beta1/Eviction": ["policy/v1/Eviction"]}

# meta/v1 kinds accepted under any apiVersion (client-go registers the option
# types and Status into every group version).
ANY_VERSION_KINDS = [
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "ApplyOptions",
    "GetOptions",
    "ListOptions",
    "Status",
    "TableOptions",
]

SCALARS = {
    "string": "s",
    "bool": "b",
    "int32": "i32",
    "int64": "i64",
    "int": "i64",
    "uint32": "u32",
    "uint64": "u64",
    "float64": "f64",
}

# Types with hand-written codecs, by fully qualified name.
SPECIAL = {
    "meta/v1.Time": "time",
    "meta/v1.MicroTime": "mtime",
    "meta/v1.Duration": "dur",
    "meta/v1.FieldsV1": "fv1",
    "resource.Quantity": "qty",
    "intstr.IntOrString": "ios",
    "runtime.RawExtension": "raw",
    "types.UID": "s",
}
SPECIAL_PACKAGES = {"resource", "intstr", "runtime", "types"}

F_POINTER, F_OMITEMPTY, F_REPEATED, F_MAP, F_INLINE, F_OMITZERO = 1, 2, 4, 8, 16, 32

TYPE_RE = re.compile(r"^type\s+(\w+)\s*(=)?\s*(.+?)\s*$")
FIELD_RE = re.compile(r"^(\w+)?\s*([^\s`]+)?\s*`([^`]*)`\s*$")
TAG_RE = re.compile(r'(\w+):"([^"]*)"')


@dataclass
class GoField:
    name: str  # Go field name ("" when embedded)
    gotype: str
    json_name: str | None  # None: not serialized to JSON ("-")
    json_opts: set[str]
    proto_num: int | None  # None: not in protobuf (TypeMeta)
    embedded: bool


@dataclass
class Struct:
    pkg: str
    name: str
    fields: list[GoField] = field(default_factory=list)


@dataclass
class Universe:
    structs: dict[str, Struct] = field(default_factory=dict)  # "pkg.Name" -> Struct
    named: dict[str, tuple[str, str]] = field(default_factory=dict)  # "pkg.Name" -> (pkg, type)
    aliases: dict[str, dict[str, str]] = field(default_factory=dict)  # pkg -> alias -> pkg


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    out = []
    for line in text.splitlines():
        # drop // comments that are not inside a struct tag (tags never contain //
        # outside of quoted URLs, and tags sit between backticks)
        if "`" in line:
            head, _, rest = line.partition("`")
            tag, _, _tail = rest.partition("`")
            head = head.split("//", 1)[0]
            line = f"{head}`{tag}`"
        else:
            line = line.split("//", 1)[0]
        out.append(line.rstrip())
    return "\n".join(out)


def drop_comment_lines(text: str) -> str:
    """Whole-line comments removed first: a commented-out field (meta/v1's clusterName,
    apiregistration's priority) keeps its struct tag through strip_comments."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))


def parse_tags(tag: str) -> dict[str, str]:
    return {k: v for k, v in TAG_RE.findall(tag)}


def parse_file(text: str, pkg: str, uni: Universe) -> None:
    lines = strip_comments(text).splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line.startswith("type "):
            continue
        if line.endswith("struct {"):
            name = line.split()[1]
            st = Struct(pkg, name)
            while i < len(lines):
                fl = lines[i].strip()
                i += 1
                if fl == "}":
                    break
                if not fl:
                    continue
                st.fields.append(parse_field(fl, pkg, name))
            uni.structs[f"{pkg}.{name}"] = st
            continue
        if line.endswith("struct{}"):
            uni.structs[f"{pkg}.{line.split()[1]}"] = Struct(pkg, line.split()[1])
            continue
        m = TYPE_RE.match(line)
        if m and not m.group(3).startswith(("interface", "func", "struct")):
            uni.named[f"{pkg}.{m.group(1)}"] = (pkg, m.group(3))


def parse_field(line: str, pkg: str, struct: str) -> GoField:
    head, _, rest = line.partition("`")
    tag = rest.rstrip("`")
    parts = head.split()
    if len(parts) == 1:
        name, gotype, embedded = "", parts[0], True
    elif len(parts) == 2:
        name, gotype, embedded = parts[0], parts[1], False
    else:
        raise SystemExit(f"{pkg}.{struct}: cannot parse field line: {line!r}")
    tags = parse_tags(tag)
    json_name: str | None
    opts: set[str] = set()
    if "json" in tags:
        jparts = tags["json"].split(",")
        json_name = None if jparts[0] == "-" else jparts[0]
        opts = set(jparts[1:])
    else:
        json_name = "" if embedded else name
    proto_num: int | None = None
    if "protobuf" in tags:
        pparts = tags["protobuf"].split(",")
        proto_num = int(pparts[1])
    return GoField(name, gotype, json_name, opts, proto_num, embedded)


def qualify(uni: Universe, pkg: str, name: str) -> str:
    """Fully qualified name of a Go type identifier seen in package ``pkg``."""
    if "." in name:
        alias, _, base = name.partition(".")
        if alias in SPECIAL_PACKAGES:
            return f"{alias}.{base}"
        target = uni.aliases[pkg].get(alias)
        if target is None:
            raise SystemExit(f"{pkg}: unknown import alias in {name!r}")
        return f"{target}.{base}"
    return f"{pkg}.{name}"


@dataclass
class Resolved:
    kind: str
    element: str
    flags: int


def resolve(uni: Universe, pkg: str, gotype: str, seen: tuple[str, ...] = ()) -> Resolved:
    """Resolve a Go type expression to (kind, element, pointer/repeated/map flags)."""
    if gotype.startswith("*"):
        r = resolve(uni, pkg, gotype[1:], seen)
        return Resolved(r.kind, r.element, r.flags | F_POINTER)
    if gotype == "[]byte":
        return Resolved("y", "", 0)
    if gotype.startswith("[]"):
        r = resolve(uni, pkg, gotype[2:], seen)
        if r.flags & (F_REPEATED | F_MAP):
            raise SystemExit(f"{pkg}: nested collections are not supported: {gotype}")
        return Resolved(r.kind, r.element, F_REPEATED)
    if gotype.startswith("map["):
        key, value = split_map_type(gotype)
        k = resolve(uni, pkg, key, seen)
        if k.kind != "s" or k.flags:
            raise SystemExit(f"{pkg}: only string-keyed maps are supported: {gotype}")
        v = resolve(uni, pkg, value, seen)
        if v.flags & (F_REPEATED | F_MAP | F_POINTER):
            raise SystemExit(f"{pkg}: unsupported map value type: {gotype}")
        return Resolved(v.kind, v.element, F_MAP)
    if gotype in SCALARS:
        return Resolved(SCALARS[gotype], "", 0)
    fq = qualify(uni, pkg, gotype)
    if fq in SPECIAL:
        return Resolved(SPECIAL[fq], "", 0)
    if fq in uni.structs:
        return Resolved("m", fq, 0)
    if fq in uni.named:
        if fq in seen:
            raise SystemExit(f"recursive named type {fq}")
        npkg, target = uni.named[fq]
        target = target.lstrip("= ").strip()
        return resolve(uni, npkg, target, (*seen, fq))
    raise SystemExit(f"{pkg}: unknown type {gotype!r} ({fq})")


def build(types_dir: Path) -> dict[str, object]:
    uni = Universe()
    for pkg, rel, _gv, aliases in PACKAGES:
        path = types_dir / rel
        if not path.is_file():
            raise SystemExit(f"missing input {path} (see the module docstring)")
        uni.aliases[pkg] = aliases
        parse_file(drop_comment_lines(path.read_text(encoding="utf-8")), pkg, uni)

    kinds: dict[str, str] = {}
    roots: list[str] = []
    for pkg, _rel, gv, _aliases in PACKAGES:
        for fq, st in uni.structs.items():
            if st.pkg != pkg:
                continue
            if any(f.embedded and f.gotype in ("TypeMeta", "metav1.TypeMeta") for f in st.fields):
                kinds[f"{gv}/{st.name}"] = fq
                roots.append(fq)
    for alias, targets in VERSION_ALIASES.items():
        kinds[alias] = kinds[targets[0]]

    messages: dict[str, dict[str, list[object]]] = {}
    pending = list(roots)
    while pending:
        fq = pending.pop()
        if fq in messages:
            continue
        st = uni.structs[fq]
        table: dict[int, list[object]] = {}
        for f in st.fields:
            if f.proto_num is None or f.json_name is None:
                continue
            if f"{fq}.{f.name}" in SKIPPED_FIELDS:
                continue
            r = resolve(uni, st.pkg, f.gotype)
            flags = r.flags
            if "omitempty" in f.json_opts:
                flags |= F_OMITEMPTY
            if "omitzero" in f.json_opts:
                flags |= F_OMITZERO
            if f.embedded and f.json_name == "":
                if r.kind != "m" or r.flags:
                    raise SystemExit(f"{fq}: inline field of non-struct type {f.gotype}")
                flags |= F_INLINE
            if f.proto_num in table:
                raise SystemExit(f"{fq}: duplicate protobuf field number {f.proto_num}")
            table[f.proto_num] = [f.json_name, r.kind, r.element, flags]
            if r.kind == "m" and r.element not in messages:
                pending.append(r.element)
        messages[fq] = {str(k): table[k] for k in sorted(table)}

    any_version = {k: f"meta/v1.{k}" for k in ANY_VERSION_KINDS if f"meta/v1.{k}" in messages}
    return {
        "_comment": "Generated by tools/gen_proto_schema.py; do not edit.",
        "messages": dict(sorted(messages.items())),
        "kinds": dict(sorted(kinds.items())),
        "anyVersionKinds": any_version,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types-dir", type=Path, default=DEFAULT_TYPES_DIR)
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = ap.parse_args(argv)
    data = build(args.types_dir)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    # gzip (the wheel ships it; mtime 0: the same input gives the same bytes)
    args.output.write_bytes(gzip.compress((text + "\n").encode(), mtime=0))
    msgs = data["messages"]
    assert isinstance(msgs, dict)
    print(
        f"wrote {args.output} ({len(text)} bytes, {len(msgs)} messages, "
        f"{len(data['kinds'])} kinds)",  # type: ignore[arg-type]
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
