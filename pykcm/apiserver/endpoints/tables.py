"""Server-side Table output (meta.k8s.io/v1 Table): what ``kubectl get`` prints.

Role
----
kubectl does not format built-in objects itself: every ``get`` (list, single
object or watch) asks for a Table with ::

    Accept: application/json;as=Table;v=v1;g=meta.k8s.io,
            application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json

and prints the columns and cells the server sends (``-o wide`` shows the
``priority`` 1 columns too). This module is kube-apiserver v1.36's table
conversion as a pure function over plain JSON objects: the Accept negotiation,
the Table around the rows of the kind's printer (its registry strategy's
``printer``: the column definitions and cells of
``pkg/printers/internalversion/printers.go``, always with ``Wide: true`` as the
server prints; ``rest.NewDefaultTableConvertor``'s ``Name``, ``Created At`` for a
kind without one), and the ``includeObject`` handling of the endpoint handlers
(``asTable``).

Data flow
---------
::

    request ── Accept ──────────► parse_table_accept() ─► "v1" | "v1beta1" | None
                                  (negotiate_conversion(): also the PartialObjectMetadata
                                   targets, answered by partial_metadata.py)
            └─ ?includeObject= ─► parse_include_object() ─► "None"|"Metadata"|"Object"
    LIST/GET result (objects as stored, already defaulted)
            └─► table(kind, group, objects, list_meta=..., include_object=...)
                  the strategy printer of (group, kind) ─► one row per object: cells
                  (+ row conditions for finished pods), row object per
                  includeObject, Table metadata from the list (or the single
                  object's resourceVersion)
    WATCH: one table() per event with that event's object; the first event
           carries the column definitions, later ones with_column_definitions=False.

Nothing here does I/O or touches the store; "now" (for the Age-like cells) is
the wall clock unless a ``now`` (epoch seconds) is injected. The returned dict
may share sub-objects (metadata, the object for includeObject=Object) with the
input: serialize it, do not mutate it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from pykcm.api.validation import go_quote
from pykcm.apiserver.registry.lookup import strategy_class
from pykcm.apiserver.registry.printers import (
    Printer,
    as_dict,
    now_ns,
)

__all__ = [
    "TABLE_GROUP",
    "Conversion",
    "negotiate_conversion",
    "negotiate_table",
    "parse_include_object",
    "parse_table_accept",
    "table",
]

Obj = Mapping[str, Any]
Cells = list[Any]

TABLE_GROUP: Final = "meta.k8s.io"
TABLE_VERSIONS: Final = ("v1", "v1beta1")
INCLUDE_OBJECT_POLICIES: Final = ("None", "Metadata", "Object")

# --- Accept negotiation --------------------------------------------------------

# The media types the API server serializes, in its preference order (a wildcard
# clause picks the first). Only JSON and YAML can carry a Table, only JSON and
# protobuf can stream (watch).
_SERVED_MEDIA_TYPES: Final = (
    ("application", "json"),
    ("application", "yaml"),
    ("application", "vnd.kubernetes.protobuf"),
)
_TABLE_MEDIA_TYPES: Final = frozenset({("application", "json"), ("application", "yaml")})
_STREAM_MEDIA_TYPES: Final = frozenset(
    {("application", "json"), ("application", "vnd.kubernetes.protobuf")}
)


class _Clause(NamedTuple):
    type: str
    subtype: str
    q: float
    params: dict[str, str]


def _parse_accept(header: str) -> list[_Clause]:
    """goautoneg.ParseAccept: clauses, highest q first (then non-wildcards)."""
    clauses: list[_Clause] = []
    for raw in header.split(","):
        part = raw.strip(" ")
        pieces = part.split(";")
        media = pieces[0].split("/")
        mtype = media[0].strip(" ")
        if len(media) == 1 and mtype == "*":
            subtype = "*"
        elif len(media) == 2:
            subtype = media[1].strip(" ")
        else:
            continue
        q = 1.0
        params: dict[str, str] = {}
        for param in pieces[1:]:
            kv = param.split("=", 1)
            if len(kv) != 2:
                continue
            token = kv[0].strip(" ")
            if token == "q":
                try:
                    q = float(kv[1])
                except ValueError:
                    q = 0.0
            else:
                params[token] = kv[1].strip(" ")
        clauses.append(_Clause(mtype, subtype, q, params))

    # Go's sort.Sort is an insertion sort for short slices, with this Less.
    def less(a: _Clause, b: _Clause) -> bool:
        if a.q > b.q:
            return True
        if a.type != "*" and b.type == "*":
            return True
        return a.subtype != "*" and b.subtype == "*"

    for i in range(1, len(clauses)):
        j = i
        while j > 0 and less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


# What one acceptable clause asks for: (target kind, version), the kind "" for the
# resource's own objects, "Table", "PartialObjectMetadata" or "PartialObjectMetadataList".
_Choice = tuple[str, str]
_PARTIAL_KINDS: Final = ("PartialObjectMetadata", "PartialObjectMetadataList")


class Conversion(NamedTuple):
    """What an Accept header negotiated: a meta.k8s.io conversion of the answer."""

    kind: str  # "Table", "PartialObjectMetadata" or "PartialObjectMetadataList"
    version: str  # "v1" or "v1beta1"
    media: str  # the media type of the clause that chose it


def _accept_clause(params: Mapping[str, str], media: tuple[str, str]) -> _Choice | None:
    """acceptMediaTypeOptions + AllowsMediaTypeTransform; None = clause not acceptable."""
    convert: dict[str, str] | None = None
    for k, v in params.items():
        if k in ("as", "g", "v"):
            convert = convert if convert is not None else {"as": "", "g": "", "v": ""}
            convert[k] = v
        elif k == "stream":
            if v and (media not in _STREAM_MEDIA_TYPES or v != "watch"):
                return None
        elif k == "sv" and v and v != "v1":
            return None
    if convert is None:
        return ("", "")
    if convert["g"] == TABLE_GROUP and convert["v"] in TABLE_VERSIONS:
        if convert["as"] == "Table":
            return ("Table", convert["v"]) if media in _TABLE_MEDIA_TYPES else None
        if convert["as"] in _PARTIAL_KINDS:
            return (convert["as"], convert["v"])
    return None


def negotiate_conversion(accept: str | None) -> Conversion | None:
    """The meta.k8s.io conversion a request negotiates (Table, PartialObjectMetadata or
    PartialObjectMetadataList), or None for the resource's own objects.

    Mirrors the API server's NegotiateMediaTypeOptions: clauses are tried by
    q-value (wildcards last), each against the served media types; the first
    acceptable clause decides (an unknown ``as``/``g``/``v`` combination is skipped).
    """
    if not accept:
        return None
    for clause in _parse_accept(accept):
        for media in _SERVED_MEDIA_TYPES:
            if (clause.type == media[0] and clause.subtype in (media[1], "*")) or (
                clause.type == "*" and clause.subtype == "*"
            ):
                choice = _accept_clause(clause.params, media)
                if choice is None:
                    continue
                if choice[0]:
                    return Conversion(choice[0], choice[1], f"{media[0]}/{media[1]}")
                return None
    return None


def negotiate_table(accept: str | None) -> tuple[str, str] | None:
    """The Table a request negotiates: (version, media type), or None.

    A clause for another target (plain objects, PartialObjectMetadata) before a
    Table clause means no Table.
    """
    conv = negotiate_conversion(accept)
    if conv is None or conv.kind != "Table":
        return None
    return conv.version, conv.media


def parse_table_accept(accept: str | None) -> str | None:
    """"v1" or "v1beta1" when the Accept header negotiates a meta.k8s.io Table, else None."""
    negotiated = negotiate_table(accept)
    return negotiated[0] if negotiated else None


def parse_include_object(query_value: str | None) -> str:
    """The ``includeObject`` query parameter: "None", "Metadata" (the default) or "Object".

    Raises ValueError with upstream's message (a 400) for any other value.
    """
    if query_value is None or query_value == "":
        return "Metadata"
    if query_value in INCLUDE_OBJECT_POLICIES:
        return query_value
    raise ValueError(f"Unable to convert to Table as requested: includeObject: Invalid value: "
                     f"{go_quote(query_value)}: must be 'Metadata', 'Object', 'None', or empty")


# --- the Table ------------------------------------------------------------------

def _row_metadata(printer: Printer, meta: Any) -> Mapping[str, Any]:
    """An object's metadata as the table converter sees it (the printer may hide what is a
    spec field of the internal object)."""
    if not isinstance(meta, Mapping):
        return {}
    return printer.metadata(meta) if printer.metadata is not None else meta


def table(
    kind: str,
    group: str,
    objects: Sequence[Obj],
    *,
    printer: Printer | None = None,
    list_meta: Mapping[str, Any] | None,
    include_object: str,
    api_version: str = "meta.k8s.io/v1",
    with_column_definitions: bool = True,
    now: float | None = None,
) -> dict[str, Any]:
    """The meta.k8s.io Table for ``objects`` of one kind (a list, a GET or a watch event).

    ``printer`` is the kind's (its strategy's, looked up by group and kind when not given;
    a custom resource's table is its CRD version's). ``list_meta`` carries the list's resourceVersion / continue / remainingItemCount;
    with None (a GET, a watch event) the Table's resourceVersion is the single
    object's. ``include_object`` is "None", "Metadata" or "Object" (see
    parse_include_object). ``api_version`` is "meta.k8s.io/v1" or
    "meta.k8s.io/v1beta1" (it also names the PartialObjectMetadata version).
    ``now`` (Unix seconds) pins the clock for Age-like cells.
    """
    if include_object not in INCLUDE_OBJECT_POLICIES:
        raise ValueError(f"unrecognized includeObject value: {go_quote(include_object)}")
    if printer is None:
        printer = strategy_class(group, kind).printer
    columns, row_of = printer.columns, printer.row
    now_stamp = now_ns(now)

    metadata: dict[str, Any] = {}
    if list_meta is not None:
        rv = list_meta.get("resourceVersion")
        if rv:
            metadata["resourceVersion"] = rv
        cont = list_meta.get("continue")
        if cont:
            metadata["continue"] = cont
        if list_meta.get("remainingItemCount") is not None:
            metadata["remainingItemCount"] = list_meta["remainingItemCount"]
    elif len(objects) == 1:
        rv = as_dict(objects[0].get("metadata")).get("resourceVersion")
        if rv:
            metadata["resourceVersion"] = rv

    rows: list[dict[str, Any]] = []
    for obj in objects:
        printed = row_of(obj, now_stamp)
        row: dict[str, Any] = {"cells": printed.cells}
        if printed.conditions:
            row["conditions"] = printed.conditions
        if include_object == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": _row_metadata(printer, obj.get("metadata")),
            }
        elif include_object == "Object":
            row["object"] = obj
        else:
            row["object"] = None  # includeObject=None: an explicit null, as upstream
        rows.append(row)

    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": [dict(c) for c in columns] if with_column_definitions else [],
        "rows": rows,
    }
