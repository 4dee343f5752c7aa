"""HTTP handlers: from an aiohttp request to a REST storage call and back.

One catch-all handler resolves the `RequestInfo`, decodes the query into
List/Delete options and the body into an object (JSON or YAML, size-limited),
dispatches on the verb, and encodes the answer. Objects leave as the bytes the
store already holds; errors leave as `metav1.Status`. WATCH is a chunked
stream fed by a `Watcher` from the store.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import math
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import yaml
from aiohttp import web

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.fields import parse_field_selector
from pykcm.api.labels import parse_label_selector, selector_from_label_selector
from pykcm.api.patch import schema_ref_for
from pykcm.api.protobuf import (
    ProtobufDecodeError,
    ProtobufUnsupportedKindError,
    decode_k8s_protobuf,
    is_k8s_protobuf,
)
from pykcm.api.resources import ResourceInfo, ResourceRegistry
from pykcm.api.timestamps import format_time
from pykcm.api.validation import go_quote
from pykcm.api.virtual_clock import VirtualClock
from pykcm.apiserver import errors
from pykcm.apiserver.auth import access_reviews, service_accounts
from pykcm.apiserver.auth.authentication import AuthResponse, TokenAuthenticator
from pykcm.apiserver.crd.custom_resources import json_path, set_json_path
from pykcm.apiserver.endpoints import partial_metadata, pod_proxy, tables
from pykcm.apiserver.endpoints.discovery import Discovery
from pykcm.apiserver.endpoints.openapi import (
    OpenAPI,
    field_warning_headers,
    parse_field_validation,
    strict_error,
    warning_header,
)
from pykcm.apiserver.endpoints.request_info import (
    RequestInfo,
    invalid_storage_key,
    path_segment_name_errors,
    resolve,
)
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager.apply_options import check_applied_name, validate_patch_options
from pykcm.apiserver.fieldmanager.manager_name import manager_or_user_agent
from pykcm.apiserver.fieldmanager.path import Path as FieldPath
from pykcm.apiserver.fieldmanager.path import field as path_field
from pykcm.apiserver.fieldmanager.scale_handler import (
    REPLICAS_PATHS,
    to_parent,
    to_subresource,
)
from pykcm.apiserver.registry import defaults, eviction, resource_metrics
from pykcm.apiserver.registry.core import componentstatus
from pykcm.apiserver.registry.rest_storage import (
    PATCH_TYPES,
    DeleteOptions,
    ListOptions,
    RESTStorage,
    apply_patch,
    check_patched_types,
    list_body,
    parse_rv,
    patch_type,
    type_meta_error,
)
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.version_view import VIEWS, VersionView
from pykcm.apiserver.serializer import go_json
from pykcm.apiserver.serializer.go_types import GoDecodeError, check_struct, kind_struct, zero_nulls
from pykcm.apiserver.serializer.yaml_body import DecodedTooLarge, YAMLBodyError, decode_yaml
from pykcm.apiserver.storage import ADDED, Entry, Watcher, bookmark_line, object_key

log = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request body limit
BOOKMARK_INTERVAL = 60.0
JSON = "application/json"


async def read_body(request: web.Request) -> bytes:
    """The request body, refused past kube-apiserver's limit (limitedReadBody: 413)."""
    raw = await request.read()
    if len(raw) > MAX_BODY:
        raise errors.request_entity_too_large(f"limit is {MAX_BODY}")
    return raw


def request_path(request: web.Request) -> str:
    """The URL path decoded as Go's net/url decodes it (every escape, %2F included)."""
    raw = request.raw_path.partition("?")[0]
    return urllib.parse.unquote(raw, errors="replace") if "%" in raw else raw


def json_response(body: bytes, status: int = 200,
                  headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON, headers=headers)


def page_not_found() -> web.Response:
    return web.Response(status=404, body=b"404 page not found\n",
                        headers={"Content-Type": "text/plain; charset=utf-8",
                                 "X-Content-Type-Options": "nosniff"})


def status_response(err: StatusError) -> web.Response:
    return json_response(err.body(), err.code, err.headers or None)


def success_status(details: dict[str, Any]) -> bytes:
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": details})


def deleted_status(res: ResourceInfo, obj: dict[str, Any]) -> bytes:
    """The Success Status a DELETE answers with, naming what was deleted."""
    meta = obj["metadata"]
    details: dict[str, Any] = {"name": meta["name"]}
    if res.group:
        details["group"] = res.group
    details.update({"kind": res.plural, "uid": meta.get("uid")})
    return success_status(details)


_WARNINGS: web.RequestKey[list[str]] = web.RequestKey("pykcm.warnings", list)
# Who the server authenticated (absent for an anonymous request).
AUTHENTICATED: web.RequestKey[AuthResponse] = web.RequestKey("pykcm.authenticated",
                                                             AuthResponse)
# Deprecated resources of v1.36: kube-apiserver warns on every request to them.
_DEPRECATED = {("", "v1", "endpoints"):
               "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"}
_JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
    "to remove them or set propagationPolicy=Orphan to suppress this warning")


def _request_warnings(info: RequestInfo, q: Any) -> list[str]:
    """The Warning headers a request gets whatever its outcome."""
    out = []
    msg = _DEPRECATED.get((info.group, info.version, info.resource))
    if msg:
        out.append(msg)
    return out


def _update_warnings(st: Strategy, obj: dict[str, Any],
                     old: dict[str, Any] | None) -> list[str]:
    """The strategy's warnings on an update (on a create when there was no old object: an
    update that created it)."""
    return st.warnings_on_create(obj) if old is None else st.warnings_on_update(obj, old)


def _warn_job_orphaning(request: web.Request, res: ResourceInfo, opts: DeleteOptions) -> None:
    """batch/v1 Jobs orphan their pods by default: a delete that does not say so is warned."""
    if (res.kind == "Job" and res.group == "batch" and opts.propagation_policy is None
            and opts.orphan_dependents is None):
        request[_WARNINGS].append(_JOB_DELETE_WARNING)


def _with_warnings(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
    if not resp.prepared:
        for w in request.get(_WARNINGS) or ():
            resp.headers.add("Warning", warning_header(w))
    return resp


# Registries that answer a DELETE with the deleted object, not a Status (ReturnDeletedObject).
_RETURNS_DELETED = frozenset({"Pod", "Service", "ServiceAccount", "PodTemplate", "Namespace",
                              "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
                              "CSIDriver", "CSINode", "VolumeAttachment", "DeviceClass",
                              "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})


def _bool(v: str | None) -> bool | None:
    if v is None:
        return None
    return v.lower() in ("1", "true", "yes")


def _int(q: Any, name: str) -> int | None:
    v = q.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:  # the query decoder passes strconv's message on
        raise errors.bad_request(errors.go_parse_int_error("ParseInt", v)) from None


def list_options(q: Any) -> ListOptions:
    return ListOptions(
        label_selector=q.get("labelSelector", ""),
        field_selector=q.get("fieldSelector", ""),
        resource_version=q.get("resourceVersion"),
        resource_version_match=q.get("resourceVersionMatch", ""),
        limit=_int(q, "limit") or 0,
        continue_token=q.get("continue", ""),
        send_initial_events=_bool(q.get("sendInitialEvents")),
        allow_watch_bookmarks=bool(_bool(q.get("allowWatchBookmarks"))),
        timeout_seconds=_int(q, "timeoutSeconds"),
    )


def _forbidden_cause(field: str, message: str) -> dict[str, str]:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {message}", "field": field}


def validate_list_options(opts: ListOptions, watch: bool) -> None:
    """kube-apiserver's ValidateListOptions (422 ListOptions.meta.k8s.io)."""
    causes: list[dict[str, str]] = []
    match = opts.resource_version_match
    if watch:
        if opts.send_initial_events is not None and match != "NotOlderThan":
            causes.append(_forbidden_cause(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if opts.send_initial_events is None:
                causes.append(_forbidden_cause(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided"))
            if match != "NotOlderThan":
                causes.append({"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
                               "message": f'Unsupported value: "{match}": supported values: '
                                          '"NotOlderThan"'})
    else:
        if match:
            if not opts.resource_version:
                causes.append(_forbidden_cause(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided"))
            if opts.continue_token:
                causes.append(_forbidden_cause(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided"))
            if match not in ("Exact", "NotOlderThan"):
                causes.append({"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
                               "message": f'Unsupported value: "{match}": supported values: '
                                          '"Exact", "NotOlderThan", ""'})
            if match == "Exact" and opts.resource_version == "0":
                causes.append(_forbidden_cause(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
        if opts.send_initial_events is not None:
            causes.append(_forbidden_cause("sendInitialEvents",
                                           "sendInitialEvents is forbidden for list"))
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)


def delete_options(q: Any, body: dict[str, Any] | None) -> DeleteOptions:
    opts = DeleteOptions()
    opts.grace_period_seconds = _int(q, "gracePeriodSeconds")
    opts.propagation_policy = q.get("propagationPolicy") or None
    opts.orphan_dependents = _bool(q.get("orphanDependents"))
    dry = q.getall("dryRun", []) if hasattr(q, "getall") else []
    if body:
        if body.get("gracePeriodSeconds") is not None:
            opts.grace_period_seconds = int(body["gracePeriodSeconds"])
        if body.get("propagationPolicy"):
            opts.propagation_policy = body["propagationPolicy"]
        if body.get("orphanDependents") is not None:
            opts.orphan_dependents = bool(body["orphanDependents"])
        pre = body.get("preconditions") or {}
        opts.precondition_uid = pre.get("uid")
        opts.precondition_rv = pre.get("resourceVersion")
        dry = list(dry) + list(body.get("dryRun") or [])
    if opts.propagation_policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [{
            "reason": "FieldValueNotSupported", "field": "propagationPolicy",
            "message": f'Unsupported value: "{opts.propagation_policy}": supported values: '
                       '"Foreground", "Background", "Orphan", "nil"'}])
    if opts.propagation_policy and opts.orphan_dependents is not None:
        raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [{
            "reason": "FieldValueInvalid", "field": "propagationPolicy",
            "message": f'Invalid value: "{opts.propagation_policy}": orphanDependents and '
                       "deletionPropagation cannot be both set"}])
    if opts.grace_period_seconds is not None and opts.grace_period_seconds < 0:
        opts.grace_period_seconds = 1  # BeforeDelete: a negative period counts as 1 s
    opts.dry_run = _dry_run(dry)
    return opts


_VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete",
                    "deletecollection"})
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions",
                 "delete": "DeleteOptions", "deletecollection": "DeleteOptions"}


def _access_review(kind: str, namespace: str, authn: AuthResponse | None,
                   body: dict[str, Any]) -> dict[str, Any]:
    """An authorization.k8s.io/v1 review (access_reviews.py)."""
    user = authn.user if authn is not None else None
    if kind == "SubjectAccessReview":
        return access_reviews.subject_access_review(body)
    if kind == "LocalSubjectAccessReview":
        return access_reviews.local_subject_access_review(namespace, body)
    if kind == "SelfSubjectAccessReview":
        return access_reviews.self_subject_access_review(user, body)
    return access_reviews.self_subject_rules_review(user, body)


def _dry_run(values: list[str], verb: str = "delete") -> bool:
    """dryRun values: only "All"; others fail the options' validation (422)."""
    if any(v != "All" for v in values):
        kind = _OPTIONS_KIND.get(verb)
        if kind is None:
            return False  # reads ignore dryRun
        raise errors.invalid(kind, "meta.k8s.io", "", [{
            "reason": "FieldValueNotSupported", "field": "dryRun",
            "message": f"Unsupported value: {orjson.dumps(values).decode()}: supported "
                       'values: "All"'}])
    return bool(values)


class APIHandlers:
    def __init__(self, rest: RESTStorage, registry: ResourceRegistry,
                 discovery: Discovery, openapi: OpenAPI, *,
                 auth: TokenAuthenticator | None = None,
                 service_accounts: service_accounts.ServiceAccountTokens | None = None
                 ) -> None:
        self.rest = rest
        self.registry = registry
        self.discovery = discovery
        self.openapi = openapi
        self.auth = auth or TokenAuthenticator()
        self.service_accounts = service_accounts
        self.watch_tasks: set[asyncio.Task[Any]] = set()
        self.shutting_down = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            q = request.query
            path = request_path(request)
            if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
                return self._openapi(request)
            info = resolve(request.method, path, bool(_bool(q.get("watch"))))
            if not info.is_resource_request:
                return await self.discovery.handle(request, info)
            authn = request.get(AUTHENTICATED)
            request[_WARNINGS] = [*(authn.warnings if authn is not None else ()),
                                  *_request_warnings(info, q)]
            return _with_warnings(request, await self._resource(request, info))
        except StatusError as err:
            if request.method not in ("GET", "HEAD"):
                # The error may rest on a write still in flight (store.settle).
                await self.rest.store.settle()
            if err.code in (404, 405, 415) and err.details == {}:
                # answered before the resource's handler (routing, go-restful's content
                # type check): no per-resource warnings
                return status_response(err)
            return _with_warnings(request, status_response(err))
        except errors.PageNotFound:
            return page_not_found()
        except web.HTTPRequestEntityTooLarge:
            return status_response(errors.request_entity_too_large(f"limit is {MAX_BODY}"))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a bug must answer 500, never drop the connection
            log.exception("internal error serving %s %s", request.method, request.path)
            return status_response(errors.internal(str(exc)))

    def _openapi(self, request: web.Request) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed(
                "the server does not allow this method on the requested resource")
        h = request.headers
        r = self.openapi.respond(request.path, request.query.get("hash"),
                                 accept=h.get("Accept", ""),
                                 accept_encoding=h.get("Accept-Encoding", ""),
                                 if_none_match=h.get("If-None-Match", ""))
        return web.Response(status=r.status, body=r.body, headers=r.headers)

    def _field_validation(self, request: web.Request, res: ResourceInfo, verb: str,
                          sub: str) -> _FieldValidation:
        kind = {"create": "CreateOptions", "update": "UpdateOptions"}.get(verb, "PatchOptions")
        directive = parse_field_validation(request.query.get("fieldValidation"), kind)
        return _FieldValidation(self.openapi, res, sub, directive)

    def _resource_info(self, info: RequestInfo) -> ResourceInfo:
        no_route = StatusError(404, "NotFound", "the server could not find the requested resource",
                               details={})
        res = None if info.no_route else self.registry.get(info.group, info.version,
                                                           info.resource)
        if res is None:
            if info.group not in self.registry.group_versions() or (
                    info.api_prefix == "apis" and not info.group):
                raise errors.PageNotFound()
            # a served group: its API handler answers, with a Status
            raise no_route
        if info.subresource and info.subresource not in res.subresources:
            raise no_route
        # The routes kube-apiserver installs per scope: a namespaced resource has only
        # list and watch outside a namespace, a cluster-scoped one nothing inside one.
        if res.namespaced and not info.namespaced_path:
            if info.name or "list" not in res.verbs:
                # (go-restful has no cluster-wide route of a resource that cannot be listed)
                raise no_route
            if info.verb not in ("list", "watch"):
                raise errors.method_not_allowed()
        elif not res.namespaced and info.namespaced_path:
            raise no_route
        return res

    def _check_key(self, res: ResourceInfo, info: RequestInfo) -> None:
        """The storage key checks of the registry (NamespaceKeyFunc, PrepareKey)."""
        prefix = "/" + (f"{res.group}/{res.plural}" if self.rest.custom.get(res) is not None
                        else res.plural)
        ns = info.namespace if res.namespaced else ""
        if info.verb in ("list", "watch", "deletecollection") and not info.name:
            key = prefix + ("/" + ns if ns else "")
        else:
            if res.namespaced and not ns:
                raise errors.bad_request("Namespace parameter required.")
            if not info.name:
                raise errors.bad_request("Name parameter required.")
            why = path_segment_name_errors(info.name)
            if why:
                raise errors.bad_request(
                    f"Name parameter invalid: {go_quote(info.name)}: {';'.join(why)}")
            key = prefix + ("/" + ns if ns else "") + "/" + info.name
        if invalid_storage_key(key):
            raise errors.bare_internal(f"invalid key: {go_quote(key)}")

    async def _drop_nulls(self, request: web.Request, res: ResourceInfo,
                          body: dict[str, Any]) -> None:
        """A JSON null of a built-in kind decodes to Go's zero value: the field is not stored
        (defaulting writes back the few Go always serializes). Custom resources keep theirs."""
        if self.rest.custom.get(res) is None and b"null" in await request.read():
            defaults.drop_nulls(body)

    async def _body(self, request: web.Request, res: ResourceInfo | None = None,
                    kind: str = "") -> Any:
        """The decoded body; `kind` (default: the resource's) names it in decode errors."""
        raw = await read_body(request)
        custom = res is not None and self.rest.custom.get(res) is not None
        ctype = request.headers.get("Content-Type", JSON)
        doc = decode_body(raw, ctype, kind or (res.kind if res is not None else ""),
                          protobuf=not custom)
        if not custom and ctype.split(";")[0].strip().lower() in ("", JSON, "application/yaml"):
            check_go_types(doc, res, kind)  # a protobuf body is typed already
        return doc

    async def _resource(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        if pod_proxy.handles(info) and request.method in ("GET", "POST"):
            return await pod_proxy.serve(request, info, self.rest, self.registry)
        res = self._resource_info(info)
        verb = info.verb
        if verb not in _VERBS:
            raise errors.method_not_allowed()  # a method no route has (OPTIONS, PROPFIND)
        if ((verb in ("update", "patch") and not info.name)
                or (verb == "deletecollection" and res.kind == "Namespace" and not res.group)):
            raise errors.method_not_allowed()
        if verb != "create":
            self._check_key(res, info)
        if res.group == "metrics.k8s.io":
            return await self._resource_metrics(request, info, res)
        if not res.group and res.kind == "ComponentStatus":
            return await self._component_statuses(request, info)
        if not res.group and res.kind == "Binding":
            return await self._legacy_binding(request, info)
        if not res.stored or info.subresource == "token":
            return await self._answer_only(request, info, res)
        crv = self.rest.custom.get(res)
        if crv is not None and crv.deprecation_warning:
            request[_WARNINGS].append(crv.deprecation_warning)
        conv = VIEWS.get((res.group, res.version))
        if conv is not None:
            return await self._version_view(request, info, res, conv)
        ns = info.namespace if res.namespaced else ""
        q = request.query
        rest = self.rest
        sub = info.subresource
        dry = _dry_run(q.getall("dryRun", []), info.verb)
        table = _table_request(request) if verb in ("list", "watch", "get") else None
        partial = _partial_request(request) if verb in ("list", "watch", "get") else None
        if partial is not None:
            return await self._partial(request, res, ns, info, partial,
                                       custom=crv is not None)
        if verb == "list":
            opts = list_options(q)
            validate_list_options(opts, watch=False)
            await self._wait_fresh(opts)
            if table is not None:
                meta, raws = rest.list_raw(res, ns, opts)
                objs = [orjson.loads(r) for r in raws]
                return table_response(self._table(res, objs, meta, table))
            return json_response(rest.list(res, ns, opts))
        if verb == "watch":
            opts = list_options(q)
            validate_list_options(opts, watch=True)
            return await self.watch(request, res, ns, info.name, opts, table)
        if verb == "get":
            entry = rest.get(res, ns, info.name)
            if sub == "scale":
                scale = self._to_scale(res, entry.obj)
                if table is not None:
                    return table_response(tables.table("Scale", "autoscaling", [scale],
                                                       list_meta=None, include_object=table,
                                                       api_version=_TABLE_GV,
                                                       now=rest.clock.now()))
                return json_response(orjson.dumps(scale))
            if table is not None:
                return table_response(self._table(res, [entry.obj], None, table))
            return json_response(entry.raw)
        if verb == "create":
            if sub == "binding":
                body = await self._body(request, kind="Binding")
                await self._bind(res, ns, info.name, body, dry)
                return json_response(orjson.dumps({
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "code": 201}), 201)
            if sub == "eviction":
                body = eviction.check_type_meta(_expect_object(
                    await self._body(request, kind="Eviction")))
                code, answer = await eviction.evict(
                    rest, res, self.registry.get("policy", "v1", "poddisruptionbudgets"), ns,
                    info.name, body, q.getall("dryRun", []))
                return json_response(orjson.dumps(answer), code)
            if info.name and not sub:
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource")
            if sub:
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource")
            body = _expect_object(await self._body(request, res))
            await self._drop_nulls(request, res, body)
            _check_quantities(res, body)
            _check_base64(res, body)
            fv = self._field_validation(request, res, verb, sub)
            fv.check(body, from_body=True)
            entry = await rest.create(res, ns, body, dry, manager=_manager(request, q))
            if res.kind == "Secret" and not res.group:
                request[_WARNINGS].extend(_tls_warnings(entry.obj))
            request[_WARNINGS].extend(rest.strategy(res).warnings_on_create(entry.obj))
            return fv.respond(json_response(entry.raw, 201))
        if verb == "update":
            body = _expect_object(await self._body(
                request, res, kind="Scale" if sub == "scale" else ""))
            if sub != "scale":
                await self._drop_nulls(request, res, body)
                _check_quantities(res, body)
                _check_base64(res, body)
            fv = self._field_validation(request, res, verb, sub)
            fv.check(body, from_body=True)
            if sub == "scale":
                entry = await self._update_scale(res, ns, info.name, body, dry,
                                                 manager=_manager(request, q))
                return fv.respond(json_response(orjson.dumps(self._to_scale(res, entry.obj))))
            old = self._stored(res, ns, info.name) if not sub else None
            code, entry = await rest.update(res, ns, info.name, body, sub, dry,
                                            manager=_manager(request, q))
            if not sub:
                request[_WARNINGS].extend(_update_warnings(rest.strategy(res), entry.obj, old))
            return fv.respond(json_response(entry.raw, code))
        if verb == "patch":
            raw = await read_body(request)
            ctype = request.headers.get("Content-Type", "")
            fv = self._field_validation(request, res, verb, sub)
            is_apply = PATCH_TYPES.get(ctype.split(";")[0].strip().lower()) == "apply"
            if not is_apply and _force(q):
                validate_patch_options(False, q.get("fieldManager"), True)
            if is_apply and sub != "scale":
                # server-side apply: the body is YAML (or JSON, a subset of it)
                applied = _expect_object(decode_body(raw, "application/yaml", res.kind,
                                                     protobuf=False))
                fv.check(applied, from_body=True)
                code, entry = await rest.apply(res, ns, info.name, applied, sub, dry,
                                               q.get("fieldManager"), _force(q))
                return fv.respond(json_response(entry.raw, code))
            if sub == "scale" and is_apply:
                applied = _expect_object(decode_body(raw, "application/yaml", "Scale",
                                                     protobuf=False))
                fv.check(applied, from_body=True)
                validate_patch_options(True, q.get("fieldManager"), _force(q))
                check_applied_name(applied, info.name)
                entry = await self._update_scale(res, ns, info.name, applied, dry,
                                                 manager=q.get("fieldManager"), apply=True,
                                                 force=_force(q))
                return fv.respond(json_response(orjson.dumps(self._to_scale(res, entry.obj))))
            if sub == "scale":
                entry = await self._patch_scale(res, ns, info.name, ctype, raw, dry, fv,
                                                _manager(request, q))
                return fv.respond(json_response(orjson.dumps(self._to_scale(res, entry.obj))))
            old = self._stored(res, ns, info.name) if not sub else None
            entry = await rest.patch(res, ns, info.name, ctype, raw, sub, dry,
                                     on_patched=fv.check_patched, manager=_manager(request, q))
            if not sub:
                request[_WARNINGS].extend(_update_warnings(rest.strategy(res), entry.obj, old or {}))
            return fv.respond(json_response(entry.raw))
        if verb == "delete":
            if sub:
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource")
            body = (await self._body(request, kind="DeleteOptions") if request.can_read_body
                    else None)
            del_opts = delete_options(q, body if isinstance(body, dict) else None)
            del_opts.dry_run = del_opts.dry_run or dry
            _warn_job_orphaning(request, res, del_opts)
            deleted, entry = await rest.delete(res, ns, info.name, del_opts)
            if deleted and not (res.kind in _RETURNS_DELETED
                                and res.group in ("", "storage.k8s.io", "resource.k8s.io")):
                return json_response(deleted_status(res, entry.obj))
            return json_response(entry.raw)
        if verb == "deletecollection":
            body = (await self._body(request, kind="DeleteOptions") if request.can_read_body
                    else None)
            dopts = delete_options(q, body if isinstance(body, dict) else None)
            dopts.dry_run = dopts.dry_run or dry
            _warn_job_orphaning(request, res, dopts)
            lopts = list_options(q)
            entries = await rest.delete_collection(res, ns, lopts, dopts)
            return json_response(list_body(res, {"resourceVersion": str(rest.store.rv)},
                                           (e.raw for e in entries),
                                           custom=rest.custom.get(res) is not None))
        raise errors.method_not_allowed(
            "the server does not allow this method on the requested resource")

    def _stored(self, res: ResourceInfo, ns: str, name: str) -> dict[str, Any] | None:
        """The object an update starts from, for the strategy's update warnings (only for
        the kinds that have some)."""
        if not self.rest.strategy(res).has_update_warnings:
            return None
        entry = self.rest.rs(res).current(object_key(ns if res.namespaced else "", name))
        return entry.obj if entry is not None else None

    async def _resource_metrics(self, request: web.Request, info: RequestInfo,
                                res: ResourceInfo) -> web.StreamResponse:
        """metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics, from the stored pods and nodes
        (resource_metrics.py)."""
        if info.verb not in ("get", "list") or info.subresource:
            raise errors.method_not_allowed()
        now = self.rest.clock.now()
        opts = list_options(request.query)
        pods_info = self.registry.get("", "v1", "pods")
        nodes_info = self.registry.get("", "v1", "nodes")
        assert pods_info is not None and nodes_info is not None
        if res.kind == "PodMetrics":
            if info.verb == "get":
                pod = self.rest.get(pods_info, info.namespace, info.name).obj
                found = resource_metrics.pod_metrics(pod, now)
                if found is None:  # metrics-server names it namespace/name
                    raise errors.not_found("podmetrics", res.group,
                                           f"{info.namespace}/{info.name}")
                return json_response(orjson.dumps(found))
            _, raws = self.rest.list_raw(pods_info, info.namespace, ListOptions(
                label_selector=opts.label_selector, field_selector=opts.field_selector))
            items = [m for m in (resource_metrics.pod_metrics(orjson.loads(r), now)
                                 for r in raws) if m is not None]
            kind = "PodMetricsList"
        else:
            _, pod_raws = self.rest.list_raw(pods_info, "", ListOptions())
            pods = [orjson.loads(r) for r in pod_raws]
            if info.verb == "get":
                node = self.rest.get(nodes_info, "", info.name).obj
                return json_response(orjson.dumps(resource_metrics.node_metrics(node, pods, now)))
            _, raws = self.rest.list_raw(nodes_info, "", ListOptions(
                label_selector=opts.label_selector))
            items = [resource_metrics.node_metrics(orjson.loads(r), pods, now) for r in raws]
            kind = "NodeMetricsList"
        for it in items:
            del it["kind"], it["apiVersion"]
        return json_response(orjson.dumps({"kind": kind, "apiVersion": res.api_version,
                                           "metadata": {}, "items": items}))

    async def _component_statuses(self, request: web.Request,
                                  info: RequestInfo) -> web.StreamResponse:
        """core/v1 componentstatuses: get and list, the components probed at each request
        (registry/core/componentstatus.py)."""
        if info.verb not in ("get", "list", "watch"):
            raise errors.method_not_allowed()
        if request.path.startswith("/api/v1/watch/"):
            raise StatusError(404, "NotFound", "the server could not find the requested "
                              "resource", details={})
        request[_WARNINGS].append(componentstatus.DEPRECATION_WARNING)
        if info.verb == "watch":
            raise errors.method_not_allowed(
                'watch is not supported on resources of kind "componentstatuses"')
        table = _table_request(request)
        items = await componentstatus.component_statuses(self.rest.store.health_error,
                                                         info.name or None)
        if info.verb == "get":
            if not items:
                raise errors.not_found("componentstatus", "", info.name)
            if table is not None:
                return table_response(self._table(self._core("componentstatuses"), items,
                                                  None, table))
            return json_response(orjson.dumps(items[0]))
        opts = list_options(request.query)
        try:
            lsel = parse_label_selector(opts.label_selector)
            fsel = parse_field_selector(opts.field_selector)
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from None
        # upstream matches the selectors against the name and namespace alone (the objects
        # have no labels: a label requirement keeps nothing), any field label accepted
        items = [it for it in items if lsel.matches({}) and fsel.matches(
            {"metadata.name": it["metadata"]["name"], "metadata.namespace": ""})]
        if table is not None:
            return table_response(self._table(self._core("componentstatuses"), items, {},
                                              table))
        for it in items:
            del it["kind"], it["apiVersion"]
        return json_response(orjson.dumps({"kind": "ComponentStatusList", "apiVersion": "v1",
                                           "metadata": {}, "items": items}))

    async def _legacy_binding(self, request: web.Request,
                              info: RequestInfo) -> web.StreamResponse:
        """core/v1 bindings (LegacyBindingREST): a POST of a Binding binds the pod its
        metadata names, as pods/NAME/binding does; no other verb, no named route."""
        if info.name or not info.namespaced_path:
            raise StatusError(404, "NotFound", "the server could not find the requested "
                              "resource", details={})
        if info.verb != "create":
            raise errors.method_not_allowed()
        body = _expect_object(await self._body(request, kind="Binding"))
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        ns = meta.get("namespace")
        if ns and ns != info.namespace:
            raise errors.bad_request("the namespace of the provided object does not match "
                                     "the namespace sent on the request")
        name = meta.get("name") or ""
        if not name:
            raise errors.bad_request("Name parameter required.")
        dry = _dry_run(request.query.getall("dryRun", []), "create")
        await self._bind(self._core("pods"), info.namespace, name, body, dry)
        return json_response(orjson.dumps({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": 201}), 201)

    def _core(self, plural: str) -> ResourceInfo:
        ri = self.registry.get("", "v1", plural)
        assert ri is not None
        return ri

    async def _answer_only(self, request: web.Request, info: RequestInfo,
                           res: ResourceInfo) -> web.StreamResponse:
        """The create-only endpoints that store nothing: serviceaccounts/<name>/token
        (TokenRequest), tokenreviews, selfsubjectreviews and the authorization.k8s.io
        reviews."""
        if not res.stored and info.name:
            raise StatusError(404, "NotFound", "the server could not find the requested resource",
                              details={})
        if info.verb != "create":
            raise errors.method_not_allowed()
        kind = "TokenRequest" if info.subresource == "token" else res.kind
        body = _expect_object(await self._body(request, kind=kind))
        _dry_run(request.query.getall("dryRun", []), "create")
        target = (res.group if not res.stored else "authentication.k8s.io", "v1", kind)
        directive = parse_field_validation(request.query.get("fieldValidation"), "CreateOptions")
        unknown = self.openapi.drop_unknown_fields(target, body)
        warnings: list[str] = []
        if unknown and directive == "Strict":
            raise strict_error(kind, unknown, version=str(
                body.get("apiVersion") or "v1").rpartition("/")[2])
        if kind == "TokenRequest":
            if self.service_accounts is None:
                raise errors.internal("no service account signing key")

            def committed(resource: str, namespace: str, name: str) -> dict[str, Any] | None:
                ri = self.registry.get("", "v1", resource)
                if ri is None:
                    return None
                entry = self.rest.rs(ri).get(
                    object_key(namespace if ri.namespaced else "", name))
                return entry.obj if entry is not None else None

            answer = service_accounts.issue_token(self.service_accounts, committed,
                                                  info.namespace, info.name, body, warnings)
        elif kind == "TokenReview":
            answer = service_accounts.token_review(self.auth, body)
        elif res.group == "authorization.k8s.io":
            answer = _access_review(res.kind, info.namespace, request.get(AUTHENTICATED), body)
        else:
            authn = request.get(AUTHENTICATED)
            answer = service_accounts.self_subject_review(authn.user if authn else None,
                                                          self.rest.clock)
        request[_WARNINGS].extend(warnings)
        resp = json_response(orjson.dumps(answer), 201)
        if unknown and directive == "Warn":
            for w in field_warning_headers(unknown):
                resp.headers.add("Warning", w)
        return resp

    async def _version_view(self, request: web.Request, info: RequestInfo,
                            view: ResourceInfo, conv: VersionView) -> web.StreamResponse:
        """Requests of a resource served as a view of another's storage (version_view.py):
        events.k8s.io/v1 Events, autoscaling/v1 HorizontalPodAutoscalers.

        Errors are the view's (events.events.k8s.io); writes get the view's validation
        where it has its own (ValidateEventCreate/Update for events.k8s.io).
        """
        try:
            return await self._version_view_inner(request, info, view, conv)
        except StatusError as err:
            raise conv.error(err) from None

    async def _version_view_inner(self, request: web.Request, info: RequestInfo,
                                  view: ResourceInfo, conv: VersionView
                                  ) -> web.StreamResponse:
        core = self.registry.get(*conv.stored)
        assert core is not None
        verb, ns, name, q = info.verb, info.namespace, info.name, request.query
        sub = info.subresource
        if sub and sub not in conv.subresources:
            raise StatusError(404, "NotFound", "the server could not find the requested resource",
                              details={})
        dry = _dry_run(q.getall("dryRun", []), info.verb)
        table = _table_request(request) if verb in ("list", "watch", "get") else None
        partial = _partial_request(request) if verb in ("list", "watch", "get") else None
        if partial is not None:
            # A view's metadata is its stored object's (to_view keeps ObjectMeta).
            return await self._partial(request, core, ns, info, partial, errors_of=view,
                                       line_transform=conv.view_line)
        rest = self.rest
        to_view = conv.to_view
        if verb == "list":
            opts = list_options(q)
            validate_list_options(opts, watch=False)
            await self._wait_fresh(opts)
            meta, raws = rest.list_raw(core, ns, opts)
            stored = [orjson.loads(r) for r in raws]
            if table is not None and conv.table_of_stored:
                return table_response(self._table(core, stored, meta, table))
            items = [to_view(o) for o in stored]
            if table is not None:
                return table_response(self._table(view, items, meta, table))
            for it in items:  # typed list items carry no TypeMeta (list_body)
                del it["kind"], it["apiVersion"]
            return json_response(orjson.dumps({"kind": conv.list_kind,
                                               "apiVersion": view.api_version,
                                               "metadata": meta, "items": items}))
        if verb == "watch":
            opts = list_options(q)
            validate_list_options(opts, watch=True)
            return await self.watch(request, core, ns, name, opts, table,
                                    line_transform=conv.view_line)
        if verb == "get":
            stored_obj = rest.get(core, ns, name).obj
            if table is not None:
                if conv.table_of_stored:
                    return table_response(self._table(core, [stored_obj], None, table))
                return table_response(self._table(view, [to_view(stored_obj)], None, table))
            return json_response(orjson.dumps(to_view(stored_obj)))
        if verb in ("create", "update"):
            if verb == "create" and name:
                raise errors.method_not_allowed()
            body = _expect_object(await self._body(request, view))
            fv = self._field_validation(request, view, verb, sub)
            fv.check(body, from_body=True)
            _check_view_type(body, view, self.registry)
            if verb == "create":
                entry = await rest.create(core, ns, conv.to_stored(body), dry,
                                          validate=conv.validate_create)
                return fv.respond(json_response(orjson.dumps(to_view(entry.obj)), 201))
            code, entry = await rest.update(core, ns, name, conv.to_stored(body), sub, dry,
                                            validate=conv.validate_update,
                                            create_validate=conv.validate_create)
            return fv.respond(json_response(orjson.dumps(to_view(entry.obj)), code))
        if verb == "patch":
            raw = await read_body(request)
            ctype = request.headers.get("Content-Type", "")
            ref = schema_ref_for(view.group, view.version, view.kind)
            patch_type(ctype, ref)  # 415 before the object is read
            fv = self._field_validation(request, view, verb, sub)
            current = self._latest(core, ns, name)
            # to_view builds a fresh dict: the patch result is ours to change.
            patched = apply_patch(ctype, raw, to_view(current.obj), ref)
            check_patched_types(view, ctype, raw, patched)
            fv.check_patched(patched)
            pmeta = patched.get("metadata")
            if isinstance(pmeta, dict) and pmeta.get("name") not in (None, name):
                raise errors.bad_request(f"the name of the object ({pmeta.get('name')}) does not "
                                         f"match the name on the URL ({name})")
            code, entry = await rest.update(core, ns, name, conv.to_stored(patched), sub,
                                            dry, validate=conv.validate_update)
            return fv.respond(json_response(orjson.dumps(to_view(entry.obj))))
        if sub:
            raise errors.method_not_allowed()
        if verb in ("delete", "deletecollection"):
            del_body = (await self._body(request, kind="DeleteOptions") if request.can_read_body
                        else None)
            dopts = delete_options(q, del_body if isinstance(del_body, dict) else None)
            dopts.dry_run = dopts.dry_run or dry
            if verb == "delete":
                _, entry = await rest.delete(core, ns, name, dopts)
                return json_response(deleted_status(view, entry.obj))
            entries = await rest.delete_collection(core, ns, list_options(q), dopts)
            items = [to_view(e.obj) for e in entries]
            for it in items:
                del it["kind"], it["apiVersion"]
            return json_response(orjson.dumps({
                "kind": conv.list_kind, "apiVersion": view.api_version,
                "metadata": {"resourceVersion": str(rest.store.rv)}, "items": items}))
        raise errors.method_not_allowed()

    async def _partial(self, request: web.Request, res: ResourceInfo, ns: str,
                       info: RequestInfo, partial: tables.Conversion, *,
                       custom: bool = False, errors_of: ResourceInfo | None = None,
                       line_transform: Callable[[bytes], bytes] | None = None
                       ) -> web.StreamResponse:
        """A list, get or watch answered as PartialObjectMetadata(List) (partial_metadata.py)."""
        verb, rest, q = info.verb, self.rest, request.query
        named = errors_of or res
        as_list = partial.kind == "PartialObjectMetadataList"
        if verb == "list":
            if not as_list:
                raise partial_metadata.list_asked_as_object(named, custom)
            opts = list_options(q)
            validate_list_options(opts, watch=False)
            await self._wait_fresh(opts)
            meta, raws = rest.list_raw(res, ns, opts)
            body = partial_metadata.partial_list(meta, [orjson.loads(r) for r in raws],
                                                 partial.version)
            return json_response(orjson.dumps(body))
        if verb == "watch":
            opts = list_options(q)
            validate_list_options(opts, watch=True)
            if as_list:
                # Every event fails to encode as a list: the stream ends with no event.
                resp = web.StreamResponse(status=200, headers={
                    "Content-Type": JSON, "Cache-Control": "no-cache, private"})
                await resp.prepare(request)
                return resp
            to_partial = partial_metadata.PartialWatchEncoder(partial.version)
            if line_transform is not None:
                view_line = line_transform

                def transform(line: bytes) -> bytes:
                    return to_partial(view_line(line))
                return await self.watch(request, res, ns, info.name, opts,
                                        line_transform=transform)
            return await self.watch(request, res, ns, info.name, opts, line_transform=to_partial)
        # get (of the object or a subresource: the same metadata)
        if as_list:
            raise partial_metadata.object_asked_as_list(named, custom)
        entry = rest.get(res, ns, info.name)
        return json_response(orjson.dumps(
            partial_metadata.partial_object(entry.obj, partial.version)))

    def _table(self, res: ResourceInfo, objs: list[dict[str, Any]],
               list_meta: dict[str, Any] | None, include_object: str,
               with_column_definitions: bool = True) -> dict[str, Any]:
        crv = self.rest.custom.get(res)
        if crv is not None:
            return crv.table(objs, list_meta=list_meta, include_object=include_object,
                             with_column_definitions=with_column_definitions,
                             now=self.rest.clock.now())
        return tables.table(res.kind, res.group, objs, printer=self.rest.strategy(res).printer,
                            list_meta=list_meta,
                            include_object=include_object, api_version=_TABLE_GV,
                            with_column_definitions=with_column_definitions,
                            now=self.rest.clock.now())

    def _to_scale(self, res: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        return self._scale_view(res, obj)

    def _tracked_scale(self, res: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """The live Scale the Scale's field manager sees: with the parent's owners of the
        replicas as its managedFields (ScaleHandler.ToSubresource; the Scale a client reads
        carries none, as kube-apiserver's)."""
        scale = self._scale_view(res, obj)
        mf = to_subresource(obj["metadata"].get("managedFields"), self._replicas_paths(res))
        if mf:
            scale["metadata"]["managedFields"] = mf
        return scale

    def _replicas_paths(self, res: ResourceInfo) -> Mapping[str, FieldPath]:
        crv = self.rest.custom.get(res)
        if crv is None:
            return REPLICAS_PATHS
        spec_path = crv.scale_paths()[0]
        return {res.api_version: tuple(path_field(p) for p in spec_path.split(".")[1:])}

    def _scale_view(self, res: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        crv = self.rest.custom.get(res)
        if crv is None:
            return to_scale(res, obj)
        spec_path, status_path, selector_path = crv.scale_paths()
        scale = to_scale(res, {"metadata": obj["metadata"]})
        replicas = json_path(obj, spec_path) or 0
        scale["spec"] = {"replicas": replicas} if replicas else {}
        scale["status"] = {"replicas": json_path(obj, status_path) or 0}
        if selector_path:
            sel = json_path(obj, selector_path)
            if sel:
                scale["status"]["selector"] = sel
        return scale

    async def _wait_fresh(self, opts: ListOptions) -> None:
        rv = opts.resource_version
        if rv not in (None, "", "0") and not opts.continue_token:
            want = parse_rv(rv)
            if opts.resource_version_match != "Exact":
                await self.rest.store.wait_for_rv(want)

    # -- subresources -------------------------------------------------------------

    async def _bind(self, res: ResourceInfo, ns: str, name: str, body: Any, dry: bool) -> None:
        """pods/binding (BindingREST.Create): assign an unassigned pod to a node."""
        body = _expect_object(body)
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        if meta.get("name", "") != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        target = body.get("target") if isinstance(body.get("target"), dict) else {}
        assert isinstance(target, dict)
        node = target.get("name")
        if not node:
            # ValidatePodBinding's errors leave as a plain aggregate: a bare 500
            raise errors.bare_internal("target.name: Required value")
        rs = self.rest.rs(res)
        key = object_key(ns, name)
        current = rs.current(key)
        if current is None:
            raise errors.not_found("pods", "", name)
        pod = current.copy()
        pmeta = pod["metadata"]
        if meta.get("uid") and meta["uid"] != pmeta.get("uid"):
            raise errors.conflict("pods", "", name,
                                  f"Precondition failed: UID in precondition: {meta['uid']}, "
                                  f"UID in object meta: {pmeta.get('uid')}")
        if meta.get("resourceVersion") and meta["resourceVersion"] != str(current.rv):
            raise errors.conflict("pods", "", name, errors.OPTIMISTIC_LOCK_MSG)
        spec = pod.setdefault("spec", {})
        why = ""
        if pmeta.get("deletionTimestamp"):
            why = f"pod {name} is being deleted, cannot be assigned to a host"
        elif spec.get("nodeName"):
            why = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        elif spec.get("schedulingGates"):
            why = f"pod {name} has non-empty .spec.schedulingGates"
        if why:
            raise errors.conflict("pods/binding", "", name, why)
        spec["nodeName"] = node
        status = pod.setdefault("status", {})
        status.pop("nominatedNodeName", None)  # ClearingNominatedNodeNameAfterBinding
        for field in ("annotations", "labels"):  # the binding's are merged in
            if isinstance(meta.get(field), dict) and meta[field]:
                pmeta[field] = {**(pmeta.get(field) or {}), **meta[field]}
        conds = status.get("conditions") or []
        for c in conds:
            if c.get("type") == "PodScheduled":
                if c.get("status") != "True":
                    c["status"] = "True"
                    c["lastTransitionTime"] = format_time(self.rest.clock.now())
                break
        else:
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": format_time(self.rest.clock.now())})
        status["conditions"] = conds
        if dry:
            return
        await self.rest.store.write(rs, key, pod, current)

    def _latest(self, res: ResourceInfo, ns: str, name: str) -> Entry:
        """The newest version of an object, a write in flight included: what a write that
        names no resourceVersion builds on (kube-apiserver's GuaranteedUpdate reads the
        object again when it meets a newer one, and never answers such a write with 409)."""
        entry = self.rest.rs(res).current(object_key(ns if res.namespaced else "", name))
        if entry is None:
            raise errors.not_found(res.plural, res.group, name)
        return entry

    async def _update_scale(self, res: ResourceInfo, ns: str, name: str, scale: dict[str, Any],
                            dry: bool, manager: str | None = None, apply: bool = False,
                            force: bool = False) -> Any:
        """A write through /scale: `scale` is the new Scale (`apply`: the applied
        configuration). The Scale's field manager runs on the Scale view and the parent
        stores its entries mapped back (scale_handler), as kube-apiserver's ScaleHandler."""
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        for attempt in range(5):
            entry = self._latest(res, ns, name)
            if rv and rv != str(entry.rv):
                raise errors.conflict(res.plural, res.group, name, errors.OPTIMISTIC_LOCK_MSG)
            tracked: dict[str, Any] | None = None
            fm = self.rest.field_manager(res, "scale") if manager is not None else None
            if fm is not None and manager is not None:
                live = self._tracked_scale(res, entry.obj)
                tracked = (fm.apply(live, scale, manager, force) if apply
                           else fm.update(live, scale, manager))
                if apply:
                    replicas = (tracked.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid("Scale", "autoscaling", name, [{
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "field": "spec.replicas"}])
            obj = entry.copy()
            crv = self.rest.custom.get(res)
            if crv is not None:
                set_json_path(obj, crv.scale_paths()[0], replicas)
            else:
                obj.setdefault("spec", {})["replicas"] = replicas
            if tracked is not None:
                mf = to_parent(obj["metadata"].get("managedFields"),
                               tracked["metadata"].get("managedFields"), res.api_version,
                               self._replicas_paths(res))
                if mf:
                    obj["metadata"]["managedFields"] = mf
                else:
                    obj["metadata"].pop("managedFields", None)
            try:
                _, new = await self.rest.update(res, ns, name, obj, "", dry)
            except StatusError as exc:
                # the scale subresource retries on conflict when the client set no
                # precondition (scaleUpdatedObjectInfo, GuaranteedUpdate)
                if exc.code != 409 or exc.reason != "Conflict" or rv or attempt == 4:
                    raise
                continue
            return new
        raise AssertionError("unreachable")

    async def _patch_scale(self, res: ResourceInfo, ns: str, name: str, ctype: str, raw: bytes,
                           dry: bool, fv: _FieldValidation, manager: str | None = None) -> Any:
        entry = self._latest(res, ns, name)
        scale = self._to_scale(res, entry.obj)
        patched = apply_patch(ctype, raw, scale, schema_ref_for("autoscaling", "v1", "Scale"))
        check_patched_types(res, ctype, raw, patched, "autoscaling/v1.Scale")
        fv.check_patched(patched)
        return await self._update_scale(res, ns, name, patched, dry, manager=manager)

    # -- watch ---------------------------------------------------------------------

    async def watch(self, request: web.Request, res: ResourceInfo, ns: str, name: str,
                    opts: ListOptions, table: str | None = None,
                    line_transform: Callable[[bytes], bytes] | None = None
                    ) -> web.StreamResponse:
        rest = self.rest
        store = rest.store
        # timeoutSeconds and bookmarks are on the server's clock; the transport check and
        # the bound on a write to a client that does not read are real time (I/O)
        clock = rest.clock
        rs = rest.rs(res)
        flt = rest.build_filter(res, ns, opts, name)
        rv_param = opts.resource_version or ""
        initial = opts.send_initial_events
        if rv_param not in ("", "0"):
            want = parse_rv(rv_param, watch=True)
            await store.wait_for_rv(want)
        else:
            want = 0
        timeout = opts.timeout_seconds
        # On virtual time (issue 21) the server's own default timeout (the client asked
        # for none: kubectl get -w) is a real-time bound: it spreads reconnections over
        # real time, and 30-60 virtual minutes can pass in seconds. Asked-for
        # timeoutSeconds (the reflectors') stay on the clock.
        real_deadline: float | None = None
        if timeout is None or timeout <= 0:
            timeout = rest.rng.stream("watch-timeout").randint(1800, 3600)
            if isinstance(clock, VirtualClock):
                real_deadline = REAL_CLOCK.monotonic() + timeout
        start = clock.monotonic()
        deadline = start + timeout if real_deadline is None else math.inf
        expired: StatusError | None = None
        zero = (defaults.zero_object_fields(res.group, res.kind)
                if self.rest.custom.get(res) is None else ({}, {}))
        # From here to register(): no await, so no event slips between the
        # initial state and the live stream.
        w = Watcher(rs, store.rv, flt)
        # WatchList is on in v1.36: a watch from "" or "0" that does not say otherwise is
        # defaulted to sendInitialEvents=true (SetListOptionsDefaults), and gets the
        # initial-events-end bookmark when it allows bookmarks.
        send_state = (rv_param in ("", "0") and initial is not False) or bool(initial)
        initial_lines: list[bytes] = []
        # The revision the client has from the start: bookmarks are sent only past it.
        floor_rv = store.rv
        if send_state:
            initial_lines = [rs.items[k].raw for k in rs.keys_in(rs.sorted_keys(), ns)
                             if flt is None or flt(k, rs.items[k])]
        elif rv_param not in ("", "0"):
            if want < rs.oldest_rv:
                expired = errors.too_old_resource_version(want, rs.oldest_rv)
            else:
                floor_rv = want
                w.start_rv = want
                for ev in rs.events_after(want):
                    w.on_event(ev)
                w.start_rv = store.rv
        if expired is None:
            w.register()
        resp = web.StreamResponse(status=200, headers={
            "Content-Type": JSON,
            "Cache-Control": "no-cache, private"})
        to_table = _TableWatchEncoder(self, res, table) if table is not None else None
        _with_warnings(request, resp)
        resp.enable_chunked_encoding()
        task = asyncio.current_task()
        if task is not None:
            self.watch_tasks.add(task)
        try:
            await resp.prepare(request)
            if expired is not None:
                await resp.write(orjson.dumps({"type": "ERROR", "object": expired.status()})
                                 + b"\n")
                return resp
            bookmarks = opts.allow_watch_bookmarks
            writing = False

            def overflow() -> None:
                # The store dropped this watcher (its queue is full: the client does not
                # read). A write blocked on the client cannot end the stream cleanly.
                tr = request.transport
                if writing and tr is not None:
                    tr.abort()

            w.on_overflow = overflow

            async def send(lines: list[bytes]) -> None:
                nonlocal writing
                if line_transform is not None:
                    lines = [line_transform(line) for line in lines]
                if to_table is not None:
                    lines = [to_table(line) for line in lines]
                writing = w.sending = True
                try:
                    # timeoutSeconds holds while a write waits on a client that does not read
                    left = deadline - clock.monotonic() if real_deadline is None else \
                        real_deadline - REAL_CLOCK.monotonic()
                    async with asyncio.timeout(max(left, 0.001)):
                        await resp.write(b"".join(lines))
                finally:
                    writing = w.sending = False

            # The initial state: written from the stored bytes in batches, outside the
            # watcher's bounded queue (live events queue up meanwhile).
            added = b'{"type":"' + ADDED.encode() + b'","object":'
            for i in range(0, len(initial_lines), 500):
                await send([added + raw + b"}\n" for raw in initial_lines[i:i + 500]])
            initial_lines = []
            if send_state and bookmarks:
                await send([bookmark_line(res.kind, res.api_version, floor_rv, True, *zero)])
            # kube-apiserver's cacher: a bookmark every minute and one 2 s before the
            # deadline (none for a shorter watch), each only if the store's revision moved
            # past the one the watch started from (process(): older events are not sent).
            grid = isinstance(clock, VirtualClock)
            next_bookmark: float | None = _next_bookmark(start, deadline, grid)
            transport_check = 5.0
            while True:
                if w.queue:
                    await send(w.drain())
                if w.closed or self.shutting_down.is_set():
                    break
                now = clock.monotonic()
                if now >= deadline or (real_deadline is not None and
                                       REAL_CLOCK.monotonic() >= real_deadline):
                    break
                if bookmarks and next_bookmark is not None and now >= next_bookmark:
                    if store.rv > floor_rv:
                        await send([bookmark_line(res.kind, res.api_version, store.rv, False,
                                                  *zero)])
                    next_bookmark = _next_bookmark(now, deadline, grid)
                wait = deadline - now
                if bookmarks and next_bookmark is not None:
                    wait = min(wait, max(0.0, next_bookmark - now))
                if not w.queue:
                    # Woken directly by the store (no inner task, as wait_for would
                    # add), so a committed event reaches this socket before the
                    # writer's response, as kube-apiserver's watch cache mostly does.
                    # On another clock than the process's, a timer of that clock wakes
                    # the watch at its deadline or bookmark (one real timer otherwise).
                    timer = None
                    if clock is not REAL_CLOCK:
                        w.wake.clear()  # a timer's wake-up leaves it set, nothing queued
                        if wait != math.inf:
                            timer = clock.call_later(wait, w.wake.set)
                        wait = transport_check
                    try:
                        async with asyncio.timeout(max(min(wait, transport_check), 0.001)):
                            await w.wake.wait()
                    except TimeoutError:
                        pass
                    finally:
                        if timer is not None:
                            timer.cancel()
                tr = request.transport
                if tr is None or tr.is_closing():
                    break
        except (ConnectionResetError, ConnectionError):
            pass
        except TimeoutError:
            # the deadline passed while a write waited on the client: the chunk is half
            # sent, the stream cannot go on
            tr = request.transport
            if tr is not None:
                tr.abort()
        finally:
            w.close()
            if task is not None:
                self.watch_tasks.discard(task)
        return resp


def _next_bookmark(now: float, deadline: float, grid: bool = False) -> float | None:
    """cacheWatcher.nextBookmarkTime: in a minute, or 2 s before the deadline if sooner;
    None once that time has come (a watch of 2 s or less gets none: the deadline was set
    when the request came in, a moment before upstream's watcher asks).

    ``grid`` (a server on virtual time): at the next whole minute of the clock instead,
    so that every watch's bookmark falls on one instant, not on one per watch for
    autojump to step through (a deviation: the first one may come sooner than a minute).
    """
    nxt = (math.floor(now / BOOKMARK_INTERVAL) + 1) * BOOKMARK_INTERVAL if grid \
        else now + BOOKMARK_INTERVAL
    at = min(nxt, deadline - 2.0)
    return None if at <= now else at


class _FieldValidation:
    """fieldValidation=Strict|Warn|Ignore for one write: unknown fields are never stored."""

    def __init__(self, openapi: OpenAPI, res: ResourceInfo, sub: str, directive: str) -> None:
        self.openapi = openapi
        self.res = res
        self.sub = sub
        self.directive = directive
        self.warnings: list[str] = []

    def check(self, obj: dict[str, Any], from_body: bool = False) -> None:
        unknown = self.openapi.drop_unknown_fields_for(self.res, obj, self.sub)
        if not unknown or self.directive == "Ignore":
            return
        if self.directive == "Strict":
            version = None
            if from_body:
                version = str(obj.get("apiVersion") or self.res.api_version).rpartition("/")[2]
            kind = "Scale" if self.sub == "scale" else self.res.kind
            raise strict_error(kind, unknown, version=version)
        self.warnings.extend(unknown)

    def check_patched(self, obj: dict[str, Any]) -> None:
        self.check(obj, from_body=False)

    def respond(self, resp: web.Response) -> web.Response:
        for w in field_warning_headers(self.warnings):
            resp.headers.add("Warning", w)
        return resp


_TABLE_GV = "meta.k8s.io/v1"
TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _table_request(request: web.Request) -> str | None:
    """The includeObject policy when the client asked for a Table, else None."""
    version = tables.parse_table_accept(request.headers.get("Accept"))
    if version is None:
        return None
    try:
        return tables.parse_include_object(request.query.get("includeObject"))
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None


def _partial_request(request: web.Request) -> tables.Conversion | None:
    """The PartialObjectMetadata(List) conversion the client asked for, else None."""
    conv = tables.negotiate_conversion(request.headers.get("Accept"))
    return conv if conv is not None and conv.kind in partial_metadata.PARTIAL_KINDS else None


def table_response(body: dict[str, Any]) -> web.Response:
    # kube-apiserver labels a Table answer plain application/json (the serializer's media
    # type), not the as=Table parameters the client asked with.
    return json_response(orjson.dumps(body))


class _TableWatchEncoder:
    """Turns JSON watch lines into one-row Table events (column definitions in the first only)."""

    def __init__(self, handlers: APIHandlers, res: ResourceInfo, include_object: str) -> None:
        self.handlers = handlers
        self.res = res
        self.include_object = include_object
        self.first = True

    def __call__(self, line: bytes) -> bytes:
        ev = orjson.loads(line)
        obj = ev.get("object") or {}
        if ev.get("type") == "BOOKMARK" or ev.get("type") == "ERROR":
            if ev.get("type") == "BOOKMARK":
                # A bookmark carries only its revision: an empty Table.
                ev["object"] = {"kind": "Table", "apiVersion": _TABLE_GV,
                                "metadata": obj.get("metadata") or {},
                                "columnDefinitions": [], "rows": []}
            return orjson.dumps(ev) + b"\n"
        t = self.handlers._table(self.res, [obj], None, self.include_object,
                                 with_column_definitions=self.first)
        self.first = False
        return orjson.dumps({"type": ev["type"], "object": t}) + b"\n"


def _check_view_type(body: dict[str, Any], view: ResourceInfo,
                     registry: ResourceRegistry) -> None:
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if (api_version and api_version != view.api_version) or (kind and kind != view.kind):
        raise type_meta_error(view, str(api_version or view.api_version),
                              str(kind or view.kind), registry)


_QUANTITY_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def _b64_error(value: Any) -> int | None:
    """Where Go's base64.StdEncoding stops on a bad value (None when it decodes)."""
    if not isinstance(value, str):
        return None
    text = value.replace("\r", "").replace("\n", "")
    for i, ch in enumerate(text):
        if not (ch.isascii() and (ch.isalnum() or ch in "+/=")):
            return value.index(ch)
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return len(text) - len(text) % 4
    return None


def _check_base64(res: ResourceInfo, body: dict[str, Any]) -> None:
    """Secret data and ConfigMap binaryData are []byte: bad base64 fails decoding (400)."""
    if res.group or res.kind not in ("Secret", "ConfigMap"):
        return
    data = body.get("data" if res.kind == "Secret" else "binaryData")
    if not isinstance(data, dict):
        return
    for v in data.values():
        at = _b64_error(v)
        if at is not None:
            raise errors.bad_request(
                f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                f"illegal base64 data at input byte {at}")


def _tls_warnings(obj: dict[str, Any]) -> list[str]:
    """The Secret strategy's warnings for a kubernetes.io/tls pair that tls.X509KeyPair
    cannot load (only its no-PEM-data cases)."""
    if obj.get("type") != "kubernetes.io/tls":
        return []
    data = obj.get("data") or {}
    for key, what in (("tls.crt", "certificate"), ("tls.key", "key")):
        try:
            raw = base64.b64decode(str(data.get(key) or ""))
        except ValueError:
            return []
        if b"-----BEGIN" not in raw:
            return [f"tls: failed to find any PEM data in {what} input"]
    return []


def _check_quantities(res: ResourceInfo, body: dict[str, Any]) -> None:
    """A resource quantity that does not parse fails the decoding of the body (400)."""
    if res.group in ("", "apps", "batch") and defaults.bad_quantity(res.kind, body):
        raise errors.bad_request(
            f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
            f"quantities must match the regular expression '{_QUANTITY_RE}'")


# Bodies of another kind than the endpoint's resource: (Go struct, kind, version in messages).
_BODY_STRUCTS = {"Scale": ("autoscaling/v1.Scale", "Scale", "v1"),
                 "Binding": ("core/v1.Binding", "Binding", "v1"),
                 "Eviction": ("policy/v1.Eviction", "Eviction", "v1"),
                 "DeleteOptions": ("meta/v1.DeleteOptions", "", "")}


def check_go_types(doc: Any, res: ResourceInfo | None, kind: str = "") -> None:
    """The decoding of a JSON body into its Go struct: a value of the wrong JSON type is a 400
    with Go's message (go_types.py), as kube-apiserver's decoder refuses it."""
    if not isinstance(doc, dict):
        return
    if kind in _BODY_STRUCTS:
        fq, shown, version = _BODY_STRUCTS[kind]
    elif res is not None and not kind:
        if doc.get("kind") not in (None, "", res.kind) or doc.get("apiVersion") not in (
                None, "", res.api_version):
            return  # decoded as another kind: the type meta check answers
        found = kind_struct(res.group, res.version, res.kind)
        if found is None:
            return
        fq, shown, version = found, res.kind, res.version
    else:
        return
    try:
        check_struct(doc, fq)
    except GoDecodeError as exc:
        if not shown:  # the parameter codec's options: the bare error
            raise errors.bad_request(str(exc)) from None
        raise errors.bad_request(
            f'{shown} in version "{version}" cannot be handled as a {shown}: {exc}') from None
    zero_nulls(doc, fq)  # a null list element or map value decodes to Go's zero value


def _manager(request: web.Request, q: Any) -> str:
    """The field manager of a write: ?fieldManager=, else the user agent's first word."""
    return manager_or_user_agent(q.get("fieldManager"), request.headers.get("User-Agent", ""))


def _force(q: Any) -> bool:
    """?force= as Go's strconv.ParseBool reads it (anything else is false)."""
    return str(q.get("force", "")) in ("1", "t", "T", "true", "TRUE", "True")


def _expect_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    return body


_BODY_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")


def decode_body(raw: bytes, content_type: str, kind: str = "", protobuf: bool = True) -> Any:
    """A request body as kube-apiserver's decoder takes it, with its error messages.

    `kind` is the kind the endpoint expects (for the messages of a body that is
    not an object); custom resources (protobuf=False) take JSON and YAML only.
    """
    ctype = content_type.split(";")[0].strip().lower() or JSON
    accepted = _BODY_TYPES if protobuf else _BODY_TYPES[:2]
    if ctype not in accepted:
        raise errors.unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types "
            "include: " + ", ".join(accepted))
    if ctype == "application/yaml":
        try:
            doc = decode_yaml(raw, MAX_BODY) if raw.strip() else None
        except DecodedTooLarge:
            raise errors.request_entity_too_large(f"limit is {MAX_BODY}") from None
        except (yaml.YAMLError, YAMLBodyError) as exc:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): yaml: "
                f"{getattr(exc, 'problem', None) or exc} ({summarize_body(raw)})") from None
        _check_decoded(doc, raw, kind)
        return doc
    if is_k8s_protobuf(ctype):
        try:
            return decode_k8s_protobuf(raw)
        except ProtobufUnsupportedKindError as exc:
            raise errors.unsupported_media_type(str(exc)) from None
        except ProtobufDecodeError as exc:
            raise errors.bad_request(f"error decoding protobuf body: {exc}") from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        why = f"couldn't get version/kind; json parse error: {go_json.syntax_error(raw)}"
        if kind == "DeleteOptions":  # decoded by the parameter codec: the bare error
            raise errors.bad_request(why) from None
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): {why} "
            f"({summarize_body(raw)})") from None
    _check_decoded(doc, raw, kind)
    return doc


_GO_TYPEMETA = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                'Kind string "json:\\"kind,omitempty\\"" }')


def _check_decoded(doc: Any, raw: bytes, kind: str) -> None:
    """A body that is not an object fails where kube-apiserver looks for its kind."""
    if isinstance(doc, dict):
        return
    if doc is None:
        go_type = "null"
    elif isinstance(doc, bool):
        go_type = "bool"
    elif isinstance(doc, (int, float)):
        go_type = "number"
    else:
        go_type = "array" if isinstance(doc, list) else "string" if isinstance(doc, str) else "value"
    if go_type == "null":
        # Go decodes JSON null into the zero TypeMeta: no kind, then no object.
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): Object 'Kind' is "
            f"missing in '{raw.decode(errors='replace')}'")
    raise errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): couldn't get "
        f"version/kind; json parse error: json: cannot unmarshal {go_type} into Go value of "
        f"type {_GO_TYPEMETA} ({summarize_body(raw)})")


def summarize_body(data: bytes, max_length: int = 30) -> str:
    """The body as kube-apiserver quotes it in decode errors (summarizeData)."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data[:max_length].decode(errors="replace")
        return text + " ..." if len(data) > max_length else text
    return data[:max_length].hex() + " ..." if len(data) > max_length else data.hex()


def to_scale(res: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale view of a scalable object."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    sel = spec.get("selector")
    if isinstance(sel, dict) and res.kind == "ReplicationController":
        # a ReplicationController's selector is a plain label map
        selector = str(selector_from_label_selector({"matchLabels": sel}))
    elif isinstance(sel, dict):
        selector = str(selector_from_label_selector(sel))
    else:
        selector = ""
    out_status: dict[str, Any] = {"replicas": status.get("replicas", 0)}
    if selector:
        out_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                          "creationTimestamp") if k in meta},
        # ScaleSpec.replicas is omitempty, ScaleStatus.replicas is not
        "spec": {"replicas": spec["replicas"]} if spec.get("replicas") else {},
        "status": out_status,
    }


__all__ = ["APIHandlers", "decode_body"]
