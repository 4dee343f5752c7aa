"""The SwaggerDoc text of a built-in type's field, for printer column descriptions.

kube-apiserver's Table columns describe themselves with ``SwaggerDoc()[field]`` of the Go
type; the OpenAPI definitions pykcm generates (``_data/openapi_defs.json.gz``, from the
same comments) carry the same texts, so they are read from there, once, instead of being
copied into each strategy.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path
from typing import Any, Final

__all__ = ["field_doc"]

_DEFS: Final = Path(__file__).resolve().parents[1] / "_data" / "openapi_defs.json.gz"


@functools.cache
def _schemas() -> dict[str, Any]:
    with gzip.open(_DEFS) as f:
        schemas: dict[str, Any] = json.load(f)["schemas"]
    return schemas


def field_doc(type_name: str, field: str) -> str:
    """The description of ``field`` of io.k8s.api.``type_name`` (``storage.v1.CSIDriverSpec``)."""
    props = _schemas()[f"io.k8s.api.{type_name}"]["properties"]
    return str(props[field].get("description", ""))
