"""Generate ``pykcm/apiserver/_data/openapi_defs.json.gz`` from the v1.36 OpenAPI definitions.

This is a development tool, run by hand when the Kubernetes version the
project mirrors changes; the runtime never imports ``kubernetes_validate``.

Data flow: kubernetes-validate's ``_definitions.json`` (every OpenAPI
definition of kube-apiserver v1.36 as JSON schema, top key ``$defs``) -> the
definitions of the kinds this server serves, their List kinds and the meta/v1
types every group-version document carries -> everything reachable from them
through ``$ref`` -> each schema rewritten into the form kube-apiserver's
``/openapi/v3`` documents use -> one gzipped JSON document read by
``pykcm.apiserver.endpoints.openapi``.

The rewrite (JSON schema -> OpenAPI v3 ``components.schemas``):

- ``$ref: #/$defs/NAME`` becomes ``#/components/schemas/NAME``; a reference
  with siblings (a property's description) is wrapped as
  ``{"allOf": [{"$ref": ...}], "description": ...}`` as upstream does, because
  OpenAPI 3.0 ignores the siblings of a bare ``$ref``;
- ``type: [T, "null"]`` becomes ``type: T``: kubernetes-validate marks every
  optional field nullable, upstream's built-in schemas never say ``nullable``;
- the ``enum: [KIND]`` / ``enum: [GROUP/VERSION]`` kubernetes-validate adds to
  ``kind`` and ``apiVersion`` is dropped (upstream has none);
- ``IntOrString`` and ``Quantity`` get upstream's v3 form: ``oneOf`` of their
  scalar types (their ``OpenAPIV3OneOfTypes``) without a ``type``, so ``kubectl
  explain`` names them ``<IntOrString>``/``<Quantity>``, with upstream's
  description and format;
- descriptions, ``required``, ``format`` and every ``x-kubernetes-*`` extension
  (group-version-kind, patch strategy and merge key, list type and map keys,
  map type, unions) are kept: ``kubectl explain`` prints the first, ``kubectl
  apply`` computes strategic merge patches from the others.

Output document::

    {"source": "...", "kube_version": "v1.36.0",
     "schemas": {NAME: OPENAPI_V3_SCHEMA, ...}}

Usage: ``python tools/gen_openapi.py [--output PATH] [--definitions PATH]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from _k8s_definitions import KUBE_VERSION_DIR, find_definitions, ref_name

OUT_REF_PREFIX = "#/components/schemas/"
DEFAULT_OUTPUT = (
    Path(__file__).resolve().parent.parent
    / "pykcm"
    / "apiserver"
    / "_data"
    / "openapi_defs.json.gz"
)

# (group, version, kind) of every kind the server serves; each List kind too.
SERVED_KINDS: tuple[tuple[str, str, str], ...] = (
    ("", "v1", "Namespace"),
    ("", "v1", "Pod"),
    ("", "v1", "Node"),
    ("", "v1", "Event"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "Endpoints"),
    ("", "v1", "PodTemplate"),
    ("", "v1", "ComponentStatus"),
    ("", "v1", "PersistentVolume"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "ResourceQuota"),
    ("", "v1", "LimitRange"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "ControllerRevision"),
    ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ("events.k8s.io", "v1", "Event"),
    ("discovery.k8s.io", "v1", "EndpointSlice"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ("apiregistration.k8s.io", "v1", "APIService"),
    ("resource.k8s.io", "v1", "DeviceClass"),
    ("resource.k8s.io", "v1", "ResourceClaim"),
    ("resource.k8s.io", "v1", "ResourceClaimTemplate"),
    ("resource.k8s.io", "v1", "ResourceSlice"),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"),
    ("storage.k8s.io", "v1", "StorageClass"),
    ("storage.k8s.io", "v1", "CSIDriver"),
    ("storage.k8s.io", "v1", "CSINode"),
    ("storage.k8s.io", "v1", "CSIStorageCapacity"),
    ("storage.k8s.io", "v1", "VolumeAttachment"),
    ("storage.k8s.io", "v1", "VolumeAttributesClass"),
    ("policy", "v1", "PodDisruptionBudget"),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "IPAddress"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("networking.k8s.io", "v1", "ServiceCIDR"),
    ("node.k8s.io", "v1", "RuntimeClass"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
)
# Kinds served without a List kind: subresource bodies and the create-only reviews.
SUBRESOURCE_KINDS: tuple[tuple[str, str, str], ...] = (
    ("", "v1", "Binding"),
    ("autoscaling", "v1", "Scale"),
    ("policy", "v1", "Eviction"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
    ("authentication.k8s.io", "v1", "TokenReview"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
)
# The meta/v1 types every group-version document of kube-apiserver carries
# (discovery, delete and patch bodies, watch events, errors), plus the
# metadata types custom resources refer to.
META_TYPES: tuple[str, ...] = (
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
)

# Upstream's v3 schemas of the two "oneOf" scalar types (k8s.io/apimachinery's
# OpenAPIDefinition and OpenAPIV3OneOfTypes of intstr.IntOrString and resource.Quantity).
SCALAR_OVERRIDES: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in "
        "JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  "
        "This allows you to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "Quantity is a fixed-point representation of a number. It provides "
        "convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and "
        "AsInt64() accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= "
        "<signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in "
        "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | "
        "<digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | "
        ".<digits> <sign>            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | "
        "<sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> "
        "<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; "
        "See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | "
        "k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the "
        "capitalization.)\n\n<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> "
        "```\n\nNo matter which of the three exponent forms is used, no quantity may represent a "
        "number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. "
        "Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded "
        "up to 1m.) This may be extended in the future if we require larger or smaller "
        "quantities.\n\nWhen a Quantity is parsed from a string, it will remember the type of "
        "suffix it had, and will use the same type again when it is serialized.\n\nBefore "
        "serializing, Quantity will be put in \"canonical form\". This means that "
        "Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease "
        "in Mantissa) such that:\n\n- No precision is lost - No fractional digits will be "
        "emitted - The exponent (or suffix) is as large as possible.\n\nThe sign will be omitted "
        "unless the number is negative.\n\nExamples:\n\n- 1.5 will be serialized as \"1500m\" - "
        "1.5Gi will be serialized as \"1536Mi\"\n\nNote that the quantity will NEVER be "
        "internally represented by a floating point number. That is the whole point of this "
        "exercise.\n\nNon-canonical units will be normalized by parsing and serializing, so "
        "accepting canonical forms for values.",
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
}

# Keys of a JSON schema node copied unchanged (after the recursion below).
_PLAIN_KEYS = ("description", "format", "required", "enum", "default")


class Generator:
    def __init__(self, defs: dict[str, dict[str, Any]]) -> None:
        self.defs = defs
        self.out: dict[str, dict[str, Any]] = {}
        self.pending: list[str] = []

    def want(self, name: str) -> None:
        if name not in self.defs:
            raise SystemExit(f"definition {name} not found")
        if name not in self.out and name not in self.pending:
            self.pending.append(name)

    def convert(self, schema: dict[str, Any], *, drop_enum: bool = False) -> dict[str, Any]:
        """One JSON schema node -> its OpenAPI v3 form (recursively)."""
        out: dict[str, Any] = {}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref_name(ref)
            self.want(name)
            target = {"$ref": OUT_REF_PREFIX + name}
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            if not siblings:
                return target
            out["allOf"] = [target]
            for k in sorted(siblings):
                out[k] = self.convert_value(k, siblings[k])
            return out
        for key in sorted(schema):
            value = schema[key]
            if key == "type":
                if isinstance(value, list):
                    types = [t for t in value if t != "null"]
                    if len(types) != 1:
                        raise SystemExit(f"unsupported type list {value}")
                    value = types[0]
                out["type"] = value
            elif key == "enum" and drop_enum:
                continue
            elif key == "properties":
                out["properties"] = {
                    p: self.convert(s, drop_enum=p in ("apiVersion", "kind"))
                    for p, s in sorted(value.items())
                }
            elif key in ("items", "additionalProperties"):
                out[key] = self.convert(value) if isinstance(value, dict) else value
            elif key in ("oneOf", "anyOf", "allOf"):
                out[key] = [self.convert(s) for s in value]
            else:
                out[key] = self.convert_value(key, value)
        return out

    def convert_value(self, key: str, value: Any) -> Any:
        if key in _PLAIN_KEYS or key.startswith("x-kubernetes-"):
            return value
        if isinstance(value, dict):
            return self.convert(value)
        return value

    def run(self) -> dict[str, Any]:
        by_gvk: dict[tuple[str, str, str], str] = {}
        for name in sorted(self.defs):
            for e in self.defs[name].get("x-kubernetes-group-version-kind", []) or []:
                by_gvk.setdefault((e.get("group", ""), e["version"], e["kind"]), name)
        roots: list[str] = []
        for g, v, k in SERVED_KINDS:
            roots += [by_gvk[(g, v, k)], by_gvk[(g, v, k + "List")]]
        roots += [by_gvk[gvk] for gvk in SUBRESOURCE_KINDS]
        roots += list(META_TYPES)
        for name in roots:
            self.want(name)
        while self.pending:
            name = self.pending.pop()
            if name in self.out:
                continue
            if name in SCALAR_OVERRIDES:
                self.out[name] = dict(SCALAR_OVERRIDES[name])
                continue
            self.out[name] = self.convert(self.defs[name])
        return {
            "source": f"kubernetes-validate {KUBE_VERSION_DIR}/_definitions.json",
            "kube_version": "v1.36.0",
            "schemas": dict(sorted(self.out.items())),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--definitions", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    src = args.definitions or find_definitions()
    data = json.loads(src.read_text())
    result = Generator(data["$defs"]).run()
    text = json.dumps(result, separators=(",", ":"), sort_keys=False).encode()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same input gives byte-identical output.
    packed = gzip.compress(text, compresslevel=9, mtime=0)
    args.output.write_bytes(packed)
    print(
        f"wrote {args.output} ({len(packed)} bytes gzipped, {len(text)} raw, "
        f"{len(result['schemas'])} definitions)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
