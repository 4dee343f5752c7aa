"""The three PATCH formats of the Kubernetes API: JSON Patch, JSON merge patch, strategic merge patch.

The API server's PATCH handler decodes the request body, picks the function
for the request's content type and hands it the stored object:

* ``application/json-patch+json`` -> :func:`apply_json_patch` (RFC 6902)
* ``application/merge-patch+json`` -> :func:`apply_merge_patch` (RFC 7386)
* ``application/strategic-merge-patch+json`` -> :func:`apply_strategic_merge_patch`,
  with the object's schema definition from :func:`schema_ref_for` (None for
  custom resources, which kube-apiserver refuses with 415).

Each returns a new document and never modifies its inputs; results share
unchanged subtrees with the original, so both are treated as immutable.
Failures raise a :class:`PatchError` subclass whose ``http_status`` is the
code kube-apiserver would answer.
"""

from pykcm.api.patch._errors import (
    InvalidPatchError,
    PatchConflictError,
    PatchError,
    PatchTestFailedError,
)
from pykcm.api.patch._schema import (
    FieldMeta,
    PatchSchema,
    TypeNode,
    load_patch_schema,
    schema_ref_for,
)
from pykcm.api.patch.json_patch import apply_json_patch
from pykcm.api.patch.merge_patch import apply_merge_patch
from pykcm.api.patch.strategic_merge_patch import apply_strategic_merge_patch

__all__ = [
    "FieldMeta",
    "InvalidPatchError",
    "PatchConflictError",
    "PatchError",
    "PatchSchema",
    "PatchTestFailedError",
    "TypeNode",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "load_patch_schema",
    "schema_ref_for",
]
