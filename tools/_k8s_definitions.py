"""Where the generators find Kubernetes v1.36's OpenAPI definitions.

kubernetes-validate (a dev-only dependency) ships them as one JSON Schema file
(top key ``$defs``, refs ``#/$defs/io.k8s.api...``); gen_patch_schema.py and
gen_openapi.py both read it.
"""

from __future__ import annotations

from pathlib import Path

KUBE_VERSION_DIR = "v1.36.0-local"
REF_PREFIX = "#/$defs/"


def find_definitions() -> Path:
    """Locate kubernetes-validate's bundled v1.36 definitions file."""
    import kubernetes_validate  # type: ignore[import-untyped]  # dev-only dependency

    base = Path(kubernetes_validate.__file__).resolve().parent
    path = base / "kubernetes-json-schema" / KUBE_VERSION_DIR / "_definitions.json"
    if not path.is_file():
        raise SystemExit(f"definitions not found at {path}")
    return path


def ref_name(ref: str) -> str:
    """The definition name a ``$ref`` points at."""
    if not ref.startswith(REF_PREFIX):
        raise SystemExit(f"unexpected $ref form: {ref}")
    return ref[len(REF_PREFIX):]
