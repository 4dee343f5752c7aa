"""authorization.k8s.io/v1 reviews: SubjectAccessReview, SelfSubjectAccessReview,
LocalSubjectAccessReview, SelfSubjectRulesReview, answered and never stored.

kube-apiserver counterpart: ``pkg/registry/authorization/{subjectaccessreview,
selfsubjectaccessreview,localsubjectaccessreview,selfsubjectrulesreview}`` and
``pkg/apis/authorization/validation`` (the 422s, with their messages).

Data flow: handlers.py decodes the POST body (the create-only path shared with
tokenreviews, see service_accounts.py) and calls one function here with the
requesting user; the answer is the request's spec with a ``status`` and goes
back as 201. Nothing reaches storage.

Deliberate deviation: pykcm's server has no authorizer but its own rule (RBAC is
issue 15): every authenticated user may do everything, an anonymous request may
only ``get`` the public health and version paths (auth.py's ``ANONYMOUS_PATHS``,
system:public-info-viewer's). A review answers that rule: for an authenticated
subject as kube-apiserver ``--authorization-mode=AlwaysAllow`` answers, ``allowed:
true`` and no reason (asked of the real server: AlwaysAllow gives none); for
``system:anonymous`` (or a subject only in ``system:unauthenticated``) anything but
those paths is ``allowed: false``, again with no reason (as RBAC's no-opinion). A
rules review lists ``*`` on everything (its user is authenticated). The selector attributes of
``resourceAttributes`` (fieldSelector/labelSelector requirements) are not
validated; the metadata answered carries no managedFields (pykcm keeps none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from pykcm.apiserver import errors
from pykcm.apiserver.auth import ANONYMOUS_PATHS, User

ANONYMOUS_USER: Final = "system:anonymous"
UNAUTHENTICATED_GROUP: Final = "system:unauthenticated"
AUTHENTICATED_GROUP: Final = "system:authenticated"

__all__ = [
    "AUTHZ_GV",
    "local_subject_access_review",
    "self_subject_access_review",
    "self_subject_rules_review",
    "subject_access_review",
]

AUTHZ_GV: Final = "authorization.k8s.io/v1"
_GROUP: Final = "authorization.k8s.io"


def _go_value(value: Any) -> str:
    """A value as field.Invalid prints it (JSON; a nil pointer is null)."""
    return orjson.dumps(value).decode()


def _cause(field: str, value: Any, why: str) -> dict[str, Any]:
    return {"reason": "FieldValueInvalid", "field": field,
            "message": f"Invalid value: {_go_value(value)}: {why}"}


def _invalid(causes: list[dict[str, Any]]) -> errors.StatusError:
    """The 422 of a review: kube-apiserver names neither kind nor object
    (``.authorization.k8s.io "" is invalid``)."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return errors.StatusError(422, "Invalid", f'.{_GROUP} "" is invalid: {summary}',
                              details={"group": _GROUP, "causes": causes})


def _spec(body: Mapping[str, Any]) -> dict[str, Any]:
    spec = body.get("spec")
    return dict(spec) if isinstance(spec, dict) else {}


def _attributes_causes(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if res is not None and nonres is not None:
        return [_cause("spec.nonResourceAttributes", nonres,
                       "cannot be specified in combination with resourceAttributes")]
    if res is None and nonres is None:
        return [_cause("spec.resourceAttributes", None,
                       "exactly one of nonResourceAttributes or resourceAttributes must be "
                       "specified")]
    return []


def _subject_causes(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    causes = _attributes_causes(spec)
    if not spec.get("user") and not spec.get("groups"):
        causes.append(_cause("spec.user", spec.get("user") or "",
                             "at least one of user or group must be specified"))
    return causes


def _meta(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return {}
    return {k: v for k, v in meta.items() if k != "managedFields" and v not in (None, "", {}, [])}


def _allowed(spec: Mapping[str, Any]) -> bool:
    """pykcm's authorization rule (module doc) for the subject and attributes of ``spec``."""
    groups = spec.get("groups") or []
    anonymous = spec.get("user") == ANONYMOUS_USER or (
        UNAUTHENTICATED_GROUP in groups and AUTHENTICATED_GROUP not in groups)
    if not anonymous:
        return True
    nonres = spec.get("nonResourceAttributes")
    return (isinstance(nonres, dict) and nonres.get("verb") == "get"
            and nonres.get("path") in ANONYMOUS_PATHS)


def _answer(kind: str, meta: dict[str, Any], spec: dict[str, Any],
            allowed: bool = True) -> dict[str, Any]:
    # Neither AlwaysAllow nor a no-opinion gives a reason.
    return {"kind": kind, "apiVersion": AUTHZ_GV, "metadata": meta, "spec": spec,
            "status": {"allowed": allowed}}


def subject_access_review(body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST subjectaccessreviews``: may ``spec.user``/``groups`` do this?"""
    spec, meta = _spec(body), _meta(body)
    causes = _subject_causes(spec)
    if meta:
        causes.append(_cause("metadata", meta, "must be empty"))
    if causes:
        raise _invalid(causes)
    return _answer("SubjectAccessReview", {}, spec, _allowed(spec))


def local_subject_access_review(namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST namespaces/<ns>/localsubjectaccessreviews``: a SubjectAccessReview held to
    one namespace."""
    spec, meta = _spec(body), _meta(body)
    if namespace and not meta.get("namespace"):
        meta["namespace"] = namespace  # the request's namespace fills the object's
    if meta.get("namespace") != namespace:
        raise errors.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
    causes = _subject_causes(spec)
    if {k: v for k, v in meta.items() if k != "namespace"}:
        causes.append(_cause("metadata", meta, "must be empty except for namespace"))
    res = spec.get("resourceAttributes")
    if isinstance(res, dict) and (res.get("namespace") or "") != namespace:
        causes.append(_cause("spec.resourceAttributes.namespace", res.get("namespace") or "",
                             "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        causes.append(_cause("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                             "disallowed on this kind of request"))
    if causes:
        raise _invalid(causes)
    return _answer("LocalSubjectAccessReview", {"namespace": namespace}, spec, _allowed(spec))


def self_subject_access_review(user: User | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST selfsubjectaccessreviews`` (``kubectl auth can-i``): may I do this?"""
    if user is None:
        raise errors.bad_request("no user present on request")
    spec, meta = _spec(body), _meta(body)
    causes = _attributes_causes(spec)
    if meta:
        causes.append(_cause("metadata", meta, "must be empty"))
    if causes:
        raise _invalid(causes)
    return _answer("SelfSubjectAccessReview", {}, spec)


def self_subject_rules_review(user: User | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """``POST selfsubjectrulesreviews`` (``kubectl auth can-i --list``): what may I do in
    ``spec.namespace``? Everything, under AlwaysAllow; with the rules kube-apiserver
    lists for any user first (the self reviews, discovery and health paths)."""
    if user is None:
        raise errors.bad_request("no user present on request")
    spec = _spec(body)
    if not spec.get("namespace"):
        raise errors.bad_request("no namespace on request")
    everything = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    resource_rules = [
        {"verbs": ["create"], "apiGroups": [_GROUP],
         "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
        {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
         "resources": ["selfsubjectreviews"]},
        everything,
    ]
    non_resource_rules = [
        {"verbs": ["get"], "nonResourceURLs": ["/.well-known", "/.well-known/*"]},
        {"verbs": ["get"], "nonResourceURLs": [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
            "/openapi/*", "/readyz", "/version", "/version/"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version",
                                               "/version/"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ]
    return {"kind": "SelfSubjectRulesReview", "apiVersion": AUTHZ_GV, "metadata": {},
            "spec": spec, "status": {"resourceRules": resource_rules,
                                     "nonResourceRules": non_resource_rules,
                                     "incomplete": False}}
